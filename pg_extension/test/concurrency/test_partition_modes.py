"""mccdb.partition's back ends against a real server: auto, colors, resctrl
and off, with a directory laid out like /sys/fs/resctrl (this machine's
kernel has neither page colouring nor resctrl; the simulator's guest runs
the same code against a tree whose masks reach its cache model).

Needs the `test` cluster of scripts/run-tests.sh.  Each case restarts the
server with ALTER SYSTEM settings; the fixture resets them.
"""
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
        with connect() as c:
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
    assert f"weak plans in {root}/mccdb_weak with 2 L3 ways" in status
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
