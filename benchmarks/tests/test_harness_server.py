"""End-to-end on the server of the libpq environment (PGHOST/PGPORT, mccdb preloaded):
a database created and dropped here, SSB and TPC-H at SF 0.01, held batches,
co-runs, and Figure 6 --quick."""
import os
import subprocess
import sys
import uuid

import pytest

psycopg = pytest.importorskip("psycopg")

from mccdb_bench.harness import pg, pgbouncer, sqlfiles  # noqa: E402

pytestmark = pytest.mark.skipif(not (os.environ.get("PGHOST") or os.environ.get("PGPORT")),
                                reason="no server in the libpq environment (PGHOST/PGPORT)")


@pytest.fixture(scope="module")
def db():
    name = f"mccdb_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname="postgres", autocommit=True) as c:
        c.execute(f"create database {name}")
    env = {**os.environ, "PGDATABASE": name}
    try:
        subprocess.run([sys.executable, "-m", "mccdb_bench.ssb_generate", "--scale", "0.01",
                        "--progress", "none"], check=True, env=env, capture_output=True)
        r = subprocess.run([sys.executable, "-m", "mccdb_bench.tpch_load", "--scale", "0.01",
                            "--schema", "tpch", "--progress", "none"], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "check ok" in r.stdout
        with psycopg.connect(dbname=name, autocommit=True) as c:
            c.execute("create extension if not exists mccdb")
        yield name
    finally:
        pg.reset_schedule("postgres")
        with psycopg.connect(dbname="postgres", autocommit=True) as c:
            c.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = %s", (name,))
            c.execute(f"drop database if exists {name}")


def test_tpch_queries_run(db):
    with pg.connect(db, ["set search_path = tpch, public"]) as c:
        for n in (1, 3, 6, 15, 22):
            pg.timed(c, sqlfiles.tpch(n))
        assert c.execute(sqlfiles.tpch(1)).fetchall()[0][0] == "A"


def test_session_settings(db):
    q = pg.Query("PLQ_3 hash", sqlfiles.plq(3), sqlfiles.force("hash"))
    with pg.session(q, db) as c:
        assert c.execute("show max_parallel_workers_per_gather").fetchone()[0] == "0"
        assert c.execute("show enable_nestloop").fetchone()[0] == "off"
        plan = "\n".join(r[0] for r in c.execute("explain " + q.sql))
        assert "Hash Join" in plan and "Nested Loop" not in plan


def test_alone_vs_corun_pairs_rounds(db):
    t = pg.Query("PLQ_3 hash", sqlfiles.plq(3), sqlfiles.force("hash"))
    o = pg.Query("PLQ_25 index", sqlfiles.plq(25), sqlfiles.force("index"))
    alone, co = pg.alone_vs_corun(t, [o], 2, db)
    assert len(alone) == len(co) == 2 and min(alone + co) > 0
    m = pg.alone_vs_corun_cpu(t, [o], 2, db)
    assert len(m["alone"]) == len(m["co"]) == 2
    assert len(m["alone_cpu"]) == len(m["co_cpu"]) in (0, 2)
    assert all(0 < cpu <= wall * 1.5 for cpu, wall in zip(m["alone_cpu"], m["alone"]))


def test_held_batch_under_mls(db):
    pg.set_schedule("mls", db)
    try:
        qs = [pg.Query(f"PLQ_{n}", sqlfiles.plq(n), sqlfiles.force(p) + ["set mccdb.min_cost = 0"])
              for n, p in ((2, "hash"), (2, "hash"), (2, "index"), (2, "index"))]
        total, per = pg.run_batch(qs, "mls", db)
        with pg.connect(db) as c:
            admitted = c.execute("select count(*) from mccdb_recent_queries where pid = any(%s) "
                                 "and admitted is not null", ([x["pid"] for x in per],)).fetchone()[0]
    finally:
        pg.set_schedule("off", db)
    assert admitted == 4
    assert total >= max(x["exec"] for x in per) * 0.99
    assert all(0 < x["exec"] <= x["response"] + 0.05 for x in per)


def test_fig6_quick_end_to_end(db, tmp_path):
    from mccdb_bench import fig6
    res, rows = fig6.main(["--quick", "--no-guard", "--db", db, "--outdir", str(tmp_path), "--plq", "1,25", "--quiet"])
    md = res.write().read_text()
    assert (tmp_path / "fig6-co-scheduling-quick.png").exists()
    assert {r[2] for r in rows} == {"off", "sls", "mls", "adaptive", "predictive"}
    assert all(r[-2] == "1.00" for r in rows if r[2] == "off")
    # every row has its ratio over the zero-interference limit (its value is a
    # measurement, and at SF 0.01 with one repetition it is mostly timer noise)
    assert all(float(r[-1].split()[0]) > 0 for r in rows), rows
    assert "| PLQ_25 |" in md and "- Command: `" in md
    with pg.connect(db) as c:
        assert c.execute("select policy from mccdb_scheduler()").fetchone()[0] == "off"


def test_sec73_end_to_end(db, tmp_path):
    from mccdb_bench import sec73
    res, rows = sec73.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet",
                            "--reps", "2", "--instances", "2", "--plq", "1,13"])
    md = res.write().read_text()
    # three configurations per PLQ, the stock server included, ratios over stock
    assert [(r[0], r[1]) for r in rows] == [(f"PLQ_{n}", k) for n in (1, 13) for k in ("stock", "off", "mccdb")]
    assert all(r[3] == "1.00 (1.00-1.00)" for r in rows if r[1] == "stock"), rows
    assert all(r[4] and set(r[4].replace(";", ",").replace(" ", "").split(",")) <= {"hash", "index"}
               for r in rows if r[1] == "mccdb"), rows
    assert "| PLQ_13 | mccdb |" in md and (tmp_path / "sec7.3-plan-selection.png").exists()
    with pg.connect(db) as c:   # back on the server with mccdb preloaded, policy off
        assert c.execute("select policy from mccdb_scheduler()").fetchone()[0] == "off"


