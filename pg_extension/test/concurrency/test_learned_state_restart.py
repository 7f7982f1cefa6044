"""What the scheduler learned survives a clean restart, as pg_stat_statements' entries do.

The postmaster writes the learned run times, rate, matrix cells, query
statistics and hash table sizes to pg_stat/ at a clean shutdown and reads
them back (removing the files) at the next start; a damaged or foreign file
is ignored with a LOG line and the server starts with nothing learned.
Restarts the project cluster the libpq environment points at
(scripts/pg-cluster.sh restart).
"""
import os
import pathlib
import subprocess

import pytest

from conftest import GATE_SETTINGS, configure, connect, query

ROOT = pathlib.Path(__file__).resolve().parents[3]
FILES = ("mccdb_learned.stat", "mccdb_table_sizes.stat")


def cluster(cmd):
    """pg-cluster.sh CMD on the cluster the tests run against (its env)."""
    subprocess.run([str(ROOT / "scripts" / "pg-cluster.sh"), cmd, os.environ["MCCDB_CLUSTER"]],
                   check=True, stdout=subprocess.DEVNULL)
    return pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"])


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
    log = dir_ / "server.log"
    size = log.stat().st_size
    for f in FILES:
        path = dir_ / "data" / "pg_stat" / f
        assert path.exists(), f"a clean shutdown writes {f}"
        path.write_bytes(b"not what mccdb wrote" + path.read_bytes()[20:])
    cluster("restart")
    with connect() as c:
        assert c.execute("select count(*) from mccdb_query_stats").fetchone()[0] == 0
        plan = c.execute("explain (format json) " + sql).fetchone()[0][0]["MCC-DB"]
        assert {t["Size Source"] for t in plan["Tables"]} == {"planner"}
    with open(log, "rb") as f:
        f.seek(size)
        text = f.read().decode(errors="replace")
    for name in FILES:
        assert f'ignoring invalid file "pg_stat/{name}"' in text, text[-2000:]
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
