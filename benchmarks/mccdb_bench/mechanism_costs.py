"""What placement and resctrl cost per query: the sched_setaffinity pair and the resctrl task moves.

Each configuration is a restart of the project cluster (its settings are
restart-only), the three in an order of their own in each repetition:

  none       mccdb.placement off, mccdb.partition off
  placement  mccdb.placement on, mccdb.cpu_topology_root a made-up machine
             whose two LLC domains are this machine's CPU 0 and CPU 1: a
             gated query's backend is bound to its domain's CPU for the run
             and given its CPUs back after (the sched_setaffinity pair)
  resctrl    mccdb.partition = resctrl on a directory laid out like
             /sys/fs/resctrl (this kernel has none): a weak plan's backend
             is written into mccdb_weak/tasks for the statement and into
             tasks after it; this is mccdb's side of a class change, the
             kernel's side on a real resctrl mount is not in it

In each server a tiny weak query runs alternately through the admission
gate (mccdb.schedule = mls, mccdb.min_cost = 0) and past it (min_cost
above its cost); the client-side median of each over --rounds.  Per
repetition:

  gate       gated - bypass, in "none"
  placement  gated in "placement" - gated in "none"
  resctrl    bypass in "resctrl" - bypass in "none" (every weak statement moves)

The made-up trees are on tmpfs (/dev/shm), so a task move costs what
mccdb does (open, write, close of a tasks file, twice per statement) and
not a disk file system's truncation.

and, in this process, the bare syscall pair (os.sched_setaffinity to CPU 0
and back) for scale.  Each server is checked to do what it is measured for
(a gated query bound to one CPU while it runs and given both back; the
backend's pid in mccdb_weak/tasks and back in tasks).  Page colouring's
costs (coloured faults, migration between colours) need the patched
kernel: kernel-fault-throughput measures them in its guest.

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.mechanism_costs --db plq --reps 5
"""
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time

from .harness import pg, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of

QUERY = "select s_name from supplier where s_suppkey = 1"
SLEEPER = "select pg_sleep(0.5) from (select count(*) from supplier) s"
# The query is cheaper than mccdb.partition_min_cost: the sessions that
# measure a move lower it to 0; "default" keeps it (the move skipped).
MOVED = ["set mccdb.partition_min_cost = 0"]
SESSIONS = {"gated": ["set mccdb.min_cost = 0"] + MOVED,
            "bypass": ["set mccdb.min_cost = 1e30"] + MOVED,
            "default": ["set mccdb.min_cost = 1e30"]}
CONFIGS = ("none", "placement", "resctrl")
CPUS = (0, 1)


def made_up_machine(root):
    """A sysfs-like CPU tree in which CPU 0 and CPU 1 each have an L3 of their
    own, as their only cache (index0: mccdb reads indexN from 0 up)."""
    (root / "online").write_text("0-1\n")
    for cpu in (0, 1):
        d = root / f"cpu{cpu}" / "cache" / "index0"
        d.mkdir(parents=True)
        for name, value in (("level", 3), ("type", "Unified"), ("size", "16384K"), ("shared_cpu_list", cpu)):
            (d / name).write_text(f"{value}\n")


def resctrl_tree(root):
    """A directory laid out like a resctrl mount with one L3 domain of 16 ways."""
    (root / "info" / "L3").mkdir(parents=True)
    (root / "info" / "L3" / "cbm_mask").write_text("ffff\n")
    (root / "info" / "L3" / "min_cbm_bits").write_text("1\n")
    (root / "schemata").write_text("L3:0=ffff\n")
    (root / "tasks").write_text("")


def open_to_the_server(root):
    """The server runs as another user (the cluster user under root)."""
    for p in [root, *root.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o666)


def settings_of(config, topology, resctrl):
    return {
        "mccdb.placement": "on" if config == "placement" else "off",
        "mccdb.cpu_topology_root": str(topology) if config == "placement" else None,
        "mccdb.partition": "resctrl" if config == "resctrl" else "off",
        "mccdb.resctrl_path": str(resctrl) if config == "resctrl" else None,
        "mccdb.schedule": "mls",
    }


