"""llcsim's window check on the host (benchmarks/llcsim/scripts/calibrate.py
window), fed with a native-window.json and guest logs of known numbers:
each K's error for the main timing and every window of the grid, the
verdict, and the page section it writes (the rest of the page kept);
and native/gaploop.py's guest list."""
import json
import pathlib
import subprocess
import sys

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
CALIBRATE = LLCSIM / "scripts" / "calibrate.py"
GAPLOOP = LLCSIM / "native" / "gaploop.py"
KS = [0, 64, 128, 256, 512, 1024]
CPI, LAT, MSHR = 0.4, 200.0, 14


def model(k, rob):
    """Cycles a load with K adds after it: MSHR-bound, the adds, and the
    part of the miss rob x CPI does not hide, in full once K fills the window."""
    return LAT / MSHR + k * CPI + max(0.0, LAT - rob * CPI) * min(1.0, k / rob)


def native(tmp_path, rob=224, off=1.0):
    ns = {f"k{k}": {"median": model(k, rob) * off, "min": 0, "max": 0} for k in KS}
    ns["chase"] = {"median": LAT, "min": LAT, "max": LAT}
    p = tmp_path / "nw.json"
    p.write_text(json.dumps({
        "ks": KS, "specs": {"chase": "chase/262144/1"}, "rounds": 3, "date": "today", "guard": "- guard",
        "sim": {"chase_tag": 700, "gap_tag": 701, "kib": 65536, "loads": 200000},
        "ns_per_load": ns, "ratio": {n: {"median": LAT / v["median"], "min": 0, "max": 0}
                                     for n, v in ns.items() if n != "chase"}}))
    return p


def guest_run(tmp_path, robs=(160, 224, 320), main=224):
    ser, sim = tmp_path / "window.serial.log", tmp_path / "window.sim.log"
    units = 100000
    grid = " ".join(f"g{i}={CPI:g}:{r}:{MSHR}" for i, r in enumerate(robs))
    sl = [f"config cpi={CPI:g} rob={main} mshr={MSHR} {grid}"]
    rl = []
    for tag, per in [(700, lambda r: LAT)] + [(701 + i, lambda r, k=k: model(k, r)) for i, k in enumerate(KS)]:
        rl.append(f"LLCSIM-RUN tag={tag} role=alone spec=x units={units} cpu=0 sink=1")
        gs = " ".join(f"g{i}_u_cycles={per(r) * units:.0f}" for i, r in enumerate(robs))
        sl.append(f"dump seq=1 tag={tag} vcpu=0 u_insns=1 u_acc=1 u_l1m=1 u_l2m=1 u_llcm=1 "
                  f"u_cycles={per(main) * units:.0f} k_acc=0 k_cycles=0 {gs} acc_by_vcpu=1")
    ser.write_text("\n".join(rl) + "\n")
    sim.write_text("\n".join(sl) + "\n")
    return ["--run", str(ser), str(sim), "0", "30"]


def page(tmp_path):
    p = tmp_path / "page.md"
    p.write_text("# page\n\n## The fit\n\nkept\n\n<!-- analysis -->\nhand\n<!-- /analysis -->\n")
    return p


def run(*args):
    return subprocess.run([sys.executable, str(CALIBRATE), "window", *map(str, args)], capture_output=True, text=True)


def test_the_window_that_made_the_native_curve_passes_and_the_others_do_not(tmp_path):
    pg = page(tmp_path)
    r = run("--native", native(tmp_path, rob=224), *guest_run(tmp_path), "--page", pg)
    assert r.returncode == 0, r.stdout + r.stderr
    text = pg.read_text()
    assert "## The window" in text and "kept" in text and "hand" in text
    assert text.index("## The window") < text.index("<!-- analysis")
    row = next(ln for ln in text.splitlines() if ln.startswith("| 1024 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "+0.0%" and cells[6] == "+0.0%"        # main and the grid's 224
    assert float(cells[7].rstrip("%")) > 5                     # rob 320 hides more: cheaper
    assert float(cells[5].rstrip("%")) < -3                    # rob 160 hides less
    assert "PASS" in text


def test_a_main_timing_off_by_more_than_the_tolerance_fails_in_the_page_not_the_exit(tmp_path):
    pg = page(tmp_path)
    r = run("--native", native(tmp_path, rob=224, off=1.3), *guest_run(tmp_path), "--page", pg)
    assert r.returncode == 0, r.stderr
    assert "(limit 15%: FAIL)" in pg.read_text()


def test_an_unsound_guest_run_exits_1(tmp_path):
    pg = page(tmp_path)
    args = guest_run(tmp_path)
    args[3] = "1"       # boot-test failed
    assert run("--native", native(tmp_path), *args, "--page", pg).returncode == 1


def test_the_section_is_replaced_not_added_again(tmp_path):
    pg = page(tmp_path)
    for _ in range(2):
        run("--native", native(tmp_path), *guest_run(tmp_path), "--page", pg)
    assert pg.read_text().count("## The window") == 1


def test_gaploop_lists_the_chase_and_every_k_for_the_guest():
    out = subprocess.run([sys.executable, str(GAPLOOP), "--sim-list"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "llcsim:run:chase/65536/1/thp:700"
    assert [x.split(":")[2].split("/")[3] for x in out[1:]] == [f"k={k}" for k in KS]
    assert [int(x.rsplit(":", 1)[1]) for x in out[1:]] == list(range(701, 701 + len(KS)))
