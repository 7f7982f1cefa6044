"""A plain role against the gate (issue 48): each way it walked past the
gate or moved another role's outcome, tried as that role would.

The attacker and the victim are plain roles (no superuser, no
pg_read_all_stats), granted only what a DBA grants an application: SELECT
on its tables and on the gate's views.  The superuser's ctl session holds
the gate (mccdb_hold_admission) where a test asks whether a statement waits:
a statement that gets past a held gate runs at once, one that is gated
shows 'waiting' in mccdb_queue until the hold ends.
"""
import threading
import time

import psycopg
import pytest
from conftest import DB, configure, connect, recreate_roles, wait_until
from test_gate_never_hangs import in_thread

ATTACKER, VICTIM = "mccdb_gt_attacker", "mccdb_gt_victim"
# a join the server's cost settings price well above mccdb.schedule_min_cost
BIG = "select count(*) from atk_big b join atk_small s on s.id = b.v"
ROWS = "select b.id from atk_big b join atk_small s on s.id = b.v"
MIN_COST = 1000
ZERO_COSTS = ("seq_page_cost", "random_page_cost", "cpu_tuple_cost", "cpu_operator_cost",
              "cpu_index_tuple_cost")


def connect_as(role, **kw):
    c = psycopg.connect(dbname=DB, user=role, autocommit=True, **kw)
    c.execute("set statement_timeout = '30s'")
    c.execute("set max_parallel_workers_per_gather = 0")
    return c


@pytest.fixture(scope="module")
def roles():
    with connect() as c:
        c.execute("drop table if exists atk_big, atk_small, atk_rls, atk_probe")
        recreate_roles(c, (ATTACKER, VICTIM))
        c.execute("create table atk_big (id int, v int)")
        c.execute("insert into atk_big select g, g % 1000 + 1 from generate_series(1, 100000) g")
        c.execute("create table atk_small (id int primary key, pad text)")
        c.execute("insert into atk_small select g, repeat('p', 50) from generate_series(1, 1000) g")
        c.execute("analyze atk_big, atk_small")
        # row-level security: each role sees its own 1% of the rows
        c.execute("create table atk_rls (id int, owner name, pad text)")
        c.execute(f"insert into atk_rls select g, case when g % 100 = 0 then '{ATTACKER}' "
                  "else 'someone' end, repeat('r', 100) from generate_series(1, 200000) g")
        c.execute("alter table atk_rls enable row level security")
        c.execute("create policy own_rows on atk_rls using (owner = current_user)")
        c.execute("create table atk_probe (id int)")
        c.execute("insert into atk_probe select generate_series(1, 400000)")
        c.execute("analyze atk_rls, atk_probe")
        both = f"{ATTACKER}, {VICTIM}"
        c.execute(f"grant select on atk_big, atk_small, atk_rls, atk_probe to {both}")
        c.execute(f"grant select on mccdb_queue, mccdb_query_stats to {both}")
        c.execute(f"grant create on schema public to {ATTACKER}")
    yield
    with connect() as c:
        c.execute("select mccdb_hold_admission(false)")
        c.execute("drop table if exists atk_big, atk_small, atk_rls, atk_probe")
        for r in (ATTACKER, VICTIM):
            c.execute(f"drop owned by {r}")
            c.execute(f"alter role {r} reset all")
            c.execute(f"drop role {r}")


def state_of(ctl, pid):
    row = ctl.execute("select state from mccdb_queue where pid = %s", (pid,)).fetchone()
    return row[0] if row else None


def assert_waits_in_held_gate(ctl, c, sql, *, for_s=1.0):
    """sql, sent on c while ctl holds the gate, waits there (and runs once
    the hold ends)."""
    def send():
        cur = c.execute(sql)
        return cur.fetchall() if cur.description else None

    t, result, errors = in_thread(send)
    try:
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {c.info.backend_pid} "
                        "and state = 'waiting'", 1, timeout=10)
        time.sleep(for_s)
        assert state_of(ctl, c.info.backend_pid) == "waiting" and t.is_alive(), \
            "it got past the held gate"
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        t.join(30)
    assert not errors, errors
    return result[0]


def gate(ctl, **more):
    settings = dict(schedule="mls", corun_slots=1, max_wait="10min", min_cost=MIN_COST)
    settings.update(more)
    configure(ctl, **settings)


