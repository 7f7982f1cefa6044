"""llcsim's calibration on the host: the fit over a grid of timings
(benchmarks/llcsim/scripts/calibrate.py) and the check of the mlp loops
against the committed native ratios (analyze.py mlp --calibration), fed
with plugin and serial logs in the formats the guest program and the
plugin print, with known cycle counts."""
import json
import pathlib
import subprocess
import sys

import pytest

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
CALIBRATE = LLCSIM / "scripts" / "calibrate.py"
ANALYZE = LLCSIM / "scripts" / "analyze.py"
NATIVE = LLCSIM / "calibration" / "native-mlp.json"
LOOPS = ((400, "chase", "chase/65536/1"), (401, "rand", "rand/65536/1000000"),
         (402, "stream", "stream/65536/1000000"), (403, "hash", "hash/1864135/1000000"))
UNITS = 1000000


def ratios():
    return {k: v["median"] for k, v in json.loads(NATIVE.read_text())["ratio"].items()}


def per_unit(off):
    """Cycles per unit of each loop, the native ratios off by `off` (kind ->
    relative error) from a chase at 200 cycles."""
    r = ratios()
    out = {"chase": 200.0}
    for kind in ("rand", "stream", "hash"):
        out[kind] = 200.0 / (r[kind] * (1 + off.get(kind, 0.0)))
    return out


def write_logs(tmp, grid, main=0, main_off=None, name="t"):
    """grid: [(cpi, rob, mshr, off)]; the main timing has the parameters of
    grid[main] and the cycles of main_off (default: that point's)."""
    cfg = (f"config colors=32 line=64 cpi={grid[main][0]:g} rob={grid[main][1]} mshr={grid[main][2]} "
           f"lat_l2=12 lat_llc=40 lat_mem=200 lat_seq=200 sync=10000 pf=16 pf_xlat=16 ram_mib=1024 "
           + " ".join(f"g{k}={c:g}:{r}:{m}" for k, (c, r, m, _) in enumerate(grid)))
    ser, sim = ["=== PCTEST cmdline: page_colors=32", "=== PCTEST cpus: 2"], [cfg]
    main_pu = per_unit(main_off if main_off is not None else grid[main][3])
    for tag, kind, spec in LOOPS:
        ser.append(f"=== PCTEST RUN llcsim run {spec} {tag}")
        ser.append(f"LLCSIM-RUN tag={tag} role=alone spec={spec} units={UNITS} cpu=0 sink=1")
        stream = kind == "stream"
        g = " ".join(f"g{k}_u_cycles={per_unit(off)[kind] * UNITS:.0f}" for k, (_, _, _, off) in enumerate(grid))
        sim.append(f"dump seq={tag} tag={tag} vcpu=0 u_insns=4000000 u_acc={UNITS} u_l1m={UNITS} "
                   f"u_l2m={0 if stream else UNITS} u_llcm={0 if stream else UNITS} u_seqm=0 u_ovlm=0 "
                   f"u_stall=1 u_cycles={main_pu[kind] * UNITS:.0f} u_pf={UNITS if stream else 0} u_pfm=0 "
                   f"k_insns=0 k_acc=0 k_l1m=0 k_l2m=0 k_llcm=0 k_seqm=0 k_ovlm=0 k_stall=0 k_cycles=0 "
                   f"k_pf=0 k_pfm=0 {g} acc_by_vcpu={UNITS}/0")
    (tmp / f"{name}.serial.log").write_text("\n".join(ser) + "\n")
    (tmp / f"{name}.sim.log").write_text("\n".join(sim) + "\n")
    return ["--run", str(tmp / f"{name}.serial.log"), str(tmp / f"{name}.sim.log"), "0", "1"]


def calibrate(tmp, *runs):
    out, profile = tmp / "llcsim-calibration.md", tmp / "profile.env"
    p = subprocess.run([sys.executable, str(CALIBRATE), "--native", str(NATIVE), "--profile", str(profile),
                        "--out", str(out), "--cmd", "test"] + [a for r in runs for a in r],
                       capture_output=True, text=True)
    return p, out.read_text() if out.exists() else "", profile.read_text() if profile.exists() else ""


