"""The OLTP cost benchmark's pure parts (issue 49), no server: the server's
CPU time from /proc (on a made-up /proc and on the real one), the paired
statistics, the configurations, pgbench's output and log, and the page
written from made-up runs."""
import math
import os
import statistics
import subprocess
import sys

import pytest

from mccdb_bench import oltp_cost
from mccdb_bench.harness import paired, procstat

# --- /proc/PID/stat ------------------------------------------------------------


def stat_line(pid, ppid, utime, stime, cutime=0, cstime=0, comm="postgres"):
    """A /proc/PID/stat line with the fields procstat reads filled in."""
    # fields 3..13: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    mid = ["S", str(ppid), "1", "1", "0", "-1", "4194560", "10", "0", "0", "0"]
    tail = [str(utime), str(stime), str(cutime), str(cstime), "20", "0", "1", "0", "5000"]
    return f"{pid} ({comm}) " + " ".join(mid + tail) + "\n"


def write_proc(root, procs, cmdlines=None):
    """A made-up /proc: {pid: (ppid, utime, stime, cutime, cstime)}."""
    for p in list(root.iterdir()) if root.exists() else []:
        for f in p.iterdir():
            f.unlink()
        p.rmdir()
    root.mkdir(exist_ok=True)
    for pid, (ppid, u, s, cu, cs) in procs.items():
        d = root / str(pid)
        d.mkdir()
        (d / "stat").write_text(stat_line(pid, ppid, u, s, cu, cs))
        (d / "cmdline").write_bytes((cmdlines or {}).get(pid, "postgres: postgres pgbench [local] idle")
                                    .replace(" ", "\0").encode())


def test_parse_stat_reads_past_a_command_name_with_spaces_and_parentheses():
    line = stat_line(4242, 17, 120, 30, 7, 3, comm="postgres: x (y) z")
    assert procstat.parse_stat(line) == (4242, 17, 120, 30, 7, 3)
    with open(f"/proc/{os.getpid()}/stat") as f:
        me = procstat.parse_stat(f.read())
    assert me[0] == os.getpid() and me[1] == os.getppid() and min(me[2:]) >= 0


def test_tree_ticks_sums_the_postmaster_and_its_children_only(tmp_path):
    proc = tmp_path / "proc"
    write_proc(proc, {100: (1, 10, 5, 40, 20), 101: (100, 3, 2, 0, 0), 102: (100, 7, 1, 1, 1),
                      200: (1, 999, 999, 999, 999), 300: (101, 50, 50, 0, 0)})
    (proc / "self").mkdir()         # not a PID: ignored
    total, kids = procstat.tree_ticks(100, str(proc))
    assert total == (10 + 5 + 40 + 20) + (3 + 2) + (7 + 1 + 1 + 1)
    assert sorted(kids) == [101, 102]
    with pytest.raises(RuntimeError, match="not readable"):
        procstat.tree_ticks(555, str(proc))


def test_a_backend_that_came_and_went_during_the_run_is_counted(tmp_path):
    """Its time reaches the postmaster's cutime/cstime when reaped."""
    proc = tmp_path / "proc"
    write_proc(proc, {100: (1, 10, 5, 0, 0), 101: (100, 3, 2, 0, 0)})
    cpu = procstat.ServerCPU(100, str(proc)).start()
    # during the run: backend 150 lived and used 60+40 ticks; 101 used 5 more; the postmaster 1
    write_proc(proc, {100: (1, 11, 5, 60, 40), 101: (100, 6, 4, 0, 0)})
    assert cpu.stop(settle=False) == pytest.approx((1 + 100 + 5) / procstat.CLK_TCK)


def test_a_backend_alive_at_the_start_and_reaped_before_the_end_is_counted_once(tmp_path):
    proc = tmp_path / "proc"
    write_proc(proc, {100: (1, 10, 5, 0, 0), 101: (100, 30, 20, 0, 0)})
    cpu = procstat.ServerCPU(100, str(proc)).start()
    # 101 ran 10 more ticks and exited: all its 60 ticks are in the postmaster's cutime now
    write_proc(proc, {100: (1, 10, 5, 35, 25)})
    assert cpu.stop(settle=False) == pytest.approx(10 / procstat.CLK_TCK)


