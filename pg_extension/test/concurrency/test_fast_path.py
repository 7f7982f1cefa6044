"""A statement mccdb does not act on costs no state and no lock (issue 49).

Checked structurally, not by timing: mccdb says at DEBUG3 when it makes a
statement's state (a memory context, a plan walk) and when it takes the
gate's lock for a statement the gate let pass; a session at
client_min_messages = debug3 hears each.  A point lookup, simple or
prepared, and an update by key, at mccdb's defaults with the gate on (they
cost far less than mccdb.schedule_min_cost and mccdb.track_min_cost) must
make neither.  The same session's hash join, a cheap statement the ring is
told to record, and a known query the gate lets pass, do make them: the
count can see one.

Nor does a point lookup get a query identifier PostgreSQL would not compute
without mccdb: EXPLAIN (VERBOSE) prints the one a statement has.
"""
from conftest import configure, connect
from test_gate_never_hangs import JOIN, tables  # noqa: F401 (a fixture)

POINT = "select v from gate_small where id = %s"
UPDATE = "update gate_small set v = v where id = %s"


def mccdb_debug(c, run):
    """What mccdb told the session at DEBUG3 while run(c) ran."""
    heard = []
    c.add_notice_handler(lambda d: heard.append(d.message_primary or ""))
    c.execute("set client_min_messages = debug3")
    try:
        run(c)
    finally:
        c.execute("reset client_min_messages")
    return [m for m in heard if m.startswith("mccdb:")]


def test_a_point_lookup_makes_no_state_and_takes_no_gate_lock(ctl, tables):
    configure(ctl, schedule="shortest", corun_slots=2, max_wait="10min", min_cost=1000)
    with connect() as c:
        assert c.execute("show mccdb.track").fetchone()[0] == "top"
        c.execute(JOIN).fetchall()     # the gate knows a query: bypasses are looked up

        def lookups(c):
            for i in range(100):
                c.execute(POINT, (i % 100 + 1,)).fetchall()
                c.execute(POINT, (i % 100 + 1,), prepare=True).fetchall()
                c.execute(UPDATE, (i % 100 + 1,), prepare=True)

        assert mccdb_debug(c, lookups) == []
        # the hash join makes a state (it may teach its table's size)
        assert any("state of a statement" in m
                   for m in mccdb_debug(c, lambda c: c.execute(JOIN).fetchall()))
        # and a point lookup the ring is told to record
        c.execute("set mccdb.track_min_cost = 0")
        assert any("state of a statement" in m
                   for m in mccdb_debug(c, lambda c: c.execute(POINT, (1,)).fetchall()))


def query_ids(c, sql):
    """The Query Identifier lines of EXPLAIN (VERBOSE) of sql."""
    rows = c.execute("explain (verbose, costs off) " + sql).fetchall()
    return [r[0].strip() for r in rows if r[0].strip().startswith("Query Identifier:")]


def test_a_point_lookup_gets_no_query_id_that_stock_would_not_compute(ctl, tables):
    configure(ctl, schedule="shortest", corun_slots=2, max_wait="10min", min_cost=1000)
    with connect() as c:
        assert c.execute("show compute_query_id").fetchone()[0] == "auto"
        assert c.execute("select count(*) from pg_settings where name = 'shared_preload_libraries' "
                         "and setting ~ 'pg_stat_statements'").fetchone()[0] == 0
        for sql in (POINT % 1, UPDATE % 1, "insert into gate_small values (1000, 1)",
                    "select * from gate_small for update"):
            assert query_ids(c, sql) == [], sql
        # what mccdb learns from gets PostgreSQL's own id, the one
        # compute_query_id = on gives and pg_stat_statements shows
        learnable = [JOIN, "select count(*) from gate_small", "select distinct v from gate_small",
                     "select v from gate_small where id in (select id from gate_big)",
                     "select pg_sleep(0)"]
        mine = [query_ids(c, sql) for sql in learnable]
        assert all(len(ids) == 1 for ids in mine), mine
        c.execute("create temp view small_view as select * from gate_small")
        assert len(query_ids(c, "select v from small_view where id = 1")) == 1
        c.execute("set compute_query_id = on")
        assert [query_ids(c, sql) for sql in learnable] == mine
        assert len(query_ids(c, POINT % 1)) == 1
        c.execute("reset compute_query_id")
        # a ring told to record every statement records each with its id
        c.execute("set mccdb.track_min_cost = 0")
        assert len(query_ids(c, POINT % 1)) == 1
        c.execute("set compute_query_id = off")
        assert query_ids(c, JOIN) == []


def test_a_known_query_the_gate_lets_pass_is_counted(ctl, tables):
    configure(ctl, schedule="shortest", corun_slots=2, max_wait="10min", min_cost=0)
    with connect() as c:
        c.execute("set mccdb.track = none")
        c.execute("set mccdb.min_cost = 0")
        c.execute(JOIN).fetchall()     # admitted: known
        c.execute("set mccdb.min_cost = 1e30")
        heard = mccdb_debug(c, lambda c: c.execute(JOIN).fetchall())
    assert "mccdb: counting a bypass of a known query" in heard, heard


def test_counters_where_there_is_no_pmu_stop_costing_after_the_first_statement(ctl, tables):
    """With mccdb.counters on and no PMU (this VM), the first statement finds
    the counters unavailable; the next ones take the fast path instead of
    encoding the events and calling perf_event_open again each time.  Where
    a PMU is there every statement counts, which is what counters on asks."""
    configure(ctl, schedule="shortest", corun_slots=2, max_wait="10min", min_cost=1000)
    with connect() as c:
        status = c.execute("select mccdb_counters_status()").fetchone()[0]
        c.execute("set mccdb.counters = on")
        c.execute(POINT, (1,)).fetchall()
        heard = mccdb_debug(c, lambda c: [c.execute(POINT, (i,)).fetchall() for i in range(1, 21)])
        if status == "available":
            assert sum("state of a statement" in m for m in heard) == 20, heard
        else:
            assert status.startswith("unavailable: "), status
            assert heard == [], heard
            # asking again tries again, and says the same
            assert c.execute("select mccdb_counters_status()").fetchone()[0] == status