def plan_cost(c, sql):
    return c.execute("explain (format json) " + sql).fetchone()[0][0]["Plan"]["Total Cost"]


# ---- row 1: a cost the session sets is not the cost the gate decides by

@pytest.mark.parametrize("how", ["set", "alter role", "startup options"])
def test_zeroed_cost_settings_do_not_take_a_join_past_the_gate(ctl, roles, how):
    gate(ctl)
    assert plan_cost(ctl, BIG) >= MIN_COST, "the join must cost more than the threshold"
    zero = " ".join(f"-c {s}=0" for s in ZERO_COSTS)
    if how == "alter role":
        for s in ZERO_COSTS:
            ctl.execute(f"alter role {ATTACKER} set {s} = 0")
    try:
        c = connect_as(ATTACKER, **({"options": zero} if how == "startup options" else {}))
        with c:
            if how == "set":
                for s in ZERO_COSTS:
                    c.execute(f"set {s} = 0")
            assert plan_cost(c, BIG) < MIN_COST, "the session's own cost is below the threshold"
            ctl.execute("select mccdb_hold_admission(true)")
            assert assert_waits_in_held_gate(ctl, c, BIG) == [(1000 * 100,)]
    finally:
        ctl.execute(f"alter role {ATTACKER} reset all")


def test_a_session_at_the_servers_settings_is_judged_by_its_plan(ctl, roles):
    # the other side: a cheap statement still passes a held gate at once
    gate(ctl)
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with connect_as(VICTIM) as c:
            assert plan_cost(c, "select count(*) from atk_small") < MIN_COST
            t0 = time.time()
            assert c.execute("select count(*) from atk_small").fetchone()[0] == 1000
            assert time.time() - t0 < 2.0
    finally:
        ctl.execute("select mccdb_hold_admission(false)")


# ---- row 2: a cursor admitted once does not open the session

def test_after_a_lent_cursor_the_sessions_next_joins_are_gated(ctl, roles):
    gate(ctl, max_wait="1s")
    c = connect_as(ATTACKER)
    try:
        ctl.execute("select mccdb_hold_admission(true)")
        c.execute("begin")
        c.execute(f"declare atk_c cursor for {ROWS}")
        # admitted only by max_wait, then lent between fetches
        assert len(c.execute("fetch 1 from atk_c").fetchall()) == 1
        assert state_of(ctl, c.info.backend_pid) == "lent"
        gate(ctl, max_wait="10min")
        # a join in the same session, beside the open cursor: it waits
        assert assert_waits_in_held_gate(ctl, c, BIG) == [(100000,)]
        # and the cursor's next fetch is admitted again, then lent again
        assert len(c.execute("fetch 5 from atk_c").fetchall()) == 5
        assert state_of(ctl, c.info.backend_pid) == "lent"
        c.execute("commit")
        assert state_of(ctl, c.info.backend_pid) is None
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        c.close()


def test_a_cursors_next_fetch_waits_in_a_held_gate(ctl, roles):
    gate(ctl)
    c = connect_as(ATTACKER)
    try:
        c.execute("begin")
        c.execute(f"declare atk_c cursor for {ROWS}")
        assert len(c.execute("fetch 1 from atk_c").fetchall()) == 1
        ctl.execute("select mccdb_hold_admission(true)")
        rows = assert_waits_in_held_gate(ctl, c, "fetch 10 from atk_c")
        assert len(rows) == 10
        c.execute("commit")
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        c.close()


# ---- row 3: an advisory lock is no ticket to the front

def test_a_lock_waiter_outside_the_gate_does_not_admit_the_lock_holder(ctl, roles):
    ctl.execute("alter system set deadlock_timeout = '100ms'")
    gate(ctl)
    a, w = connect_as(ATTACKER), connect_as(VICTIM)
    threads = []
    try:
        a.execute("select pg_advisory_lock(42)")
        t, _, _ = in_thread(lambda: w.execute("select pg_advisory_lock(42)"))
        threads.append(t)
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid = {w.info.backend_pid} "
                        "and wait_event_type = 'Lock'", 1, timeout=10)
        before = ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0]
        ctl.execute("select mccdb_hold_admission(true)")
        # fifteen deadlock_timeouts: the lock check ran many times
        assert assert_waits_in_held_gate(ctl, a, BIG, for_s=1.5) == [(100000,)]
        after = ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0]
        assert after == before, "admitted ahead of the policy for a lock waiter outside the gate"
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        a.execute("select pg_advisory_unlock_all()")
        for th in threads:
            th.join(10)
        w.execute("select pg_advisory_unlock_all()")
        a.close()
        w.close()


