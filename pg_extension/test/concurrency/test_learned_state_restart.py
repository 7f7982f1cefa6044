"""What the scheduler learned survives a clean restart, as pg_stat_statements' entries do.

The postmaster writes the learned run times, rate, matrix cells, query
statistics and hash table sizes to pg_stat/ at a clean shutdown and reads
them back (removing the files) at the next start; a damaged or foreign file
is ignored with a LOG line and the server starts with nothing learned.
Restarts the project cluster the libpq environment points at
(scripts/pg-cluster.sh restart).
"""
import os
import subprocess

import psycopg
import pytest

from conftest import GATE_SETTINGS, ROOT, cluster, configure, connect, query, server_log

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


def explain_mccdb(c, sql):
    """The MCC-DB group of EXPLAIN (VERBOSE): the sizes the gate uses."""
    c.execute("set mccdb.explain = on")
    return c.execute("explain (verbose, format json) " + sql).fetchone()[0][0]["MCC-DB"]


def learned(c, sql):
    stats = c.execute("select queryid, admissions, coruns from mccdb_query_stats "
                      "where queryid = (select queryid from mccdb_query_stats order by admissions desc limit 1)"
                      ).fetchone()
    rate = c.execute("select seconds_per_cost, rate_samples from mccdb_run_time_model()").fetchone()
    plan = explain_mccdb(c, sql)
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
        plan = explain_mccdb(c, sql)
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
        plan = explain_mccdb(c, sql)
        assert {t["Size Source"] for t in plan["Tables"]} == {"planner"}


PG_MAJOR = int(os.environ.get("MCCDB_PG_MAJOR", "15"))


def counters_and_learned(c, sql):
    """(admissions, coruns) of the query, and what was learned of it."""
    stats, rate, sources = learned(c, sql)
    alone = c.execute("select alone_s from mccdb_query_stats where queryid = %s", (stats[0],)).fetchone()
    return stats[1:], (stats[0], alone, rate, sources)


def test_the_counters_are_kept_in_mccdbs_file_by_default(server):
    # mccdb.stats_kind = 0 (the default, and the only way before 18):
    # mccdb's own file keeps them, whatever happens to the server's
    server.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
    if PG_MAJOR >= 18:
        assert server.execute("show mccdb.stats_kind").fetchone()[0] == "0"
    configure(server, schedule="predictive")
    sql = query(server, "q2.1", "ssb")
    run_gated(sql, 2)
    counts, known = counters_and_learned(server, sql)
    assert counts[0] >= 2, counts
    dir_ = cluster("stop")
    (dir_ / "data" / "pg_stat" / "pgstat.stat").unlink()
    cluster("restart")
    with connect() as c:
        assert counters_and_learned(c, sql) == (counts, known), "mccdb's file keeps the counters"


def seq_scans(c, table):
    return c.execute("select seq_scan from pg_stat_user_tables where relname = %s",
                     (table,)).fetchone()[0]


def test_by_default_a_start_without_mccdb_keeps_the_servers_statistics(server):
    # With a custom kind in pgstat.stat, a start without it discards the
    # whole file (docs/usage.md, uninstalling); by default there is none.
    configure(server, schedule="predictive")
    run_gated(query(server, "q2.1", "ssb"), 1)
    server.execute("drop table if exists stats_kept; create table stats_kept (i int)")
    for _ in range(3):
        server.execute("select count(*) from stats_kept")
    server.execute("select pg_stat_force_next_flush()")
    assert seq_scans(server, "stats_kept") >= 3
    name = os.environ["MCCDB_CLUSTER"]
    try:
        with server_log() as log:
            subprocess.run([str(ROOT / "scripts" / "pg-cluster.sh"), "preload", name, "off"],
                           check=True, stdout=subprocess.DEVNULL)
        with connect() as c:
            assert seq_scans(c, "stats_kept") >= 3, "the statistics file was kept"
        assert "could not find information of kind" not in log.text, log.text[-2000:]
    finally:
        subprocess.run([str(ROOT / "scripts" / "pg-cluster.sh"), "preload", name, "on"],
                       check=True, stdout=subprocess.DEVNULL)
        with connect() as c:
            c.execute("drop table stats_kept")


