"""Native study: what cache conflicts cost a PostgreSQL hash join on this machine.

Issue 28, item 1.  A hash join whose hash table is --sizes MB (0.25 MB to 4x
the effective LLC share) runs alone and beside each of three co-runners:

- stream: stream_antagonist.c (beside this file), a C loop that reads and
  writes every 64-byte line of 1 GiB until killed; started once, stopped
  (SIGSTOP) while the target runs alone;
- scan: a PostgreSQL seq scan of a cached table bigger than the LLC
  (--scan-mb), looping on a second connection;
- hash join: the same hash join, looping on a second connection.

The tables are the study's own (schema native_study in --db, made on the
first run): build_R (R int4 keys, R from the hash table size), probe_P (P
random keys, P at least 2M and four times the largest build) and scan_N.  The target is
`select count(*) from probe_P p join build_R b on b.id = p.k % R`, forced to a
single-batch hash join on build_R (nested loop and merge join off, work_mem
1GB), parallel workers and JIT off, so it runs on one CPU.  The target's
backend is pinned to the first of --cpus and every co-runner (its backend,
or the stream) to the second (sched_setaffinity, what taskset -p does; the
page says what was pinned); the Python client is not pinned.

Per size and co-runner, --rounds pairs: target alone, then beside the
co-runner.  A cell is the median of the pairs' co-run / alone ratios with
its 95% bootstrap confidence interval.  The resolution of a size is the
half-width of the 95% bootstrap interval of the median ratio between
successive alone runs: the smallest effect the design separates from the
machine's own drift; it is not a minimum detectable effect.  What a cell can
detect is on the page's "What the study can detect" section (power_section):
the ratio it resolves with 80% power, the chance it resolves a true 1.15x,
whether its interval excludes 1.15x, the coverage of the intervals of cells
with few pairs, and a multiple-comparison note.  The same pairs are also
given in the target backend's CPU time (/proc/PID/schedstat), which waiting
for a CPU does not inflate.

The host places each vCPU on a core of its choosing, and about a third of
the time the two sit in different L3s, where a co-runner shares no LLC
with the target (docs/machine.md).  So every co-run is bracketed by the
round trip of a cache line between the two vCPUs (harness/placement.py:
bwload.c pingpong, just before the co-runner starts and just after it
stops), and the page gives each cell again over the pairs whose co-run had
both vCPUs in one L3 (--no-placement: not measured).

The probe's time is decomposed by the slope over the probe count: the same
join over all P and over the first P/2 probe rows (same scan, same build),
so (T_P - T_P/2) / (P/2) is the time per probe without the build or the
scan (T in the backend's CPU time); alone and beside the stream.  It is set against the pointer chase of
llc_knee.c over the same sizes, alone and beside the stream: the extra time
per probe over the smallest table against the extra miss latency.

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.native_study --db ssb --rounds 16

(about 25 minutes on a quiet machine, plus half a minute to make the
tables on the first run).

A smoke run (2 sizes, 2 rounds; about a minute after the tables exist):

    .venv/bin/python -m mccdb_bench.native_study --quick --outdir /tmp/study

The power section of an existing page, from the page's own tables (the raw
times are not kept; nothing is measured), written into the page:

    .venv/bin/python -m mccdb_bench.native_study --power docs/results/native-study.md
"""
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from . import llc_knee
from .harness import pg, placement, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.stats import bootstrap_ci

HERE = llc_knee.HERE
STREAM_SOURCE = HERE / "stream_antagonist.c"
SCHEMA = "native_study"
SIZES = "0.25,0.5,1,2,4,8,16,32"
QUICK_SIZES = "0.5,16"
# PostgreSQL's hash table (nodeHash.c) holds each inner tuple behind a
# 16-byte HashJoinTupleData; a minimal tuple of one int4 is 20 bytes, so
# dense_alloc takes MAXALIGN(36) = 40, and the bucket array is one pointer per
# bucket, a power of two at least the tuple count (NTUP_PER_BUCKET 1).
TUPLE_BYTES = 40
BUCKET_BYTES = 8
KINDS = ("stream", "scan", "hash join")
MIN_ONE_L3 = 3          # pairs in one L3 a cell needs to be given
JOIN_SETTINGS = ["set enable_nestloop = off", "set enable_mergejoin = off", "set work_mem = '1GB'"]


# --- pure functions ---------------------------------------------------------

def next_pow2(n):
    """The smallest power of two >= n (n >= 1)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return 1 << (n - 1).bit_length()


def hash_table_bytes(rows, tuple_bytes=TUPLE_BYTES, bucket_bytes=BUCKET_BYTES):
    """Bytes of PostgreSQL's in-memory hash table over `rows` one-int4 tuples."""
    return rows * tuple_bytes + bucket_bytes * next_pow2(rows)


