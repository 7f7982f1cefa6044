"""Harness pieces that need no server: statistics, query files, tables, plots, parsing."""
import math
import pathlib
import shutil
import subprocess
import sys

import pytest

from mccdb_bench import llc_knee, tpch_load
from mccdb_bench.harness import pg, report, sqlfiles, stats

# --- statistics ---------------------------------------------------------

def test_summarize_median_and_spread():
    s = stats.summarize([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4)
    assert s.fmt() == "2.50 (1.00-10.00)"


def test_summarize_ignores_missing_and_empty():
    assert stats.summarize([None, 2.0, float("nan")]).n == 1
    assert stats.summarize([2.0]).fmt() == "2.00"
    e = stats.summarize([])
    assert e.n == 0 and math.isnan(e.median) and e.fmt() == "n/a"


def test_parse_reads_what_fmt_writes():
    s = stats.summarize([0.93, 1.0, 1.15])
    assert stats.parse(s.fmt(), 3) == stats.Summary(1.0, 0.93, 1.15, 3)
    assert stats.parse(stats.Summary(2.86, 2.5, 3.0, 3).fmt(unit="s"), 3) == stats.Summary(2.86, 2.5, 3.0, 3)
    assert stats.parse("n/a") is None and stats.parse("PLQ_1") is None


def test_ratios_are_paired():
    assert stats.ratios([2.0, 3.0], [1.0, 2.0]) == [2.0, 1.5]
    with pytest.raises(ValueError):
        stats.ratios([1.0], [1.0, 2.0])


def test_percentile():
    xs = list(range(1, 101))
    assert stats.percentile(xs, 95) == pytest.approx(95.05)
    assert stats.percentile(xs, 0) == 1 and stats.percentile(xs, 100) == 100
    assert stats.percentile([5.0], 95) == 5.0
    with pytest.raises(ValueError):
        stats.percentile([], 50)
    with pytest.raises(ValueError):
        stats.percentile([1.0], 101)


# --- query files --------------------------------------------------------

def test_strip_sql():
    assert sqlfiles.strip_sql("-- c\nselect 1 -- x\n from t;\n\n") == "select 1\n from t"
    with pytest.raises(ValueError):
        sqlfiles.strip_sql("select 1; select 2;")
    with pytest.raises(ValueError):
        sqlfiles.strip_sql("-- only a comment\n;")


def test_force_recipes():
    assert sqlfiles.force("hash") == ["set enable_nestloop = off", "set enable_mergejoin = off"]
    assert "set enable_bitmapscan = off" in sqlfiles.force("index")
    assert "set enable_indexscan = off" in sqlfiles.force("bitmap")
    assert sqlfiles.force("stock") == []


def test_read_settings_rejects_other_statements(tmp_path):
    f = tmp_path / "bad.sql"
    f.write_text("set a = 1;\nselect 1;\n")
    with pytest.raises(ValueError):
        sqlfiles.read_settings(f)


def test_every_query_file_is_one_statement():
    assert len([sqlfiles.plq(n) for n in range(1, 26)]) == 25
    ssb = sqlfiles.ssb_names()
    assert len(ssb) == 13 and all(sqlfiles.ssb(n).lower().startswith("select") for n in ssb)
    tp = [sqlfiles.tpch(n) for n in range(1, 23)]
    assert all(q.lower().startswith(("select", "with")) for q in tp)
    assert "'BUILDING'" in tp[2] and "1995-03-15" in tp[2]  # Q3 validation parameters
    with pytest.raises(ValueError):
        sqlfiles.plq(26)


# --- tables and plots ---------------------------------------------------

def test_md_table():
    t = report.md_table(["a", "b"], [[1, "x|y"]])
    assert t.splitlines() == ["| a | b |", "| --- | --- |", "| 1 | x\\|y |"]
    with pytest.raises(ValueError):
        report.md_table(["a", "b"], [[1]])


def test_result_writes_markdown_and_png(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    r = report.Result("unit", "Unit result", {"version": "15.x"}, "SF 0.01", tmp_path)
    r.table(["x"], [[1]])
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2])
    png = r.figure(fig)
    md = r.write().read_text()
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert md.startswith("# Unit result\n")
    for needle in ("- Machine: ", "- Command: `", "PostgreSQL 15.x", "Scale: SF 0.01", "Load average",
                   "![Unit result](unit.png)", "| x |"):
        assert needle in md


def test_page_tables():
    text = "# t\n\n" + report.md_table(["a", "b"], [[1, "x"], [2, "y"]]) + "\ntext\n\n" + \
        report.md_table(["c"], [[3]])
    assert report.page_tables(text) == [(["a", "b"], [["1", "x"], ["2", "y"]]), (["c"], [["3"]])]


@pytest.mark.parametrize("command,page", [("fig4", "fig4-hash-join-slowdown"),
                                          ("sec73", "sec7.3-plan-selection"),
                                          ("sec74", "sec7.4-ssb-pairs-sf8")])
