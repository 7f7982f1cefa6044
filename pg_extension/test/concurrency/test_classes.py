"""Workload classes (issue 50): each a queue of its own in the gate.

A DBA defines classes in mccdb_class (slots, priority, share of
mccdb.memory_budget, queue timeout and its action, short-query limit) and
assigns them with ALTER ROLE ... SET mccdb.class, which a plain role can
neither change nor escape.  A change is in force when its transaction
commits, and only then; it survives a restart.  The checks sample the gate
while statements run, and each sampling check is shown to fail where the
class does not hold the statements back.
"""
import threading
import time

import psycopg
import pytest
from conftest import (DB, cluster, configure, connect, drop_roles, recreate_roles, server_log,
                      wait_until)
from test_gate_never_hangs import tables  # noqa: F401 (a fixture)

NARROW, WIDE, LOW, HIGH = "mccdb_cl_narrow", "mccdb_cl_wide", "mccdb_cl_low", "mccdb_cl_high"
ROLES = [NARROW, WIDE, LOW, HIGH]
# About a second of CPU (cl_slow spins a little a row); nested statements
# are never gated.
SLOW = "select count(*) from gate_big where cl_slow(id) > 0"
SORT = "select count(*) from (select pad, cl_slow(id) from gate_big order by 1) s"


@pytest.fixture(scope="module")
def roles(tables):
    with connect() as c:
        c.execute("create or replace function cl_slow(x int) returns int language plpgsql "
                  "volatile as 'begin for i in 1..8000 loop end loop; return x; end'")
        recreate_roles(c, ROLES)
        for r in ROLES:
            c.execute(f"grant select on gate_big, gate_small to {r}")
    yield
    with connect() as c:
        for r in ROLES:
            c.execute(f"alter role {r} reset all")
        drop_roles(c, ROLES)
        c.execute("drop function if exists cl_slow(int)")


@pytest.fixture
def classes(ctl, roles):
    """Sets the server's classes: classes(rows) with rows of mccdb_class as
    dicts; the roles go into the class named like their suffix.  Every
    class is deleted afterwards."""
    def define(*rows):
        ctl.execute("delete from mccdb_class")
        for row in rows:
            cols = ", ".join(row)
            marks = ", ".join(["%s"] * len(row))
            ctl.execute(f"insert into mccdb_class ({cols}) values ({marks})", list(row.values()))
        for r in ROLES:
            ctl.execute(f"alter role {r} set mccdb.class = '{r.rsplit('_', 1)[1]}'")
    yield define
    ctl.execute("delete from mccdb_class")
    for r in ROLES:
        ctl.execute(f"alter role {r} reset all")


def class_of_running(c):
    return c.execute("select pid, class from mccdb_queue where state = 'running'").fetchall()


class Sampler(threading.Thread):
    """The running statements' classes, 50 times a second."""

    def __init__(self):
        super().__init__()
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        with connect() as c:
            c.execute("set mccdb.min_cost = 1e30")
            while not self.stop.is_set():
                self.samples.append(class_of_running(c))
                time.sleep(0.02)

    def most(self, cls):
        return max(sum(1 for _, k in s if k == cls) for s in self.samples)


def run_held(ctl, work):
    """Each (role, sql) in a session of its own, queued behind a hold in
    that order and let go together; the gate sampled until all are done.
    Returns the sampler and the order the statements finished in (indexes
    into work): with one slot, the order they were admitted in."""
    sessions = [psycopg.connect(dbname=DB, user=role, autocommit=True) for role, _ in work]
    errors, threads, finished = [], [], []
    sampler = Sampler()
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        for i, (s, (_, sql)) in enumerate(zip(sessions, work)):
            s.execute("set statement_timeout = '120s'")

            def go(s=s, sql=sql, i=i):
                try:
                    s.execute(sql).fetchall()
                    finished.append(i)
                except Exception as e:  # reported below, not lost in a thread
                    errors.append(e)
            t = threading.Thread(target=go)
            t.start()
            threads.append(t)
            # queued one after the other: the arrival order is work's
            wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", i + 1,
                       timeout=20)
        sampler.start()
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        for t in threads:
            t.join(120)
        sampler.stop.set()
        if sampler.is_alive():
            sampler.join(10)
        for s in sessions:
            s.close()
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a statement did not finish"
    return sampler, finished


def stats(ctl, name):
    return ctl.execute("select * from mccdb_classes where name = %s", (name,)).fetchone()