def rows_for(nbytes, tuple_bytes=TUPLE_BYTES, bucket_bytes=BUCKET_BYTES):
    """The most build rows whose hash table fits in nbytes."""
    if hash_table_bytes(1, tuple_bytes, bucket_bytes) > nbytes:
        raise ValueError(f"{nbytes} bytes hold no hash table row")
    lo, hi = 1, max(1, int(nbytes // tuple_bytes))   # fits, does not fit beyond
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if hash_table_bytes(mid, tuple_bytes, bucket_bytes) <= nbytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def probe_rows_for(build_rows, minimum=2_000_000):
    """Probe rows: at least `minimum` and four times the largest build, so that
    half of them still outnumber every build and the planner hashes the build."""
    return max(minimum, 4 * max(build_rows))


def ci_summary(xs):
    """stats.Summary of xs with the 95% bootstrap interval of the median as
    (lo, hi): its fmt() reads '1.03 (0.98-1.10)'."""
    xs = [float(x) for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return stats.summarize([])
    lo, hi = bootstrap_ci(xs)
    return stats.Summary(statistics.median(xs), lo, hi, len(xs))


def drift_ratios(blocks):
    """Ratios of successive alone times within each block (a block: the alone
    times of one size beside one co-runner, in round order)."""
    return [b[i + 1] / b[i] for b in blocks for i in range(len(b) - 1)]


def resolution(blocks):
    """Smallest effect the design resolves: half the width of the 95% bootstrap
    interval of the median alone/alone ratio between successive rounds (0.03 =
    3%); None with fewer than two alone runs in any block."""
    r = drift_ratios(blocks)
    if not r:
        return None
    lo, hi = bootstrap_ci(r)
    return (hi - lo) / 2


def per_probe_ns(full, half, probes_between):
    """ns per probe of each round from the times (s) of the join over all probe
    rows and over half of them: the slope, free of the build and the scan."""
    if len(full) != len(half):
        raise ValueError(f"unpaired: {len(full)} vs {len(half)} times")
    return [1e9 * (f - h) / probes_between for f, h in zip(full, half)]


def first_above(sizes, summaries, base=None):
    """The first size whose interval lies wholly above base's (default: the
    first size's), or None: where a cost starts to climb."""
    base = summaries[0] if base is None else base
    for size, s in zip(sizes, summaries):
        if s.n and base.n and s.lo > base.hi:
            return size
    return None


def resolved(s, res):
    """A co-run/alone Summary that is an effect beyond the interval and the
    resolution: its interval above 1 + res (slower) or below 1 - res."""
    if not s.n or res is None:
        return False
    return s.lo > 1 + res or s.hi < 1 - res


Z95 = 1.959964         # two-sided alpha 0.05
Z80 = 0.841621         # power 0.80
EFFECT = 0.15          # the effect issue 28 asks about: a co-run 15% slower
CELLS = 96             # cells the two hosts' pages draw conclusions from (2 x 8 sizes x 3 co-runners x 2)


def phi(x):
    """The standard normal distribution function."""
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def log_se(lo, hi):
    """A cell's standard error on the log scale, read off its 95% interval:
    ln(hi / lo) / (2 x 1.96).  The percentile bootstrap interval of a median
    stands in for a normal one; with few pairs it is narrower than that
    (median_ci_coverage), so the se is too small."""
    if not 0 < lo <= hi:
        raise ValueError(f"not an interval of ratios: {lo}-{hi}")
    return math.log(hi / lo) / (2 * Z95)


def detectable(lo, hi, res, power=0.80):
    """The true co-run/alone ratio the cell resolves (interval's low end above
    1 + res, as resolved() asks) with the given power, two-sided alpha 0.05:
    exp(ln(1 + res) + (1.96 + z_power) se), the log estimate taken as normal
    with the interval's se."""
    z = {0.80: Z80}.get(power)
    if z is None:
        z = statistics.NormalDist().inv_cdf(power)
    return math.exp(math.log(1 + res) + (Z95 + z) * log_se(lo, hi))


def power_at(ratio, lo, hi, res):
    """The chance that a cell with this interval's se resolves a true ratio:
    P(low end > 1 + res) = Phi((ln ratio - ln(1 + res)) / se - 1.96)."""
    se = log_se(lo, hi)
    if se == 0:
        return 1.0 if ratio > 1 + res else 0.0
    return phi((math.log(ratio) - math.log(1 + res)) / se - Z95)


def excludes(hi, effect=EFFECT):
    """Whether a cell rules out a cost of effect or more: its interval ends below 1 + effect."""
    return hi < 1 + effect


def resolved_at(lo, hi, res, alpha):
    """resolved() at another level: the interval's low end moved down by the
    extra normal quantile, lo x exp(-(z(1 - alpha/2) - 1.96) se), above 1 + res.
    At alpha 0.05 it is resolved() itself."""
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    return math.log(lo) - (z - Z95) * log_se(lo, hi) > math.log(1 + res)


def median_ci_coverage(n, trials=400, resamples=1000, seed=52):
    """How often bootstrap_ci's 95% interval of the median of n pairs holds the
    true median.  Odd n: exact and distribution-free (the bootstrap median is
    an order statistic x(k) of the n; the interval's ends are the x(k) where
    its distribution crosses 2.5% and 97.5%, and x(i) <= median < x(j) has
    probability sum C(n, m) / 2^n over i <= m < j): 0.75 at n = 3, the range
    of the three.  Even n: Monte Carlo over normal draws (seeded) with
    bootstrap_ci itself."""
    if n < 1:
        raise ValueError("no pairs")
    if n % 2:
        half = (n + 1) // 2

        def cdf(k):     # P(bootstrap median <= x(k)): at least half of n draws among the k lowest
            p = k / n
            return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(half, n + 1))
        lo = next(k for k in range(1, n + 1) if cdf(k) > 0.025)
        hi = next(k for k in range(1, n + 1) if cdf(k) >= 0.975)
        return sum(math.comb(n, m) for m in range(lo, hi)) / 2 ** n
    rng = random.Random(seed)
    hit = 0
    for t in range(trials):
        xs = [rng.gauss(0, 1) for _ in range(n)]
        lo, hi = bootstrap_ci(xs, resamples=resamples, seed=seed + t)
        hit += lo <= 0 <= hi
    return hit / trials


def size_bytes(setting):
    """Bytes of a PostgreSQL memory setting ('8MB', '8192kB', '1GB'), or None."""
    m = re.fullmatch(r"\s*(\d+)\s*(B|kB|MB|GB|TB)?\s*", setting or "")
    if not m:
        return None
    unit = {"B": 1, None: 1024, "kB": 1024, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[m.group(2)]
    return int(m.group(1)) * unit


# --- tables and queries -------------------------------------------------------

def build_table(rows):
    return f"{SCHEMA}.build_{rows}"


def probe_table(rows):
    return f"{SCHEMA}.probe_{rows}"


def scan_table(rows):
    return f"{SCHEMA}.scan_{rows}"


def scan_rows_for(mb):
    """Rows of the scan table (two int8 and an 80-byte text: about 140 bytes a
    row on the page) for about mb MB."""
    return int(mb * 1048576 / 140)


def join_query(build_rows, probe_rows, limit=None):
    """The target: the hash join of probe_P against build_R, over the first
    `limit` probe rows (default all)."""
    limit = probe_rows if limit is None else limit
    sql = (f"select count(*) from {probe_table(probe_rows)} p join {build_table(build_rows)} b "
           f"on b.id = p.k % {build_rows} where p.id < {limit}")
    return pg.Query(f"hash join {build_rows} rows", sql, JOIN_SETTINGS)


def scan_query(rows):
    return pg.Query("seq scan", f"select sum(a) from {scan_table(rows)} where b <> -1")


def ensure_tables(db, build_rows, probe_rows, scan_rows, say):
    """Create the study's tables that are missing (no scan table when
    scan_rows is None), each in one transaction (an interrupted load leaves
    nothing), then vacuum analyze them."""
    made = []
    with pg.connect(db) as c:
        c.execute(f"create schema if not exists {SCHEMA}")
        want = [(build_table(r), f"select g::int4 as id from generate_series(0, {r - 1}) g") for r in build_rows]
        want.append((probe_table(probe_rows),
                     "select g::int4 as id, (hashint8(g::int8) & 2147483647)::int4 as k "
                     f"from generate_series(0, {probe_rows - 1}) g"))
        if scan_rows:
            want.append((scan_table(scan_rows),
                         "select g::int8 as a, (g * 7)::int8 as b, repeat('x', 80) as pad "
                         f"from generate_series(1, {scan_rows}) g"))
        for name, select in want:
            if c.execute("select to_regclass(%s)", (name,)).fetchone()[0] is not None:
                continue
            say(f"creating {name}")
            with c.transaction():
                c.execute(f"create table {name} as {select}")
            made.append(name)
        for name in made:
            c.execute(f"vacuum analyze {name}")
    return made


def explain(conn, q):
    """What the target's plan did (EXPLAIN ANALYZE without timing): the hash
    node's peak memory (bytes), its batches, the relation it hashed and the
    probe rows."""
    plan = conn.execute(f"explain (analyze, timing off, format json) {q.sql}").fetchone()[0][0]["Plan"]
    nodes = [plan]
    hj = hashed = None
    while nodes:
        n = nodes.pop()
        if n.get("Node Type") == "Hash Join" and hj is None:
            hj = n
        if n.get("Node Type") == "Hash" and hashed is None:
            hashed = n
        nodes += n.get("Plans", [])
    if hj is None or hashed is None:
        raise RuntimeError(f"{q.name}: the plan has no hash join")
    outer = next(p for p in hj["Plans"] if p.get("Parent Relationship") == "Outer")
    rel = hashed["Plans"][0].get("Relation Name")
    return {"peak_bytes": 1024 * int(hashed.get("Peak Memory Usage", 0)),
            "batches": int(hashed.get("Hash Batches", 1)), "hashed": rel,
            "probes": int(outer.get("Actual Rows", 0))}


# --- pinning and co-runners --------------------------------------------------

def pin(pid, cpu, notes, what):
    """Pin pid to cpu (sched_setaffinity, as taskset -p does) when it is a
    process on this host; notes collects what was pinned or why not."""
    if cpu is None:
        notes.add(f"{what}: not pinned (fewer than two CPUs given)")
        return False
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        os.sched_setaffinity(pid, {cpu})
    except (OSError, AttributeError) as e:
        notes.add(f"{what}: not pinned ({e})")
        return False
    notes.add(f"{what} ({comm}) on CPU {cpu}")
    return True


class Stream:
    """The streaming antagonist: started once, pinned, stopped between co-runs."""

    def __init__(self, exe, mib, cpu, notes):
        self.proc = subprocess.Popen([str(exe), str(mib)], stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("stream_antagonist did not start")
        pin(self.proc.pid, cpu, notes, "the stream antagonist")
        self.pid = self.proc.pid
        self.stop()

    def _state(self):
        with open(f"/proc/{self.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def start(self):
        os.kill(self.pid, signal.SIGCONT)
        time.sleep(0.05)
        return self

    def stop(self):
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.time() + 5
        while self._state() != "T":
            if time.time() > deadline:
                raise RuntimeError("stream_antagonist did not stop")
            time.sleep(0.001)

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Loop:
    """A PostgreSQL co-runner: a pg.Looper whose backend is pinned."""

    def __init__(self, q, db, cpu, notes, what):
        self.q, self.db, self.cpu, self.notes, self.what = q, db, cpu, notes, what
        self.looper = self.pid = None

    def start(self):
        self.looper = pg.Looper(self.q, self.db)
        self.pid = self.looper.conn.info.backend_pid
        pin(self.pid, self.cpu, self.notes, self.what)
        self.looper.start()
        return self

    def stop(self):
        self.looper.stop()


def pairs(conn, q, corunner, rounds, say, label, where=None):
    """pg.paired_rounds of q on conn beside corunner, and 'busy': the
    co-runner's CPU time over each co-run's wall time; with where (a
    callable: the vCPUs' round trip, ns), 'pingpong': its readings just
    before and after each co-run."""
    busy, cpu_at, readings = [], {}, []

    def start():
        if where:
            readings.append([where()])
        corunner.start()
        cpu_at["start"] = pg.backend_cpu(corunner.pid)

    def stop():
        cpu_at["stop"] = pg.backend_cpu(corunner.pid)
        corunner.stop()
        if where:
            readings[-1].append(where())

    def on_round(r, w, w2, cpu, cpu2):
        if cpu_at["start"] is not None and cpu_at["stop"] is not None:
            busy.append((cpu_at["stop"] - cpu_at["start"]) / w2)
        say(f"  {label} round {r + 1}/{rounds}: alone {w:.3f} s, co-run {w2:.3f} s ({w2 / w:.2f}x)"
            + (f", round trip {readings[-1][0]:.0f}/{readings[-1][1]:.0f} ns" if where else ""))

    m = pg.paired_rounds(conn, q.sql, start, stop, rounds, on_round)
    m["busy"] = busy
    if where:
        m["pingpong"] = readings
    return m


def one_l3_cell(co, alone, readings):
    """(ci_summary of the co-run / alone ratios of the pairs whose readings
    all say one L3, or None under MIN_ONE_L3 of them; how many there were)."""
    ratios = [c / a for c, a, w in zip(co, alone, readings) if placement.one_l3(w)]
    return (ci_summary(ratios) if len(ratios) >= MIN_ONE_L3 else None), len(ratios)


def cpu_or_wall(*runs):
    """Lists of (wall s, CPU s or None) -> ([times] per list, 'CPU' or 'wall'):
    the CPU times when every run has one (the backend's own time, free of
    waiting for a CPU), else the wall times."""
    every = all(cpu is not None for r in runs for _, cpu in r)
    return [[cpu if every else wall for wall, cpu in r] for r in runs], "CPU" if every else "wall"


def chase_ns(exe, kb, accesses, cpu, adds=0):
    """ns per access of llc_knee's pointer chase over kb KiB, pinned to cpu
    (adds: dependent adds after each load, a paced chase)."""
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    out = subprocess.run([str(exe), str(kb), str(kb), "1", str(accesses), str(adds)], check=True,
                         capture_output=True, text=True, preexec_fn=pre).stdout
    return llc_knee.parse(out)[0][1]


# --- the study ----------------------------------------------------------------

def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--sizes", default=None, help=f"hash table sizes in MB (default {SIZES})")
    ap.add_argument("--rounds", type=int, default=None, help="alone/co-run pairs per cell (default 16: about two thirds share an L3)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: sizes {QUICK_SIZES}, 2 rounds (unless given)")
    ap.add_argument("--probe-rows", type=int, default=None,
                    help="probe rows (default: 2M, or 4x the largest build)")
    ap.add_argument("--scan-mb", type=float, default=128, help="size of the scanned table")
    ap.add_argument("--stream-mib", type=int, default=1024, help="memory the stream antagonist loops over")
    ap.add_argument("--chase-accesses", type=int, default=4000000, help="pointer-chase loads per size")
    ap.add_argument("--chase-reps", type=int, default=3, help="chase alone / beside the stream per size")
    ap.add_argument("--cpus", default="0,1", help="CPU of the target, CPU of the co-runners ('' = no pinning)")
    ap.add_argument("--no-placement", action="store_true",
                    help="do not bracket the co-runs with the vCPUs' round trip (one L3 or two)")
    ap.add_argument("--name", default="native-study")
    a = ap.parse_args(argv)
    sizes = [float(x) for x in (a.sizes or (QUICK_SIZES if a.quick else SIZES)).split(",")]
    rounds = a.rounds or (2 if a.quick else 16)
    cpus = [int(x) for x in a.cpus.split(",") if x.strip()]
    cpu_t, cpu_c = (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)
    say = say_fn(a.quiet)

    builds = [rows_for(s * 1048576) for s in sizes]
    probes = a.probe_rows or probe_rows_for(builds)
    if 2 * max(builds) > probes:
        raise SystemExit(f"--probe-rows {probes}: need at least {2 * max(builds)} (twice the largest build)")
    scan_rows = scan_rows_for(a.scan_mb)
    srv = pg.server_info(a.db)
    C = srv.get("llc_used") or size_bytes(srv.get("mccdb.llc_size"))
    res = report.Result(a.name, "Native study: a PostgreSQL hash join beside a stream, a scan and a hash join",
                        srv, f"study tables: probe {probes:,} rows, scan {scan_rows:,} rows "
                        f"(~{a.scan_mb:g} MB), build 1 int4 column", a.outdir)
    guard = res.guard = start_guard(a, say, own_load=2)
    ensure_tables(a.db, builds, probes, scan_rows, say)   # checked before each configuration
    notes = set()
    rows, decomp, busy_all, clocks = [], [], {k: [] for k in KINDS}, set()
    scanq = scan_query(scan_rows)
    tmp, stream = tempfile.TemporaryDirectory(), None
    try:
        chase_exe = llc_knee.build(tmp.name)
        where = None
        if not a.no_placement and cpu_t is not None:
            bw = placement.build(tmp.name)
            where = lambda: placement.round_trip_ns(bw, (cpu_t, cpu_c))   # noqa: E731
        stream = Stream(llc_knee.build(tmp.name, STREAM_SOURCE), a.stream_mib, cpu_c, notes)
        with pg.connect(a.db) as c:     # the scan table into shared buffers
            c.execute(scanq.sql).fetchall()
        for size, R in zip(sizes, builds):
            q = join_query(R, probes)
            half = join_query(R, probes, probes // 2)
            with pg.session(q, a.db) as conn:
                pin(conn.info.backend_pid, cpu_t, notes, "the target's backend")
                pg.timed(conn, q.sql)           # warm: buffers, catalog
                ex = explain(conn, q)
                if ex["hashed"] != build_table(R).split(".")[1] or ex["batches"] != 1:
                    raise RuntimeError(f"{size} MB: the plan hashed {ex['hashed']} in {ex['batches']} batches")
                say(f"{size:g} MB: {R:,} build rows, hash table {ex['peak_bytes'] / 1048576:.2f} MB, "
                    f"{ex['probes']:,} probes")
                cells, alone_blocks, cpu_blocks = {}, [], []
                for kind in KINDS:
                    corunner = stream if kind == "stream" else Loop(
                        scanq if kind == "scan" else q, a.db, cpu_c, notes, f"the {kind} co-runner's backend")
                    with guard.measuring(f"{size:g} MB beside {kind}"):
                        m = pairs(conn, q, corunner, rounds, say, f"{size:g} MB beside {kind}", where)
                    alone_blocks.append(m["alone"])
                    cpu_blocks.append(m["alone_cpu"])
                    busy_all[kind] += m["busy"]
                    cells[kind] = ci_summary(stats.ratios(m["co"], m["alone"]))
                    cells[kind + " cpu"] = ci_summary(stats.ratios(m["co_cpu"], m["alone_cpu"]))
                    if "pingpong" in m:
                        cells[kind + " one L3"], cells[kind + " one L3 n"] = one_l3_cell(
                            m["co"], m["alone"], m["pingpong"])
                alone_all = [t for b in alone_blocks for t in b]
                rows.append({"size": size, "rows": R, "peak": ex["peak_bytes"], "alone": ci_summary(alone_all),
                             "res": resolution(alone_blocks), "res cpu": resolution(cpu_blocks), **cells})
                # the probe's time: slope over the probe count, alone and beside the stream
                per = {}
                for cond in ("alone", "stream"):
                    full_t, half_t = [], []
                    with guard.measuring(f"{size:g} MB probe slope {cond}"):
                        if cond == "stream":
                            stream.start()
                        try:
                            for _ in range(rounds):
                                full_t.append(pg.timed_cpu(conn, q.sql))
                                half_t.append(pg.timed_cpu(conn, half.sql))
                        finally:
                            if cond == "stream":
                                stream.stop()
                    (full_s, half_s), clock = cpu_or_wall(full_t, half_t)
                    per[cond] = ci_summary(per_probe_ns(full_s, half_s, probes - probes // 2))
                    clocks.add(clock)
                    say(f"  probe {cond}: {per[cond].fmt(1)} ns")
            kb = int(size * 1024)
            ch = {"alone": [], "stream": []}
            with guard.measuring(f"{size:g} MB pointer chase"):
                for _ in range(a.chase_reps):
                    ch["alone"].append(chase_ns(chase_exe, kb, a.chase_accesses, cpu_t))
                    stream.start()
                    try:
                        ch["stream"].append(chase_ns(chase_exe, kb, a.chase_accesses, cpu_t))
                    finally:
                        stream.stop()
            decomp.append({"size": size, "probe": per["alone"], "probe_s": per["stream"],
                           "chase": statistics.median(ch["alone"]), "chase_s": statistics.median(ch["stream"])})
            say(f"  chase: {decomp[-1]['chase']:.1f} ns alone, {decomp[-1]['chase_s']:.1f} ns beside the stream")
    finally:
        if stream is not None:
            stream.close()
        tmp.cleanup()
    write(res, a, sizes, rows, decomp, busy_all, notes, C, rounds, probes, "/".join(sorted(clocks)))
    return res, rows, decomp


def thp():
    """The transparent huge page mode ('always', 'madvise', 'never'), or '?'."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return "?"
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else "?"


CELL = re.compile(r"\**([\d.]+) \(([\d.]+)-([\d.]+)\)\**")
ONE_L3_TITLE = "### Pairs with both vCPUs in one L3"


def table_rows(lines, first_col):
    """The rows (dicts by column) of the first markdown table in lines whose
    header starts with `| first_col |`; [] if none."""
    hdr = next((i for i, ln in enumerate(lines) if ln.startswith(f"| {first_col} |")), None)
    if hdr is None:
        return []
    cols = [c.strip() for c in lines[hdr].strip("|").split("|")]
    out = []
    for ln in lines[hdr + 2:]:
        if not ln.startswith("|"):
            break
        out.append(dict(zip(cols, (c.strip() for c in ln.strip("|").split("|")))))
    return out


def curve_from_page(path):
    """The beside-stream curve of a page `write` made (docs/results/native-study.md),
    read back for the simulator's validation (llcsim run.sh pg-validate):
    {date, command, machine, rounds, effective_llc_mb, placement, sizes: [{mb,
    build_rows, alone_s, stream: {median, lo, hi}, pairs, beside: {stream,
    scan, hj: {median, lo, hi, pairs}}}]}.  When the page has the pairs in
    one L3 (placement measured), each co-runner's cell is theirs (the
    simulator models one shared LLC) and pairs their count; a cell with too
    few of them keeps the one over all pairs (pairs None).  stream and
    pairs are beside['stream']'s."""
    with open(path) as f:
        lines = f.read().splitlines()
    meta = {k: next((ln[len(f"- {k}: "):] for ln in lines if ln.startswith(f"- {k}: ")), None)
            for k in ("Machine", "Run", "Command")}
    pgline = next((ln[2:] for ln in lines if ln.startswith("- PostgreSQL ")), "")
    c_mb = re.search(r"mccdb C = ([\d.]+) MB", pgline)
    rounds = re.search(r"--rounds (\d+)", meta["Command"] or "")
    main = [r for r in table_rows(lines, "hash table MB") if "actual MB" in r]
    if not main:
        raise ValueError(f"{path}: no co-run table (| hash table MB | actual MB | ...)")
    at = lines.index(ONE_L3_TITLE) if ONE_L3_TITLE in lines else None
    one = {r["hash table MB"]: r for r in (table_rows(lines[at:], "hash table MB") if at is not None else [])}
    sizes = []
    for row in main:
        o = one.get(row["hash table MB"])
        beside = {}
        for i, (kind, column) in enumerate((("stream", "beside stream"), ("scan", "beside seq scan"),
                                            ("hj", "beside hash join"))):
            cell, pairs = row[column], None
            if o and CELL.fullmatch(o[f"{column}, one L3"]):
                cell = o[f"{column}, one L3"]
                pairs = int(o["pairs in one L3 (stream/scan/hash join)"].split(" ")[0].split("/")[i])
            med, lo, hi = map(float, CELL.fullmatch(cell).groups())
            beside[kind] = {"median": med, "lo": lo, "hi": hi, "pairs": pairs}
        stream = {k: beside["stream"][k] for k in ("median", "lo", "hi")}
        sizes.append({"mb": float(row["hash table MB"]), "build_rows": int(row["build rows"].replace(",", "")),
                      "alone_s": float(row["alone s"].split()[0]), "stream": stream,
                      "pairs": beside["stream"]["pairs"], "beside": beside})
    return {"date": (meta["Run"] or "?").split(",")[0] + " UTC", "command": (meta["Command"] or "?").strip("`"),
            "machine": f"{meta['Machine']}; {pgline.split(';')[0]}", "rounds": int(rounds.group(1)) if rounds else 10,
            "effective_llc_mb": float(c_mb.group(1)) if c_mb else None,
            "placement": "one L3" if one else "not measured", "sizes": sizes}


POWER_BEGIN = "<!-- power: written by python -m mccdb_bench.native_study --power PAGE, from the page's own tables -->"
POWER_END = "<!-- /power -->"
KIND_COLUMNS = (("stream", "beside stream"), ("scan", "beside seq scan"), ("hash join", "beside hash join"))


def page_cells(text):
    """The co-run cells of a page `write` made: [{size, kind, one_l3, n, med, lo,
    hi, res, bold}] over all pairs, then over the pairs in one L3 ('-' skipped)."""
    lines = text.splitlines()
    per_cell = re.search(r"Per cell (\d+) pairs", text)
    rounds = int(per_cell.group(1)) if per_cell else None
    main = [r for r in table_rows(lines, "hash table MB") if "actual MB" in r]
    at = lines.index(ONE_L3_TITLE) if ONE_L3_TITLE in lines else None
    one = table_rows(lines[at:], "hash table MB") if at is not None else []
    cells = []
    for rows, one_l3 in ((main, False), (one, True)):
        for r in rows:
            res = float(r["resolution"].strip("+-%")) / 100 if r["resolution"] != "n/a" else None
            for i, (kind, column) in enumerate(KIND_COLUMNS):
                text_cell = r[f"{column}, one L3"] if one_l3 else r[column]
                m = CELL.fullmatch(text_cell)
                if not m or res is None:
                    continue
                n = int(r["pairs in one L3 (stream/scan/hash join)"].split(" ")[0].split("/")[i]) if one_l3 \
                    else rounds
                med, lo, hi = map(float, m.groups())
                cells.append({"size": float(r["hash table MB"]), "kind": kind, "one_l3": one_l3, "n": n,
                              "med": med, "lo": lo, "hi": hi, "res": res, "bold": text_cell.startswith("**")})
    return cells


def _span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def power_section(text, coverage=median_ci_coverage):
    """The page's "What the study can detect" section, computed from its own
    cells (page_cells): per cell the ratio resolved with 80% power, the chance
    of resolving a true 1.15x and whether 1.15x is excluded; the coverage of
    small cells' intervals; a multiple-comparison note; what follows for 15%."""
    cells = page_cells(text)
    if not cells:
        raise ValueError("no co-run cells on the page")
    for c in cells:
        c["det"] = detectable(c["lo"], c["hi"], c["res"])
        c["p15"] = power_at(1 + EFFECT, c["lo"], c["hi"], c["res"])
        c["excl"] = excludes(c["hi"])
    out = [POWER_BEGIN, "## What the study can detect\n",
           "The resolution above is the drift between alone runs, not the smallest effect a cell can show. "
           "Here, per cell: **80% at**: the true co-run / alone ratio that the cell's rule (interval above "
           "1 + the resolution) resolves with 80% power at a two-sided alpha of 0.05; **P(1.15x)**: the chance "
           "that a true 1.15x is resolved; **excl.**: whether the interval ends below 1.15, the only way a "
           "cell rules out a 15% cost. The standard error of a cell's log ratio is read off its printed 95% "
           "interval, se = ln(hi / lo) / 3.92, the log estimate taken as normal: 80% at = "
           "exp(ln(1 + resolution) + (1.96 + 0.84) se), P(r) = Phi((ln r - ln(1 + resolution)) / se - 1.96). "
           "The raw times of the run are not kept; this section is computed from the tables above by "
           "`python -m mccdb_bench.native_study --power PAGE` (and by every new run).\n"]

    def fmt(c):
        return f"{c['det']:.2f}x; {100 * c['p15']:.0f}%; {'yes' if c['excl'] else 'no'}"
    for one_l3 in (False, True):
        sub = [c for c in cells if c["one_l3"] == one_l3]
        if not sub:
            continue
        sizes = sorted({c["size"] for c in sub})
        by = {(c["size"], c["kind"]): c for c in sub}
        head = ["hash table MB"] + (["pairs"] if one_l3 else []) + [
            f"{col}{', one L3' if one_l3 else ''}: 80% at; P(1.15x); excl." for _, col in KIND_COLUMNS]
        rows = []
        for s in sizes:
            row = [f"{s:g}"]
            if one_l3:
                row.append("/".join(str(by[(s, k)]["n"]) if (s, k) in by else "-" for k, _ in KIND_COLUMNS))
            rows.append(row + [fmt(by[(s, k)]) if (s, k) in by else "-" for k, _ in KIND_COLUMNS])
        out.append(("Over the pairs in one L3 (pairs: stream/scan/hash join):\n" if one_l3
                    else f"Over all pairs ({sub[0]['n']} a cell):\n"))
        out.append(md_table_text(head, rows))
    notes = []
    for one_l3, label in ((False, "over all pairs"), (True, "in one L3")):
        sub = [c for c in cells if c["one_l3"] == one_l3]
        pg_cells = [c for c in sub if c["kind"] != "stream"]
        if not pg_cells:
            continue
        open_ = [c for c in pg_cells if not c["excl"]]
        dets = _span([c["det"] for c in pg_cells], lambda x: f"{x:.2f}x")
        p15s = _span([100 * c["p15"] for c in pg_cells], lambda x: f"{x:.0f}%")
        where = {k: ", ".join(f"{c['size']:g}" for c in open_ if c["kind"] == k) or "no size"
                 for k in ("scan", "hash join")}
        line = (f"- Beside PostgreSQL (seq scan, hash join), {label}: 80% power at {dets}; a true 1.15x is "
                f"resolved with probability {p15s}; {len(pg_cells) - len(open_)} of {len(pg_cells)} cells "
                "exclude 1.15x")
        if open_:
            line += "; **not excluded** " + " and ".join(
                f"beside the {'seq scan' if k == 'scan' else k} at {where[k]} MB" for k in where if where[k] != "no size")
        notes.append(line + ".")
    small = sorted({c["n"] for c in cells if c["one_l3"] and c["n"] < 10})
    if small:
        cov = {n: coverage(n) for n in small}
        notes.append(
            "- Cells with few pairs: the percentile bootstrap's 95% interval of a median holds the true median "
            + ", ".join(f"{100 * cov[n]:.0f}% of the time at {n} pairs" for n in small)
            + " (`median_ci_coverage`: exact for odd counts, at 3 pairs the interval is the range of the three; "
            "Monte Carlo over 400 sets of normal pairs for even ones). Where that is under 95% the intervals are "
            "too narrow: those cells' 80% figures are optimistic and their bold cells weaker evidence.")
    bold = [c for c in cells if c["bold"]]
    held = [c for c in bold if resolved_at(c["lo"], c["hi"], c["res"], 0.05 / CELLS)]
    notes.append(
        f"- Multiple comparisons: this page draws on {len(cells)} cells, the two hosts' pages on about "
        f"{CELLS}; at 95% each, about {0.05 * len(cells):.1f} of this page's intervals miss their true value "
        f"by chance alone. With each interval widened to 1 - 0.05/{CELLS} (Bonferroni, z "
        f"{statistics.NormalDist().inv_cdf(1 - 0.025 / CELLS):.2f}), {len(held)} of its {len(bold)} bold cells "
        + ("remains" if len(held) == 1 else "remain") + " resolved"
        + (": " + ", ".join(f"{c['size']:g} MB beside the {c['kind']}{' (one L3)' if c['one_l3'] else ''}"
                            for c in held) if held else "")
        + (("; not: " + ", ".join(f"{c['size']:g} MB beside the {c['kind']}{' (one L3)' if c['one_l3'] else ''}"
                                  for c in bold if c not in held)) if len(held) < len(bold) else "") + ".")
    pg_all = [c for c in cells if not c["one_l3"] and c["kind"] != "stream"]
    open_all = [c for c in pg_all if not c["excl"]]
    notes.append(
        "- So: " + (f"beside PostgreSQL this page cannot exclude a 15% cost in {len(open_all)} of "
                    f"{len(pg_all)} cells over all pairs (tables of "
                    f"{_span([c['size'] for c in open_all], lambda x: f'{x:g}')} MB); 'no cell resolved' "
                    "there is not 'no cost of 15%'." if open_all else
                    "every PostgreSQL cell over all pairs excludes a 15% cost."))
    out.append("\n".join(notes))
    out.append(POWER_END)
    return "\n".join(x.rstrip("\n") + ("\n" if not x.startswith("<!--") else "") for x in out) + "\n"


def md_table_text(headers, rows):
    from .harness.report import md_table
    return md_table(headers, rows)


def write_power(path):
    """Put power_section into the page at path (replacing an earlier one;
    else before the hand-written analysis, or at the end)."""
    with open(path) as f:
        text = f.read()
    block = power_section(text)
    if POWER_BEGIN in text:
        start = text.index(POWER_BEGIN)
        end = text.index(POWER_END, start) + len(POWER_END)
        text = text[:start] + block.rstrip("\n") + text[end:]
    elif "<!-- analysis" in text:
        at = text.index("<!-- analysis")
        text = text[:at] + block + "\n" + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(text)
    return path


def write(res, a, sizes, rows, decomp, busy_all, notes, C, rounds, probes, clock):
    """The page: setup, the co-run table, the decomposition, what they say."""
    Cmb = C / 1048576 if C else None
    res.add(f"Target: `select count(*) from probe p join build_R b on b.id = p.k % R` over {probes:,} probe "
            f"rows, a single-batch hash join on build_R (nested loop and merge join off, work_mem 1GB), "
            f"parallel workers and JIT off. Co-runners: **stream** = stream_antagonist.c reading and writing "
            f"every line of {a.stream_mib} MiB; **scan** = `select sum(a)` over a {a.scan_mb:g} MB cached table, "
            f"looping on a second connection; **hash join** = the target's own query, looping on a second "
            f"connection. Per cell {rounds} pairs (alone, then co-run). Pinned: {'; '.join(sorted(notes))}. "
            + (f"Effective LLC C = {Cmb:g} MB (`mccdb.llc_size`)." if Cmb else "mccdb's C: not available.") + "\n")
    res.add("Actual MB: the hash node's Peak Memory Usage (EXPLAIN ANALYZE; 36 B per tuple before "
            "alignment, and the bucket array). Cells: median of the co-run / alone ratios of the pairs "
            "(95% bootstrap interval of the median). "
            "Resolution: half-width of the 95% interval of the median ratio between successive alone runs; "
            "**bold**: the interval lies beyond 1 +- the resolution.\n")

    def cell(s, r):
        text = s.fmt(2)
        return f"**{text}**" if resolved(s, r) else text
    table = []
    for r in rows:
        over = f"{r['size'] / Cmb:.2g}" if Cmb else "?"
        table.append([f"{r['size']:g}", f"{r['peak'] / 1048576:.2f}", f"{r['rows']:,}", over, r["alone"].fmt(3),
                      f"+-{100 * r['res']:.1f}%" if r["res"] is not None else "n/a"]
                     + [cell(r[k], r["res"]) for k in KINDS])
    res.table(["hash table MB", "actual MB", "build rows", "/ C", "alone s", "resolution",
               "beside stream", "beside seq scan", "beside hash join"], table)
    if any(k + " one L3 n" in r for r in rows for k in KINDS):
        res.add(f"\n{ONE_L3_TITLE}\n")
        res.add(f"The same cells over the pairs whose co-run had both vCPUs in one L3: a cache line's round trip "
                f"between them under {placement.SPLIT_NS:.0f} ns just before the co-runner started and just after "
                f"it stopped (bwload.c pingpong; in two L3s it takes 300-420 ns, docs/machine.md). '-': fewer "
                f"than {MIN_ONE_L3} such pairs. Resolution and bold as above.\n")
        res.table(["hash table MB", "pairs in one L3 (stream/scan/hash join)", "resolution"]
                  + [f"beside {k if k != 'scan' else 'seq scan'}, one L3" for k in KINDS],
                  [[f"{r['size']:g}", "/".join(str(r.get(k + " one L3 n", 0)) for k in KINDS) + f" of {rounds}",
                    f"+-{100 * r['res']:.1f}%" if r["res"] is not None else "n/a"]
                   + [cell(r[k + " one L3"], r["res"]) if r.get(k + " one L3") else "-" for k in KINDS]
                   for r in rows])
    busy = [[k, f"{100 * statistics.median(v):.0f}%" if v else "n/a"] for k, v in busy_all.items()]
    res.add("\nThe co-runner's CPU time during the target's co-run, over the co-run's wall time (median): "
            "how much of the co-run it really ran beside the target.\n")
    res.table(["co-runner", "on CPU during the co-run"], busy)
    res.add("\nThe same pairs in the target backend's CPU time (/proc/PID/schedstat): waiting for a CPU "
            "does not count, cache-miss stalls do. Resolution from the alone CPU times.\n")
    res.table(["hash table MB", "resolution", "beside stream", "beside seq scan", "beside hash join"],
              [[f"{r['size']:g}", f"+-{100 * r['res cpu']:.1f}%" if r["res cpu"] is not None else "n/a"]
               + [cell(r[k + " cpu"], r["res cpu"]) for k in KINDS] for r in rows])

    res.add("\n## The probe's time against the miss latency\n")
    res.add(f"Time per probe: (T(all probe rows) - T(first half)) / {probes - probes // 2:,}, per round, "
            f"T the target backend's {clock} time, "
            f"median (95% bootstrap interval) over {rounds} rounds: the probe without the build and the scan. "
            "Chase: llc_knee.c's pointer chase over the same size (ns per dependent load, median of "
            f"{a.chase_reps}), pinned like the target, on transparent huge pages (madvise); the hash table "
            f"gets huge pages only if the kernel's mode is 'always' (here: '{thp()}'), so a probe's extra "
            "time includes its TLB misses. Extra: over the smallest size, alone.\n")
    base = decomp[0]
    dt = []
    for d in decomp:
        dt.append([f"{d['size']:g}", f"{d['chase']:.1f}", f"{d['chase_s']:.1f}", d["probe"].fmt(1),
                   d["probe_s"].fmt(1), f"{d['probe'].median - base['probe'].median:+.1f}",
                   f"{d['chase'] - base['chase']:+.1f}", f"{d['probe_s'].median - d['probe'].median:+.1f}",
                   f"{d['chase_s'] - d['chase']:+.1f}"])
    res.table(["hash table MB", "chase ns alone", "chase ns beside stream", "ns per probe alone",
               "ns per probe beside stream", "probe extra ns (alone)", "chase extra ns (alone)",
               "probe: stream - alone ns", "chase: stream - alone ns"], dt)
    res.add("\n" + verdict(sizes, rows, decomp) + "\n")
    res.add("\n" + power_section(res.text()))
    draw(res, sizes, rows, decomp, Cmb)


def verdict(sizes, rows, decomp):
    """What the tables say, in sentences computed from them."""
    out = []
    for k in KINDS:
        hit = [f"{r['size']:g} MB ({r[k].median:.2f}x)" for r in rows if resolved(r[k], r["res"])]
        top = max(rows, key=lambda r: r[k].median)
        line = (f"- Beside the {k}: " + (f"resolved at {', '.join(hit)}" if hit else "no size resolved")
                + f"; largest median {top[k].median:.2f}x at {top['size']:g} MB")
        cpu = [f"{r['size']:g} MB ({r[k + ' cpu'].median:.2f}x)" for r in rows
               if k + " cpu" in r and resolved(r[k + " cpu"], r.get("res cpu"))]
        if any(r.get(k + " cpu") and r[k + " cpu"].n for r in rows):
            line += "; in CPU time " + (f"resolved at {', '.join(cpu)}" if cpu else "no size resolved")
        out.append(line + ".")
        one = [r for r in rows if r.get(k + " one L3")]
        if one:
            hit = [f"{r['size']:g} MB ({r[k + ' one L3'].median:.2f}x)" for r in one
                   if resolved(r[k + " one L3"], r["res"])]
            top = max(one, key=lambda r: r[k + " one L3"].median)
            out.append(f"  - With both vCPUs in one L3 ({sum(r[k + ' one L3 n'] for r in rows)} pairs): "
                       + (f"resolved at {', '.join(hit)}" if hit else "no size resolved")
                       + f"; largest median {top[k + ' one L3'].median:.2f}x at {top['size']:g} MB.")
    res_all = [r["res"] for r in rows if r["res"] is not None]
    if res_all:
        out.append(f"- Resolution: +-{100 * min(res_all):.1f}% to +-{100 * max(res_all):.1f}% by size.")
    p = first_above(sizes, [d["probe"] for d in decomp])
    out.append("- The time per probe alone " + (
        f"climbs above the smallest table's interval from {p:g} MB." if p is not None
        else "stays inside the smallest table's interval."))
    ps = first_above(sizes, [d["probe_s"] for d in decomp], decomp[0]["probe"])
    out.append("- Beside the stream it " + (
        f"climbs above the smallest table's (alone) interval from {ps:g} MB." if ps is not None
        else "stays inside the smallest table's (alone) interval."))
    first, last = decomp[0], decomp[-1]
    probe_extra = last["probe"].median - first["probe"].median
    chase_extra = last["chase"] - first["chase"]
    if len(decomp) > 1 and chase_extra > 0:
        out.append(f"- At {last['size']:g} MB a probe takes {probe_extra:+.1f} ns over the smallest table while "
                   f"the chase's load takes {chase_extra:+.1f} ns more: "
                   f"{misses_per_probe(probe_extra, chase_extra):.2f} extra miss latencies per probe.")
    return "\n".join(out)


def misses_per_probe(probe_extra_ns, chase_extra_ns):
    """How many dependent misses' worth of extra time a probe pays: its extra
    ns over the smallest table over the pointer chase's extra ns per load."""
    if chase_extra_ns <= 0:
        raise ValueError("the chase got no slower")
    return probe_extra_ns / chase_extra_ns


def draw(res, sizes, rows, decomp, Cmb):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    for k, mk in zip(KINDS, "osd"):
        ys = [r[k].median for r in rows]
        err = [[r[k].median - r[k].lo for r in rows], [r[k].hi - r[k].median for r in rows]]
        ax.errorbar(sizes, ys, yerr=err, marker=mk, capsize=3, label=f"beside {k}")
    one = [(sz, r["stream one L3"]) for sz, r in zip(sizes, rows) if r.get("stream one L3")]
    if one:
        ax.plot([sz for sz, _ in one], [c.median for _, c in one], "k--", marker="o", mfc="none",
                label="beside stream, one L3")
    res_band = [r["res"] or 0 for r in rows]
    ax.fill_between(sizes, [1 - x for x in res_band], [1 + x for x in res_band], color="gray", alpha=0.2,
                    label="resolution")
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_ylabel("co-run / alone (median, 95% CI)")
    ax.set_title("Hash join beside a co-runner", fontsize=10)
    ax.legend(fontsize=8)
    for key, lab, mk in (("probe", "ns per probe alone", "o"), ("probe_s", "ns per probe beside stream", "s")):
        ys = [d[key].median for d in decomp]
        err = [[d[key].median - d[key].lo for d in decomp], [d[key].hi - d[key].median for d in decomp]]
        ax2.errorbar(sizes, ys, yerr=err, marker=mk, capsize=3, label=lab)
    ax2.plot(sizes, [d["chase"] for d in decomp], "k--", marker="^", label="chase ns alone")
    ax2.plot(sizes, [d["chase_s"] for d in decomp], "k:", marker="v", label="chase ns beside stream")
    ax2.set_ylabel("ns")
    ax2.set_title("Time per probe against the pointer chase's latency", fontsize=10)
    ax2.legend(fontsize=8)
    for axis in (ax, ax2):
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(ScalarFormatter())
        axis.set_xlabel("hash table MB")
        if Cmb:
            axis.axvline(Cmb, color="gray", ls=":", lw=0.8)
    return res.figure(fig)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--power":
        print(f"wrote {write_power(sys.argv[2])}")
        sys.exit(0)
    sys.exit(run(main))
