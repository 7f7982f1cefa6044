"""The shortest policy against the real server: short queries never queue
behind long ones, and long ones are admitted in time all the same.

Predictions come from the plan's cost at the learned rate (1e-5 s per cost
unit before anything was measured: the tests forget what was learned), so a
query's predicted class is set by its cost: generate_series over 3e7 rows
costs about 3e5 (3 s predicted), over 10 rows about 0.1.
"""
import threading
import time

from conftest import configure, connect, wait_until

LONG = "select count(*) from generate_series(1, 30000000)"
SHORT = "select count(*) from generate_series(1, 10)"


def run_in_thread(sql, out, key):
    def body():
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            t0 = time.time()
            c.execute(sql).fetchall()
            out[key] = (t0, time.time())
    t = threading.Thread(target=body)
    t.start()
    return t


def waiting(ctl):
    return "select count(*) from mccdb_queue where state = 'waiting'"


def test_a_short_query_runs_at_once_beside_a_long_one_and_a_queue(ctl):
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="shortest", corun_slots=1, max_wait="10min", min_cost=0, short_query="250ms")
    done = {}
    first = run_in_thread(LONG, done, "long1")
    wait_until(ctl, "select count(*) from mccdb_queue where state = 'running'", 1)
    second = run_in_thread(LONG, done, "long2")
    wait_until(ctl, waiting(ctl), 1)
    t0 = time.time()
    with connect() as c:
        assert c.execute(SHORT).fetchone()[0] == 10
    took = time.time() - t0
    # the long queries are still there: one running, one waiting
    assert ctl.execute(waiting(ctl)).fetchone()[0] == 1
    assert took < 0.5, f"the short query waited {took:.2f} s behind a long one"
    first.join(60)
    second.join(60)
    assert set(done) == {"long1", "long2"}


def test_under_another_policy_the_short_query_queues(ctl):
    # the same scene under predictive: what shortest changes
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="predictive", corun_slots=1, max_wait="10min", min_cost=0)
    done = {}
    first = run_in_thread(LONG, done, "long1")
    wait_until(ctl, "select count(*) from mccdb_queue where state = 'running'", 1)
    t0 = time.time()
    with connect() as c:
        c.execute(SHORT).fetchall()
    took = time.time() - t0
    first.join(60)
    assert took > 0.5, f"the short query did not queue ({took:.2f} s)"


def test_shortest_first_with_aging_admits_a_long_waiter_in_time(ctl):
    # slots stay busy with a stream of medium queries; the long waiter's
    # response ratio grows while it waits and it is admitted before the stream ends
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="shortest", corun_slots=1, max_wait="10min", min_cost=0, short_query="0")
    medium = "select count(*) from generate_series(1, 1000000)"     # 0.1 s predicted
    stop = threading.Event()
    errors = []

    def stream():
        try:
            with connect() as c:
                c.execute("set max_parallel_workers_per_gather = 0")
                while not stop.is_set():
                    c.execute(medium).fetchall()
        except Exception as e:  # reported by the test
            errors.append(e)

    streams = [threading.Thread(target=stream) for _ in range(3)]
    for t in streams:
        t.start()
    try:
        time.sleep(0.5)
        t0 = time.time()
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            # without aging it would wait until the streams stop: never
            c.execute("set statement_timeout = '15s'")
            c.execute("select count(*) from generate_series(1, 3000000)").fetchall()   # 0.3 s predicted
        took = time.time() - t0
    finally:
        stop.set()
        for t in streams:
            t.join(60)
    assert not errors, errors
    # three medium streams keep a waiter in front of it at every admission;
    # aging lets it in after a few of them, far before mccdb.max_wait
    assert took < 10, f"the longer query waited {took:.2f} s"
