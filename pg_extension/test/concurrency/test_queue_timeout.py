"""mccdb.queue_timeout (issue 50): a statement that waited that long fails
with SQLSTATE 53400 naming the setting, instead of waiting on.

A DBA sets it per role (ALTER ROLE ... SET; superuser-only, so the role
cannot lift it for itself), as PgBouncer's query_wait_timeout errors a
client that waited too long for a connection.  mccdb.max_wait stays the
bound after which a statement runs anyway.
"""
import time

import psycopg
import pytest
from conftest import DB, configure, connect, drop_roles, recreate_roles, wait_until
from test_gate_never_hangs import JOIN, tables  # noqa: F401 (a fixture)

ROLE = "mccdb_qt_app"


@pytest.fixture
def app_role(tables):
    with connect() as c:
        recreate_roles(c, [ROLE])
        c.execute(f"grant select on gate_big, gate_small to {ROLE}")
    yield ROLE
    with connect() as c:
        c.execute(f"alter role {ROLE} reset all")
        drop_roles(c, [ROLE])


def test_a_role_whose_statements_may_wait_a_second_gets_an_error_after_it(ctl, app_role):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    ctl.execute(f"alter role {app_role} set mccdb.queue_timeout = '1s'")
    before = ctl.execute("select timed_out from mccdb_scheduler()").fetchone()[0]
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=app_role, autocommit=True) as c:
            # the role cannot lift the limit for itself
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("set mccdb.queue_timeout = 0")
            t0 = time.time()
            with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as err:
                c.execute(JOIN)
            took = time.time() - t0
            assert 1.0 <= took < 5.0, f"it failed after {took:.1f} s"
            assert "mccdb.queue_timeout" in err.value.diag.message_primary
            assert "ALTER ROLE" in err.value.diag.message_hint
            # the session goes on (a utility statement: every SELECT waits in
            # this held gate), and left nothing in the gate
            assert c.execute("show mccdb.queue_timeout").fetchone() == ("1s",)
        wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=5)
        assert ctl.execute("select timed_out from mccdb_scheduler()").fetchone()[0] == before + 1
    finally:
        ctl.execute("select mccdb_hold_admission(false)")


def test_without_a_timeout_the_statement_waits_and_runs(ctl, app_role):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="2s", min_cost=0)
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=app_role, autocommit=True) as c:
            t0 = time.time()
            assert c.execute(JOIN).fetchone()[0] == 20000   # admitted by max_wait
            assert time.time() - t0 >= 2.0
    finally:
        ctl.execute("select mccdb_hold_admission(false)")


def test_a_role_set_to_run_after_its_timeout_runs_without_the_gate(ctl, app_role):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    ctl.execute(f"alter role {app_role} set mccdb.queue_timeout = '1s'")
    ctl.execute(f"alter role {app_role} set mccdb.queue_timeout_action = 'run'")
    before = ctl.execute("select timed_out, ran_after_queue_timeout from mccdb_scheduler()").fetchone()
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=app_role, autocommit=True) as c:
            # the role cannot choose for itself
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("set mccdb.queue_timeout_action = 'error'")
            t0 = time.time()
            # the gate is held and max_wait is far: only the action lets it run
            assert c.execute(JOIN).fetchone()[0] == 20000
            took = time.time() - t0
            assert 1.0 <= took < 5.0, f"it ran after {took:.1f} s"
            wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=5)
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
    after = ctl.execute("select timed_out, ran_after_queue_timeout from mccdb_scheduler()").fetchone()
    assert after == (before[0], before[1] + 1), f"{before} -> {after}"