def test_settle_waits_for_client_backends_not_for_autovacuum(tmp_path):
    proc = tmp_path / "proc"
    write_proc(proc, {100: (1, 1, 1, 0, 0), 101: (100, 1, 1, 0, 0), 150: (100, 1, 1, 0, 0)},
               {150: "postgres: autovacuum worker pgbench"})
    assert procstat.settle(100, [101], timeout=0, proc=str(proc))
    write_proc(proc, {100: (1, 1, 1, 0, 0), 101: (100, 1, 1, 0, 0), 151: (100, 1, 1, 0, 0)})
    assert not procstat.settle(100, [101], timeout=0.05, poll=0.01, proc=str(proc))
    assert procstat.postmaster_of(151, str(proc)) == 100
    with pytest.raises(RuntimeError):
        procstat.postmaster_of(999, str(proc))


def test_server_cpu_on_the_real_proc_counts_a_child_that_exited():
    """This process as the 'postmaster': a child burns CPU and is reaped;
    the tree's time grows by at least the child's."""
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("no /proc")
    cpu = procstat.ServerCPU(os.getpid()).start()
    subprocess.run([sys.executable, "-c",
                    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"],
                   check=True)
    got = cpu.stop(settle=False)
    assert 0.25 <= got < 5.0


# --- statistics ------------------------------------------------------------------


def test_t_quantiles():
    assert paired.t975(1) == 12.706 and paired.t975(9) == 2.262 and paired.t975(30) == 2.042
    assert paired.t975(31) == pytest.approx(2.0395, abs=0.001)
    assert paired.t975(60) == pytest.approx(2.0003, abs=0.001)
    assert paired.t975(10_000) == pytest.approx(1.960, abs=0.001)
    with pytest.raises(ValueError):
        paired.t975(0)


def test_t_interval_by_hand():
    m, lo, hi = paired.t_interval([1.0, 2.0, 3.0, 4.0])
    half = 3.182 * statistics.stdev([1, 2, 3, 4]) / 2
    assert m == 2.5 and lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)
    assert paired.t_interval([7.0]) == (7.0, 7.0, 7.0)


def test_ratio_is_paired_and_drops_failed_runs():
    stock = [100.0, 200.0, 50.0, 100.0, float("nan")]
    conf = [98.0, 196.0, 49.0, 98.0, 80.0]       # 0.98 of stock in every round that has both
    r = paired.ratio(conf, stock)
    assert r.n == 4 and r.median == pytest.approx(0.98) and r.mean == pytest.approx(0.98)
    assert r.boot_lo == pytest.approx(0.98) and r.t_hi == pytest.approx(0.98)
    assert r.fmt_median() == "0.980 (0.980-0.980)"
    with pytest.raises(ValueError):
        paired.ratio([1.0], [1.0, 2.0])
    assert paired.ratio([float("nan")], [1.0]).fmt_median() == "n/a"


def test_ratio_intervals_hold_the_true_ratio_of_noisy_pairs():
    import random
    rnd = random.Random(5)
    base = [rnd.uniform(60e3, 90e3) for _ in range(40)]          # rounds swing +-20%
    conf = [b * 0.95 * math.exp(rnd.gauss(0, 0.01)) for b in base]  # 5% slower, 1% noise within a pair
    r = paired.ratio(conf, base)
    assert r.boot_lo < 0.95 < r.boot_hi and r.t_lo < 0.95 < r.t_hi
    assert r.boot_width < 0.01 and (r.t_hi - r.t_lo) / 2 < 0.01
    # the same rounds unpaired would not resolve 5%: the pairing is what does
    assert max(base) / min(base) > 1.3
    assert paired.ratio(conf, base) == r     # seeded: the page's numbers come back


def test_difference_and_its_text():
    d = paired.difference([12.0, 13.0, 11.0, 12.5], [10.0, 10.5, 9.5, 10.0])
    assert d.n == 4 and d.median == pytest.approx(2.25) and d.mean == pytest.approx(2.125)
    assert d.boot_lo <= d.median <= d.boot_hi and d.t_lo < d.mean < d.t_hi
    neg = paired.difference([1.0, 2.0, 0.5], [2.0, 2.5, 2.0])
    assert " to " in neg.fmt_median(2) and neg.fmt_median(2).startswith("-")
    assert paired.interval_text(1.5, 1.0, 2.0, 1) == "1.5 (1.0-2.0)"
    assert paired.interval_text(1.5, 1.0, 2.0, 1, n=1) == "1.5"