# ---- row 4: a cursor a function opened is gated at its first fetch

def test_a_cursor_opened_in_a_function_is_gated_when_fetched(ctl, roles):
    gate(ctl)
    c = connect_as(ATTACKER)
    try:
        c.execute("create or replace function atk_open() returns refcursor language plpgsql as "
                  f"$$ declare c refcursor := 'atk_fc'; begin open c for {ROWS}; return c; end $$")
        c.execute("begin")
        c.execute("select atk_open()")
        ctl.execute("select mccdb_hold_admission(true)")
        rows = assert_waits_in_held_gate(ctl, c, "fetch all from atk_fc")
        assert len(rows) == 100000
        c.execute("commit")
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        c.execute("rollback")
        c.execute("drop function if exists atk_open()")
        c.close()


# ---- row 5: one role's runs do not move another's predictions

def test_one_roles_runs_do_not_teach_another_roles_rate(ctl, roles):
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    rate = "select seconds_per_cost, rate_samples from mccdb_run_time_model()"
    with connect_as(VICTIM) as v:
        untaught = v.execute(rate).fetchone()
    assert untaught[1] == 0
    with connect_as(ATTACKER) as a:
        for s in ("cpu_operator_cost", "cpu_tuple_cost"):
            a.execute(f"set {s} = 100")
        # cheap to plan, slow to run: a rate a thousand times the default
        for _ in range(12):
            a.execute("select count(*), pg_sleep(0.02) from atk_small where id < 3").fetchall()
        taught = a.execute(rate).fetchone()
    assert taught[1] >= 10 and taught[0] > 10 * untaught[0], taught
    with connect_as(VICTIM) as v:
        assert v.execute(rate).fetchone() == untaught, "the attacker's runs moved the victim's rate"


def test_one_roles_co_runs_do_not_teach_another_roles_matrix(ctl, roles):
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="predictive", corun_slots=2, max_wait="10min", min_cost=0)
    samples = "select coalesce(sum(samples), 0) from mccdb_learned_interference()"
    sql = "select count(*), pg_sleep(0.05) from atk_small where id < 3"
    with connect_as(ATTACKER) as a, connect_as(ATTACKER) as b:
        for _ in range(2):      # alone: anchors the alone time co-runs are measured by
            a.execute(sql).fetchall()
        for _ in range(3):      # together: teach the attacker's matrix
            t, _, errors = in_thread(lambda: b.execute(sql).fetchall())
            a.execute(sql).fetchall()
            t.join(10)
            assert not errors, errors
        taught = a.execute(samples).fetchone()[0]
    assert taught >= 2, f"the co-runs taught {taught} samples"
    with connect_as(VICTIM) as v:
        assert v.execute(samples).fetchone()[0] == 0, "the attacker's co-runs moved the victim's matrix"


# ---- row 6: shortest bounds the short queries it runs beside the slots