GRID = [(0.3, 160, 12, {"rand": 0.30, "hash": -0.2}), (0.4, 224, 13, {"rand": 0.02, "stream": -0.05}),
        (0.4, 320, 14, {"rand": 0.10, "hash": 0.12}), (0.5, 320, 16, {"stream": -0.4})]


def test_the_fit_picks_the_smallest_worst_error(tmp_path):
    p, page, profile = calibrate(tmp_path, write_logs(tmp_path, GRID))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok - fit: every loop within 15% of native at the best point (worst 5.0%)" in p.stdout
    assert "CPI=0.4\nROB=224\nMSHR=13\nPF=16\nPF_XLAT=16\nLAT_SEQ=200\n" in profile
    assert "| stream | 72.72x (42.56-78.37) | 69.08x | -5.0% | PASS |" in page
    assert "FAIL" not in page


def test_two_prefetch_distances_are_two_runs(tmp_path):
    worse = [(c, r, m, {k: v * 2 for k, v in off.items()}) for c, r, m, off in GRID]
    a = write_logs(tmp_path, worse, name="a")
    b = write_logs(tmp_path, GRID, name="b")
    (tmp_path / "b.sim.log").write_text((tmp_path / "b.sim.log").read_text().replace("pf=16 ", "pf=4 ", 1))
    p, _, profile = calibrate(tmp_path, a, b)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PF=4\n" in profile and "ROB=224\n" in profile


def test_a_fit_off_by_more_than_15_percent_fails(tmp_path):
    bad = [(c, r, m, {"rand": 0.32, "stream": -0.9, "hash": 0.7}) for c, r, m, _ in GRID]
    p, page, profile = calibrate(tmp_path, write_logs(tmp_path, bad))
    assert p.returncode == 1
    assert "not ok - fit: every loop within 15% of native at the best point (worst 90.0%)" in p.stdout
    assert "FAIL: fit" in page
    assert "CPI=" in profile      # the best fit is still recorded, the page says it fails


def test_a_grid_that_disagrees_with_the_main_timing_fails(tmp_path):
    p, _, profile = calibrate(tmp_path, write_logs(tmp_path, GRID, main=1, main_off={"rand": 0.5}))
    assert p.returncode == 1
    assert "not ok - pf=16: the grid point of the main timing" in p.stdout
    assert profile == ""


def analyze_mlp(tmp, off):
    write_logs(tmp, [(0.4, 224, 13, off)])
    out = tmp / "llcsim-mlp.md"
    return subprocess.run([sys.executable, str(ANALYZE), "mlp", "--serial", str(tmp / "t.serial.log"),
                           "--sim", str(tmp / "t.sim.log"), "--boot-rc", "0", "--secs", "1",
                           "--calibration", str(NATIVE), "--tolerance", "0.15", "--out", str(out),
                           "--cmd", "test"], capture_output=True, text=True)


def test_mlp_check_passes_within_the_tolerance(tmp_path):
    p = analyze_mlp(tmp_path, {"rand": 0.14, "stream": -0.14, "hash": 0.05})
    assert "ok - calibration: a rand load 15.62x cheaper than a chase load, natively 13.70x (+14%, limit 15%)" \
        in p.stdout
    assert "not ok - calibration" not in p.stdout


def test_mlp_check_fails_with_the_uncalibrated_errors(tmp_path):
    """llcsim-mlp.md's overlap model before the calibration: +32%, -90%, +70%."""
    p = analyze_mlp(tmp_path, {"rand": 0.32, "stream": -0.90, "hash": 0.70})
    assert p.returncode == 1
    for kind in ("rand", "stream", "hash"):
        assert f"not ok - calibration: a {kind} load" in p.stdout


