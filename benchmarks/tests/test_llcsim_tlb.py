"""llcsim's data-TLB fit on the host (benchmarks/llcsim/scripts/calibrate.py
tlb), fed with a native-tlb.json and guest logs of known numbers: the
latencies it recovers, its checks, what it writes into the profile and the
calibration page; and the translation table of pg-validate's page."""
import json
import pathlib
import subprocess
import sys

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
CALIBRATE = LLCSIM / "scripts" / "calibrate.py"
sys.path.insert(0, str(LLCSIM / "scripts"))
import calibrate  # noqa: E402

# name, native ratio 4 KiB / THP, simulated STLB hits and walks per unit on 4 KiB pages
LOOPS = [("chase 512 KiB", 1.09, 0.9, 0.0), ("chase 32 MiB", 1.45, 0.3, 0.6),
         ("chase 128 MiB", 1.60, 0.1, 0.9), ("rand 128 MiB", 1.30, 0.1, 0.9)]
S_TRUE, W_TRUE = 20.0, 120.0       # the latencies the native ratios below were made with


def chase_cycles(stlb, walk, s, w):
    return 200 + stlb * s + walk * (s + w)


def native(tmp_path):
    loops = []
    for i, (name, ratio, stlb, walk) in enumerate(LOOPS):
        if name.startswith("chase"):        # the ratios the true latencies give: a fit recovers them
            ratio = chase_cycles(stlb, walk, S_TRUE, W_TRUE) / 200
        cell = {"median": ratio, "min": ratio, "max": ratio}
        loops.append({"name": name, "spec": f"{name.split()[0]}/x", "sim_spec": f"{name.split()[0]}/y",
                      "tag": 600 + 2 * i, "thp_s": {"median": 100, "min": 100, "max": 100},
                      "4k_s": {k: 100 * ratio for k in ("median", "min", "max")}, "ratio": cell})
    p = tmp_path / "nt.json"
    p.write_text(json.dumps({"loops": loops, "pairs": 5, "scale": 4, "machine": "test", "thp": "[madvise]",
                             "date": "today", "guard": "guard", "command": "tlbload"}))
    return p


def guest_run(tmp_path, name, s, w, thp_walks=0.0):
    """Logs of a guest run at lat_stlb s, lat_walk w: a chase adds the
    translations to its 200 cycles; the random loads overlap them (half)."""
    ser, sim = tmp_path / f"{name}.serial.log", tmp_path / f"{name}.sim.log"
    sl = [f"config dtlb=18/0 stlb=768/12 lat_stlb={s:g} lat_walk={w:g} cpi=0.4 rob=160 mshr=14 pf=16 bw_peak=685.7"]
    rl = []
    for i, (lname, _, stlb, walk) in enumerate(LOOPS):
        for j, pg in enumerate(("thp", "4k")):
            units, tag = 100000, 600 + 2 * i + j
            st, wk = (0.0, thp_walks) if pg == "thp" else (stlb, walk)
            per = chase_cycles(st, wk, s, w) if lname.startswith("chase") else 20 + (st * s + wk * (s + w)) / 2
            rl.append(f"LLCSIM-RUN tag={tag} role=alone spec=x/{pg} units={units} cpu=0 sink=1")
            sl.append(f"dump seq=1 tag={tag} vcpu=0 u_insns=1 u_acc=1 u_l1m=1 u_l2m=1 u_llcm=1 "
                      f"u_cycles={per * units:.0f} u_stlb={st * units:.0f} u_walk={wk * units:.0f} u_walkm=0 "
                      f"u_walkh=0 k_acc=0 k_cycles=0 acc_by_vcpu=1")
    ser.write_text("\n".join(rl) + "\n")
    sim.write_text("\n".join(sl) + "\n")
    return ["--run", str(ser), str(sim), "0", "10"]


def run(*args):
    return subprocess.run([sys.executable, str(CALIBRATE), "tlb", *map(str, args)], capture_output=True, text=True)


def test_the_fit_recovers_the_latencies_the_chases_were_made_with(tmp_path):
    nt = native(tmp_path)
    r = run("--native", nt, *guest_run(tmp_path, "r0", 0, 0), "--print-fit")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["20", "120"]


def test_a_base_run_not_at_zero_is_refused(tmp_path):
    nt = native(tmp_path)
    r = run("--native", nt, *guest_run(tmp_path, "r0", 7, 30), "--print-fit")
    assert r.returncode == 1


def test_profile_and_page_written_and_the_check_run_agrees(tmp_path):
    nt = native(tmp_path)
    prof, page = tmp_path / "profile.env", tmp_path / "page.md"
    prof.write_text("CPI=0.4\nBW_PEAK=685.7\n")
    page.write_text("# page\n\n## Memory-bandwidth contention (the bandwidth term)\n\nbw\n\n"
                    "<!-- analysis: by hand -->\ntext\n<!-- /analysis -->\n")
    args = ["--native", nt, *guest_run(tmp_path, "r0", 0, 0), *guest_run(tmp_path, "r1", S_TRUE, W_TRUE),
            "--profile", prof, "--page", page]
    for _ in range(2):      # twice: the section is replaced, not added again
        r = run(*args)
    # the random loads are 20 cycles + half their translations: 4 KiB / THP 3.8x against 1.30x natively
    assert r.returncode == 1 and "not ok - rand 128 MiB" in r.stdout, r.stdout
    assert "ok - chase 128 MiB: the check run gives what the fit predicted" in r.stdout
    assert prof.read_text().endswith("DTLB=18\nDTLB_WAYS=0\nSTLB=768\nSTLB_WAYS=12\nLAT_STLB=20\nLAT_WALK=120\n")
    text = page.read_text()
    assert text.count(calibrate.TLB_SECTION) == 1
    assert text.index("bw\n") < text.index(calibrate.TLB_SECTION) < text.index("<!-- analysis")
    assert "| `LAT_WALK` | 120 |" in text and "- FAIL: rand 128 MiB" in text


def test_thp_runs_that_walk_fail_the_huge_page_check(tmp_path):
    # the guest did not give the THP runs huge pages: they walk as much
    nt = native(tmp_path)
    r = run("--native", nt, *guest_run(tmp_path, "r0", 0, 0, thp_walks=0.6),
            *guest_run(tmp_path, "r1", S_TRUE, W_TRUE, thp_walks=0.6))
    assert "not ok - r0.serial.log: chase 32 MiB: the guest gave the THP run huge pages" in r.stdout


def test_pg_validation_page_shows_the_translation(tmp_path):
    from test_llcsim_calibration import write_pg_logs
    # 2 MB alone (tag 1): 2M of its cycles translating
    r, text = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0},
                            extra=lambda tag: f"u_bwlat=0 k_bwlat=0 u_walk={1000 if tag == 1 else 0} k_walk=0 "
                                              f"u_xlat={2_000_000 if tag == 1 else 0} k_xlat=0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| native table MB | walks alone |" in text
    assert "| 2 | 1000 | 1000.00 | 0 |" in text, text