@pytest.mark.skipif(PG_MAJOR < 18, reason="custom cumulative statistics kinds are PostgreSQL 18's")
def test_stats_kind_24_puts_the_counters_where_pg_stat_views_keep_theirs(server):
    # an ID (24 is PGSTAT_KIND_EXPERIMENTAL): a kind of the server's
    # cumulative statistics, in pg_stat/pgstat.stat with every pg_stat
    # view's; removing that file loses them and keeps what mccdb learned
    server.execute("alter system set mccdb.stats_kind = 24")
    try:
        cluster("restart")
        with connect() as c:
            assert c.execute("show mccdb.stats_kind").fetchone()[0] == "24"
            c.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
            configure(c, schedule="predictive")
            sql = query(c, "q2.1", "ssb")
        run_gated(sql, 2)
        with connect() as c:
            counts, known = counters_and_learned(c, sql)
        assert counts[0] >= 2, counts
        dir_ = cluster("stop")
        (dir_ / "data" / "pg_stat" / "pgstat.stat").unlink()
        cluster("restart")
        with connect() as c:
            counts_after, known_after = counters_and_learned(c, sql)
        assert known_after == known, "the learned run times, rate and sizes are mccdb's"
        assert counts_after == (0, 0), "the counters went with the server's statistics file"
        run_gated(sql, 1)
    finally:
        with connect() as c:
            c.execute("alter system reset mccdb.stats_kind")
        # as docs/usage.md warns: back to 0, the whole statistics file goes
        with server_log() as log:
            cluster("restart")
    assert "could not find information of kind" in log.text, log.text[-2000:]


@pytest.mark.skipif(PG_MAJOR < 18, reason="custom cumulative statistics kinds are PostgreSQL 18's")
def test_stats_kind_refuses_an_id_that_is_not_a_custom_kind(server):
    with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
        server.execute("alter system set mccdb.stats_kind = 3")
    assert "Custom statistics kinds are 24 to 32" in e.value.diag.message_detail


# ---- issue 48: the sizes file keeps the first mccdb.learned_tables, and
# rejects a value no run could have written

def size_queries(n):
    """n queries of different queryids, each with one hash join."""
    return ["select count(*)" + ", sum(lo_quantity)" * k +
            " from lineorder join part on p_partkey = lo_partkey where p_size < 5"
            for k in range(n)]


def learned_count(c, sqls):
    c.execute("set enable_nestloop = off")
    c.execute("set enable_mergejoin = off")
    return sum("learned" in {t["Size Source"] for t in explain_mccdb(c, sql).get("Tables", [])}
               for sql in sqls)


def learn_sizes(sqls):
    with connect() as c:
        c.execute("set max_parallel_workers_per_gather = 0")
        c.execute("set enable_nestloop = off")
        c.execute("set enable_mergejoin = off")
        for sql in sqls:
            c.execute(sql).fetchall()
        assert learned_count(c, sqls) == len(sqls), "every query's hash table was learned"


def test_a_smaller_learned_tables_keeps_the_first_ones(server):
    server.execute("select mccdb_learned_reset()")
    sqls = size_queries(21)
    learn_sizes(sqls)
    server.execute("alter system set mccdb.learned_tables = 16")
    server.close()
    try:
        with server_log() as log:
            cluster("restart")
        with connect() as c:
            kept = learned_count(c, sqls)
        assert kept == 16, f"{kept} of 21 sizes kept under mccdb.learned_tables = 16"
        assert "ignoring invalid file" not in log.text, log.text[-2000:]
    finally:
        with connect() as c:
            c.execute("alter system reset mccdb.learned_tables")
        cluster("restart")


def test_a_sizes_file_with_a_nan_size_is_ignored_whole(server):
    from test_learned_keys_and_files import HEADER, crc32c
    import struct

    server.execute("select mccdb_learned_reset()")
    sqls = size_queries(3)
    learn_sizes(sqls)
    server.close()
    path = cluster("stop") / "data" / "pg_stat" / "mccdb_table_sizes.stat"
    data = bytearray(path.read_bytes())
    _, entry_size, nentries = HEADER.unpack_from(data)
    assert nentries == 3 and len(data) == HEADER.size + nentries * entry_size + 4
    # LearnedSize ends with bytes, rows, runs: the first entry's bytes, NaN
    struct.pack_into("<d", data, HEADER.size + entry_size - 24, float("nan"))
    struct.pack_into("<I", data, len(data) - 4, crc32c(bytes(data[:-4])))
    path.write_bytes(bytes(data))
    with server_log() as log:
        cluster("restart")
    with connect() as c:
        assert learned_count(c, sqls) == 0, "a size from a file holding a NaN was used"
    assert 'ignoring invalid file "pg_stat/mccdb_table_sizes.stat"' in log.text, log.text[-2000:]
