"""What the predictive policy learns: keyed by database, and kept in files it checks (issue 26, defects 9, 10).

- 9: run times are learned per database: one query text (one queryid: a
  database made from another as its template has the same relation OIDs)
  in two databases has two rows in mccdb_query_stats, with alone times of
  its own each.
- 10: the learned-state file's values are checked: a negative weight makes
  the whole file ignored (it used to make the model NaN after the next run
  alone); a temporary matrix file a crash left is removed at start; two
  transactions changing the matrix run one after the other.
Restarts the project cluster the libpq environment points at.
"""
import math
import os
import struct
import threading

import psycopg
import pytest
from conftest import cluster, configure, connect, server_log, wait_until
from test_learned_state_restart import server  # noqa: F401 (a fixture)

DB_A, DB_B = "mccdb_gt_runs_a", "mccdb_gt_runs_b"
RUN = "select count(*) from gt_runs where md5(v::text) like 'a%'"


def run_alone(dbname, sql, times):
    with psycopg.connect(dbname=dbname, autocommit=True) as c:
        c.execute("set max_parallel_workers_per_gather = 0")
        for _ in range(times):
            c.execute(sql).fetchall()


# ---- 9: run times by database

@pytest.fixture
def two_databases():
    def drop():
        with connect() as c:
            for db in (DB_A, DB_B):
                c.execute(f"drop database if exists {db} with (force)")
    drop()
    yield
    drop()


def test_one_query_in_two_databases_learns_two_alone_times(server, two_databases):
    configure(server, schedule="predictive", corun_slots=2, max_wait="10min", min_cost=0)
    server.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
    server.execute(f"create database {DB_A} template template0")
    with psycopg.connect(dbname=DB_A, autocommit=True) as a:
        a.execute("create table gt_runs (v int)")
        a.execute("insert into gt_runs select generate_series(1, 500000)")
        a.execute("analyze gt_runs")
    # the same relation OIDs: the same queryid in both
    server.execute(f"create database {DB_B} template {DB_A}")
    with psycopg.connect(dbname=DB_B, autocommit=True) as b:
        b.execute("truncate gt_runs")
        # long enough to learn from (5 ms), ten times shorter than in a
        b.execute("insert into gt_runs select generate_series(1, 50000)")
        b.execute("analyze gt_runs")
        qid = b.execute("explain (verbose, format json) " + RUN).fetchone()[0][0]["Query Identifier"]
    with psycopg.connect(dbname=DB_A, autocommit=True) as a:
        assert a.execute("explain (verbose, format json) " + RUN).fetchone()[0][0]["Query Identifier"] == qid
    run_alone(DB_A, RUN, 3)
    run_alone(DB_B, RUN, 3)
    rows = server.execute("select locality, admissions, alone_s from mccdb_query_stats "
                          "where queryid = %s order by alone_s", (qid,)).fetchall()
    assert len(rows) == 2, f"one row per database: {rows}"
    (_, _, small), (_, _, big) = rows
    assert big > 4 * small, f"each database's alone time learned apart: {rows}"
    by_db = dict(server.execute("select d.datname, q.alone_s from mccdb_query_stats q "
                                "join pg_database d on d.oid = q.dbid where q.queryid = %s",
                                (qid,)).fetchall())
    assert by_db == {DB_A: big, DB_B: small}, by_db


# ---- 10: the learned-state file's values, the matrix's temporary files and lock

CELL = struct.Struct("<ddq")            # ModelCell: log_estimate, weight, samples
HEADER = struct.Struct("<IIQ")          # MccdbSnapshotHeader: magic, entry_size, nentries
# RoleModel: userid, its rate and 3x3 learned matrix (ModelCells), last used
ROLE_MODEL = struct.Struct("<I4x" + "ddq" * 10 + "q")
ROLE_MODELS = 64
CLASSES = 3


def crc32c(data):
    """CRC-32C (Castagnoli), as PostgreSQL's pg_crc32c computes it."""
    table = crc32c.table
    if table is None:
        table = crc32c.table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def test_crc32c_is_postgresqls():
    assert crc32c(b"123456789") == 0xE3069283   # the check value of CRC-32C