def test_throughput_end_to_end(db, tmp_path):
    from mccdb_bench import throughput
    res, per = throughput.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--clients", "2",
                                "--per-client", "2", "--reps", "1", "--tpch", "1,6",
                                "--configs", "stock,off,predictive"])
    md = res.write().read_text()
    assert set(per) == {"stock", "off", "predictive"}
    # fixed work: every configuration ran every query of the streams
    assert all(len(d["qph"]) == 1 and d["qph"][0] > 0 for d in per.values()), per
    assert per["stock"]["qph_rel"] == [1.0]
    assert "| predictive |" in md and (tmp_path / "throughput.png").exists()
    with pg.connect(db) as c:   # back on the server with mccdb preloaded, policy off
        assert c.execute("select policy from mccdb_scheduler()").fetchone()[0] == "off"


def test_pgbench_mix_end_to_end(db, tmp_path):
    from mccdb_bench import pgbench_mix
    res, per = pgbench_mix.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--clients", "2",
                                 "--per-client", "2", "--reps", "1", "--configs", "stock,predictive"])
    md = res.write().read_text()
    assert per["stock"]["qph_rel"] == [1.0] and per["predictive"]["qph"][0] > 0, per
    assert "`pgbench -n -c 2 -t 2" in md and "PLQ_12 index" in md


@pytest.mark.skipif(not pgbouncer.binary(), reason="pgbouncer is not installed (scripts/install-deps.sh installs it)")
def test_workload_closed_and_open_with_the_pooler(db, tmp_path):
    from mccdb_bench import workload
    port = str(pgbouncer.free_port())
    common = ["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--reps", "1", "--clients", "2",
              "--per-client", "2", "--pooler-port", port, "--configs", "stock,pgbouncer-1,mccdb:predictive"]
    res, per = workload.main(common + ["--mix", "long"])
    md = res.write().read_text()
    # fixed work: every configuration ran both classes of the long mix, 4 queries in all
    for cfg in ("stock", "pgbouncer-1", "mccdb:predictive"):
        assert per[(None, cfg, "all analytics")]["n"] == [4.0], per
    assert per[(None, "stock", "all analytics")]["qph/stock"] == [1.0]
    assert "default_pool_size = 1" in md and (tmp_path / "scheduler-vs-pooler-long-closed.png").exists()
    res, per = workload.main(common + ["--mix", "short", "--mode", "open", "--load", "0.5", "--arrivals", "6",
                                       "--capacity", "36000", "--max-conns", "3", "--name", "open"])
    assert per[(0.5, "pgbouncer-1", "short")]["n"] == [6.0] and "load 0.5: 6 arrivals" in res.write().read_text()
    with pg.connect(db) as c:   # back on the server with mccdb preloaded, policy off
        assert c.execute("select policy from mccdb_scheduler()").fetchone()[0] == "off"


def test_learning_curve_end_to_end(db, tmp_path):
    from mccdb_bench import learning
    res, curve = learning.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--clients", "2",
                                "--queries", "6", "--step", "3", "--think", "0", "--ref-rounds", "2"])
    md = res.write().read_text()
    assert curve and curve[-1][0] >= 6
    assert "| reference |" in md and (tmp_path / "learning-curve.png").exists()