def test_replot_redraws_a_page_figure_from_its_tables(tmp_path, command, page):
    """--replot reads the committed page and writes its PNG beside the copy, measuring nothing."""
    src = pathlib.Path(__file__).resolve().parents[2] / "docs" / "results" / f"{page}.md"
    shutil.copy(src, tmp_path / src.name)
    r = subprocess.run([sys.executable, "-m", f"mccdb_bench.{command}", "--replot", str(tmp_path / src.name)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    png = tmp_path / f"{page}.png"
    assert png.stat().st_size > 10000 and png.read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / src.name).read_text() == src.read_text(), "the page itself is left alone"


def test_cache_sizes_from_sysfs():
    s = report.cache_sizes()
    if not pathlib.Path("/sys/devices/system/cpu/cpu0/cache/index0").exists():
        pytest.skip("no sysfs cache description")
    assert s.startswith("L1")


# --- pointer-chase knee ---------------------------------------------------

def test_knee_parse_and_find():
    pts = llc_knee.parse("1048576 20.0\n2097152 21.0\n4194304 22.0\n8388608 30.0\n"
                         "16777216 150.0\n33554432 180.0\n67108864 181.0\n")
    k = llc_knee.knee(pts)
    assert k["effective_bytes"] == 8388608
    assert k["lat_cache_ns"] == 20.0 and k["lat_memory_ns"] == 180.0
    with pytest.raises(ValueError):
        llc_knee.knee(pts[:3])
    with pytest.raises(ValueError):
        llc_knee.parse("12 x y\n")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_knee_program_runs(tmp_path):
    exe = llc_knee.build(tmp_path)
    out = subprocess.run([str(exe), "64", "256", "1", "20000"], capture_output=True, text=True, check=True)
    pts = llc_knee.parse(out.stdout)
    assert [b for b, _ in pts] == [65536, 131072, 262144]
    assert all(ns > 0 for _, ns in pts)
    bad = subprocess.run([str(exe), "10", "5"], capture_output=True, text=True)
    assert bad.returncode == 2
    # paced: 1,024 adds in series after each load, one a cycle at best (no CPU
    # of 10 GHz), so at least 100 ns a load; ADDS must be a multiple of 64
    out = subprocess.run([str(exe), "64", "64", "1", "2000", "1024"], capture_output=True, text=True, check=True)
    assert llc_knee.parse(out.stdout)[0][1] >= 100
    bad = subprocess.run([str(exe), "64", "64", "1", "2000", "100"], capture_output=True, text=True)
    assert bad.returncode == 2 and "multiple of 64" in bad.stderr


# --- TPC-H row counts ---------------------------------------------------

def test_tpch_expected_counts():
    exact, line = tpch_load.expected_counts(1)
    assert exact["orders"] == 1_500_000 and exact["partsupp"] == 800_000 and line == (6_001_215, 0)
    exact, (centre, tol) = tpch_load.expected_counts(0.01)
    assert exact["supplier"] == 100 and exact["nation"] == 25 and centre == 60_000 and 0 < tol < 2000


def test_tpch_check_counts():
    exact, (centre, _) = tpch_load.expected_counts(0.01)
    good = dict(exact, lineitem=60_175)
    assert tpch_load.check_counts(good, 0.01) == []
    bad = dict(good, customer=1)
    assert any("customer" in e for e in tpch_load.check_counts(bad, 0.01))
    assert any("lineitem" in e for e in tpch_load.check_counts(dict(good, lineitem=70_000), 0.01))
    assert tpch_load.check_counts(dict(exact, lineitem=6_001_214), 1) != []


def test_tpch_bad_scale_exit_code():
    assert tpch_load.main(["--scale", "0"]) == 2


def test_backend_cpu_reads_schedstat():
    import os

    from mccdb_bench.harness import pg
    if not os.path.exists(f"/proc/{os.getpid()}/schedstat"):
        pytest.skip("no schedstat")
    a = pg.backend_cpu(os.getpid())
    sum(i * i for i in range(200000))
    b = pg.backend_cpu(os.getpid())
    assert a > 0 and b > a
    assert pg.backend_cpu(2 ** 22 + 12345) is None


COMMANDS = ["calibrate", "calibrate_host", "estimate_accuracy", "fig4", "fig5_table2", "fig6", "learning",
            "llc_knee", "llcsim_native", "make_plq", "make_ssb_query_tests", "mechanism_costs", "pgbench_mix",
            "native_study", "oltp_overhead", "planning_overhead", "results_index", "scheduler_overhead", "sec73", "sec74", "ssb_generate",
            "throughput",
            "tpch_load", "workload"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_runs_as_a_module(command):
    """python -m mccdb_bench.<command> --help: the package imports and parses."""
    r = subprocess.run([sys.executable, "-m", f"mccdb_bench.{command}", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout


@pytest.mark.parametrize("command", ["calibrate", "calibrate_host", "estimate_accuracy", "fig4", "fig6", "learning",
                                     "mechanism_costs", "native_study", "oltp_overhead", "pgbench_mix", "planning_overhead", "scheduler_overhead",
                                     "sec73", "sec74", "throughput", "workload"])
def test_every_experiment_shares_the_common_options(command):
    r = subprocess.run([sys.executable, "-m", f"mccdb_bench.{command}", "--help"],
                       capture_output=True, text=True, timeout=60)
    for opt in ("--db", "--outdir", "--quiet", "--no-guard"):
        assert opt in r.stdout, (command, opt)


def test_the_package_is_where_the_commands_find_the_data():
    from mccdb_bench import paths
    assert (paths.PLQ_DIR / "force_hash.sql").is_file()
    assert len(list(paths.SSB_QUERIES.glob("q*.sql"))) == 13
    assert (paths.CLUSTER_SCRIPT).is_file() and paths.RESULTS.is_dir()


def test_results_readme_is_copied_from_the_pages():
    """docs/results/README.md's index and paper table are what the pages say."""
    from mccdb_bench import results_index
    assert results_index.main(["--check"]) == 0


def test_results_index_reads_the_guard_from_the_header(tmp_path):
    from mccdb_bench import results_index
    block = "<!-- results-index\norder: 1\nkind: native\nwhat: w\nheadline: h\npaper: r | p | o\n-->\n"
    (tmp_path / "a.md").write_text("# A\n\n- Quiet-machine guard: 1-minute load < 0.5\n" + block)
    (tmp_path / "b.md").write_text("# B\n\n- Load average 4.1\n" + block.replace("order: 1", "order: 2"))
    (tmp_path / "README.md").write_text(f"# R\n\n{results_index.BEGIN}\n{results_index.END}\n")
    assert results_index.main(["--results", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "| [a](a.md) | w | guarded | h |" in text
    assert "| [b](b.md) | w | **unguarded** | h |" in text
    assert "| r | p | o | native | [a](a.md) |" in text
    assert results_index.main(["--results", str(tmp_path), "--check"]) == 0
    (tmp_path / "c.md").write_text("# C without a block\n")
    assert results_index.main(["--results", str(tmp_path), "--check"]) == 1


def test_a_page_measured_again_keeps_its_index_block_with_a_stale_headline(tmp_path):
    from mccdb_bench import results_index
    (tmp_path / "x.md").write_text("# X\n\n<!-- results-index\norder: 1\nkind: native\nwhat: w\n"
                                   "headline: 1.20x\n-->\n")
    (tmp_path / "README.md").write_text(f"# R\n\n{results_index.BEGIN}\n{results_index.END}\n")
    res = report.Result("x", "X again", outdir=tmp_path)
    res.add("new numbers")
    text = res.write().read_text()
    assert "new numbers" in text and "headline: " + report.STALE + "1.20x" in text
    # the index refuses the page until the headline is written again
    assert results_index.main(["--results", str(tmp_path)]) == 1
    (tmp_path / "x.md").write_text(text.replace(report.STALE + "1.20x", "1.05x"))
    assert results_index.main(["--results", str(tmp_path)]) == 0


def test_a_page_measured_again_keeps_its_analysis_marked_stale(tmp_path):
    from mccdb_bench import results_index
    (tmp_path / "x.md").write_text("# X\n\n<!-- analysis: by hand -->\nthe old run shows 1.20x\n"
                                   "<!-- /analysis -->\n\n<!-- results-index\norder: 1\nkind: native\n"
                                   "what: w\nheadline: 1.20x\n-->\n")
    (tmp_path / "README.md").write_text(f"# R\n\n{results_index.BEGIN}\n{results_index.END}\n")
    res = report.Result("x", "X again", outdir=tmp_path)
    res.add("new numbers")
    text = res.write().read_text()
    assert "the old run shows 1.20x" in text and report.ANALYSIS_STALE in text
    assert text.index("new numbers") < text.index("the old run") < text.index("<!-- results-index")
    # measured a third time: still one stale mark, still one analysis
    text = res.write().read_text()
    assert text.count(report.ANALYSIS_STALE) == 1 and text.count("<!-- /analysis -->") == 1
    (tmp_path / "x.md").write_text(text.replace(report.STALE + "1.20x", "1.05x"))
    assert results_index.main(["--results", str(tmp_path)]) == 1     # the analysis is still stale
    (tmp_path / "x.md").write_text(text.replace(report.STALE + "1.20x", "1.05x")
                                   .replace(report.ANALYSIS_STALE + "\n\n", ""))
    assert results_index.main(["--results", str(tmp_path)]) == 0


def test_cluster_name_is_the_one_pg_cluster_env_gave():
    # PostgreSQL 18's cluster bench has its socket in run/bench-pg18: the
    # restart must name bench (pg-cluster.sh adds the suffix itself)
    env = {"PGHOST": "/w/var/run/bench-pg18", "MCCDB_CLUSTER": "bench"}
    assert pg.cluster_name(env) == "bench"
    assert pg.cluster_name({"PGHOST": "/w/var/run/test"}) == "test"
    assert pg.cluster_name({"PGHOST": "localhost", "MCCDB_CLUSTER": "bench"}) is None
    assert pg.cluster_name({}) is None