def test_bootstrap_interval_is_seeded_and_brackets_the_median():
    xs = [0.9, 0.95, 1.0, 1.02, 0.97, 0.99, 1.05]
    lo, hi = paired.bootstrap_ci(xs)
    assert (lo, hi) == paired.bootstrap_ci(xs) and lo <= statistics.median(xs) <= hi
    with pytest.raises(ValueError):
        paired.bootstrap_ci([])


# --- configurations and pgbench -----------------------------------------------------


def test_each_feature_differs_from_all_off_in_one_setting():
    off = oltp_cost.config("all-off")
    assert off.preload and off.server["mccdb.schedule"] == "off" and off.session["compute_query_id"] == "off"
    for name in oltp_cost.FEATURES:
        c = oltp_cost.config(name)
        merged, base = {**c.server, **c.session}, {**off.server, **off.session}
        assert merged.keys() == base.keys(), name
        assert sum(merged[k] != base[k] for k in base) == 1, name
    assert oltp_cost.config("gate-shortest").server["mccdb.schedule"] == "shortest"
    assert oltp_cost.config("placement").server["mccdb.placement"] == "on"
    assert oltp_cost.config("learn").session["mccdb.learn_table_sizes"] == "on"
    stock = oltp_cost.config("stock")
    assert not stock.preload and stock.pgoptions() == "-c synchronous_commit=off"
    assert oltp_cost.config("defaults").server == {} and oltp_cost.config("defaults").session == {}
    assert oltp_cost.config("defaults-shortest").server == {"mccdb.schedule": "shortest"}
    assert "-c mccdb.track=top" in oltp_cost.config("track-top").pgoptions()
    with pytest.raises(ValueError):
        oltp_cost.config("fast")


def test_configuration_lists():
    assert [c.name for c in oltp_cost.parse_configs("stock, all-off,queryid")] == ["stock", "all-off", "queryid"]
    for bad in ("all-off,queryid", "stock,stock", "stock,nope"):
        with pytest.raises(SystemExit):
            oltp_cost.parse_configs(bad)
    assert oltp_cost.DEFAULT_CONFIGS[:2] == ["stock", "all-off"]
    assert len(oltp_cost.parse_configs(",".join(oltp_cost.DEFAULT_CONFIGS))) == len(oltp_cost.DEFAULT_CONFIGS)


def test_run_order_is_seeded_and_a_permutation():
    cfgs = oltp_cost.parse_configs("stock,all-off,queryid,learn")
    a = oltp_cost.run_order(cfgs, 1, 0, 0)
    assert a == oltp_cost.run_order(cfgs, 1, 0, 0) and sorted(c.name for c in a) == sorted(c.name for c in cfgs)
    orders = {tuple(c.name for c in oltp_cost.run_order(cfgs, 1, r, 0)) for r in range(20)}
    assert len(orders) > 5       # not the same order every repetition


def test_pgbench_command():
    cmd = oltp_cost.pgbench_command("simple-update", "prepared", 16, 20, "pgbench", "/t/run", 0.1, cpus=2)
    assert cmd == ["pgbench", "-n", "-b", "simple-update", "-M", "prepared", "-c", "16", "-j", "2", "-T", "20",
                   "-l", "--log-prefix=/t/run", "--sampling-rate=0.1", "pgbench"]
    assert "-l" not in oltp_cost.pgbench_command("select-only", "simple", 1, 3, "db", cpus=2)
    assert "--sampling-rate=1" not in oltp_cost.pgbench_command("select-only", "simple", 1, 3, "db", "/p", 1.0)


PGBENCH_OUT = """pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
query mode: prepared
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 1 s
number of transactions actually processed: 61765
number of failed transactions: 0 (0.000%)
latency average = 0.016 ms
initial connection time = 4.669 ms
tps = 61854.875134 (without initial connection time)
"""


