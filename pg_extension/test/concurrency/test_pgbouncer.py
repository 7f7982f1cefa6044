"""mccdb behind PgBouncer in transaction pooling mode.

A DBA may put a connection pooler in front of a server with mccdb: each
client transaction then runs on whichever server connection PgBouncer
hands out, and the gate (which sees server backends, not clients) must
still admit and finish every gated query.  Per-transaction settings
(SET LOCAL mccdb.*) work through it; session state does not belong to a
client any more: a session SET stays on the server connection for the
next client, and a hold (mccdb_hold_admission(true)) belongs to the
server backend that took it, so it outlives the client's transaction and
session in transaction pooling, and ends when a client releases it,
mccdb.max_wait admits past it, PgBouncer closes that server connection,
or the connection is reset with DISCARD ALL (session pooling does that
when its client leaves) (docs/usage.md: "A
hold belongs to the session that took it"; behind a transaction pooler
that session is a server connection).  These tests pin that behaviour.

PgBouncer (the Debian package, scripts/install-deps.sh) runs from
mccdb_bench.harness.pgbouncer in front of the `test` cluster, as the
cluster's user when the tests run as root; a pool of one server
connection makes "the next transaction runs on the same backend"
deterministic.
"""
import os
import pathlib
import threading
import time

import psycopg
import pytest
from conftest import configure, connect, query, tagged, wait_until
from mccdb_bench.harness import pgbouncer

pytestmark = pytest.mark.skipif(pgbouncer.binary() is None,
                                reason="pgbouncer is not installed (scripts/install-deps.sh installs it from "
                                       "scripts/debian-packages.txt)")

DB = "ssb"
MIN_COST = 1000    # mccdb.schedule_min_cost's default
TIMEOUT = "20s"     # statement_timeout of every pooled transaction: a hang fails, never hangs the suite


@pytest.fixture
def pooler():
    """pooler(size): a PgBouncer (transaction pooling, default_pool_size
    size) in front of the test cluster, stopped after the test."""
    started = []

    def start(size, mode="transaction"):
        # beside the clusters, where the clusters' user can reach it
        root = pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"]).parent.parent / "pgbouncer"
        port = pgbouncer.free_port()
        p = pgbouncer.PgBouncer(size, port, name=f"test-{port}", root=root, pool_mode=mode).start()
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


def client(p):
    """A client of the pooler: autocommit, no prepared statements."""
    return psycopg.connect(**p.conninfo(), dbname=DB, autocommit=True, prepare_threshold=None)


def tx(conn, sql, *settings):
    """One transaction through the pooler: SET LOCAL settings and a statement
    timeout, then sql; its rows."""
    with conn.transaction():
        conn.execute(f"set local statement_timeout = '{TIMEOUT}'")
        for s in settings:
            conn.execute(s)
        return conn.execute(sql).fetchall()


def server_pid(conn):
    """The server backend the pooler gives this client's next transaction
    (the client's own backend_pid is PgBouncer's, not the server's)."""
    return conn.execute("select pg_backend_pid()").fetchone()[0]


def in_thread(fn):
    out = {}

    def body():
        try:
            out["result"] = fn()
        except Exception as e:  # reported by the test
            out["error"] = e
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


@pytest.fixture
def gated(ctl):
    """One slot, the predictive policy; a gated SSB query (cost above
    mccdb.schedule_min_cost, 1000; pg_backend_pid() stays below it)."""
    configure(ctl, schedule="predictive", corun_slots=1, max_wait="10min")
    sql = query(ctl, "q1.1", suite="ssb")
    with connect() as c:
        limit = float(c.execute("show mccdb.schedule_min_cost").fetchone()[0])
        cost = c.execute("explain (format json) " + sql).fetchone()[0][0]["Plan"]["Total Cost"]
    assert limit == MIN_COST and cost > limit, f"q1.1 costs {cost}: not gated at {limit}"
    return sql


def test_gated_queries_through_the_pooler_are_admitted_and_finish(ctl, pooler, gated):
    p = pooler(2)
    tag = f"pool-{time.time_ns()}"
    seq0 = ctl.execute("select coalesce(max(seq), 0) from mccdb_recent_queries").fetchone()[0]
    clients = [client(p) for _ in range(4)]
    try:
        threads = [in_thread(lambda c=c: [tx(c, tagged(gated, tag)) for _ in range(3)]) for c in clients]
        for t, out in threads:
            t.join(60)
            assert not t.is_alive(), "a pooled client hung at the gate"
            assert "error" not in out, out.get("error")
            assert len(out["result"]) == 3
    finally:
        for c in clients:
            c.close()
    rows = ctl.execute("select pid, admitted is not null from mccdb_recent_queries where seq > %s and query like %s",
                       (seq0, f"%{tag}%")).fetchall()
    # every query passed the gate, on at most the pool's two server backends
    assert len(rows) == 12 and all(ok for _, ok in rows), rows
    assert len({pid for pid, _ in rows}) <= 2
    assert ctl.execute("select count(*) from mccdb_queue").fetchone()[0] == 0