def test_a_long_query_starts_in_its_bound_behind_a_stream_of_short_ones(ctl, roles):
    ctl.execute("select mccdb_learned_reset()")
    configure(ctl, schedule="shortest", corun_slots=1, max_wait="15s", min_cost=0,
              short_query="250ms")
    long_sql = "select count(*) from generate_series(1, 20000000)"
    with connect_as(VICTIM) as v:
        t0 = time.time()
        v.execute(long_sql).fetchall()      # alone: learned as long
        alone = time.time() - t0
    assert alone > 0.3, f"the long query ran {alone:.2f} s: not long"
    stop = threading.Event()
    counts = []

    def loop():
        with connect_as(ATTACKER) as c:
            n = 0
            while not stop.is_set():
                c.execute(BIG.replace("count(*)", "count(*) + 0") + " and b.id < 50").fetchall()
                n += 1
            counts.append(n)

    loops = [threading.Thread(target=loop) for _ in range(6)]
    for t in loops:
        t.start()
    samples = []
    try:
        time.sleep(1.0)
        with connect_as(VICTIM) as v:
            t, _, errors = in_thread(lambda: v.execute(long_sql).fetchall())
            t0 = time.time()
            while t.is_alive() and time.time() - t0 < 30:
                samples.append(ctl.execute(
                    "select count(*) filter (where state = 'running') from mccdb_queue").fetchone()[0])
                time.sleep(0.05)
            t.join(30)
            took = time.time() - t0
            assert not errors, errors
    finally:
        stop.set()
        for th in loops:
            th.join(30)
    assert sum(counts) > 50, f"the short queries ran {counts} times: no stream"
    # docs/usage.md: a long query waits at most about its own predicted run
    # time, then for the queries running when it fell due (here short ones)
    # (before: it waited out mccdb.max_wait, 15 s)
    assert took < min(3 * alone + 3.0, 12.0), \
        f"the long query took {took:.1f} s ({alone:.1f} s alone)"
    # one slot and as many short ones beside it: never more at once
    assert max(samples) <= 2, f"{max(samples)} queries ran at once on one slot"


# ---- row 7: learned sizes are the learning role's

def test_a_size_learned_from_rows_a_role_cannot_see_is_not_shown_to_it(ctl, roles):
    ctl.execute("select mccdb_learned_reset()")
    # the hash table holds atk_rls's rows: 200,000 for the superuser, 2,000 for the attacker
    sql = "select count(*) from atk_probe p join atk_rls r on r.id = p.id"
    settings = ("mccdb.explain = on", "max_parallel_workers_per_gather = 0",
                "enable_nestloop = off", "enable_mergejoin = off")
    for s in settings:
        ctl.execute("set " + s)
    ctl.execute(sql).fetchall()     # the superuser reads all 200,000 rows

    def sources(c):
        plan = c.execute("explain (verbose, format json) " + sql).fetchone()[0][0]["MCC-DB"]
        return sorted(t["Size Source"] for t in plan.get("Tables", []))

    assert "learned" in sources(ctl), "the superuser's run taught nothing"
    with connect_as(ATTACKER) as a:
        for s in settings:
            a.execute("set " + s)
        assert "learned" not in sources(a), "a role saw a size learned from rows it may not read"
        text = "\n".join(r[0] for r in a.execute("explain (verbose) " + sql).fetchall())
        assert "learned" not in text, text
    for s in settings:
        ctl.execute("reset " + s.split(" = ")[0])


# ---- row 8: a backend whose slot was lent takes one again only by waiting

def test_a_stalled_backend_waits_for_a_slot_when_its_client_reads_again(ctl, roles):
    gate(ctl, min_cost=0, client_stall="300ms")
    reader, first = connect_as(ATTACKER), connect_as(VICTIM)
    threads = []
    samples = []
    try:
        # 4 MB at once (more than the socket holds), then rows a millisecond apart
        reader.pgconn.send_query(
            b"select repeat('x', 1000), case when g > 4000 then pg_sleep(0.001) end "
            b"from generate_series(1, 7000) g")
        rpid = reader.info.backend_pid
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid = {rpid} "
                        "and wait_event = 'ClientWrite'", 1, timeout=10)
        threads.append(in_thread(lambda: first.execute("select pg_sleep(4)"))[0])
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {rpid} and state = 'lent'",
                   1, timeout=5)
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {first.info.backend_pid} "
                        "and state = 'running'", 1, timeout=5)

        def read_all():
            import select
            pq, rows = reader.pgconn, 0
            while True:
                while pq.is_busy():
                    select.select([pq.socket], [], [], 0.1)
                    pq.consume_input()
                res = pq.get_result()
                if res is None:
                    return rows
                rows += res.ntuples
        t, rows, errors = in_thread(read_all)
        # its client reads again: it waits for the slot the sleeper has
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {rpid} "
                        "and state = 'waiting'", 1, timeout=5)
        while t.is_alive():
            samples.append(ctl.execute("select used_slots, slots from mccdb_scheduler()").fetchone())
            time.sleep(0.05)
        t.join(30)
        assert not errors, errors
        assert rows == [7000]
    finally:
        for th in threads:
            th.join(10)
        reader.close()
        first.close()
    assert samples and all(used <= slots for used, slots in samples), samples
    wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=10)