def set_rate_weight(path, weight):
    """Write weight into the learned seconds-per-cost cell of a
    learned-state file (the roles' rates follow the 3x3 matrix cells);
    when the file closes with a checksum, a right one for the new contents,
    so only the value is bad."""
    data = bytearray(path.read_bytes())
    _, entry_size, nentries = HEADER.unpack_from(data)
    roles = HEADER.size + CLASSES * CLASSES * CELL.size
    fixed = roles + ROLE_MODELS * ROLE_MODEL.size
    rest = len(data) - fixed - nentries * entry_size
    assert rest in (0, 4), f"unexpected layout: {len(data)} bytes"
    learned = [roles + i * ROLE_MODEL.size for i in range(ROLE_MODELS)
               if ROLE_MODEL.unpack_from(data, roles + i * ROLE_MODEL.size)[2] > 0]
    assert len(learned) == 1, "one role's rate was learned"
    fields = list(ROLE_MODEL.unpack_from(data, learned[0]))
    fields[2] = weight      # the rate's weight (userid, log_estimate, weight, ...)
    ROLE_MODEL.pack_into(data, learned[0], *fields)
    if rest == 4:
        struct.pack_into("<I", data, len(data) - 4, crc32c(bytes(data[:-4])))
    path.write_bytes(bytes(data))


def test_a_learned_file_with_a_negative_weight_is_ignored_whole(server):
    configure(server, schedule="predictive", corun_slots=2, max_wait="10min", min_cost=0)
    server.execute("select mccdb_learned_reset()")
    server.execute("drop table if exists gt_weights")
    server.execute("create table gt_weights as select generate_series(1, 100000) v")
    server.execute("analyze gt_weights")
    sql = "select count(*) from gt_weights where md5(v::text) like 'a%'"   # 5 ms or more: learned
    run_alone("ssb", sql, 2)
    assert server.execute("select rate_samples from mccdb_run_time_model()").fetchone()[0] >= 2
    server.close()
    try:
        data = cluster("stop") / "data"
        set_rate_weight(data / "pg_stat" / "mccdb_learned.stat", -1.0)
        with server_log() as log:
            cluster("restart")
        # the next runs alone: with a weight of -1 the first made the rate's
        # estimate infinite (a division by a weight of 0), the second NaN
        run_alone("ssb", sql, 2)
        with connect() as c:
            rate, samples = c.execute("select seconds_per_cost, rate_samples from mccdb_run_time_model()"
                                      ).fetchone()
        assert math.isfinite(rate) and rate > 0, f"the model's rate is {rate}"
        assert samples == 2, "nothing of the file was kept"
        assert 'ignoring invalid file "pg_stat/mccdb_learned.stat"' in log.text, log.text[-2000:]
    finally:
        with connect() as c:
            c.execute("drop table if exists gt_weights")


def test_a_temporary_matrix_file_left_by_a_crash_is_removed_at_start(server):
    server.close()
    data = cluster("stop") / "data"
    stale = data / "mccdb_interference.matrix.12345.tmp"
    stale.write_text("strong weak 1.5\n")
    st = data.stat()
    if os.geteuid() == 0:
        os.chown(stale, st.st_uid, st.st_gid)
    cluster("restart")
    assert not stale.exists(), "the stale temporary file is still there"


def test_matrix_changes_of_two_transactions_run_one_after_the_other(server):
    server.execute("select mccdb_clear_interference()")
    other = connect()
    try:
        server.execute("begin")
        server.execute("select mccdb_set_interference('strong', 'weak', 1.5)")
        done = threading.Event()
        errors = []

        def second():
            try:
                other.execute("set statement_timeout = '20s'")
                other.execute("select mccdb_set_interference('weak', 'strong', 1.2)")
            except Exception as e:  # reported by the test
                errors.append(e)
            done.set()

        t = threading.Thread(target=second)
        t.start()
        # the second waits for the first's transaction (a lock), not for nothing
        with connect() as watch:
            wait_until(watch, f"select count(*) from pg_stat_activity where pid = {other.info.backend_pid} "
                              "and wait_event_type = 'Lock'", 1, timeout=5)
        assert not done.wait(0.5), "the second change did not wait for the first transaction"
        server.execute("commit")
        t.join(10)
        assert not errors, errors
        got = {(r[0], r[1]): r[2] for r in server.execute(
            "select target, corunner, slowdown from mccdb_interference_matrix()").fetchall()}
        assert got[("strong", "weak")] == 1.5 and got[("weak", "strong")] == 1.2, \
            f"no change was lost: {got}"
    finally:
        if server.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            server.execute("rollback")
        server.execute("select mccdb_clear_interference()")
        other.close()
