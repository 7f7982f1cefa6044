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
