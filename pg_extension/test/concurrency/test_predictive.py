"""The predictive policy against the real server, many sessions.

Its rule and its learning arithmetic are unit-tested in test/model; here:
it never changes results, it never leaves a slot idle while a query waits,
and finished queries teach it their run times and interference.
"""
import hashlib
import threading
import time

from conftest import configure, connect, query, wait_until

from test_scheduler import HASH, INDEX, batch, overlapping_pairs


def rows_md5(c, sql):
    rows = c.execute(sql).fetchall()
    return hashlib.md5(repr(sorted(map(repr, rows))).encode()).hexdigest()


def test_every_ssb_and_plq_query_gives_the_same_rows_under_predictive(ctl):
    queries = ctl.execute("select suite || '/' || name, sql from mccdb_test_queries "
                          "where suite = 'ssb' or name in ('plq_01', 'plq_05', 'plq_12', 'plq_25') "
                          "order by 1").fetchall()
    queries = [(name, sql.strip().rstrip(";")) for name, sql in queries]
    assert len(queries) >= 17
    with connect() as c:
        c.execute("set max_parallel_workers_per_gather = 0")
        want = {name: rows_md5(c, sql) for name, sql in queries}

    # one slot and four sessions: most queries wait, every one is admitted
    configure(ctl, schedule="predictive", corun_slots=1, max_wait="10min")
    admitted_before = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0]
    got, errors, lock = {}, [], threading.Lock()

    def worker(part):
        try:
            with connect() as c:
                c.execute("set max_parallel_workers_per_gather = 0")
                c.execute("set statement_timeout = '120s'")
                for name, sql in part:
                    h = rows_md5(c, sql)
                    with lock:
                        got[name] = h
        except Exception as e:  # reported by the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(queries[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert got == want
    assert ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0] > admitted_before, \
        "the queries went through the gate"


def test_predictive_admits_into_every_free_slot(ctl):
    # a batch of two hash and two index joins into two slots: the two first
    # admitted start together, whatever their classes (SLS may leave one idle)
    sql = query(ctl, "plq_04")
    _, _, runs = batch(ctl, "predictive", sql, sql)
    assert len(runs) == 4
    first, second = runs[0], runs[1]
    assert abs((second[2] - first[2]).total_seconds()) < 0.5, \
        "both slots were filled at release"
    assert overlapping_pairs(runs), "queries ran together"


def test_finished_queries_teach_run_times_and_interference(ctl):
    ctl.execute("select mccdb_learned_reset()")
    model = ctl.execute("select rate_samples, known_queries from mccdb_run_time_model()").fetchone()
    assert model == (0, 0)
    configure(ctl, schedule="predictive", corun_slots=2, max_wait="10min")
    sql = query(ctl, "plq_04")
    # runs alone anchor the alone times and the rate
    alone = {}
    for name, settings in (("hash", HASH), ("index", INDEX)):
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            for s in settings:
                c.execute(s)
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                c.execute(sql).fetchall()
                times.append(time.perf_counter() - t0)
            alone[name] = sorted(times)[1]
    rate_samples, known = ctl.execute(
        "select rate_samples, known_queries from mccdb_run_time_model()").fetchone()
    assert rate_samples == 6, "every run alone taught the rate"
    assert known == 2, "the query is known by its queryid, once per plan class"
    assert ctl.execute("select coalesce(sum(samples), 0) from mccdb_learned_interference()"
                       ).fetchone()[0] == 0, "runs alone teach no interference"

    # runs with company teach the matrix
    for _ in range(2):
        batch(ctl, "predictive", sql, sql)
    learned = ctl.execute("select sum(samples) from mccdb_learned_interference()").fetchone()[0]
    assert learned >= 4, "queries that ran together taught the matrix"

    # the next waiter's prediction is its run time alone
    ctl.execute("select mccdb_hold_admission(true)")

    def one_more():
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            for s in HASH:
                c.execute(s)
            c.execute(sql)

    t = threading.Thread(target=one_more)
    t.start()
    try:
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", 1)
        predicted = ctl.execute("select predicted_s from mccdb_queue").fetchone()[0]
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        t.join(60)
    assert alone["hash"] / 2 <= predicted <= alone["hash"] * 2, \
        f"predicted {predicted:.3f} s for a query that ran alone in {alone['hash']:.3f} s"


def test_query_stats_count_admissions_bypasses_and_waits(ctl):
    ctl.execute("select mccdb_query_stats_reset()")
    sql = query(ctl, "plq_04")
    batch(ctl, "mls", sql, sql)
    qid = ctl.execute("select queryid from mccdb_query_stats where admissions > 0 "
                      "order by admissions desc limit 1").fetchone()
    assert qid is not None, "the batch's query has statistics"
    rows = ctl.execute("select locality, admissions, max_wait_ms, total_wait_ms from mccdb_query_stats "
                       "where queryid = %s", qid).fetchall()
    assert sum(r[1] for r in rows) == 4, rows
    assert all(r[2] >= 0 and r[3] >= r[2] for r in rows), rows
    # the gate considered it and let it pass: a bypass of the same query
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    with connect() as c:
        c.execute("set mccdb.min_cost = 1e30")
        c.execute(sql)
    assert ctl.execute("select sum(bypasses) from mccdb_query_stats where queryid = %s",
                       qid).fetchone()[0] == 1
    ctl.execute("select mccdb_query_stats_reset()")
    assert ctl.execute("select coalesce(sum(admissions + bypasses), 0) from mccdb_query_stats"
                       ).fetchone()[0] == 0