def test_calibrate_stores_and_loads_an_interference_matrix(db):
    # as a user runs it: python -m, the database from --db
    out = subprocess.run([sys.executable, "-m", "mccdb_bench.calibrate", "--db", db, "--runs", "1", "--no-guard"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "probe strong" in out.stdout and "loaded into the scheduler" in out.stdout
    with psycopg.connect(dbname=db, autocommit=True) as c:
        try:
            rows = c.execute("select target, corunner, slowdown from mccdb_interference").fetchall()
            assert len(rows) >= 4, rows  # strong and weak probes exist at any scale
            assert {r[0] for r in rows} >= {"strong", "weak"}
            assert all(0 < r[2] < 100 for r in rows), rows
            assert c.execute("select interference_loaded from mccdb_scheduler()").fetchone()[0]
        finally:
            c.execute("delete from mccdb_interference")
            c.execute("select mccdb_load_interference()")


def test_fig4_end_to_end(db, tmp_path):
    from mccdb_bench import fig4
    res, rows = fig4.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet",
                           "--plq", "1,25", "--rounds", "1"])
    md = res.write().read_text()
    assert [r[0] for r in rows] == ["PLQ_1", "PLQ_25"]
    assert "| PLQ_25 |" in md and (tmp_path / "fig4-hash-join-slowdown.png").exists()
    # a page written without the guard says so
    assert "No quiet-machine guard (--no-guard)" in md


def test_sec74_end_to_end(db, tmp_path):
    from mccdb_bench import sec74
    res, slow, slow_cpu, info, longq = sec74.main(["--no-guard", "--db", db, "--outdir", str(tmp_path),
                                                   "--quiet", "--long", "2", "--rounds", "1"])
    md = res.write().read_text()
    assert len(longq) == 2 and len(slow) == 4, (longq, slow)
    assert all(s.n == 1 and s.median > 0 for s in slow.values()), slow
    assert "- Command: `" in md and (tmp_path / "sec7.4-ssb-pairs.png").exists()


def test_overhead_and_estimation_pages(db, tmp_path):
    from mccdb_bench import estimate_accuracy, scheduler_overhead
    res = scheduler_overhead.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--rounds", "2"])
    md = res.write().read_text()
    assert "## Admission overhead without contention" in md and "| q4.3 |" in md
    res = estimate_accuracy.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--runs", "1"])
    md = res.write().read_text()
    # every SSB query and every forced PLQ hash join has a row
    assert "| q1.1 |" in md and "| plq_25 |" in md and "run 1:" in md


def test_mechanism_costs_end_to_end(db, tmp_path):
    """Three restarts per repetition; each server checked to bind and to move
    before it is measured, and the cluster given its settings back."""
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    from mccdb_bench import mechanism_costs
    names = ("mccdb.placement", "mccdb.partition", "mccdb.cpu_topology_root", "mccdb.resctrl_path", "mccdb.schedule")

    def settings():
        with pg.connect(db) as c:
            return [c.execute(f"show {k}").fetchone()[0] for k in names]
    before = settings()
    res, costs = mechanism_costs.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet",
                                       "--reps", "1", "--rounds", "20"])
    md = res.write().read_text()
    assert [c[0].split(" ")[0] for c in costs] == ["admission", "placement,", "placement,", "resctrl:", "resctrl,", "the", "the"]
    assert all(c[2].n == 1 for c in costs), costs
    assert "repetition 1, placement: PASS: domains 0;1" in md
    assert "repetition 1, resctrl: PASS: resctrl: weak plans in" in md
    assert settings() == before, "the server's settings given back"


def test_ssb_check_says_when_the_part_rows_differ(db):
    from mccdb_bench import ssb_generate
    from mccdb_bench.harness.cli import conninfo
    dsn = conninfo("", db)
    assert ssb_generate.check(dsn, part_rows=None) == []
    problems = ssb_generate.check(dsn, part_rows=5000)
    assert any("part rows" in p for p in problems), problems


def test_calibrate_host_writes_the_calibration_page(db, tmp_path, monkeypatch):
    from mccdb_bench import calibrate_host, llc_knee
    # a synthetic pointer chase (the real one is timed, and make test is no quiet machine):
    # 15 ns from 1 to 8 MiB, memory latency from 16 to 64 MiB
    pts = [(1 << (20 + i), 15.0 if i <= 3 else 110.0) for i in range(7)]
    monkeypatch.setattr(llc_knee, "measure", lambda: pts)
    try:
        res = calibrate_host.main(["--no-guard", "--db", db, "--outdir", str(tmp_path), "--quiet", "--runs", "1"])
        md = res.write().read_text()
        assert "**effective LLC 8 MB**" in md
        assert "| strong | weak |" in md and "mccdb.schedule = 'adaptive'" in md
    finally:
        with psycopg.connect(dbname=db, autocommit=True) as c:
            c.execute("delete from mccdb_interference")
            c.execute("select mccdb_load_interference()")
