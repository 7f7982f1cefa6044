"""llcsim's fit of PostgreSQL's base CPI on the host (benchmarks/llcsim/
scripts/calibrate.py dyn), fed with a native-pgscan.json and guest logs of
known numbers: the CPI it interpolates, CPI_DYN in the profile (the rest
kept), the page section, and the refusals (a native ratio outside the grid,
an unsound guest run); and native/pgscan.py's guest list."""
import json
import pathlib
import subprocess
import sys

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
CALIBRATE = LLCSIM / "scripts" / "calibrate.py"
PGSCAN = LLCSIM / "native" / "pgscan.py"
CPIS = [0.1, 0.2, 0.3, 0.4]
INSNS, STALL, CHASE = 600.0, 30.0, 200.0      # a row's instructions and stall; a chase load
ROWS, REPS = 1000, 3


def native(tmp_path, ratio):
    p = tmp_path / "np.json"
    p.write_text(json.dumps({
        "query": "select sum(k) from t", "rows": 4 * ROWS, "rounds": 30, "date": "today", "guard": "- guard",
        "chase_spec": "chase/262144/1",
        "sim": {"rows": ROWS, "reps": REPS, "chase_kib": 65536, "chase_tag": 700, "scan_tag": 710},
        "scan_ns_per_row": {"median": ratio * 170, "min": 0, "max": 0},
        "chase_ns": {"median": 170, "min": 0, "max": 0},
        "ratio": {"median": ratio, "min": 0, "max": 0}}))
    return p


def guest_run(tmp_path, rc=0, scans=REPS):
    ser, sim = tmp_path / "cpi-dyn.serial.log", tmp_path / "cpi-dyn.sim.log"
    grid = " ".join(f"g{i}={c:g}:224:14" for i, c in enumerate(CPIS))
    sl = [f"config cpi=0.4 cpi_dyn=0.4 rob=224 mshr=14 {grid}"]
    gs = " ".join(f"g{i}_u_cycles={(INSNS * c + STALL) * ROWS:.0f}" for i, c in enumerate(CPIS))
    for rep in range(scans):
        sl.append(f"dump seq=1 tag={710 + rep} vcpu=0 u_insns={INSNS * ROWS:.0f} u_dyn={INSNS * ROWS:.0f} "
                  f"u_cycles={(INSNS * 0.4 + STALL) * ROWS:.0f} {gs} acc_by_vcpu=1")
    sl.append(f"dump seq=2 tag=700 vcpu=0 u_insns=1 u_dyn=0 u_cycles={CHASE * 100:.0f} acc_by_vcpu=1")
    ser.write_text("LLCSIM-RUN tag=700 role=alone spec=chase units=100 cpu=0 sink=1\n")
    sim.write_text("\n".join(sl) + "\n")
    return ["--run", str(ser), str(sim), str(rc), "60"]


def files(tmp_path):
    pg, prof = tmp_path / "page.md", tmp_path / "profile.env"
    pg.write_text("# page\n\n## The fit\n\nkept\n\n<!-- analysis -->\nhand\n<!-- /analysis -->\n")
    prof.write_text("# fitted\nCPI=0.4\nROB=224\n")
    return pg, prof


def run(*args):
    return subprocess.run([sys.executable, str(CALIBRATE), "dyn", *map(str, args)], capture_output=True, text=True)


def test_the_fit_is_the_cpi_whose_scan_over_chase_is_the_native_one(tmp_path):
    pg, prof = files(tmp_path)
    want = 0.15                                  # between the grid's 0.1 and 0.2
    r = run("--native", native(tmp_path, (INSNS * want + STALL) / CHASE), *guest_run(tmp_path),
            "--profile", prof, "--page", pg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert prof.read_text().splitlines()[:3] == ["# fitted", "CPI=0.4", "ROB=224"]
    assert "CPI_DYN=0.150" in prof.read_text().splitlines()
    text = pg.read_text()
    assert "Fit: CPI_DYN 0.150" in text and "kept" in text and "hand" in text
    assert text.index("## PostgreSQL's base CPI") < text.index("<!-- analysis")
    assert "| 0.4 | 270.0 | 1.3500 |" in text      # 600 x 0.4 + 30 cycles a row, over the 200-cycle chase
    assert "600 user instructions a row (100.0% of them dynamically linked code)" in text


def test_a_native_ratio_outside_the_grid_fits_nothing_and_fails(tmp_path):
    pg, prof = files(tmp_path)
    r = run("--native", native(tmp_path, 5.0), *guest_run(tmp_path), "--profile", prof, "--page", pg)
    assert r.returncode == 1
    assert "CPI_DYN" not in prof.read_text()
    assert "No fit" in pg.read_text()


def test_an_unsound_guest_run_fits_nothing_and_fails(tmp_path):
    for kw in ({"rc": 1}, {"scans": REPS - 1}):
        pg, prof = files(tmp_path)
        r = run("--native", native(tmp_path, 0.6), *guest_run(tmp_path, **kw), "--profile", prof, "--page", pg)
        assert r.returncode == 1, kw
        assert "CPI_DYN" not in prof.read_text() and "unsound" in pg.read_text()


def test_the_guest_list_runs_pgscan_over_the_native_table_over_4():
    out = subprocess.run([sys.executable, str(PGSCAN), "--sim-list"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["pgscan:629145:3:65536:700:710"]
