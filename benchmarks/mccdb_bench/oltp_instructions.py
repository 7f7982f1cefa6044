"""Instructions mccdb adds to an OLTP statement, counted under callgrind (issue 49).

Throughput and CPU time on this VM move by 5-30% between rounds (the
neighbours), so a cost of a few per cent takes hours of paired rounds to
resolve (oltp_cost).  The instructions a backend executes per transaction
do not depend on the neighbours at all: this counts them.  For every
configuration (oltp_cost's: stock, all-off, one feature on, defaults,
defaults-shortest, and stock-queryid, defaults-no-queryid,
defaults-queryid-on) the project
cluster is restarted into it (ALTER SYSTEM, preload), --db is copied to a
new database (CREATE DATABASE ... TEMPLATE: the same tables, dead tuples
and free space every time, which the TPC-B-like updates would otherwise
change from one configuration to the next), and the cluster is started
again under valgrind --tool=callgrind (every process of it; nothing that
runs by the clock: no autovacuum, no timed checkpoint); then per cell
(pgbench script x -M protocol, one client, in that order) pgbench runs
--transactions N1,N2 transactions in two connections with one fixed
--random-seed (the same accounts in every configuration), and

    instructions per transaction = (Ir(backend of N2) - Ir(backend of N1)) / (N2 - N1)

which leaves out the connection's start and exit.  The same difference per
function (callgrind_annotate) says where the added instructions are: in
mccdb.so (self, grouped by source file: which module), in JumbleQuery (the
query id PostgreSQL computes where compute_query_id = on, pg_stat_statements
or mccdb asks for it), and in the rest of PostgreSQL (what mccdb makes it
do: palloc, hash lookups, ...).

--cache-sim adds callgrind's cache model (first level and last level,
the host's sizes): misses per transaction, the same difference.  A model,
not this machine's counters (it has no PMU), but as reproducible.

Instructions are not time (cache misses, the kernel's share), so the page
also converts them at the rate of this machine: one native run of stock per
cell (--native-seconds, on a copy of --db as well, so that no run changes
the database the next one copies) gives the server's user CPU per
transaction, which over stock's instructions per transaction is nanoseconds
per instruction.

    eval "$(scripts/pg-cluster.sh env NAME)"
    .venv/bin/python -m mccdb_bench.oltp_instructions --configs stock,all-off,queryid,defaults

Needs valgrind (scripts/debian-packages.txt) and a project cluster on this
host; leaves the cluster as oltp_cost does (mccdb preloaded, the settings it
changed reset).  Instruction counts do not need a quiet machine; the native
calibration runs do, and the guard checks before each.
"""
import contextlib
import os
import pathlib
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import oltp_cost
from .harness import pg, procstat, report
from .harness.cli import parser, run, say_fn, start_guard
from .paths import CLUSTER_SCRIPT

ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?):(\S+)(?:\s+\[(.*)\])?\s*$")
JUMBLE = "JumbleQuery"
RANDOM_SEED = 1
# the server under callgrind: nothing that runs by the clock (autovacuum, a
# timed checkpoint whose full-page images the next updates would write)
QUIET_SERVER = ["-c", "autovacuum=off", "-c", "checkpoint_timeout=1d", "-c", "max_wal_size=100GB"]


# --- callgrind's output ----------------------------------------------------------

def annotate(path, inclusive):
    """{(file, function, object): Ir} from callgrind_annotate of one profile."""
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--auto=no", "--threshold=100", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return parse_annotate(out)


def parse_annotate(text):
    costs = {}
    for line in text.splitlines():
        m = ANNOTATE_LINE.match(line)
        if m is None or m.group(2) == "PROGRAM TOTALS":
            continue
        key = (m.group(2), m.group(3), m.group(4) or "")
        costs[key] = costs.get(key, 0) + int(m.group(1).replace(",", ""))
    return costs


def summary_events(path):
    """{event: total} of a profile ('events:' and 'summary:' lines): Ir, and
    with --cache-sim the cache model's accesses and misses too."""
    names, totals = [], []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("summary:"):
                totals = [int(x) for x in line.split()[1:]]
                break       # the header's last line of the two
    return dict(zip(names, totals))


