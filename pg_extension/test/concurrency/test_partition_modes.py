"""mccdb.partition's back ends against a real server: auto, colors, resctrl
and off, with a directory laid out like /sys/fs/resctrl (this machine's
kernel has neither page colouring nor resctrl; the simulator's guest runs
the same code against a tree whose masks reach its cache model).

Needs the `test` cluster of scripts/run-tests.sh.  Each case restarts the
server with ALTER SYSTEM settings; the fixture resets them.
"""
import contextlib
import pathlib
import shutil
import tempfile

import pytest
from conftest import cluster, connect, query, server_log

INDEX = ["set enable_hashjoin = off", "set enable_mergejoin = off",
         "set enable_bitmapscan = off", "set enable_memoize = off",
         "set enable_material = off", "set max_parallel_workers_per_gather = 0"]


@pytest.fixture
def resctrl():
    """A resctrl-like tree the server's user can write, and a restart with
    the given mccdb.partition; reset and restarted afterwards."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="mccdb-resctrl-"))
    (root / "info" / "L3").mkdir(parents=True)
    (root / "info" / "L3" / "cbm_mask").write_text("ffff\n")
    (root / "info" / "L3" / "min_cbm_bits").write_text("1\n")
    (root / "schemata").write_text("L3:0=ffff;1=ffff\n")
    (root / "tasks").write_text("")
    for p in [root, *root.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o666)

    def start(mode, path=root):
        """mode None: mccdb.partition left at its default."""
        with connect() as c:
            if mode is None:
                c.execute("alter system reset mccdb.partition")
            else:
                c.execute(f"alter system set mccdb.partition = '{mode}'")
            c.execute(f"alter system set mccdb.resctrl_path = '{path}'")
        with server_log() as log:
            cluster("restart")
        with connect() as c:
            row = c.execute("select backend, status from mccdb_partition()").fetchone()
        return row, log.text

    yield root, start
    with connect() as c:
        c.execute("alter system reset mccdb.partition")
        c.execute("alter system reset mccdb.resctrl_path")
    cluster("restart")
    shutil.rmtree(root)


def colouring_kernel():
    return pathlib.Path("/sys/kernel/mm/page_coloring").exists()


pytestmark = pytest.mark.skipif(colouring_kernel(), reason="this kernel has page colours: auto picks them")


@pytest.mark.parametrize("mode", ["auto", "resctrl"])
def test_resctrl_confines_a_weak_plan_and_gives_its_backend_back(resctrl, mode):
    root, start = resctrl
    (backend, status), log = start(mode)
    assert backend == "resctrl", status
    assert f"weak plans in {root}/mccdb_weak with 2 L3 ways, the rest as in {root}/" in status
    assert "cache partitioning resctrl" in log
    # the group as resctrl wants it: the weak ways in every L3 domain
    assert (root / "mccdb_weak" / "schemata").read_text() == "L3:0=3;1=3\n"
    with connect() as c:
        pid = c.execute("select pg_backend_pid()").fetchone()[0]
        for s in INDEX:
            c.execute(s)
        sql = query(c, "plq_04")
        assert c.execute("select locality from mccdb_locality(%s)", (sql,)).fetchone()[0] == "weak"
        c.execute(sql).fetchall()
    # moved into the group for the statement, back to the root after it
    assert (root / "mccdb_weak" / "tasks").read_text() == f"{pid}\n"
    assert (root / "tasks").read_text() == f"{pid}\n"


def group(root, name, schemata="L3:0=ffff;1=ffff\n", tasks=""):
    """A control group the DBA made, as resctrl would show it."""
    d = root / name
    d.mkdir()
    (d / "schemata").write_text(schemata)
    (d / "tasks").write_text(tasks)
    for p in [d, *d.iterdir()]:
        p.chmod(0o777 if p.is_dir() else 0o666)
    return d


def weak_session(c):
    """Session settings under which plq_04 is a weak plan above
    mccdb.partition_min_cost; its text."""
    for s in INDEX:
        c.execute(s)
    sql = query(c, "plq_04")
    assert c.execute("select locality from mccdb_locality(%s)", (sql,)).fetchone()[0] == "weak"
    return sql


@contextlib.contextmanager
def session_in_pg(resctrl, schemata="L3:0=ffff;1=ffff\n"):
    """A server with mccdb.partition = resctrl and a session whose backend
    is in the DBA's group pg/ (pg/tasks lists it and another task, as the
    kernel would), set up to run plq_04 as a weak plan: (root, pg, conn,
    pid, plq_04's text)."""
    root, start = resctrl
    (backend, _), _ = start("resctrl")
    assert backend == "resctrl"
    pg = group(root, "pg", schemata)
    with connect() as c:
        pid = c.info.backend_pid
        (pg / "tasks").write_text(f"1\n{pid}\n")
        yield root, pg, c, pid, weak_session(c)


def test_a_weak_plan_goes_back_to_the_group_it_came_from(resctrl):
    """With the backend in the DBA's group pg/ (say, with a bandwidth
    limit), a weak statement runs in mccdb_weak and then goes back to pg/,
    not to the default group.  The tree is plain files: a write to a tasks
    file replaces it, so pg/tasks reads as the backend's pid alone only
    once mccdb has written it there."""
    with session_in_pg(resctrl, "MB:0=50;1=50\nL3:0=ffff;1=ffff\n") as (root, pg, c, pid, sql):
        c.execute(sql).fetchall()
    assert (root / "mccdb_weak" / "tasks").read_text() == f"{pid}\n", "moved for the statement"
    assert (pg / "tasks").read_text() == f"{pid}\n", "and back into pg/ after it"
    assert str(pid) not in (root / "tasks").read_text().split(), "never into the default group"


def test_a_cursor_closed_inside_another_statement_leaves_it_where_it_is(resctrl):
    """A cursor (a weak statement of its own) is closed by a function while
    another weak statement runs: the running statement stays in its group
    (nothing is written while it runs); when it ends, the backend goes back
    where it was before the cursor, pg/."""
    with session_in_pg(resctrl) as (root, pg, c, pid, sql):
        weak = root / "mccdb_weak" / "tasks"
        # empties every tasks file (a write by mccdb puts a pid back), closes
        # the cursor c, and says what the files hold then
        c.execute("""
            create function pg_temp.close_c(root text) returns text language plpgsql as $$
            declare
                r refcursor := 'c';
                f text;
                files text[] := array[root || '/tasks', root || '/pg/tasks', root || '/mccdb_weak/tasks'];
                out text := '';
            begin
                foreach f in array files loop
                    execute format('copy (select 0) to %L', f);
                end loop;
                close r;
                foreach f in array files loop
                    out := out || pg_read_file(f);
                end loop;
                return out;
            end $$""")
        outer = f"select (select pg_temp.close_c('{root}')), count(*) from ({sql}) q"
        assert c.execute("select locality from mccdb_locality(%s)", (outer,)).fetchone()[0] == "weak"
        with c.transaction():
            c.execute(f"declare c cursor for {sql}")
            assert weak.read_text() == f"{pid}\n", "the cursor's statement runs in mccdb_weak"
            c.execute("fetch 1 from c").fetchall()
            files, _ = c.execute(outer).fetchone()
            assert files == "0\n0\n0\n", \
                "closing the cursor moved the running statement's backend (default group, pg/, mccdb_weak)"
            assert not c.execute("select count(*) from pg_cursors where name = 'c'").fetchone()[0]
            assert (pg / "tasks").read_text() == f"{pid}\n", "back in pg/ when the statement ends"
            assert (root / "tasks").read_text() == "0\n", "not in the default group"


def test_another_statement_between_a_cursor_s_fetches_gives_it_back_its_group(resctrl):
    """A cursor opened, another statement run (a strong one, which runs in
    the backend's own group), the cursor fetched from again and closed: the
    cursor's fetches run in mccdb_weak again, and its close takes the
    backend home to pg/."""
    with session_in_pg(resctrl) as (root, pg, c, pid, sql):
        weak = root / "mccdb_weak" / "tasks"
        with c.transaction():
            c.execute(f"declare c cursor for {sql}")
            c.execute("fetch 1 from c").fetchall()
            assert weak.read_text() == f"{pid}\n"
            weak.write_text("0\n")
            for s in ["set enable_hashjoin = on", "set enable_nestloop = off"]:
                c.execute(s)
            strong = query(c, "plq_04")
            assert c.execute("select locality from mccdb_locality(%s)", (strong,)).fetchone()[0] != "weak"
            c.execute(strong).fetchall()
            assert (pg / "tasks").read_text() == f"{pid}\n", "the strong statement ran in pg/"
            assert weak.read_text() == f"{pid}\n", "and the cursor is back in mccdb_weak after it"
            (pg / "tasks").write_text("0\n")
            c.execute("fetch 1 from c").fetchall()
            assert (pg / "tasks").read_text() == "0\n", "its fetch runs there"
            c.execute("close c")
            assert (pg / "tasks").read_text() == f"{pid}\n", "closed: home to pg/"


def test_a_failed_move_is_logged_once_not_sent_to_the_client(resctrl):
    root, start = resctrl
    (backend, _), _ = start("resctrl")
    assert backend == "resctrl"
    tasks = root / "mccdb_weak" / "tasks"
    if tasks.exists():
        tasks.unlink()
    tasks.mkdir()                   # writing it fails (EISDIR)
    with server_log() as log:
        with connect() as c:
            notices = []
            c.add_notice_handler(lambda d: notices.append(d.message_primary))
            sql = weak_session(c)
            c.execute(sql).fetchall()
            c.execute(sql).fetchall()
            status = c.execute("select status from mccdb_partition()").fetchone()[0]
    assert notices == [], notices
    assert log.text.count("cache partitioning failed in this backend") == 1, log.text
    assert f"failed in this backend: cannot move pid" in status, status


def test_the_default_is_off_even_with_a_resctrl_mount(resctrl):
    """Loading the library changes nothing until the DBA sets
    mccdb.partition: with a writable resctrl mount present, a weak
    statement above mccdb.partition_min_cost is not moved."""
    root, start = resctrl
    (backend, status), log = start(None)
    assert (backend, status) == ("none", "off (mccdb.partition = off)")
    assert "cache partitioning" not in log
    pg = group(root, "pg")
    with connect() as c:
        assert c.execute("show mccdb.partition").fetchone()[0] == "off"
        pid = c.info.backend_pid
        (pg / "tasks").write_text(f"1\n{pid}\n")
        sql = weak_session(c)
        c.execute(sql).fetchall()
    assert not (root / "mccdb_weak").exists()
    assert (pg / "tasks").read_text() == f"1\n{pid}\n"
    assert (root / "tasks").read_text() == ""


def test_a_statement_below_partition_min_cost_is_not_moved(resctrl):
    """A move costs tens of microseconds (docs/results/mechanism-costs.md):
    a cheap weak statement runs where its backend is; with
    mccdb.partition_min_cost = 0 the same statement is moved."""
    root, start = resctrl
    (backend, _), _ = start("resctrl")
    assert backend == "resctrl"
    cheap = "select s_name from supplier where s_suppkey = 1"
    tasks = root / "mccdb_weak" / "tasks"
    with connect() as c:
        pid = c.info.backend_pid
        assert c.execute("select locality from mccdb_locality(%s)", (cheap,)).fetchone()[0] == "weak"
        plan = c.execute(f"explain (format json) {cheap}").fetchone()[0][0]["Plan"]
        assert plan["Total Cost"] < float(c.execute("show mccdb.partition_min_cost").fetchone()[0]), plan
        c.execute(cheap).fetchall()
        assert not tasks.exists() or tasks.read_text() != f"{pid}\n", "a cheap statement was moved"
        c.execute("set mccdb.partition_min_cost = 0")
        c.execute(cheap).fetchall()
        assert tasks.read_text() == f"{pid}\n", "with the threshold at 0 it is moved"
        assert (root / "tasks").read_text() == f"{pid}\n", "and back after it"


def test_a_strong_plan_stays_in_the_root_group(resctrl):
    root, start = resctrl
    (backend, _), _ = start("resctrl")
    assert backend == "resctrl"
    hash_join = ["set enable_nestloop = off", "set enable_mergejoin = off",
                 "set max_parallel_workers_per_gather = 0"]
    with connect() as c:
        for s in hash_join:
            c.execute(s)
        sql = query(c, "plq_04")
        assert c.execute("select locality from mccdb_locality(%s)", (sql,)).fetchone()[0] != "weak"
    # a session that runs only the hash join (a weak statement above
    # mccdb.partition_min_cost would be moved)
    with connect() as c:
        for s in hash_join:
            c.execute(s)
        c.execute(sql).fetchall()
        pid = c.info.backend_pid
    tasks = root / "mccdb_weak" / "tasks"
    assert not tasks.exists() or tasks.read_text() != f"{pid}\n", "the hash join's backend was never in the group"


def test_colors_only_does_not_fall_back_to_resctrl(resctrl):
    root, start = resctrl
    (backend, status), _ = start("colors")
    assert backend == "none"
    assert status == "unavailable: the kernel has no page colouring (no /sys/kernel/mm/page_coloring)"
    assert not (root / "mccdb_weak").exists()


def test_resctrl_without_a_mount_says_which_path(resctrl):
    root, start = resctrl
    (backend, status), _ = start("resctrl", root / "missing")
    assert backend == "none"
    assert status == f"unavailable: {root}/missing is not a resctrl mount with L3 allocation"


def test_off(resctrl):
    root, start = resctrl
    (backend, status), _ = start("off")
    assert (backend, status) == ("none", "off (mccdb.partition = off)")
    assert not (root / "mccdb_weak").exists()


def test_an_unknown_mode_is_refused():
    with connect() as c:
        with pytest.raises(Exception, match='invalid value for parameter "mccdb.partition"'):
            c.execute("alter system set mccdb.partition = 'cat'")
