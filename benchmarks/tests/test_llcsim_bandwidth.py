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
    assert prof.read_text() == "# fitted\nCPI=0.4\nROB=160\nBW_PEAK=750.0\nBW_UMAX=0.600\n"
    text = page.read_text()
    assert text.count(calibrate.BW_SECTION) == 1
    assert text.index("## The grid") < text.index(calibrate.BW_SECTION) < text.index("<!-- analysis")
    assert "| `BW_PEAK` | 750.0 lines per 1000 cycles" in text and "text\n<!-- /analysis -->" in text