def test_pgbench_output_and_log():
    assert oltp_cost.parse_pgbench(PGBENCH_OUT) == {"tps": 61854.875134, "transactions": 61765, "failed": 0}
    with pytest.raises(RuntimeError):
        oltp_cost.parse_pgbench("pgbench: error: connection failed")
    lines = ["0 34 36 0 1796474720 565928", "1 400 15 0 1796474720 579885", "0 7 skipped 0 1796474720 5",
             "2 513 1400 0 1796474720 584367 12"]
    assert oltp_cost.log_latencies_us(lines) == [36, 15, 1400]
    m = oltp_cost.run_metrics({"transactions": 50_000, "server_cpu_s": 0.75, "client_cpu_s": 0.25})
    assert m == {"cpu_us_per_tx": pytest.approx(15.0), "client_cpu_us_per_tx": pytest.approx(5.0)}
    assert math.isnan(oltp_cost.run_metrics({"transactions": 0, "server_cpu_s": 1, "client_cpu_s": 1})
                      ["cpu_us_per_tx"])


def test_read_log_latencies_from_every_thread(tmp_path):
    (tmp_path / "run.123").write_text("0 1 100 0 1 1\n0 2 300 0 1 1\n")
    (tmp_path / "run.123.1").write_text("1 1 200 0 1 1\n")
    (tmp_path / "other.1").write_text("1 1 999 0 1 1\n")
    assert sorted(oltp_cost.read_log_latencies(tmp_path / "run")) == [100, 200, 300]


# --- the page ----------------------------------------------------------------------


def made_up_runs(cfgs, reps=6, cell=("select-only", "prepared", 4)):
    """Rounds that swing +-20%; all-off costs 1 us/tx more than stock, track-top
    2 us more than all-off; tps follows CPU."""
    import random
    rnd = random.Random(3)
    extra = {"stock": 0.0, "all-off": 1.0, "track-top": 3.0}
    runs = []
    for r in range(reps):
        swing = rnd.uniform(0.8, 1.2)
        for c in cfgs:
            row = {"rep": r + 1, "script": cell[0], "mode": cell[1], "clients": cell[2], "config": c.name,
                   "load_before": f"{0.1 * r:.2f} 0.5 0.5"}
            if r == 0 and c.name == "track-top":       # a failed run: out of its pairs
                row["error"] = "pgbench failed (2): connection refused"
            else:
                cpu = 20.0 + extra[c.name] + rnd.gauss(0, 0.05)
                row.update(tps=1e6 / cpu * swing, cpu_us_per_tx=cpu, p99_ms=0.5 * swing)
            runs.append(row)
    return runs


def test_feature_rows_subtract_the_right_reference():
    cfgs = oltp_cost.parse_configs("stock,all-off,track-top")
    runs = made_up_runs(cfgs)
    rows = {r[0]: r for r in oltp_cost.feature_rows(runs, ("select-only", "prepared", 4), cfgs, 6)}
    assert rows["all-off"][1] == "stock" and rows["track-top"][1] == "all-off"
    assert float(rows["all-off"][3].split()[0]) == pytest.approx(1.0, abs=0.1)
    assert float(rows["track-top"][3].split()[0]) == pytest.approx(2.0, abs=0.1)
    cell = oltp_cost.cell_rows(runs, ("select-only", "prepared", 4), cfgs, 6)
    assert [r[0] for r in cell] == ["stock", "all-off", "track-top"] and cell[0][3] == "1"
    assert float(cell[2][3].split()[0]) == pytest.approx(20 / 23, abs=0.01)


def test_the_page_from_made_up_runs(tmp_path):
    from mccdb_bench.harness import report
    cfgs = oltp_cost.parse_configs("stock,all-off,track-top")
    runs = made_up_runs(cfgs)
    res = report.Result("oltp-cost-test", "t", {"version": "15", "schedule_min_cost": "1000"}, "s", tmp_path)

    class A:
        seconds, warmup, reps, seed, log_sampling = 20, 5, 6, 1, 0.1
    oltp_cost.write_page(res, A, cfgs, [("select-only", "prepared", 4)], runs,
                         {"stock": {"synchronous_commit": "off"}}, ["mccdb.track", "mccdb.llc_size"],
                         {"SELECT abalance FROM pgbench_accounts WHERE aid = 1": 8.3}, res.server)
    text = res.text()
    assert "**1 of 18 runs failed**" in text and "at most 8.30" in text
    assert "Not varied by any configuration (each at its default): `mccdb.llc_size`" in text
    assert "| track-top | all-off | 5 |" in text
    csv_text = (tmp_path / "oltp-cost-test-runs.csv").read_text().splitlines()
    assert csv_text[0].startswith("rep,script,mode,clients,config") and len(csv_text) == 19


