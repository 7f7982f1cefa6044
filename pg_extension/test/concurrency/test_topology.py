"""The last-level-cache domains the server reads at start (mccdb_llc_domains).

mccdb.cpu_topology_root points the postmaster at a made-up
/sys/devices/system/cpu: machines of 1, 2 and 8 domains, uneven domains,
offline CPUs, a machine without an L3, and descriptions that are missing
or contradict themselves (then all online CPUs form one domain, and the
view and the log say why).  Each case restarts the project cluster the
libpq environment points at (scripts/pg-cluster.sh restart).
"""
import os
import pathlib
import shutil

import pytest

from conftest import connect, domains_of, make_machine

MB = 1024 * 1024


@pytest.mark.parametrize("groups", [
    [range(0, 2)],                                  # one LLC, as on these VMs
    [range(0, 4), range(4, 8)],                     # two core complexes
    [range(2 * i, 2 * i + 2) for i in range(8)],    # eight domains of two
    [range(0, 6), range(6, 8)],                     # uneven
], ids=["1 domain", "2 domains", "8 domains", "uneven"])
def test_domains_are_the_cpus_sharing_each_llc(machine, groups):
    root, start = machine
    groups = [list(g) for g in groups]
    ncpu = sum(len(g) for g in groups)
    make_machine(root, f"0-{ncpu - 1}", domains_of(groups))
    rows, _ = start()
    assert rows == [(i, f"{g[0]}-{g[-1]}", len(g), 3, 32 * MB, "sysfs") for i, g in enumerate(groups)]


def test_offline_cpus_are_left_out(machine):
    root, start = machine
    # cpu3 and cpu6 offline: Linux keeps them out of "online", and sysfs
    # still has their directories; the lists name the whole cache's CPUs
    make_machine(root, "0-2,4-5,7", domains_of([list(range(0, 4)), list(range(4, 8))]))
    rows, _ = start()
    assert [(r[1], r[2]) for r in rows] == [("0-2", 3), ("4-5,7", 3)]


def test_without_an_l3_the_highest_data_cache_is_the_llc(machine):
    root, start = machine
    make_machine(root, "0-3", domains_of([[0, 1], [2, 3]]), level=2, size="2048K")
    rows, _ = start()
    assert rows == [(0, "0-1", 2, 2, 2 * MB, "sysfs"), (1, "2-3", 2, 2, 2 * MB, "sysfs")]


def test_contradicting_lists_make_one_domain_and_say_why(machine):
    root, start = machine
    llc = domains_of([list(range(0, 4))])
    llc[1] = "0-1"          # cpu1 disagrees with cpu0 about their cache
    make_machine(root, "0-3", llc)
    rows, log = start()
    assert [(r[1], r[2]) for r in rows] == [("0-3", 4)]
    assert rows[0][5].startswith("one domain: cpu1's last-level cache lists CPUs 0-1"), rows
    assert "all 4 online CPUs form one last-level-cache domain" in log, log[-2000:]


@pytest.mark.parametrize("damage", ["no online file", "garbage online", "no caches", "garbage list"])
def test_a_missing_or_damaged_description_makes_one_domain(machine, damage):
    root, start = machine
    make_machine(root, "0-3", domains_of([[0, 1], [2, 3]]))
    if damage == "no online file":
        (root / "online").unlink()
    elif damage == "garbage online":
        (root / "online").write_text("0-\n")
    elif damage == "no caches":
        shutil.rmtree(root / "cpu2" / "cache")
    else:
        (root / "cpu0" / "cache" / "index3" / "shared_cpu_list").write_text("0-1x\n")
    rows, log = start()
    assert len(rows) == 1 and rows[0][5].startswith("one domain: "), rows
    assert "form one last-level-cache domain" in log
    if damage in ("no online file", "garbage online"):
        # no CPU list at all: the CPUs the server may run on
        assert rows[0][2] == len(os.sched_getaffinity(0)), rows
    else:
        assert (rows[0][1], rows[0][2]) == ("0-3", 4), rows


def test_this_machine(machine):
    """The real sysfs: every online CPU in exactly one domain."""
    _, start = machine
    rows, _ = start("/sys/devices/system/cpu")
    online = pathlib.Path("/sys/devices/system/cpu/online").read_text().strip()
    count = sum(int(b) - int(a) + 1 for a, _, b in (
        (part.partition("-")[0], "", part.partition("-")[2] or part.partition("-")[0])
        for part in online.split(",")))
    assert sum(r[2] for r in rows) == count, (rows, online)
    assert all(r[5] == "sysfs" for r in rows), rows


def test_the_root_is_for_superusers():
    with connect() as c:
        c.execute("create role mccdb_topology_nobody")
        try:
            c.execute("set role mccdb_topology_nobody")
            with pytest.raises(Exception) as e:
                c.execute("show mccdb.cpu_topology_root")
            assert "examine" in str(e.value), e.value
            # the view itself is for everyone, like the cache geometry
            assert c.execute("select count(*) from mccdb_llc_domains").fetchone()[0] >= 1
        finally:
            c.execute("reset role")
            c.execute("drop role mccdb_topology_nobody")


@pytest.mark.parametrize("size", ["16384K", "16M", "16m", "16384k", "16777216"])
def test_the_cache_geometry_and_the_domains_read_the_same_sizes(machine, size):
    """One reader (libpagecolor) of the made-up tree for both: C (cpu0's
    LLC) and the domains' cache sizes, whichever way sysfs spells the size."""
    root, start = machine
    make_machine(root, "0-3", domains_of([[0, 1, 2], [3]]), size=size)
    rows, _ = start()
    with connect() as c:
        geo = c.execute("select level, size_bytes, shared_cpu_list, shared_cpus, llc_bytes "
                        "from mccdb_cache_geometry()").fetchone()
    assert [(r[3], r[4]) for r in rows] == [(3, 16 * MB)] * 2, rows
    assert geo == (3, 16 * MB, "0-2", 3, 16 * MB), geo


def test_the_source_names_the_root_only_to_roles_that_may_read_it(machine):
    """mccdb.cpu_topology_root is superuser-only (as SHOW says); the view is
    for everyone, so others see why without the directory."""
    root, start = machine
    make_machine(root, "0-3", domains_of([[0, 1], [2, 3]]))
    (root / "online").unlink()
    rows, _ = start()
    assert str(root) in rows[0][5], rows
    with connect() as c:
        c.execute("create role mccdb_topology_plain")
        c.execute("create role mccdb_topology_settings in role pg_read_all_settings")
        try:
            for role, sees in (("mccdb_topology_plain", False), ("mccdb_topology_settings", True)):
                c.execute(f"set role {role}")
                source = c.execute("select source from mccdb_llc_domains").fetchone()[0]
                c.execute("reset role")
                assert source.startswith("one domain: "), (role, source)
                assert (str(root) in source) == sees, (role, source)
                assert ("online" in source) and ("/sys" not in source or sees), (role, source)
        finally:
            c.execute("reset role")
            c.execute("drop role mccdb_topology_plain")
            c.execute("drop role mccdb_topology_settings")