def test_a_class_never_runs_more_than_its_slots(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    classes({"name": "narrow", "slots": 1}, {"name": "wide"})
    sampler, _ = run_held(ctl, [(NARROW, SLOW)] * 3 + [(WIDE, SLOW)] * 3)
    assert len(sampler.samples) >= 20, "too few samples to judge"
    assert sampler.most("narrow") == 1, "the class ran more statements than its slots"
    # the check can fail: the class without a limit beside it runs its three together
    assert sampler.most("wide") >= 2
    row = ctl.execute("select admitted, waiting, running, wait_p50_ms, wait_max_ms "
                      "from mccdb_classes where name = 'narrow'").fetchone()
    assert row[0] == 3 and row[1] == 0 and row[2] == 0
    assert 0 <= row[3] <= row[4]


def test_the_higher_priority_class_goes_first_and_the_lower_one_is_not_starved(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    classes({"name": "low", "priority": 0}, {"name": "high", "priority": 10})
    # the low class's statements arrive first
    work = [(LOW, SLOW)] * 2 + [(HIGH, SLOW)] * 2
    _, order = run_held(ctl, work)
    assert set(order[:2]) == {2, 3}, f"admitted in the order {order}"
    # the same arrivals in one class go in arrival order: the check can fail
    classes({"name": "low"}, {"name": "high"})
    _, order = run_held(ctl, work)
    assert order[0] in (0, 1), f"admitted in the order {order}"


def test_mccdb_max_wait_bounds_the_low_class_wait_behind_a_busy_high_class(ctl, classes):
    configure(ctl, schedule="shortest", corun_slots=1, max_wait="2s", min_cost=0)
    classes({"name": "low", "priority": -5}, {"name": "high", "priority": 5})
    before = stats(ctl, "low")
    stop = threading.Event()
    errors = []

    def busy():
        # the high class keeps its one slot busy the whole time
        try:
            with psycopg.connect(dbname=DB, user=HIGH, autocommit=True) as c:
                while not stop.is_set():
                    c.execute(SLOW)
        except Exception as e:
            errors.append(e)
    busy_threads = [threading.Thread(target=busy) for _ in range(2)]
    for t in busy_threads:
        t.start()
    try:
        wait_until(ctl, "select count(*) from mccdb_queue where class = 'high'", 2, timeout=20)
        with psycopg.connect(dbname=DB, user=LOW, autocommit=True) as c:
            c.execute("set statement_timeout = '60s'")
            t0 = time.time()
            c.execute(SLOW)
            took = time.time() - t0
    finally:
        stop.set()
        for t in busy_threads:
            t.join(60)
    assert not errors, errors
    after = stats(ctl, "low")
    cols = [d.name for d in ctl.execute("select * from mccdb_classes limit 0").description]
    got = dict(zip(cols, after))
    assert got["admitted_after_max_wait"] == dict(zip(cols, before))["admitted_after_max_wait"] + 1
    # max_wait 2 s, then the running statement ends (about a second), then its own run
    assert took < 10, f"the low class waited {took:.1f} s"
    assert got["wait_max_ms"] >= 2000


def test_a_plain_role_cannot_leave_its_class_or_change_the_classes(ctl, classes):
    classes({"name": "narrow", "slots": 1})
    with psycopg.connect(dbname=DB, user=NARROW, autocommit=True) as c:
        assert c.execute("show mccdb.class").fetchone() == ("narrow",)
        for sql in ["set mccdb.class = 'wide'", "set mccdb.class = ''",
                    "select set_config('mccdb.class', '', false)",
                    f"alter role {NARROW} set mccdb.class = 'wide'",
                    "reset mccdb.class"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
        # nor through a function that carries the setting
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("create function pg_temp.escape() returns int language sql "
                      "set mccdb.class = 'wide' as 'select 1'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("update mccdb_class set slots = 100")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("insert into mccdb_class (name) values ('mine')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("select mccdb_load_classes()")
        # what it may do: read them
        assert c.execute("select slots from mccdb_classes where name = 'narrow'"
                         ).fetchone() == (1,)
        assert c.execute("show mccdb.class").fetchone() == ("narrow",)


def test_a_class_queue_timeout_errors_naming_the_class(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    classes({"name": "narrow", "queue_timeout": 1000})
    before = stats(ctl, "narrow")
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=NARROW, autocommit=True) as c:
            t0 = time.time()
            with pytest.raises(psycopg.errors.ConfigurationLimitExceeded) as err:
                c.execute(SLOW)
            took = time.time() - t0
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
    assert 1.0 <= took < 5.0, f"it failed after {took:.1f} s"
    assert '"narrow"' in err.value.diag.message_primary
    assert "queue_timeout" in err.value.diag.message_hint
    assert "mccdb_class" in err.value.diag.message_hint
    cols = [d.name for d in ctl.execute("select * from mccdb_classes limit 0").description]
    assert dict(zip(cols, stats(ctl, "narrow")))["timed_out"] == \
        dict(zip(cols, before))["timed_out"] + 1


def test_a_class_whose_timeout_action_is_run_runs_without_the_gate(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    classes({"name": "narrow", "queue_timeout": 1000, "queue_timeout_action": "run"})
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=NARROW, autocommit=True) as c:
            t0 = time.time()
            assert c.execute(SLOW).fetchone() == (20000,)
            assert time.time() - t0 >= 1.0
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
    assert ctl.execute("select ran_after_queue_timeout from mccdb_classes "
                       "where name = 'narrow'").fetchone() == (1,)


def test_a_class_memory_share_holds_its_statements_to_it(ctl, classes):
    ctl.execute("set mccdb.explain = on")
    plan = ctl.execute("explain (format json) " + SORT).fetchone()[0][0]
    est = plan["MCC-DB"]["Working Memory Bytes"]
    assert est > 0
    # the budget holds four; the narrow class's 25 % holds one
    configure(ctl, schedule="mls", corun_slots=8, max_wait="10min", min_cost=0,
              memory_budget=f"{int(4.5 * est) // 1024}kB")
    classes({"name": "narrow", "memory_share": 25}, {"name": "wide"})
    sampler, _ = run_held(ctl, [(NARROW, SORT)] * 3 + [(WIDE, SORT)] * 3)
    assert sampler.most("narrow") == 1
    assert sampler.most("wide") >= 2


def test_changes_take_effect_at_commit_only(ctl, classes):
    classes({"name": "narrow", "slots": 1})
    with connect() as c:
        with c.transaction():
            c.execute("update mccdb_class set slots = 2")
            # not yet: the server's classes are the committed table's
            assert c.execute("select slots from mccdb_classes where name = 'narrow'"
                             ).fetchone() == (1,)
        assert c.execute("select slots from mccdb_classes where name = 'narrow'"
                         ).fetchone() == (2,)
        with pytest.raises(psycopg.errors.DivisionByZero):
            with c.transaction():
                c.execute("delete from mccdb_class")
                c.execute("select 1 / 0")
        assert c.execute("select count(*) from mccdb_classes").fetchone() == (2,)
        # a savepoint rolled back takes its change with it
        with c.transaction():
            c.execute("insert into mccdb_class (name) values ('later')")
            with pytest.raises(psycopg.errors.DivisionByZero):
                with c.transaction():
                    c.execute("delete from mccdb_class where name = 'narrow'")
                    c.execute("select 1 / 0")
        assert [r[0] for r in c.execute("select name from mccdb_classes")] == \
            ["default", "later", "narrow"]
        with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
            c.execute("truncate mccdb_class")
        assert "DELETE" in err.value.diag.message_hint
        with pytest.raises(psycopg.errors.CheckViolation):
            c.execute("insert into mccdb_class (name, slots) values ('bad', 0)")
        with pytest.raises(psycopg.errors.CheckViolation):
            c.execute("insert into mccdb_class (name) values ('Bad Name')")


def test_at_most_31_classes_besides_default(ctl, classes):
    classes()
    names = "select 'c' || lpad(i::text, 2, '0') from generate_series(%s::int, %s::int) i"
    ctl.execute(f"insert into mccdb_class (name) {names}", (1, 31))
    # default may be a row of its own: it takes no class's place
    ctl.execute("insert into mccdb_class (name, slots) values ('default', 3)")
    assert ctl.execute("select count(*), max(name) filter (where name <> 'default'), "
                       "max(slots) filter (where name = 'default') from mccdb_classes"
                       ).fetchone() == (32, "c31", 3)
    with pytest.raises(psycopg.errors.ProgramLimitExceeded) as err:
        ctl.execute("insert into mccdb_class (name) values ('c32')")
    assert "31 classes besides default" in err.value.diag.message_primary
    assert err.value.diag.message_hint
    # the failed change left the table and the server's classes as they were
    assert ctl.execute("select count(*) from mccdb_class").fetchone() == (32,)
    assert ctl.execute("select count(*) from mccdb_classes").fetchone() == (32,)
    ctl.execute("delete from mccdb_class where name = 'default'")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        ctl.execute(f"insert into mccdb_class (name) {names}", (32, 33))
    assert ctl.execute("select count(*) from mccdb_classes").fetchone() == (32,)


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_a_change_under_snapshot_isolation_keeps_what_committed_since_its_snapshot(
        ctl, classes, isolation):
    classes({"name": "narrow", "slots": 1})
    with connect() as rr, connect() as other:
        with rr.transaction():
            rr.execute(f"set transaction isolation level {isolation}")
            assert rr.execute("select count(*) from mccdb_class").fetchone() == (1,)
            # committed after rr's snapshot was taken: rr's own reads miss it
            other.execute("insert into mccdb_class (name, slots) values ('wide', 4)")
            assert rr.execute("select count(*) from mccdb_class").fetchone() == (1,)
            rr.execute("insert into mccdb_class (name, slots) values ('low', 2)")
        # the server installs the table as committed, not as rr saw it
        assert ctl.execute("select name, slots from mccdb_classes order by name").fetchall() == [
            ("default", None), ("low", 2), ("narrow", 1), ("wide", 4)]


def test_a_transaction_that_changed_the_classes_cannot_be_prepared(ctl, classes):
    classes({"name": "narrow", "slots": 1})
    tmp_file = ("select count(*) from pg_ls_dir('.') f "
                "where f = 'mccdb_classes.conf.tmp'")
    with connect() as c:
        c.autocommit = False
        c.execute("update mccdb_class set slots = 5")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
            c.execute("prepare transaction 'mccdb_cl_prepared'")
        assert "mccdb_class" in err.value.diag.message_primary
        assert "transaction of their own" in err.value.diag.message_hint
        c.rollback()
        # nothing prepared, nothing installed, no file left behind
        assert c.execute("select count(*) from pg_prepared_xacts "
                         "where gid = 'mccdb_cl_prepared'").fetchone() == (0,)
        c.rollback()
    assert ctl.execute("select slots from mccdb_classes where name = 'narrow'").fetchone() == (1,)
    assert ctl.execute(tmp_file).fetchone() == (0,)
    # a transaction that did not change them meets only PostgreSQL's own rules
    if ctl.execute("show max_prepared_transactions").fetchone() == ("0",):
        with connect() as c:
            c.autocommit = False
            c.execute("select count(*) from mccdb_class")
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
                c.execute("prepare transaction 'mccdb_cl_prepared'")
            c.rollback()


def test_a_statement_of_a_class_that_does_not_exist_waits_in_default(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0)
    classes({"name": "narrow", "slots": 1})
    ctl.execute(f"alter role {WIDE} set mccdb.class = 'nosuch'")
    with psycopg.connect(dbname=DB, user=WIDE, autocommit=True) as c:
        notices = []
        c.add_notice_handler(lambda d: notices.append((d.severity_nonlocalized, d.message_primary)))
        assert c.execute(SLOW).fetchone() == (20000,)
    assert any(sev == "WARNING" and '"nosuch"' in msg for sev, msg in notices), notices
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        ctl.execute("set mccdb.class = 'Not A Name'")


CLASS_ROW = {"name": "narrow", "slots": 1, "priority": 7, "memory_share": 12.5,
             "queue_timeout": 1500, "queue_timeout_action": "run", "short_query": 40}
SETTINGS = ("select name, slots, priority, memory_share, queue_timeout, queue_timeout_action, "
            "short_query from mccdb_classes order by name")


@pytest.fixture
def restarted_classes(roles):
    """A class defined, for tests that restart the server (which ends every
    session: conftest's ctl cannot be used); deleted afterwards."""
    with connect() as c:
        c.execute("delete from mccdb_class")
        c.execute("insert into mccdb_class (name, slots, priority, memory_share, queue_timeout, "
                  "queue_timeout_action, short_query) values (%(name)s, %(slots)s, "
                  "%(priority)s, %(memory_share)s, %(queue_timeout)s, "
                  "%(queue_timeout_action)s, %(short_query)s)", CLASS_ROW)
        want = c.execute(SETTINGS).fetchall()
    yield want
    with connect() as c:
        c.execute("delete from mccdb_class")


def test_the_classes_survive_a_restart(restarted_classes):
    assert len(restarted_classes) == 2
    cluster("restart")
    with connect() as c:
        assert c.execute(SETTINGS).fetchall() == restarted_classes


def test_a_damaged_class_file_is_ignored_with_a_log_line(restarted_classes):
    data = cluster("stop") / "data"
    path = data / "mccdb_classes.conf"
    assert "narrow 1 7 12.5 1500 1 40" in path.read_text()
    path.write_text(path.read_text().replace("narrow 1 7", "narrow -3 7"))
    with server_log() as log:
        cluster("restart")
        with connect() as c:
            assert c.execute(SETTINGS).fetchall() == [
                ("default", None, 0, None, None, None, None)]
            # the table still holds them: loading it makes them the server's again
            assert c.execute("select mccdb_load_classes()").fetchone() == (1,)
            assert c.execute(SETTINGS).fetchall() == restarted_classes
    assert "ignoring malformed workload class file" in log.text


def test_a_change_interrupted_by_a_crash_leaves_the_classes_before_it(restarted_classes):
    """A backend that died between writing the new file and renaming it
    leaves the temporary file: at the next start the classes are the
    last installed ones and the log says how to install the table's."""
    data = cluster("stop") / "data"
    (data / "mccdb_classes.conf.tmp").write_text("# mccdb workload classes 1\ndatabase 1\n"
                                                  "narrow 9 0 -1 -1 -1 -1\n")
    with server_log() as log:
        cluster("restart")
        with connect() as c:
            assert c.execute(SETTINGS).fetchall() == restarted_classes
    assert "change of the workload classes was interrupted" in log.text
    assert "mccdb_load_classes()" in log.text
    assert not (data / "mccdb_classes.conf.tmp").exists()


def test_a_class_deleted_while_its_statement_waits_moves_it_to_default(ctl, classes):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0)
    classes({"name": "narrow", "slots": 1})
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        with psycopg.connect(dbname=DB, user=NARROW, autocommit=True) as c:
            t = threading.Thread(target=lambda: c.execute(SLOW))
            t.start()
            wait_until(ctl, "select count(*) from mccdb_queue where class = 'narrow'", 1)
            ctl.execute("delete from mccdb_class where name = 'narrow'")
            wait_until(ctl, "select class from mccdb_queue where state = 'waiting'", "default")
            ctl.execute("select mccdb_hold_admission(false)")
            t.join(60)
            assert not t.is_alive()
    finally:
        ctl.execute("select mccdb_hold_admission(false)")


def test_dropping_the_extension_or_database_the_classes_came_from_removes_them(ctl, classes):
    scratch = "mccdb_cl_scratch"
    ctl.execute(f"drop database if exists {scratch} with (force)")
    ctl.execute(f"create database {scratch}")
    try:
        # classes from ssb: dropping the extension elsewhere leaves them
        classes({"name": "narrow", "slots": 1})
        with psycopg.connect(dbname=scratch, autocommit=True) as c:
            c.execute("create extension mccdb")
            c.execute("drop extension mccdb")
        assert ctl.execute("select count(*) from mccdb_classes").fetchone() == (2,)
        # classes from scratch: a rolled-back drop leaves them, a drop removes them
        with psycopg.connect(dbname=scratch, autocommit=True) as c:
            c.execute("create extension mccdb")
            c.execute("insert into mccdb_class (name, slots) values ('elsewhere', 3)")
            assert [r[0] for r in ctl.execute("select name from mccdb_classes")] == \
                ["default", "elsewhere"]
            with pytest.raises(psycopg.errors.DivisionByZero):
                with c.transaction():
                    c.execute("drop extension mccdb")
                    c.execute("select 1 / 0")
            assert ctl.execute("select count(*) from mccdb_classes").fetchone() == (2,)
            c.execute("drop extension mccdb")
        assert ctl.execute("select name from mccdb_classes").fetchall() == [("default",)]
        # and DROP DATABASE of the database they came from
        with psycopg.connect(dbname=scratch, autocommit=True) as c:
            c.execute("create extension mccdb")
            c.execute("insert into mccdb_class (name) values ('elsewhere')")
        assert ctl.execute("select count(*) from mccdb_classes").fetchone() == (2,)
        ctl.execute(f"drop database {scratch}")
        assert ctl.execute("select name from mccdb_classes").fetchall() == [("default",)]
    finally:
        ctl.execute(f"drop database if exists {scratch} with (force)")
