"""The workload generator's pure parts: Poisson schedules, the mixes,
per-class statistics, configuration names, PgBouncer's configuration."""
import os
import statistics

import pytest

from mccdb_bench import configs, workload
from mccdb_bench.harness import pgbouncer


def test_poisson_schedule_is_seeded_increasing_and_bounded():
    a = workload.poisson_schedule(2.0, 7, 1000, 10_000)
    assert a == workload.poisson_schedule(2.0, 7, 1000, 10_000)
    assert a != workload.poisson_schedule(2.0, 8, 1000, 10_000)
    assert len(a) == 1000 and all(x < y for x, y in zip(a, a[1:])) and a[0] > 0
    # bounded by the count and by the time, whichever comes first
    assert len(workload.poisson_schedule(2.0, 7, 5, 10_000)) == 5
    short = workload.poisson_schedule(2.0, 7, 1000, 30)
    assert short == [x for x in a if x < 30] and 30 < len(short) < 100
    with pytest.raises(ValueError):
        workload.poisson_schedule(0, 1, 10, 10)


def test_poisson_schedule_has_exponential_gaps_at_the_rate():
    a = workload.poisson_schedule(4.0, 1, 20_000, 1e9)
    gaps = [y - x for x, y in zip([0.0] + a, a)]
    mean = statistics.fmean(gaps)
    assert abs(mean - 0.25) < 0.01
    # exponential: the standard deviation equals the mean, P(gap > mean) = 1/e
    assert abs(statistics.pstdev(gaps) / mean - 1) < 0.05
    assert abs(sum(g > mean for g in gaps) / len(gaps) - 0.3679) < 0.02


def test_the_mixes_are_fixed():
    (share, short), = workload.mix("short")
    assert share == 1.0 and len(short) == 13 and {i.cls for i in short} == {"short"}
    assert [i.name for i in short][:2] == ["SSB q1.1", "SSB q1.2"] and all(not i.settings for i in short)
    assert workload.mix("bimodal") == workload.mix("short")
    (ls, long_), (ss, short2) = workload.mix("long")
    assert (ls, ss) == (0.75, 0.25) and short2 == short
    assert [i.name for i in long_] == ["PLQ_12 index", "PLQ_18 index", "PLQ_25 index"]
    assert all(i.cls == "long" and "set enable_hashjoin = off" in i.settings for i in long_)
    with pytest.raises(ValueError):
        workload.mix("tpch")


def test_sequences_are_seeded_and_follow_the_shares():
    groups = workload.mix("long")
    s = workload.sequence(groups, 3, 4000)
    assert s == workload.sequence(groups, 3, 4000) and s != workload.sequence(groups, 4, 4000)
    share = sum(i.cls == "long" for i in s) / len(s)
    assert abs(share - 0.75) < 0.03
    names = {i.name for i in s}
    assert len(names) == 16     # every query of the mix is drawn


def test_class_stats_percentiles_and_throughput():
    recs = [("short", x) for x in (1.0, 2.0, 3.0, 4.0, 5.0)] + [("long", 10.0), ("tpcb", 0.01)]
    st = workload.class_stats(recs, wall=3600.0)
    s = st["short"]
    assert s["n"] == 5 and s["qph"] == 5 and s["mean"] == 3.0 and s["p50"] == 3.0
    assert s["p95"] == pytest.approx(4.8) and s["p99"] == pytest.approx(4.96)
    assert st["all analytics"]["n"] == 6 and st["all analytics"]["mean"] == pytest.approx(25 / 6)
    assert st["tpcb"]["n"] == 1


def test_ratios_are_within_the_repetition():
    got = {"stock": {"short": {"qph": 100.0, "p95": 4.0, "p99": 5.0, "mean": 2.0}},
           "pgbouncer": {"short": {"qph": 50.0, "p95": 2.0, "p99": 3.0, "mean": 4.0}},
           "mccdb:predictive": {"short": {"qph": 100.0, "p95": 2.0, "p99": 5.0, "mean": 1.0}}}
    workload.add_ratios(got)
    p = got["mccdb:predictive"]["short"]
    assert p["qph/stock"] == 1.0 and p["qph/pgbouncer"] == 2.0 and p["p95/stock"] == 0.5
    assert p["mean/pgbouncer"] == 0.25 and got["stock"]["short"]["qph/stock"] == 1.0


def test_configuration_names():
    cpus = os.cpu_count() or 1
    assert configs.parse("stock") == configs.Config("stock")
    assert configs.parse("pgbouncer").pool == cpus and configs.parse("pgbouncer", cpus=3).pool == 3
    p4 = configs.parse("pgbouncer-4")
    assert p4.pool == 4 and not p4.mccdb and "default_pool_size 4" in p4.describe()
    assert configs.parse("predictive") == configs.Config("predictive", "predictive", "off")
    assert configs.parse("mls").plan_policy == "mls"
    assert configs.parse("mccdb:predictive") == configs.Config("mccdb:predictive", "predictive", "off")
    new = configs.parse("mccdb:shortest_first")
    assert new.schedule == "shortest_first" and new.mccdb and new.pool is None
    for bad in ("pgbouncer-0", "pgbouncer-x", "mccdb:", "mccdb:Drop;", "fast"):
        with pytest.raises(ValueError):
            configs.parse(bad)
    assert [c.name for c in configs.parse_list("stock, pgbouncer-2,off")] == ["stock", "pgbouncer-2", "off"]
    with pytest.raises(SystemExit):
        configs.parse_list("stock,stock")


def test_local_settings_are_set_local():
    s = configs.local_settings(2, ["set enable_hashjoin = off", "SET LOCAL jit = on", "set search_path = x"])
    assert s == ["set local max_parallel_workers_per_gather = 2", "set local jit = off",
                 "set local enable_hashjoin = off", "SET LOCAL jit = on", "set local search_path = x"]


def test_pgbouncer_configuration(tmp_path):
    text = pgbouncer.config_text(server_host="/s", server_port=5, listen_port=6, socket_dir=tmp_path,
                                 auth_file=tmp_path / "u", logfile=tmp_path / "l", pidfile=tmp_path / "p",
                                 pool_size=3)
    lines = set(text.splitlines())
    for want in ("* = host=/s port=5", "listen_addr = 127.0.0.1", "listen_port = 6", "pool_mode = transaction",
                 "default_pool_size = 3", "reserve_pool_size = 0", "auth_type = trust", "query_wait_timeout = 0"):
        assert want in lines, want
    with pytest.raises(RuntimeError):   # it needs the server's socket directory
        pgbouncer.PgBouncer(2, 6432, server_host="localhost")



def test_lone_tail_is_the_time_with_one_client_left():
    assert workload.lone_tail([10.0, 30.0, 12.5]) == 17.5
    assert workload.lone_tail([5.0, 5.0]) == 0.0
    assert workload.lone_tail([7.0]) == 0.0
