"""The recent-queries ring under concurrent writers and readers.

Each writer takes a sequence number with an atomic add and copies its entry
into that slot under the slot's own lock (recent.c): many sessions ending
statements at once, more than the ring holds, must leave the newest entries,
each whole (its text from the session whose pid it carries), and a reader
reading meanwhile must only ever see whole entries.
"""
import re
import threading

from conftest import connect

WRITERS = 6
STATEMENTS = 150


def write(tag, errors):
    try:
        with connect() as c:
            pid = c.info.backend_pid
            c.execute("set mccdb.track_min_cost = 0")     # these statements cost 0.01
            for i in range(STATEMENTS):
                c.execute(f"select {i} /* ring {tag} pid {pid} */").fetchall()
    except Exception as e:     # reported by the test
        errors.append(e)


def whole(rows):
    """Rows whose text names another pid than the entry's: torn entries."""
    torn = []
    for pid, text in rows:
        m = re.search(r"/\* ring \d+ pid (\d+) \*/", text)
        if m and int(m.group(1)) != pid:
            torn.append((pid, text))
    return torn


def test_concurrent_writers_leave_the_newest_entries_whole():
    with connect() as c:
        size = int(c.execute("show mccdb.recent_queries").fetchone()[0])
        assert c.execute("show mccdb.track").fetchone()[0] == "top"
        c.execute("select mccdb_recent_reset()")
        errors, seen = [], []
        threads = [threading.Thread(target=write, args=(t, errors)) for t in range(WRITERS)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            seen += c.execute("select pid, query from mccdb_recent_queries").fetchall()
        for t in threads:
            t.join()
        assert not errors, errors
        assert not whole(seen), whole(seen)[:5]
        rows = c.execute("select seq, pid, query from mccdb_recent_queries order by seq").fetchall()
    assert WRITERS * STATEMENTS > size, "the writers lap the ring"
    seqs = [r[0] for r in rows]
    assert len(seqs) == len(set(seqs)) and len(rows) <= size, (len(rows), size)
    # the ring holds the last entries written: consecutive numbers
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs[:10]
    assert len(rows) == size, (len(rows), size)
    assert not whole([(r[1], r[2]) for r in rows])
    assert any("/* ring " in r[2] for r in rows)