def cpus_allowed(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return "?"


def check_placement(db):
    """A gated query's backend bound to one CPU while it runs, both CPUs
    after: (ok, the CPU it was bound to, what was seen)."""
    with pg.connect(db) as ctl, pg.connect(db, SESSIONS["gated"]) as c:
        domains = ctl.execute("select string_agg(cpus, ';' order by domain) from mccdb_llc_domains").fetchone()[0]
        pid = c.info.backend_pid
        before = cpus_allowed(pid)
        running = None
        t = threading.Thread(target=lambda: c.execute(SLEEPER).fetchall())
        t.start()
        for _ in range(100):
            row = ctl.execute("select domain from mccdb_queue where pid = %s and state = 'running'",
                              (pid,)).fetchone()
            if row:
                running = (cpus_allowed(pid), row[0])
                break
            time.sleep(0.01)
        t.join()
        after = cpus_allowed(pid)
    ok = domains == "0;1" and running is not None and running[0] in ("0", "1") and after == before
    during = f"{running[0]} (domain {running[1]})" if running else "never seen running"
    return (ok, int(running[0]) if ok else None,
            f"domains {domains}; the gated backend's CPUs {before} before, {during} while it ran, {after} after")


def check_resctrl(db, root):
    """A weak statement's backend moved into mccdb_weak and back."""
    with pg.connect(db, MOVED) as c:
        backend, status = c.execute("select backend, status from mccdb_partition()").fetchone()
        pid = c.info.backend_pid
        c.execute(QUERY).fetchall()
    weak = (root / "mccdb_weak" / "tasks")
    moved_in = weak.exists() and weak.read_text() == f"{pid}\n"
    back = (root / "tasks").read_text() == f"{pid}\n"
    ok = backend == "resctrl" and moved_in and back
    return ok, f"{status}; after a statement its backend was in mccdb_weak/tasks: {moved_in}, back in tasks: {back}"


def medians(db, rounds, cpu):
    """Median client-side µs of QUERY in each of SESSIONS.
    This process and the backends start on cpu: with two CPUs, whether a
    round trip crosses CPUs moves it by tens of µs, more than the costs
    measured; placement then moves the gated backend as it would."""
    mine = os.sched_getaffinity(0)
    conns = {k: pg.connect(db, v) for k, v in SESSIONS.items()}
    try:
        for pid in [0] + [c.info.backend_pid for c in conns.values()]:
            os.sched_setaffinity(pid, {cpu})
        t = {k: [] for k in conns}
        # gated and bypass interleaved; then "default" by itself, since a
        # neighbour's moves on the same CPU slow it by about 10 µs
        for group in (("gated", "bypass"), ("default",)):
            for i in range(rounds + rounds // 10):
                for k in group:
                    us = pg.timed(conns[k], QUERY) * 1e6
                    if i >= rounds // 10:      # the first tenth warms up
                        t[k].append(us)
    finally:
        os.sched_setaffinity(0, mine)
        for c in conns.values():
            c.close()
    return {k: statistics.median(v) for k, v in t.items()}


def syscall_pair_us(n=20000):
    """os.sched_setaffinity to CPU 0 and back, µs per pair (this process)."""
    mine = os.sched_getaffinity(0)
    t0 = time.perf_counter()
    for _ in range(n):
        os.sched_setaffinity(0, {0})
        os.sched_setaffinity(0, mine)
    return (time.perf_counter() - t0) / n * 1e6


def tasks_pair_us(directory, n=20000):
    """This process's pid written into a tasks file of directory and into
    another, as mccdb does per weak statement, µs per pair (for scale)."""
    text = f"{os.getpid()}\n"
    a, b = directory / "group-tasks", directory / "tasks"
    t0 = time.perf_counter()
    for _ in range(n):
        with open(a, "w") as f:
            f.write(text)
        with open(b, "w") as f:
            f.write(text)
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2000, help="runs of the query each way per server")
    ap.add_argument("--name", default="mechanism-costs")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.rounds < 10:
        ap.error("--reps must be at least 1 and --rounds at least 10")
    if not {0, 1} <= os.sched_getaffinity(0):
        ap.error("needs CPUs 0 and 1 (the made-up machine's two domains)")
    say = say_fn(a.quiet)
    res = report.Result(a.name, "What placement and resctrl cost per query",
                        pg.server_info(a.db), scale_of(a.db), a.outdir)
    with pg.connect(a.db) as c:
        locality = c.execute("select locality from mccdb_locality(%s)", (QUERY,)).fetchone()[0]
        cost = c.execute(f"explain (format json) {QUERY}").fetchone()[0][0]["Plan"]["Total Cost"]
        threshold = float(c.execute("show mccdb.partition_min_cost").fetchone()[0])
    if locality != "weak":
        raise RuntimeError(f"{QUERY!r} is {locality}, not weak: resctrl would not move it")
    if cost >= threshold:
        raise RuntimeError(f"{QUERY!r} costs {cost}, not under mccdb.partition_min_cost ({threshold})")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="mccdb-costs-", dir=shm))
    topology, resctrl = scratch / "cpu", scratch / "resctrl"
    topology.mkdir()
    resctrl.mkdir()
    made_up_machine(topology)
    resctrl_tree(resctrl)
    open_to_the_server(scratch)
    guard = res.guard = start_guard(a, say, own_load=1)
    m, checks, placed = {}, [], set()
    try:
        for rep in range(1, a.reps + 1):
            order = random.Random(rep).sample(CONFIGS, len(CONFIGS))
            for config in order:
                pg.restart_with(settings_of(config, topology, resctrl), a.db)
                if config == "placement":
                    ok, cpu, what = check_placement(a.db)
                    placed.add(cpu)
                    checks.append((rep, config, ok, what))
                elif config == "resctrl":
                    checks.append((rep, config) + check_resctrl(a.db, resctrl))
                for cpu in random.Random(-rep).sample(CPUS, len(CPUS)):
                    guard.before(f"{config} from CPU {cpu}, repetition {rep}")
                    m[(rep, config, cpu)] = medians(a.db, a.rounds, cpu)
                    guard.after()
                    say(f"rep {rep} {config} from CPU {cpu}: " +
                        ", ".join(f"{k} {v:.1f} us" for k, v in m[(rep, config, cpu)].items()))
        guard.before("syscall pair and tasks writes")
        pair = [syscall_pair_us() for _ in range(a.reps)]
        writes = [tasks_pair_us(scratch) for _ in range(a.reps)]
        guard.after()
    finally:
        pg.restart_with({k: None for k in settings_of("none", topology, resctrl)}, a.db)
        shutil.rmtree(scratch, ignore_errors=True)
    failed = [c for c in checks if not c[2]]
    if failed:
        raise RuntimeError(f"a server did not do what it was measured for: {failed}")
    if len(placed) != 1:
        raise RuntimeError(f"the gate placed the query on CPUs {sorted(placed)} in different servers")
    home = placed.pop()
    away = 1 - home
    reps = range(1, a.reps + 1)

    def rise(config, path, cpus):
        """config's median over "none"'s, same path, same starting CPU(s), per repetition."""
        return stats.summarize([statistics.mean(m[(r, config, c)][path] - m[(r, "none", c)][path] for c in cpus)
                                for r in reps])

    costs = [
        ("admission (the gate, no placement)", "through the gate - past it, placement off",
         stats.summarize([statistics.mean(m[(r, "none", c)]["gated"] - m[(r, "none", c)]["bypass"] for c in CPUS)
                          for r in reps])),
        (f"placement, the backend already on its domain's CPU {home}: the sched_setaffinity pair and the choice",
         f"through the gate with placement - without, started on CPU {home}", rise("placement", "gated", [home])),
        (f"placement, the backend moved from CPU {away} to its domain's CPU {home} and back",
         f"through the gate with placement - without, started on CPU {away}", rise("placement", "gated", [away])),
        ("resctrl: the backend into mccdb_weak/tasks and back (mccdb's side)",
         "past the gate with partition = resctrl - past it with partition off, mccdb.partition_min_cost = 0",
         rise("resctrl", "bypass", CPUS)),
        ("resctrl, the statement below mccdb.partition_min_cost (default 1000): not moved",
         "the same with mccdb.partition_min_cost at its default", rise("resctrl", "default", CPUS)),
        ("the bare syscall pair, from Python (for scale)", "os.sched_setaffinity(0, {0}) and back",
         stats.summarize(pair)),
        ("the two tasks-file writes, from Python (for scale)",
         f"open, write the pid, close, twice, on {shm or 'the temporary directory'}", stats.summarize(writes)),
    ]
    res.add(f"`{QUERY}` (an index lookup, weak: no hash table, estimated cost {cost:g}, under "
            f"mccdb.partition_min_cost {threshold:g}), {a.rounds} runs "
            "through the gate and past it, interleaved, then past it with mccdb.partition_min_cost at its default "
            "by itself (beside the others' moves it is about 10 µs slower), in each server (the first two "
            "sessions set mccdb.partition_min_cost = 0, so that resctrl moves "
            "the statement), once with the client and the backends started "
            f"on CPU 0 and once on CPU 1 (in an order of their own); client-side time; the made-up CPU and "
            f"resctrl trees on {shm or 'the temporary directory'}. With nothing else running the gate put "
            f"the query in the domain of CPU {home} in every server. {a.reps} repetitions, each a restart per "
            "configuration in an order of its own; median (min-max) over the repetitions of the per-repetition "
            "differences of medians. `mccdb.schedule = mls` in every server.\n")
    res.table(["cost per query", "how", "µs"], [[what, how, s.fmt(1)] for what, how, s in costs])
    res.add("\nMedians per server and starting CPU (µs):\n")
    res.table(["repetition", "configuration", "started on CPU", "through the gate", "past the gate",
               "past the gate, partition_min_cost default"],
              [[r, cfg, c] + [f"{m[(r, cfg, c)][k]:.1f}" for k in SESSIONS]
               for r in reps for cfg in CONFIGS for c in CPUS])
    res.add("\nWhat each server was checked to do before it was measured:\n")
    res.add("\n".join(f"- repetition {r}, {cfg}: {'PASS' if ok else 'FAIL'}: {what}" for r, cfg, ok, what in checks))
    return res, costs


if __name__ == "__main__":
    sys.exit(run(main))