def test_set_local_works_through_the_pooler_and_ends_with_the_transaction(ctl, pooler, gated):
    p = pooler(1)
    ctl.execute("select mccdb_hold_admission(true)")
    with client(p) as a, client(p) as b:
        # SET LOCAL inside the client's transaction: this query is below the
        # gate's cost limit and runs although admission is held
        with a.transaction():
            a.execute(f"set local statement_timeout = '{TIMEOUT}'")
            a.execute("set local mccdb.schedule_min_cost = 1e30")
            pid = server_pid(a)
            assert a.execute(gated).fetchall()
        # the next transaction, on the same server backend, has it no more
        assert server_pid(b) == pid
        assert b.execute("show mccdb.schedule_min_cost").fetchone()[0] == "1000"
        t, out = in_thread(lambda: tx(b, gated))
        wait_until(ctl, f"select count(*) from mccdb_queue where state = 'waiting' and pid = {pid}", 1)
        ctl.execute("select mccdb_hold_admission(false)")
        t.join(30)
        assert "error" not in out, out.get("error")
        assert out["result"]


def test_a_session_set_stays_on_the_server_connection_for_the_next_client(ctl, pooler, gated):
    p = pooler(1)
    with client(p) as a, client(p) as b:
        a.execute("set mccdb.schedule_min_cost = 1e30")
        # PgBouncer does not carry mccdb's settings: b gets a's
        assert b.execute("show mccdb.schedule_min_cost").fetchone()[0] == "1e+30"
        b.execute("reset mccdb.schedule_min_cost")
        assert a.execute("show mccdb.schedule_min_cost").fetchone()[0] == "1000"


def test_a_hold_belongs_to_the_pooled_server_backend(ctl, pooler, gated):
    p = pooler(1)
    a = client(p)
    # taken in a transaction the client rolls back: a hold is not transactional
    a.execute("begin")
    a.execute("select mccdb_hold_admission(true)")
    holder = server_pid(a)
    a.execute("rollback")
    assert ctl.execute("select held_by from mccdb_scheduler()").fetchone()[0] == holder
    # the client's transaction and then its session end; the hold does not:
    # its server backend went back to the pool (a direct session's hold ends
    # with the session, test_gate_never_hangs.test_a_hold_ends_with_its_session)
    a.close()
    time.sleep(0.5)
    assert ctl.execute("select held, held_by from mccdb_scheduler()").fetchone() == (True, holder)
    # a session of its own still cannot take it ...
    with connect() as d, pytest.raises(psycopg.errors.LockNotAvailable):
        d.execute("select mccdb_hold_admission(true)")
    # ... but any client the pooler gives the holder's backend owns it:
    # taking it again is no error, and releasing it is allowed
    with client(p) as b:
        assert server_pid(b) == holder
        b.execute("select mccdb_hold_admission(true)")
        b.execute("select mccdb_hold_admission(false)")
        assert not ctl.execute("select held from mccdb_scheduler()").fetchone()[0]
        # a hold ends when PgBouncer closes the server connection that holds it
        b.execute("select mccdb_hold_admission(true)")
    p.admin("KILL ssb")
    p.admin("RESUME ssb")
    wait_until(ctl, "select held from mccdb_scheduler()", False, timeout=10)
    with client(p) as c:
        assert tx(c, gated)


def test_a_hold_ends_with_its_client_in_session_pooling(ctl, pooler, gated):
    """Session pooling resets the server connection with DISCARD ALL when
    the client leaves: that ends its hold, as it ends advisory locks."""
    p = pooler(1, mode="session")
    with client(p) as a:
        a.execute("select mccdb_hold_admission(true)")
        holder = server_pid(a)
        assert ctl.execute("select held_by from mccdb_scheduler()").fetchone()[0] == holder
    wait_until(ctl, "select held from mccdb_scheduler()", False, timeout=10)
    # the server connection itself lives on in the pool
    assert ctl.execute("select count(*) from pg_stat_activity where pid = %s", (holder,)).fetchone()[0] == 1


def test_discard_all_ends_a_hold(ctl):
    with connect() as a:
        a.execute("select mccdb_hold_admission(true)")
        assert ctl.execute("select held_by from mccdb_scheduler()").fetchone()[0] == a.info.backend_pid
        a.execute("discard all")
        assert not ctl.execute("select held from mccdb_scheduler()").fetchone()[0]
        # DISCARD of something else leaves it
        a.execute("select mccdb_hold_admission(true)")
        a.execute("discard plans")
        assert ctl.execute("select held from mccdb_scheduler()").fetchone()[0]
        a.execute("select mccdb_hold_admission(false)")


def test_a_hold_through_a_pool_of_one_does_not_hold_its_own_connection(ctl, pooler, gated):
    """The paper's batch (hold, submit, release) through a pool of one:
    every client's statement runs on the holder's server connection, and
    the session that holds the gate is not held by it (issue 48): the held
    batch runs there one statement at a time, and nothing waits for
    mccdb.max_wait (before, the batch took the only connection and the
    release waited in PgBouncer's queue until max_wait admitted it)."""
    configure(ctl, max_wait="10min")
    p = pooler(1)
    before = ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0]
    with client(p) as a, client(p) as b, client(p) as c:
        a.execute("select mccdb_hold_admission(true)")
        start = time.time()
        t, out = in_thread(lambda: tx(b, gated))
        t.join(30)
        assert "error" not in out, out.get("error")
        assert time.time() - start < 10, "the holder's connection waited behind its own hold"
        c.execute("select mccdb_hold_admission(false)")
    assert ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0] == before
    assert not ctl.execute("select held from mccdb_scheduler()").fetchone()[0]