def test_the_command_parses():
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.oltp_cost", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "--no-guard" in r.stdout and "--log-sampling" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.oltp_cost", "--configs", "all-off"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PGHOST": "/nowhere"})
    assert r.returncode != 0 and "stock" in r.stderr


def test_target_verdicts():
    P = paired.Paired
    assert oltp_cost.tps_verdict(P(8, 0.99, 0.975, 1.005, 0.99, 0.98, 1.0)) == "met"
    assert oltp_cost.tps_verdict(P(8, 0.99, 0.95, 1.03, 0.99, 0.95, 1.03)) == "not resolved"   # too wide
    assert oltp_cost.tps_verdict(P(8, 0.90, 0.88, 0.93, 0.9, 0.88, 0.93)) == "missed"
    assert oltp_cost.tps_verdict(P(8, 0.975, 0.97, 0.985, 0.975, 0.97, 0.98)) == "not resolved"
    assert oltp_cost.tps_verdict(P(1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)) == "not resolved"
    assert oltp_cost.p99_verdict(P(8, 1.0, 0.95, 1.04, 1, 1, 1)) == "met"
    assert oltp_cost.p99_verdict(P(8, 1.2, 1.1, 1.3, 1, 1, 1)) == "missed"
    assert oltp_cost.p99_verdict(P(8, 1.04, 1.0, 1.1, 1, 1, 1)) == "not resolved"


def test_target_rows_for_the_defaults_only():
    cfgs = oltp_cost.parse_configs("stock,all-off,defaults")
    runs = [dict(r, config="defaults") if r["config"] == "all-off" else r
            for r in made_up_runs(oltp_cost.parse_configs("stock,all-off,track-top"))
            if r["config"] in ("stock", "all-off")]
    rows = oltp_cost.target_rows(runs, [("select-only", "prepared", 4)], cfgs, 6)
    assert len(rows) == 1 and rows[0][0] == "defaults" and rows[0][1] == "select-only -M prepared -c 4"
    assert rows[0][4] == "missed"       # 1 us more CPU on 20: 0.95x in every pair


def test_a_busy_machine_ends_the_experiment_but_a_failed_run_does_not(monkeypatch, tmp_path):
    """The guard's refusal is not one failed run among many: no page is written."""
    from mccdb_bench.harness import quiet
    monkeypatch.setenv("PGHOST", "/made/up")
    calls = []
    monkeypatch.setattr(oltp_cost, "is_preloaded", lambda db: True)
    monkeypatch.setattr(oltp_cost, "ensure_pgbench", lambda db, scale, say: None)
    monkeypatch.setattr(oltp_cost, "mccdb_gucs", lambda db: ["mccdb.track"])
    monkeypatch.setattr(oltp_cost, "statement_costs", lambda db: {})
    monkeypatch.setattr(oltp_cost.pg, "server_info", lambda db: {"version": "15"})
    monkeypatch.setattr(oltp_cost, "server_extras", lambda db: {"schedule_min_cost": "1000"})
    monkeypatch.setattr(oltp_cost, "restore_server", lambda db: calls.append("restored"))
    monkeypatch.setattr(oltp_cost, "_up", lambda db: False)

    def failing_apply(cfg, db, state):
        calls.append(cfg.name)
        raise RuntimeError("cluster did not restart")
    monkeypatch.setattr(oltp_cost, "apply_config", failing_apply)
    args = ["--no-guard", "--quiet", "--outdir", str(tmp_path), "--configs", "stock,all-off", "--scripts",
            "select-only", "--modes", "prepared", "--clients", "1", "--reps", "1"]
    monkeypatch.setattr(oltp_cost, "write_page", lambda *a: calls.append("page"))
    res, runs = oltp_cost.main(args)
    assert [r["error"] for r in runs] == ["cluster did not restart"] * 2 and calls[-2:] == ["restored", "page"]

    def busy(cfg, db, state):
        raise quiet.NotQuiet("the machine is not quiet")
    monkeypatch.setattr(oltp_cost, "apply_config", busy)
    calls.clear()
    with pytest.raises(quiet.NotQuiet):
        oltp_cost.main(args)
    assert calls == ["restored"]
