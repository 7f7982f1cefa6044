"""What one role may see and do of another role's gated queries (issue 26, defect 2).

As pg_stat_statements and pg_stat_activity decide it: every role sees every
row of mccdb_query_stats and mccdb_queue, but another role's queryid, hash
table sizes and predicted run time only with pg_read_all_stats (or that
role's privileges).  A hold of the gate belongs to its session: another
session ends it only with the holder's role's privileges, and nobody takes
it over silently.  The views are granted to the roles here as a DBA would
grant them; the roles are plain (no superuser, no pg_read_all_stats) but
the third.
"""
import threading
import time

import psycopg
import pytest
from conftest import DB, configure, drop_roles, recreate_roles, wait_until

ALICE, BOB, READER = "mccdb_gt_alice", "mccdb_gt_bob", "mccdb_gt_reader"
ROLES = (ALICE, BOB, READER)
# structurally different: two queryids (constants alone would not differ)
ALICE_SQL = "select count(*) from gt_priv_big b join gt_priv_small s on s.id = b.id % 100 + 1"
BOB_SQL = "select max(b.v) from gt_priv_big b join gt_priv_small s on s.id = b.id % 50 + 1"


def connect_as(role, **kw):
    return psycopg.connect(dbname=DB, user=role, autocommit=True, **kw)


@pytest.fixture(scope="module")
def roles():
    with psycopg.connect(dbname=DB, autocommit=True) as c:
        c.execute("drop table if exists gt_priv_big, gt_priv_small")
        recreate_roles(c, ROLES)
        c.execute(f"grant pg_read_all_stats to {READER}")
        c.execute("create table gt_priv_big (id int, v int)")
        c.execute("insert into gt_priv_big select g, g from generate_series(1, 20000) g")
        c.execute("create table gt_priv_small (id int primary key)")
        c.execute("insert into gt_priv_small select generate_series(1, 100)")
        c.execute("analyze gt_priv_big, gt_priv_small")
        everyone = ", ".join(ROLES)
        c.execute(f"grant select on gt_priv_big, gt_priv_small, mccdb_query_stats, mccdb_queue to {everyone}")
        c.execute(f"grant execute on function mccdb_hold_admission(boolean) to {everyone}")
    yield
    with psycopg.connect(dbname=DB, autocommit=True) as c:
        c.execute("select mccdb_hold_admission(false)")
        c.execute("drop table if exists gt_priv_big, gt_priv_small")
        drop_roles(c, ROLES)


def queryid_of(ctl, sql):
    """The queryid the server computes for sql (EXPLAIN VERBOSE shows it)."""
    plan = ctl.execute("explain (verbose, format json) " + sql).fetchone()[0][0]
    return plan["Query Identifier"]


def queryids(c):
    return {r[0] for r in c.execute("select queryid from mccdb_query_stats").fetchall()}


def test_another_roles_queryid_only_with_pg_read_all_stats(ctl, roles):
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    ctl.execute("select mccdb_query_stats_reset()")
    alice_id, bob_id = queryid_of(ctl, ALICE_SQL), queryid_of(ctl, BOB_SQL)
    assert alice_id != bob_id
    with connect_as(ALICE) as a:
        assert a.execute(ALICE_SQL).fetchone()[0] == 20000
    with connect_as(BOB) as b:
        b.execute(BOB_SQL)
        # both were gated: the server has both (the superuser sees them)
        for _ in range(100):
            if {alice_id, bob_id} <= queryids(ctl):
                break
            time.sleep(0.1)
        assert {alice_id, bob_id} <= queryids(ctl), queryids(ctl)
        seen = queryids(b)
        assert bob_id in seen, "a role sees its own queryids"
        assert alice_id not in seen, "a plain role saw another role's queryid"
        # every row is there, another role's without its queryid
        assert None in seen
    with connect_as(READER) as r:
        assert {alice_id, bob_id} <= queryids(r), "pg_read_all_stats sees every queryid"


def test_another_roles_queue_entry_hides_sizes_and_predictions(ctl, roles):
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    ctl.execute("select mccdb_hold_admission(true)")
    sessions = [connect_as(ALICE), connect_as(BOB)]
    threads = []
    try:
        for s, sql in zip(sessions, (ALICE_SQL, BOB_SQL)):
            s.execute("set statement_timeout = '20s'")
            t = threading.Thread(target=lambda s=s, sql=sql: s.execute(sql).fetchall())
            t.start()
            threads.append(t)
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", 2, timeout=10)
        alice_pid, bob_pid = (s.info.backend_pid for s in sessions)
        cols = "hash_table_bytes, predicted_s, working_memory_bytes from mccdb_queue where pid = %s"
        # the superuser sees what each statement is
        assert None not in ctl.execute("select " + cols, (alice_pid,)).fetchone()
        with connect_as(BOB) as b:
            assert b.execute("select count(*) from mccdb_queue").fetchone()[0] == 2, "every row"
            own = b.execute("select " + cols, (bob_pid,)).fetchone()
            other = b.execute("select " + cols, (alice_pid,)).fetchone()
        assert None not in own, f"a role sees its own statement: {own}"
        assert other == (None, None, None), f"a plain role saw another role's statement: {other}"
        with connect_as(READER) as r:
            assert None not in r.execute("select " + cols, (alice_pid,)).fetchone()
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        for t in threads:
            t.join(20)
        for s in sessions:
            s.close()


def test_a_hold_is_its_sessions(ctl, roles):
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    with connect_as(ALICE) as a, connect_as(BOB) as b:
        a.execute("select mccdb_hold_admission(true)")
        held_by = "select held_by from mccdb_scheduler()"
        assert ctl.execute(held_by).fetchone()[0] == a.info.backend_pid
        # another role may not end it
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            b.execute("select mccdb_hold_admission(false)")
        assert ctl.execute(held_by).fetchone()[0] == a.info.backend_pid, "the hold was ended"
        # nor take it over, silently (not even a superuser)
        with pytest.raises(psycopg.errors.LockNotAvailable):
            b.execute("select mccdb_hold_admission(true)")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            ctl.execute("select mccdb_hold_admission(true)")
        assert ctl.execute(held_by).fetchone()[0] == a.info.backend_pid, "the hold was taken over"
        # its own session ends it; and a role with the holder's privileges may
        a.execute("select mccdb_hold_admission(false)")
        assert ctl.execute(held_by).fetchone()[0] is None
        a.execute("select mccdb_hold_admission(true)")
        ctl.execute("select mccdb_hold_admission(false)")
        assert ctl.execute(held_by).fetchone()[0] is None
