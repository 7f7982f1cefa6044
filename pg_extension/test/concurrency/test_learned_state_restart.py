"""What the scheduler learned survives a clean restart, as pg_stat_statements' entries do.

The postmaster writes the learned run times, rate, matrix cells, query
statistics and hash table sizes to pg_stat/ at a clean shutdown and reads
them back (removing the files) at the next start; a damaged or foreign file
is ignored with a LOG line and the server starts with nothing learned.
Restarts the project cluster the libpq environment points at
(scripts/pg-cluster.sh restart).
"""
import os

import psycopg
import pytest

from conftest import GATE_SETTINGS, cluster, configure, connect, query, server_log

FILES = ("mccdb_learned.stat", "mccdb_table_sizes.stat")


@pytest.fixture
def server():
    """A session for the test; the settings reset afterwards on a new one
    (the restart ends every session, so conftest's ctl cannot be used)."""
    c = connect()
    yield c
    c.close()
    with connect() as c:
        for k in GATE_SETTINGS:
            c.execute(f"alter system reset mccdb.{k}")
        c.execute("select pg_reload_conf()")


def learned(c, sql):
    stats = c.execute("select queryid, admissions, coruns from mccdb_query_stats "
                      "where queryid = (select queryid from mccdb_query_stats order by admissions desc limit 1)"
                      ).fetchone()
    rate = c.execute("select seconds_per_cost, rate_samples from mccdb_run_time_model()").fetchone()
    plan = c.execute("explain (format json) " + sql).fetchone()[0][0]["MCC-DB"]
    sources = sorted(t["Size Source"] for t in plan["Tables"])
    return stats, rate, sources


def run_gated(sql, times):
    with connect() as c:
        c.execute("set max_parallel_workers_per_gather = 0")
        c.execute("set mccdb.min_cost = 0")
        for _ in range(times):
            c.execute(sql).fetchall()


def test_learned_state_survives_a_clean_restart(server):
    server.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
    configure(server, schedule="predictive")
    sql = query(server, "q2.1", "ssb")
    run_gated(sql, 3)
    before = learned(server, sql)
    assert before[0][1] >= 3 and before[1][1] >= 1 and "learned" in before[2], before
    data = cluster("restart") / "data"
    with connect() as c:
        assert learned(c, sql) == before
    for f in FILES:
        assert not (data / "pg_stat" / f).exists(), f"{f} is removed once read"


def test_a_damaged_state_file_is_ignored_with_a_log_line(server):
    configure(server, schedule="predictive")
    sql = query(server, "q2.1", "ssb")
    run_gated(sql, 1)
    dir_ = cluster("stop")
    for f in FILES:
        path = dir_ / "data" / "pg_stat" / f
        assert path.exists(), f"a clean shutdown writes {f}"
        path.write_bytes(b"not what mccdb wrote" + path.read_bytes()[20:])
    with server_log() as log:
        cluster("restart")
    with connect() as c:
        assert c.execute("select count(*) from mccdb_query_stats").fetchone()[0] == 0
        plan = c.execute("explain (format json) " + sql).fetchone()[0][0]["MCC-DB"]
        assert {t["Size Source"] for t in plan["Tables"]} == {"planner"}
    for name in FILES:
        assert f'ignoring invalid file "pg_stat/{name}"' in log.text, log.text[-2000:]
        assert not (dir_ / "data" / "pg_stat" / name).exists()


def test_a_truncated_sizes_file_is_ignored_whole(server):
    # entries read before the damage are not kept: the file is ignored, as logged
    configure(server, schedule="predictive")
    sql = query(server, "q2.1", "ssb")
    run_gated(sql, 1)
    dir_ = cluster("stop")
    path = dir_ / "data" / "pg_stat" / "mccdb_table_sizes.stat"
    data = path.read_bytes()
    header, entry = 16, 40      # MccdbSnapshotHeader, LearnedSize
    assert len(data) >= header + 2 * entry, "q2.1 has more than one hash table"
    path.write_bytes(data[:header + entry + entry // 2])
    cluster("restart")
    with connect() as c:
        plan = c.execute("explain (format json) " + sql).fetchone()[0][0]["MCC-DB"]
        assert {t["Size Source"] for t in plan["Tables"]} == {"planner"}


PG_MAJOR = int(os.environ.get("MCCDB_PG_MAJOR", "15"))


def counters_and_learned(c, sql):
    """(admissions, coruns) of the query, and what was learned of it."""
    stats, rate, sources = learned(c, sql)
    alone = c.execute("select alone_s from mccdb_query_stats where queryid = %s", (stats[0],)).fetchone()
    return stats[1:], (stats[0], alone, rate, sources)


def test_the_counters_are_where_pg_stat_views_keep_theirs(server):
    # 18: a kind of the server's cumulative statistics, in pg_stat/pgstat.stat
    # with every pg_stat view's; removing that file loses them and keeps what
    # mccdb learned.  Before 18 mccdb's own file keeps both.
    server.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
    configure(server, schedule="predictive")
    sql = query(server, "q2.1", "ssb")
    run_gated(sql, 2)
    counts, known = counters_and_learned(server, sql)
    assert counts[0] >= 2, counts
    dir_ = cluster("stop")
    (dir_ / "data" / "pg_stat" / "pgstat.stat").unlink()
    cluster("restart")
    with connect() as c:
        counts_after, known_after = counters_and_learned(c, sql)
    assert known_after == known, "the learned run times, rate and sizes are mccdb's"
    if PG_MAJOR >= 18:
        assert counts_after == (0, 0), "the counters went with the server's statistics file"
    else:
        assert counts_after == counts, "mccdb's file keeps the counters"


@pytest.mark.skipif(PG_MAJOR < 18, reason="custom cumulative statistics kinds are PostgreSQL 18's")
def test_stats_kind_0_keeps_the_counters_in_mccdbs_memory(server):
    configure(server, schedule="predictive")
    run_gated(query(server, "q2.1", "ssb"), 1)     # an entry of kind 27 in the statistics
    server.execute("alter system set mccdb.stats_kind = 0")
    try:
        with server_log() as log:
            cluster("restart")
        # as docs/usage.md warns: the whole statistics file goes
        assert "could not find information of kind" in log.text, log.text[-2000:]
        with connect() as c:
            assert c.execute("show mccdb.stats_kind").fetchone()[0] == "0"
            c.execute("select mccdb_query_stats_reset()")
            configure(c, schedule="predictive")
            sql = query(c, "q2.1", "ssb")
        run_gated(sql, 2)
        with connect() as c:
            counts, _ = counters_and_learned(c, sql)
        assert counts[0] >= 2, counts
        # and they survive a clean restart in mccdb's file
        cluster("restart")
        with connect() as c:
            assert counters_and_learned(c, sql)[0] == counts
    finally:
        with connect() as c:
            c.execute("alter system reset mccdb.stats_kind")
        cluster("restart")


@pytest.mark.skipif(PG_MAJOR < 18, reason="custom cumulative statistics kinds are PostgreSQL 18's")
def test_stats_kind_refuses_an_id_that_is_not_a_custom_kind(server):
    with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
        server.execute("alter system set mccdb.stats_kind = 3")
    assert "Custom statistics kinds are 24 to 32" in e.value.diag.message_detail
