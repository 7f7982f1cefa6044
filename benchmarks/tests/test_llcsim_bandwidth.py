"""llcsim's memory-bandwidth term on the host: its fit on the native
contention runs (benchmarks/llcsim/scripts/calibrate.py bandwidth), fed
with a native-memload.json of known numbers, and what it writes into the
profile and the calibration page."""
import json
import pathlib
import subprocess
import sys

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
CALIBRATE = LLCSIM / "scripts" / "calibrate.py"
sys.path.insert(0, str(LLCSIM / "scripts"))
import calibrate  # noqa: E402


def s(x):
    return {"median": x, "min": x, "max": x}


def memload(chase_alone=150.0, chase_ratio=2.0, stream_alone=0.5, stream_beside=0.3):
    cell = {"alone_s": s(chase_alone), "beside_s": s(chase_alone * chase_ratio), "ratio": s(chase_ratio)}
    return {"chase": {"262144": cell, "2048": {"alone_s": s(15.0), "beside_s": s(30.0), "ratio": s(2.0)}},
            "stream": {"alone_s": s(stream_alone), "beside_s": s(stream_beside),
                       "ratio": s(stream_beside / stream_alone)},
            "smt_alu": {"alone_s": s(1.1), "beside_s": s(1.1), "ratio": s(1.0)},
            "pairs": 5, "machine": "test", "date": "today", "guard": "guard", "command": "memload"}


def test_fit_inverts_the_queueing_latency():
    # a cycle = 150 / 200 ns; one stream 0.5 lines/ns = 0.375 lines per cycle;
    # the chase 2x beside it: u = 0.5, so the peak is 0.75 lines per cycle
    fit = calibrate.fit_bandwidth(memload())
    assert abs(fit["cycle_ns"] - 0.75) < 1e-12
    assert abs(fit["u_stream"] - 0.5) < 1e-12
    assert abs(fit["peak"] - 750.0) < 1e-9
    # two streams 0.3 each: 0.45 lines per cycle, 0.6 of the peak
    assert abs(fit["umax"] - 0.6) < 1e-12
    # a core fills at most the stream's 0.375 lines per cycle
    assert abs(fit["fill"] - 1 / 0.375) < 1e-12
    # and the latency the term gives the chase beside the stream is the native one
    assert abs(1 / (1 - min(fit["stream_lines_per_cycle"] / (fit["peak"] / 1000), fit["umax"])) - 2.0) < 1e-9


def test_umax_at_least_the_one_stream_u_and_at_most_095():
    assert calibrate.fit_bandwidth(memload(stream_beside=0.1))["umax"] == 0.5     # two streams move less
    assert calibrate.fit_bandwidth(memload(chase_ratio=10, stream_beside=0.5))["umax"] == 0.95


def test_no_slowdown_turns_the_term_off():
    fit = calibrate.fit_bandwidth(memload(chase_ratio=0.98))
    assert fit["peak"] == 0 and fit["umax"] == 0


def test_bandwidth_mode_writes_profile_and_page(tmp_path):
    ml, prof, page = tmp_path / "ml.json", tmp_path / "profile.env", tmp_path / "page.md"
    ml.write_text(json.dumps(memload()))
    prof.write_text("# fitted\nCPI=0.4\nROB=160\nBW_PEAK=1\n")
    page.write_text("# page\n\n## The grid\n\n| a |\n\n<!-- analysis: by hand -->\ntext\n<!-- /analysis -->\n")
    for _ in range(2):      # twice: the section is replaced, not added again
        subprocess.run([sys.executable, str(CALIBRATE), "bandwidth", "--memload", str(ml), "--profile", str(prof),
                        "--page", str(page)], check=True, capture_output=True)
    # PF_FILL: the stream alone, 0.375 lines per cycle
    assert prof.read_text() == ("# fitted\nCPI=0.4\nROB=160\n# BW_PEAK, BW_UMAX, PF_FILL: `run.sh calibrate-bw` "
                                "(calibrate.py bandwidth) on the native contention runs of today "
                                "(calibration/native-memload.json)\nBW_PEAK=750.0\nBW_UMAX=0.600\nPF_FILL=2.67\n")
    text = page.read_text()
    assert text.count(calibrate.BW_SECTION) == 1
    assert text.index("## The grid") < text.index(calibrate.BW_SECTION) < text.index("<!-- analysis")
    assert "| `BW_PEAK` | 750.0 lines per 1000 cycles" in text and "text\n<!-- /analysis -->" in text


def test_run_sh_calibrate_keeps_the_bandwidth_term(tmp_path):
    # the CPI/ROB/MSHR fit rewrites the profile: the bandwidth lines stay
    from test_llcsim_calibration import GRID, calibrate as fit_timing, write_logs
    # ... and every other fit's (share.py's LLC, PF_FILL), which it used to drop
    others = ("# BW_PEAK, BW_UMAX, PF_FILL: from somewhere\nBW_PEAK=685.7\nBW_UMAX=0.514\nPF_FILL=3.09\n"
              "# LLC_REPL..LAT_LLC: share.py\nLLC_REPL=srrip\nLLC_SIZE=3M\nLLC_WAYS=12\nLAT_LLC=19\n")
    (tmp_path / "profile.env").write_text("# llcsim TIMING=calibrated: old\nCPI=1\nPF=8\n" + others)
    p, page, profile = fit_timing(tmp_path, write_logs(tmp_path, GRID))
    assert p.returncode == 0, p.stdout
    assert "CPI=0.4\n" in profile and "CPI=1\n" not in profile and "PF=8\n" not in profile
    assert "TIMING=calibrated: old" not in profile
    assert profile.endswith("LAT_SEQ=200\n" + others)
    assert calibrate.BW_SECTION in page      # the committed native-memload.json's section


def test_pg_validation_page_shows_the_contention_share(tmp_path):
    # pg-validate's dumps with the term on carry bwlat: the page decomposes
    from test_llcsim_calibration import write_pg_logs
    # 2 MB beside the stream (tag 2): 5M of its 20M cycles
    r, text = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0},
                            extra=lambda tag: f"u_bwlat={5_000_000 if tag == 2 else 0} k_bwlat=0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "## Where the co-run time goes" in text
    assert "| 2 | 1 | 1 | 1.00x | 25.0% | 0.0% |" in text
    assert "| 32 | 1 | 1 | 1.00x | 0.0% | 0.0% |" in text