NATIVE_STUDY = LLCSIM.parents[1] / "docs" / "results" / "native-study.md"
CORUN_HEAD = """| hash table MB | actual MB | build rows | / C | alone s | resolution | beside stream | beside seq scan | beside hash join |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""
ONE_L3_HEAD = """### Pairs with both vCPUs in one L3

| hash table MB | pairs in one L3 (stream/scan/hash join) | resolution | beside stream, one L3 | beside seq scan, one L3 | beside hash join, one L3 |
| --- | --- | --- | --- | --- | --- |
"""


def study_page(settings, run, rounds, rows):
    """A native study page as native_study.write lays it out: its header, then the co-run table of `rows`."""
    return (f"# Native study\n\n- Machine: test\n- PostgreSQL 15.20 (Debian); {settings}mccdb C = 8.0 MB (sysfs)\n"
            f"- Run: {run}\n- Command: `.venv/bin/python -m mccdb_bench.native_study --db ssb --rounds {rounds}`\n\n"
            + CORUN_HEAD + rows)


STUDY_PAGE = study_page("shared_buffers 4GB, work_mem 64MB; ", "2026-11-26 23:00, 20.0 min", 16, """\
| 0.25 | 0.23 | 4,915 | 0.031 | 0.386 (0.383-0.391) | +-0.8% | **1.05 (1.03-1.07)** | 1.00 (0.98-1.02) | 1.00 (0.98-1.02) |
| 0.5 | 0.46 | 9,830 | 0.062 | 0.393 (0.391-0.396) | +-0.8% | **1.14 (1.02-1.21)** | 1.01 (1.00-1.04) | 1.00 (0.98-1.02) |
""") + "\n" + ONE_L3_HEAD + """\
| 0.25 | 11/9/10 of 16 | +-0.8% | **1.12 (1.05-1.20)** | 1.00 (0.98-1.02) | 1.00 (0.98-1.02) |
| 0.5 | 2/9/10 of 16 | +-0.8% | - | 1.01 (1.00-1.04) | 1.00 (0.98-1.02) |
"""


def test_the_native_curve_is_read_from_the_study_page(tmp_path):
    """curve_from_page reads what native_study.write put on the page, so no
    number is typed in by hand; a page without the table is refused."""
    from mccdb_bench.native_study import curve_from_page
    c = curve_from_page(NATIVE_STUDY)
    assert [s["mb"] for s in c["sizes"]] == [0.25, 0.5, 1, 2, 4, 8, 16, 32]
    assert c["sizes"][0]["build_rows"] == 4915
    assert all(s["stream"]["lo"] <= s["stream"]["median"] <= s["stream"]["hi"] for s in c["sizes"])
    assert c["rounds"] >= 10 and c["effective_llc_mb"] == 8.0 and c["date"].endswith(" UTC")
    page = tmp_path / "study.md"
    page.write_text(STUDY_PAGE)
    c = curve_from_page(page)
    assert c["placement"] == "one L3" and c["rounds"] == 16
    # 0.25 MB: the one-L3 cells; 0.5 MB: too few pairs beside the stream in one L3, its cell over all
    # pairs, the scan's and the hash join's in one L3
    assert c["sizes"] == [{"mb": 0.25, "build_rows": 4915, "alone_s": 0.386, "pairs": 11,
                           "stream": {"median": 1.12, "lo": 1.05, "hi": 1.2},
                           "beside": {"stream": {"median": 1.12, "lo": 1.05, "hi": 1.2, "pairs": 11},
                                      "scan": {"median": 1.0, "lo": 0.98, "hi": 1.02, "pairs": 9},
                                      "hj": {"median": 1.0, "lo": 0.98, "hi": 1.02, "pairs": 10}}},
                          {"mb": 0.5, "build_rows": 9830, "alone_s": 0.393, "pairs": None,
                           "stream": {"median": 1.14, "lo": 1.02, "hi": 1.21},
                           "beside": {"stream": {"median": 1.14, "lo": 1.02, "hi": 1.21, "pairs": None},
                                      "scan": {"median": 1.01, "lo": 1.0, "hi": 1.04, "pairs": 9},
                                      "hj": {"median": 1.0, "lo": 0.98, "hi": 1.02, "pairs": 10}}}]
    page.write_text(STUDY_PAGE.split("### Pairs")[0])
    assert curve_from_page(page)["placement"] == "not measured"
    assert curve_from_page(page)["sizes"][0]["stream"]["median"] == 1.05
    bad = tmp_path / "page.md"
    bad.write_text("# Native study\n\nno table\n")
    with pytest.raises(ValueError, match="no co-run table"):
        curve_from_page(bad)


# a native study page of known numbers for pg-validate (2, 8 and 32 MB)
VALIDATION_STUDY = study_page("", "2026-11-26 04:09, 15.4 min", 10, """\
| 2 | 1.85 | 39,321 | 0.25 | 0.478 (0.467-0.497) | +-3.8% | **2.49 (1.84-2.90)** | 1.01 (0.89-1.06) | 1.00 (0.96-1.01) |
| 8 | 7.40 | 157,286 | 1 | 1.025 (0.990-1.064) | +-1.8% | **1.21 (1.10-1.93)** | 1.02 (1.01-1.16) | 0.99 (0.94-1.02) |
| 32 | 29.60 | 629,145 | 4 | 1.410 (1.389-1.429) | +-1.8% | **1.65 (1.35-1.74)** | 1.02 (0.99-1.03) | 1.01 (0.99-1.04) |
""")
ONE_L3 = "\n" + ONE_L3_HEAD + """\
| 2 | 7/9/10 of 10 | +-3.8% | **2.60 (2.00-2.95)** | 1.00 (0.98-1.02) | 1.00 (0.98-1.02) |
| 8 | 2/9/10 of 10 | +-1.8% | - | 1.01 (1.00-1.04) | 1.00 (0.98-1.02) |
| 32 | 8/9/10 of 10 | +-1.8% | **1.70 (1.60-1.80)** | 1.01 (1.00-1.04) | 1.00 (0.98-1.02) |
"""


def write_pg_logs(tmp, slowdowns, drop_tag=None, sizes="2,32", extra=None, one_l3=False, stream=None):
    """pg/hjstream's output for native sizes (MB) at scale 4 (2 MB: 9830
    build rows, 8 MB: 39321, 32 MB: 157286), one repetition; slowdowns:
    rows -> co-run / alone; extra: tag -> more counters for its dump line;
    against VALIDATION_STUDY (one_l3: with its pairs in one L3); stream:
    lines vCPU 1 took from memory a cycle beside each co-run (its dump
    under the tag + 2000, as pg/hjstream counts it).
    Returns analyze.py pgvalidate's process and the page it wrote."""
    ser = ["=== PCTEST cmdline: page_colors=32", "=== PCTEST cpus: 2", "ok 1 - server on vCPU 0"]
    sim = ["config colors=32 line=64 cpi=0.4 rob=224 mshr=13 pf=16 pf_xlat=16"]
    tag = 1
    for rows, slow in slowdowns.items():
        for phase, cycles in (("alone", 10_000_000), ("stream", int(10_000_000 * slow))):
            ser.append(f"LLCSIM-PG tag={tag} rep=1 rows={rows} phase={phase}")
            if tag != drop_tag:
                sim.append(f"dump seq={tag} tag={tag} vcpu=0 u_insns=1 u_acc=1 u_l1m=1 u_l2m=1 u_llcm=1 u_seqm=0 "
                           f"u_cycles={cycles - 1000} k_insns=0 k_acc=0 k_l1m=0 k_l2m=0 k_llcm=0 k_seqm=0 "
                           f"k_cycles=1000 acc_by_vcpu=1/0" + (" " + extra(tag) if extra else ""))
            if stream and phase == "stream":
                sim.append(f"dump seq={tag} tag={tag + 2000} vcpu=1 u_pfm={int(cycles * stream) - 10} u_llcm=5 "
                           f"u_cycles={cycles - 1000} k_pfm=0 k_llcm=5 k_cycles=1000 acc_by_vcpu=0/1")
            tag += 1
    (tmp / "p.serial.log").write_text("\n".join(ser) + "\n")
    (tmp / "p.sim.log").write_text("\n".join(sim) + "\n")
    (tmp / "native-study.md").write_text(VALIDATION_STUDY + (ONE_L3 if one_l3 else ""))
    out = tmp / "llcsim-pg-validation.md"
    p = subprocess.run([sys.executable, str(ANALYZE), "pgvalidate", "--serial", str(tmp / "p.serial.log"),
                        "--sim", str(tmp / "p.sim.log"), "--boot-rc", "0", "--secs", "1", "--out", str(out),
                        "--native-study", str(tmp / "native-study.md"), "--sizes", sizes, "--scale", "4", "--cmd", "test"],
                       capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def test_pg_validation_within_30_percent_or_the_interval(tmp_path):
    p, page = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "# validation: 1 of 2 sizes within 30% of native or inside its interval" in p.stdout
    assert "| 2 | 0.5 | 9830 | 1e+07 | 2.00x | 2.49x (1.84-2.90) | -20% | PASS |" in page
    assert "| 32 | 8 | 157286 | 1e+07 | 1.00x | 1.65x (1.35-1.74) | -39% | FAIL |" in page


def test_pg_validation_inside_the_interval_passes_beyond_30_percent(tmp_path):
    """2 MB: 1.70x is -32% of 2.49x and outside 1.84-2.90; 8 MB: +40% of 1.21x but inside 1.10-1.93."""
    p, page = write_pg_logs(tmp_path, {9830: 1.70, 39321: 1.70}, sizes="2,8")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| 2 | 0.5 | 9830 | 1e+07 | 1.70x | 2.49x (1.84-2.90) | -32% | FAIL |" in page
    assert "| 8 | 2 | 39321 | 1e+07 | 1.70x | 1.21x (1.10-1.93) | +40% | PASS |" in page


def test_pg_validation_against_the_pairs_in_one_l3(tmp_path):
    """With the one-L3 table the native column is those pairs' (8 MB: too few, all pairs)."""
    p, page = write_pg_logs(tmp_path, {9830: 2.0, 39321: 1.5, 157286: 1.0}, sizes="2,8,32", one_l3=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "the pairs whose co-run had both vCPUs in one L3" in page
    assert "| 2 | 0.5 | 9830 | 1e+07 | 2.00x | 2.60x (2.00-2.95, 7 pairs) | -23% | PASS |" in page
    assert "| 8 | 2 | 39321 | 1e+07 | 1.50x | 1.21x (1.10-1.93, all) | +24% | PASS |" in page
    assert "| 32 | 8 | 157286 | 1e+07 | 1.00x | 1.70x (1.60-1.80, 8 pairs) | -41% | FAIL |" in page


def test_pg_validation_a_missing_query_fails(tmp_path):
    p, _ = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0}, drop_tag=3)
    assert p.returncode == 1
    assert "not ok - every measured query has its counters (1 without)" in p.stdout


def test_pg_validation_shows_the_streams_rate(tmp_path):
    """The co-run table has the lines vCPU 1 took from memory a modeled cycle beside each size's query
    (its dump under the query's tag + 2000), median over the repetitions."""
    bw = lambda tag: "u_bwlat=100 k_bwlat=0"  # noqa: E731  (the bandwidth term on: the co-run table is made)
    p, page = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0}, extra=bw, stream=0.25)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "the stream's lines from memory a cycle |" in page
    row = next(ln for ln in page.splitlines() if ln.startswith("| 2 | 1 | 1 | 1.00x |"))
    assert row.endswith("| 0.250 |"), row
    p, page = write_pg_logs(tmp_path, {9830: 2.0, 157286: 1.0}, extra=bw)
    assert next(ln for ln in page.splitlines() if ln.startswith("| 2 | 1 | 1 | 1.00x |")).endswith("| - |")