def summary_ir(path):
    """The profile's total Ir, 0 when it has none."""
    return summary_events(path).get("Ir", 0)


# callgrind --cache-sim's events: first-level instruction and data read and
# write misses, last-level ones
CACHE_EVENTS = ["I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]


def per_tx(big, small, n):
    """{key: (big - small) / n} over both dicts' keys."""
    return {k: (big.get(k, 0) - small.get(k, 0)) / n for k in set(big) | set(small)}


def breakdown(self_diff, incl_diff):
    """Where a configuration's added instructions per transaction are:
    mccdb.so's own by source file, JumbleQuery (inclusive), and the total."""
    modules = {}
    for (file, _fn, obj), v in self_diff.items():
        if obj.endswith("/mccdb.so"):
            name = pathlib.Path(file).name if file != "???" else "mccdb.so"
            modules[name] = modules.get(name, 0) + v
    jumble = sum(v for (_f, fn, _o), v in incl_diff.items() if fn == JUMBLE)
    return modules, jumble


# --- the server under valgrind -----------------------------------------------------

class ServerUnderCallgrind:
    """The project cluster's postmaster, restarted under callgrind: every
    process it forks writes outdir/cg.PID when it exits."""

    def __init__(self, db, outdir, say, cache_sim=False):
        self.db, self.outdir, self.say, self.cache_sim = db, pathlib.Path(outdir), say, cache_sim
        with pg.connect(db, base=False) as c:
            self.datadir = c.execute("show data_directory").fetchone()[0]
            pm = procstat.postmaster_of(c.info.backend_pid)
        self.exe = os.readlink(f"/proc/{pm}/exe")
        self.owner = pwd.getpwuid(os.stat(self.datadir).st_uid).pw_name
        self.proc = None

    def as_owner(self, cmd):
        if os.geteuid() == 0 and self.owner != "root":
            return ["sudo", "-u", self.owner, *cmd]
        return cmd

    def start(self):
        subprocess.run([str(CLUSTER_SCRIPT), "stop", pg.cluster_name(os.environ)], check=True,
                       stdout=subprocess.DEVNULL)
        self.outdir.mkdir(parents=True, exist_ok=True)
        # the server's owner writes the profiles (mkdtemp's parent is 0700)
        os.chmod(self.outdir.parent, 0o755)
        os.chmod(self.outdir, 0o777)
        log = open(self.outdir / "server.log", "w")
        self.proc = subprocess.Popen(
            self.as_owner(["valgrind", "--tool=callgrind", "--trace-children=yes",
                           *(["--cache-sim=yes"] if self.cache_sim else []),
                           f"--callgrind-out-file={self.outdir}/cg.%p", self.exe, "-D", self.datadir,
                           *QUIET_SERVER]),
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            pg.wait_until_up(self.db, timeout=180)
        except Exception as e:
            self.stop()
            tail = (self.outdir / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the server did not start under callgrind: {e}\n{tail}") from e
        with pg.connect(self.db, base=False) as c:
            self.postmaster = procstat.postmaster_of(c.info.backend_pid)
        return self

    def profiles(self):
        return set(self.outdir.glob("cg.*"))

    def backend_profile(self, cmd, env):
        """Run cmd (one pgbench connection); the profile of its backend: the
        new profile with the most instructions once its backend has exited."""
        before_files = self.profiles()
        before_kids = procstat.children(self.postmaster)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pgbench failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        procstat.settle(self.postmaster, before_kids, timeout=60)
        deadline = time.monotonic() + 60
        while True:
            new = [p for p in self.profiles() - before_files if summary_ir(p) > 0]
            if new or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not new:
            raise RuntimeError(f"no callgrind profile appeared for {' '.join(cmd)}")
        return max(new, key=summary_ir), oltp_cost.parse_pgbench(r.stdout)["transactions"]

    def stop(self):
        if self.proc is None:
            return
        pg_ctl = str(pathlib.Path(self.exe).with_name("pg_ctl"))
        subprocess.run(self.as_owner([pg_ctl, "-D", self.datadir, "-m", "fast", "-w", "-t", "120", "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def pgbench_tx(script, mode, n, db):
    """One connection's N transactions; the same accounts in the same order
    in every configuration (a fixed seed)."""
    return ["pgbench", "-n", "-b", oltp_cost.SCRIPTS[script][0], "-M", mode, "-c", "1", "-t", str(n),
            f"--random-seed={RANDOM_SEED}", db]


@contextlib.contextmanager
def database_copy(template, copy):
    """copy, a new database with template's files as they are (the same
    tables, dead tuples and free space for every configuration: the
    TPC-B-like script's updates change what the next run does), dropped
    when the block ends."""
    with pg.connect("postgres", base=False) as c:
        c.execute(f'drop database if exists "{copy}"')
        c.execute(f'create database "{copy}" template "{template}" strategy file_copy')
    try:
        yield copy
    finally:
        with pg.connect("postgres", base=False) as c:
            c.execute(f'drop database if exists "{copy}"')


def measure_config(cfg, db, cells, counts, workdir, say, cache_sim=False):
    """{cell: {'ir': Ir/tx, 'self': {...}, 'incl': {...}}} for one configuration."""
    env = {**os.environ, "PGOPTIONS": cfg.pgoptions()}
    out = {}
    with database_copy(db, f"{db}_callgrind") as copy:
        server = ServerUnderCallgrind(copy, workdir / cfg.name, say, cache_sim).start()
        try:
            for cell in cells:
                got = []
                for n in counts:
                    path, done = server.backend_profile(pgbench_tx(*cell, n, copy), env)
                    if done != n:
                        raise RuntimeError(f"pgbench ran {done} transactions, not {n}")
                    got.append((path, annotate(path, False), annotate(path, True)))
                (p1, s1, i1), (p2, s2, i2) = got
                n = counts[1] - counts[0]
                events = per_tx(summary_events(p2), summary_events(p1), n)
                out[cell] = {"ir": events["Ir"], "events": events,
                             "self": per_tx(s2, s1, n), "incl": per_tx(i2, i1, n)}
                say(f"  {cfg.name:18s} {cell[0]} -M {cell[1]}: {out[cell]['ir']:,.0f} instructions/tx")
        finally:
            server.stop()
            pg.cluster_command("restart", dbname=db)
    return out


def native_user_ns_per_tx(cell, db, seconds, guard):
    """The server's user CPU (ns) per transaction of one native run of cell
    (stock, one client): utime of the postmaster's tree."""
    with pg.connect(db, base=False) as c:
        pm = procstat.postmaster_of(c.info.backend_pid)

    def user_ticks():
        return procstat.tree_ticks(pm, user_only=True)[0]

    cmd = oltp_cost.pgbench_command(cell[0], cell[1], 1, seconds, db)
    env = {**os.environ, "PGOPTIONS": "-c synchronous_commit=off"}
    warmup = oltp_cost.pgbench_command(cell[0], cell[1], 1, 2, db)
    subprocess.run(warmup, env=env, capture_output=True, check=True)
    before = procstat.children(pm)
    with guard.measuring(f"stock {cell[0]} -M {cell[1]}"):
        t0 = user_ticks()
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        procstat.settle(pm, before, timeout=10)
        t1 = user_ticks()
    n = oltp_cost.parse_pgbench(r.stdout)["transactions"]
    return procstat.seconds(t1 - t0) * 1e9 / n


# --- the experiment --------------------------------------------------------------

def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--configs", default="stock,all-off,queryid,defaults,defaults-shortest",
                    help="oltp_cost's configurations, stock among them")
    ap.add_argument("--scripts", default="select-only,tpcb-like", help="pgbench built-in scripts")
    ap.add_argument("--modes", default=",".join(oltp_cost.MODES), help="pgbench -M protocols")
    ap.add_argument("--transactions", default="300,1300",
                    help="N1,N2: transactions in the two connections of a cell (N2 > N1)")
    ap.add_argument("--native-seconds", type=int, default=10,
                    help="the native stock run per cell that converts instructions to time (0: none)")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also callgrind's cache model: misses per transaction")
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s")
    ap.add_argument("--name", default="oltp-instructions")
    a = ap.parse_args(argv)
    cfgs = oltp_cost.parse_configs(a.configs)
    scripts = oltp_cost.names_list(a.scripts, list(oltp_cost.SCRIPTS), "--scripts")
    modes = oltp_cost.names_list(a.modes, list(oltp_cost.MODES), "--modes")
    counts = oltp_cost.int_list(a.transactions)
    if len(counts) != 2 or not 0 < counts[0] < counts[1]:
        raise SystemExit("--transactions: N1,N2 with 0 < N1 < N2")
    for tool in ("valgrind", "callgrind_annotate", "pgbench"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (scripts/install-deps.sh installs it)")
    if not os.environ.get("PGHOST", "").startswith("/"):
        raise SystemExit('this restarts a project cluster: eval "$(scripts/pg-cluster.sh env NAME)" first')
    db = a.db or "pgbench"
    say = say_fn(a.quiet)

    state = {"preloaded": oltp_cost.is_preloaded("postgres")}
    if not state["preloaded"]:
        pg.set_preload(True, "postgres")
        state["preloaded"] = True
    oltp_cost.ensure_pgbench(db, a.scale, say)
    srv = pg.server_info(db)
    res = report.Result(a.name, "Instructions mccdb adds to an OLTP statement (callgrind)", srv,
                        f"pgbench scale {a.scale}", a.outdir)
    cells = [(s, m) for s in scripts for m in modes]
    results = {}
    rate = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mccdb-oltp-instructions-") as tmp:
            for cfg in cfgs:
                oltp_cost.apply_config(cfg, db, state)
                results[cfg.name] = measure_config(cfg, db, cells, counts, pathlib.Path(tmp), say,
                                                   a.cache_sim)
            if a.native_seconds > 0:
                # counts need no quiet machine; the native runs that convert them do
                guard = res.guard = start_guard(a, say, own_load=2)
                oltp_cost.apply_config(oltp_cost.config("stock"), db, state)
                # on a copy too: --db stays what the next run copies
                with database_copy(db, f"{db}_native") as copy:
                    for cell in cells:
                        ns = native_user_ns_per_tx(cell, copy, a.native_seconds, guard)
                        rate[cell] = ns / results["stock"][cell]["ir"]
                        say(f"  native stock {cell[0]} -M {cell[1]}: {ns / 1000:.1f} us user CPU/tx, "
                            f"{rate[cell]:.3f} ns/instruction")
    finally:
        oltp_cost.restore_server(db)
    write_page(res, a, cfgs, cells, counts, results, rate)
    return res


def approx_us(d, cell, rate):
    """', ~N us': d instructions at the cell's native rate, when there is one."""
    return f", ~{d * rate[cell] / 1000:.2f} us" if cell in rate else ""


def write_page(res, a, cfgs, cells, counts, results, rate):
    res.add("The instructions a backend executes per pgbench transaction, counted by valgrind's callgrind: "
            "for each configuration the cluster restarted into it and then under "
            "`valgrind --tool=callgrind --trace-children=yes` (autovacuum off); per cell two connections of "
            f"one client, `pgbench -n -b SCRIPT -M MODE -c 1 -t N` with N = {counts[0]} and {counts[1]}, and "
            f"the difference of their backends' instructions over {counts[1] - counts[0]} transactions (the "
            "connection's start and exit cancel out). Counts do not depend on the machine's other load; "
            "they are not time (cache misses and the kernel's share are not in them).\n")
    if rate:
        res.add(f"`~us`: instructions at this machine's rate, from one native run of stock per cell "
                f"(`pgbench -c 1 -T {a.native_seconds}`, the server's user CPU per transaction over stock's "
                "instructions per transaction): "
                + "; ".join(f"{c[0]} -M {c[1]} {rate[c]:.3f} ns per instruction" for c in cells) + ".\n")
    res.table(["configuration", "what", "set"], [[c.name, c.what, c.settings_text()] for c in cfgs])
    res.add("## Instructions per transaction\n")
    headers = ["configuration"] + [f"{c[0]} -M {c[1]}" for c in cells]
    rows = []
    for cfg in cfgs:
        row = [cfg.name]
        for cell in cells:
            ir = results[cfg.name][cell]["ir"]
            base = results["stock"][cell]["ir"]
            if cfg.name == "stock":
                row.append(f"{ir:,.0f}")
            else:
                d = ir - base
                row.append(f"{ir:,.0f} ({d:+,.0f} = {100 * d / base:+.2f}%{approx_us(d, cell, rate)})")
        rows.append(row)
    res.table(headers, rows)
    if "stock-queryid" in results:
        res.add("Over `stock-queryid` (a server that computes every query id anyway, as one with "
                "pg_stat_statements does): what mccdb adds per transaction there, for the "
                "configurations that load it with compute_query_id = on.\n")
        qrows = []
        for cfg in cfgs:
            if not cfg.preload or cfg.session.get("compute_query_id") != "on":
                continue
            row = [cfg.name]
            for cell in cells:
                d = results[cfg.name][cell]["ir"] - results["stock-queryid"][cell]["ir"]
                row.append(f"{d:+,.0f} ({100 * d / results['stock-queryid'][cell]['ir']:+.2f}%"
                           f"{approx_us(d, cell, rate)})")
            qrows.append(row)
        res.table(headers, qrows)
    if a.cache_sim:
        res.add("## Cache misses per transaction in callgrind's cache model\n")
        res.add("callgrind's cache model (`--cache-sim=yes`: a first-level instruction and data cache and "
                "the last level, the host's sizes, no prefetch; a model, not this machine's counters): "
                "misses per transaction, and the difference to stock. I1mr/D1mr/D1mw: first-level "
                "instruction, data-read, data-write misses; ILmr/DLmr/DLmw: the last level's.\n")
        crows = []
        for cfg in cfgs:
            for cell in cells:
                ev, base = results[cfg.name][cell]["events"], results["stock"][cell]["events"]
                crows.append([cfg.name, f"{cell[0]} -M {cell[1]}"] +
                             [f"{ev.get(k, 0):,.1f}" + ("" if cfg.name == "stock" else
                                                        f" ({ev.get(k, 0) - base.get(k, 0):+,.1f})")
                              for k in CACHE_EVENTS])
        res.table(["configuration", "cell", *CACHE_EVENTS], crows)
    res.add("## Where the added instructions are\n")
    res.add("Per configuration and cell: the instructions per transaction added over stock; of them, "
            "JumbleQuery's (inclusive: the query id PostgreSQL computes where compute_query_id = on, "
            "pg_stat_statements or mccdb asks for it), mccdb.so's own (self) by source file, and the rest: "
            "PostgreSQL code that mccdb calls or makes run (palloc, hash lookups, ...).\n")
    brows = []
    for cfg in cfgs:
        if cfg.name == "stock":
            continue
        for cell in cells:
            r, s = results[cfg.name][cell], results["stock"][cell]
            modules, jumble = breakdown(per_tx(r["self"], s["self"], 1), per_tx(r["incl"], s["incl"], 1))
            added = r["ir"] - s["ir"]
            own = sum(modules.values())
            top = sorted(modules.items(), key=lambda kv: -kv[1])[:5]
            brows.append([cfg.name, f"{cell[0]} -M {cell[1]}", f"{added:+,.0f}", f"{jumble:,.0f}", f"{own:,.0f}",
                          f"{added - jumble - own:+,.0f}",
                          ", ".join(f"{m} {v:,.0f}" for m, v in top if v >= 1) or "-"])
    res.table(["configuration", "cell", "added", "JumbleQuery", "mccdb.so", "rest of PostgreSQL",
               "mccdb.so by file (top 5)"], brows)


if __name__ == "__main__":
    sys.exit(run(main))
