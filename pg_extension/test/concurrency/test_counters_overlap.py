"""Hardware counters belong to the statement, not the backend: a cursor
stays open while another top-level statement runs, and each keeps counters
of its own (counters.c).

Needs a PMU that perf_event_open(2) can count in user space: this machine's
VM has none (mccdb_counters_status() says why), so here the test is skipped;
what can be observed without one, the placement each statement keeps, is
tested in test_partition_modes.py.
"""
import pytest
from conftest import connect, tagged


def counters_available():
    with connect() as c:
        return c.execute("select mccdb_counters_status()").fetchone()[0]


def test_two_overlapping_statements_keep_their_own_counters():
    status = counters_available()
    if status != "available":
        pytest.skip(f"hardware counters here: {status}")
    cursor_sql = tagged("select count(*) from generate_series(1, 2000000) g group by g % 7", "overlap-cursor")
    inner_sql = tagged("select sum(g) from generate_series(1, 1000000) g", "overlap-inner")
    with connect() as c:
        c.execute("set mccdb.counters = on")
        with c.transaction():
            c.execute(f"declare oc cursor for {cursor_sql}")
            c.execute("fetch 1 from oc").fetchall()
            c.execute(inner_sql).fetchall()     # starts and stops its own counters
            c.execute("fetch all from oc").fetchall()
            c.execute("close oc")
        rows = dict(c.execute(
            """select case when query like '%%overlap-cursor%%' then 'cursor' else 'inner' end,
                      array[llc_misses, instructions, cycles]
                 from mccdb_recent_queries
                where pid = pg_backend_pid() and query like '%%overlap-%%' and query not like '%%mccdb_recent%%'""").fetchall())
    assert set(rows) == {"cursor", "inner"}, rows
    for name, (misses, instructions, cycles) in rows.items():
        assert instructions and instructions > 0 and cycles and cycles > 0, (name, rows)
    # the cursor counted from its start to its close, the inner statement included
    assert rows["cursor"][1] >= rows["inner"][1], rows