# ---- smaller ones

def test_the_session_holding_the_gate_is_not_held_by_it(ctl, roles):
    gate(ctl, min_cost=0)
    with connect() as holder:
        holder.execute("set statement_timeout = '20s'")
        holder.execute("select mccdb_hold_admission(true)")
        try:
            t0 = time.time()
            assert holder.execute(BIG).fetchone()[0] == 100000
            assert time.time() - t0 < 5.0, "the holder waited behind its own hold"
            # everyone else still waits
            with connect_as(VICTIM) as v:
                t, _, _ = in_thread(lambda: v.execute(BIG).fetchall())
                wait_until(ctl, f"select count(*) from mccdb_queue where pid = {v.info.backend_pid} "
                                "and state = 'waiting'", 1, timeout=10)
                holder.execute("select mccdb_hold_admission(false)")
                t.join(30)
        finally:
            holder.execute("select mccdb_hold_admission(false)")


def test_create_table_as_is_gated(ctl, roles):
    gate(ctl)
    with connect_as(ATTACKER) as c:
        ctl.execute("select mccdb_hold_admission(true)")
        assert_waits_in_held_gate(ctl, c, f"create temp table atk_ctas as {BIG}")
        assert c.execute("select * from atk_ctas").fetchall() == [(100000,)]


def test_an_insert_select_is_gated_like_its_select(ctl, roles):
    # (issue 48: only SELECTs were gated; INSERT ... SELECT ran the same join past the gate)
    gate(ctl)
    with connect_as(ATTACKER) as c:
        c.execute("create temp table atk_into (n bigint)")
        ctl.execute("select mccdb_hold_admission(true)")
        assert_waits_in_held_gate(ctl, c, f"insert into atk_into {BIG}")
        assert c.execute("select * from atk_into").fetchall() == [(100000,)]


def workers_of(c, sql):
    """(planned, launched) parallel workers over every Gather of sql's run."""
    def walk(node):
        own = (node.get("Workers Planned", 0), node.get("Workers Launched", 0)) \
            if node["Node Type"] in ("Gather", "Gather Merge") else (0, 0)
        for child in node.get("Plans", []):
            sub = walk(child)
            own = (own[0] + sub[0], own[1] + sub[1])
        return own
    return walk(c.execute("explain (analyze, format json) " + sql).fetchone()[0][0]["Plan"])


@pytest.mark.parametrize("slots", [1, 2])
def test_a_roles_parallel_workers_fit_the_slots_the_gate_counts(ctl, roles, slots):
    # (issue 48: max_parallel_workers_per_gather = 4 beside corun_slots = 1
    # ran five processes on one slot)
    gate(ctl, corun_slots=slots, min_cost=0)
    with connect_as(ATTACKER) as c:
        for setting in ("max_parallel_workers_per_gather = 4", "parallel_setup_cost = 0",
                        "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                        "parallel_leader_participation = on"):
            c.execute("set " + setting)
        planned, launched = workers_of(c, BIG)
        assert 1 + planned <= slots and 1 + launched <= slots, \
            f"{1 + launched} processes ran on {slots} slot(s) ({planned} workers planned)"
        # the answer is the same with fewer workers
        assert c.execute(BIG).fetchone()[0] == 100000
        # with the gate off nothing is cut: the role's plan is its own
        configure(ctl, schedule="off")
        assert workers_of(c, BIG)[0] >= 2


def test_every_role_reads_the_queue_and_the_statistics_without_a_grant(ctl, roles):
    # (issue 48: the views had no GRANT; 1.4 grants them to PUBLIC)
    ctl.execute("drop role if exists mccdb_gt_nobody")
    ctl.execute("create role mccdb_gt_nobody login")
    try:
        with psycopg.connect(dbname=DB, user="mccdb_gt_nobody", autocommit=True) as c:
            c.execute("select count(*) from mccdb_queue").fetchone()
            c.execute("select count(*) from mccdb_query_stats").fetchone()
            # another role's queryids stay hidden: none it may see are shown
            assert c.execute("select count(*) from mccdb_query_stats "
                             "where queryid is not null").fetchone()[0] == 0
    finally:
        ctl.execute("drop role mccdb_gt_nobody")
