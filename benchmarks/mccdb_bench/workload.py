"""Scheduler vs pooler: fixed mixes, closed-loop clients and open-loop Poisson arrivals.

One workload generator for issue 27: the same queries, in the same seeded
order, against stock PostgreSQL, the stock server behind PgBouncer
(transaction pooling; mccdb_bench.configs) and mccdb's policies.

Mixes (chosen before measuring any policy, and kept; MIXES below):

  short    the 13 SSB queries, equal weights (class short)
  long     index-join plans of PLQ_12, PLQ_18 and PLQ_25 (forced as Figure 6
           forces them: 48-100% of lineorder through its index, 10 s and more
           at SF 1; class long) three times in four, an SSB query (class
           short) once in four, so short-query latency is measured on it too
  bimodal  the analytics of `short`, and beside them pgbench's own TPC-B-like
           script at a fixed rate (pgbench -R; class tpcb) on pgbench tables
           in the same database
  adhoc    (issue 50; chosen before measuring it) ad-hoc analytics: the long
           index joins of `long` and the SSB queries of `short`, half and
           half, drawn at random by the same clients -- one role, one
           database, so no pooler can give short and long analytics
           separate pools -- and pgbench's TPC-B-like script beside them as
           in `bimodal`

PgBouncer is compared in two setups (mccdb_bench.configs): one pool for
every client (`pgbouncer`, `pgbouncer-N`: OLTP queues behind analytics in
it), and a pool per workload class as a DBA sets up a mixed server
(`pgbouncer2`, `pgbouncer2-A-O`: pgbench's OLTP through the database alias
DB_oltp and its own pool, every analytics query through DB_analytics).
When --configs names a one-pool PgBouncer and no two-pool one, the
two-pool one with the same analytics pool is added beside it
(--one-pool-only: not).

Arrival modes:

  closed   --clients clients, each its own connection and a seeded sequence
           of --per-client queries, run to the end (fixed work); throughput
           is all queries over the time the last client finished
  open     Poisson arrivals (exponential inter-arrival times from --seed) at
           --load times the capacity (queries per second of `stock`, closed,
           --clients clients, measured first; or --capacity in queries per
           hour), at most --arrivals arrivals within --seconds; each arrival
           runs on a free connection of a client-side pool (--max-conns, all
           opened before the run) and its latency runs from its arrival, so
           time it waited for a free connection counts; every arrival runs
           to its end

Every query is one transaction (BEGIN, its settings as SET LOCAL, the query,
COMMIT), in every configuration, as a client of a transaction pooler must
send it; latency is from BEGIN (or the arrival) to COMMIT's answer.
Reported per query class: throughput, mean, p50, p95 and p99 latency,
median (min-max) over --reps repetitions; ratios over `stock`, over
`pgbouncer` (one pool) and over the two-pool PgBouncer of the same
repetition.  Configurations are interleaved (a new
random order each repetition), each on a restarted server after the
quiet-machine guard.  --parallel-workers sets max_parallel_workers_per_gather
(0, as the other pages; PostgreSQL's default is 2).

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.workload --db ssb --mix short --mode closed --reps 3
"""
import contextlib
import math
import os
import pathlib
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from . import configs
from .harness import idle_wait, pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of

DEFAULT_CONFIGS = "stock,pgbouncer,pgbouncer2,off,mccdb:predictive"
# the long class: index joins that read most of lineorder through its index
LONG_PLANS = ((12, "index"), (18, "index"), (25, "index"))
LONG_SHARE = 0.75
MIX_NAMES = ("short", "long", "bimodal", "adhoc")
# the mixes with pgbench's TPC-B-like script beside the analytics
OLTP_MIXES = ("bimodal", "adhoc")
ADHOC_LONG_SHARE = 0.5
CLASSES_ORDER = ("short", "long", "tpcb", "all analytics")


@dataclass(frozen=True)
class Item:
    """One query of a mix: its name, class, plan settings and text."""
    name: str
    cls: str
    settings: tuple
    sql: str


def ssb_items():
    return [Item(f"SSB {n}", "short", (), sqlfiles.ssb(n)) for n in sqlfiles.ssb_names()]


def long_items():
    return [Item(f"PLQ_{n} {plan}", "long", tuple(sqlfiles.force(plan)), sqlfiles.plq(n)) for n, plan in LONG_PLANS]


def mix(name):
    """The analytics of a mix: [(class share, [Item])], shares summing to 1.
    (bimodal's and adhoc's TPC-B-like part is pgbench's, beside these.)"""
    if name in ("short", "bimodal"):
        return [(1.0, ssb_items())]
    if name == "long":
        return [(LONG_SHARE, long_items()), (1.0 - LONG_SHARE, ssb_items())]
    if name == "adhoc":
        return [(ADHOC_LONG_SHARE, long_items()), (1.0 - ADHOC_LONG_SHARE, ssb_items())]
    raise ValueError(f"unknown mix {name!r}; known: {', '.join(MIX_NAMES)}")


def draw(groups, rnd):
    """One item: a group by its share, then an item of it uniformly."""
    x = rnd.random()
    for share, items in groups:
        if x < share:
            return rnd.choice(items)
        x -= share
    return rnd.choice(groups[-1][1])


def sequence(groups, seed, length):
    """A fixed, seeded sequence of length items of the mix."""
    rnd = random.Random(seed)
    return [draw(groups, rnd) for _ in range(length)]


def poisson_schedule(rate, seed, max_count, max_seconds):
    """Arrival times (s from the start) of a Poisson process of rate per
    second: exponential inter-arrival times from seed, at most max_count
    arrivals, none at or after max_seconds."""
    if rate <= 0:
        raise ValueError("the arrival rate must be positive")
    rnd = random.Random(seed)
    out, t = [], 0.0
    while len(out) < max_count:
        t += rnd.expovariate(rate)
        if t >= max_seconds:
            break
        out.append(t)
    return out


def class_stats(records, wall):
    """{class: {n, qph, mean, p50, p95, p99}} of [(class, latency s)], with
    'all analytics' over every class but tpcb; throughput over wall seconds."""
    by = {}
    for cls, lat in records:
        by.setdefault(cls, []).append(lat)
        if cls != "tpcb":
            by.setdefault("all analytics", []).append(lat)
    out = {}
    for cls, xs in by.items():
        out[cls] = {"n": len(xs), "qph": len(xs) * 3600 / wall if wall > 0 else float("nan"),
                    "mean": statistics.fmean(xs), "p50": stats.percentile(xs, 50),
                    "p95": stats.percentile(xs, 95), "p99": stats.percentile(xs, 99)}
    return out


# --- running the analytics ---------------------------------------------------

def settings_of(item, a):
    return configs.local_settings(a.parallel_workers, list(item.settings) + [
        f"set statement_timeout = '{int(a.statement_timeout)}s'"])


def run_closed(seqs, db, target, a):
    """Every client's sequence to its end; (wall s, [(class, latency s)],
    [each client's finish, s from the start])."""
    conns = [configs.connect_client(db, target) for _ in seqs]
    done, errors, lock = [], [], threading.Lock()
    finished = [0.0] * len(seqs)
    barrier = threading.Barrier(len(seqs) + 1)
    t0 = 0.0

    def client(k):
        barrier.wait()
        try:
            for item in seqs[k]:
                lat = configs.run_transaction(conns[k], settings_of(item, a), item.sql)
                with lock:
                    done.append((item.cls, lat))
        except Exception as e:  # a failed client fails the run, after it
            errors.append(f"client {k}: {e}")
        finished[k] = time.perf_counter() - t0

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(len(seqs))]
    try:
        for t in threads:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        for c in conns:
            c.close()
    if errors:
        raise RuntimeError("; ".join(errors))
    return wall, done, finished


def lone_tail(finished):
    """Seconds at the end of a closed run with one client left: work that
    one CPU did while the other had nothing to run (why fixed work can end
    later behind a gate than in stock's processor sharing)."""
    ends = sorted(finished)
    return ends[-1] - ends[-2] if len(ends) > 1 else 0.0


def run_open(arrivals, items, db, target, a, started=None):
    """Each arrival (s from the start) runs items[i] on a free connection of
    a pool of a.max_conns; (wall s from the start to the last answer,
    [(class, latency s from the arrival)], longest wait for a free
    connection s)."""
    conns = [configs.connect_client(db, target) for _ in range(a.max_conns)]
    work = queue.Queue()
    done, errors, lock = [], [], threading.Lock()
    waits = [0.0]
    ends = []

    def worker(c):
        while True:
            job = work.get()
            if job is None:
                return
            i, due = job
            waited = time.perf_counter() - due
            try:
                configs.run_transaction(c, settings_of(items[i], a), items[i].sql)
            except Exception as e:
                errors.append(f"arrival {i}: {e}")
                continue
            end = time.perf_counter()
            with lock:
                done.append((items[i].cls, end - due))
                waits[0] = max(waits[0], waited)
                ends.append(end)

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in conns]
    try:
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        if started:
            started()
        for i, at in enumerate(arrivals):
            due = t0 + at
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            work.put((i, due))
        for _ in threads:
            work.put(None)
        for t in threads:
            t.join()
    finally:
        for c in conns:
            c.close()
    if errors:
        raise RuntimeError("; ".join(errors[:5]))
    return (max(ends) - t0 if ends else 0.0), done, waits[0]


# --- pgbench beside them (bimodal, adhoc) -----------------------------------

def ensure_pgbench_tables(db, scale, say):
    """pgbench's tables (pgbench -i -s scale) in db, unless there at that scale."""
    import psycopg
    with pg.connect(db) as c:
        have = c.execute("select to_regclass('pgbench_branches') is not null").fetchone()[0]
        if have and c.execute("select count(*) from pgbench_branches").fetchone()[0] == scale:
            return
    say(f"pgbench -i -s {scale} in {db}")
    subprocess.run(["pgbench", "-i", "-q", "-s", str(scale), *([db] if db else [])], check=True,
                   capture_output=True)
    with psycopg.connect(**({"dbname": db} if db else {}), autocommit=True) as c:
        c.execute("vacuum analyze pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history")


def start_pgbench(db, env, a, seconds, logdir):
    """pgbench's TPC-B-like script at a.oltp_rate transactions per second
    for seconds, in the background; its Popen."""
    for f in logdir.glob("oltp_log*"):
        f.unlink()
    cmd = ["pgbench", "-n", "-b", "tpcb-like", "-c", str(a.oltp_clients), "-j", "1", "-R", str(a.oltp_rate),
           "-T", str(max(1, int(math.ceil(seconds)))), f"--random-seed={a.seed}", "-l",
           f"--log-prefix={logdir}/oltp_log"]
    if db:
        cmd.append(db)
    return subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish_pgbench(proc, logdir):
    """Wait for pgbench; [(class 'tpcb', latency s from its scheduled start)]
    from its log, and its tps."""
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"pgbench failed ({proc.returncode}): {err.strip()[-2000:]}")
    m = re.search(r"^tps = ([0-9.]+)", out, re.M)
    failed = re.search(r"number of failed transactions: (\d+)", out)
    if failed and int(failed.group(1)):
        raise RuntimeError(f"pgbench: {failed.group(1)} failed transactions:\n{out}")
    lat = []
    for f in logdir.glob("oltp_log*"):
        for line in f.read_text().splitlines():
            # client, transaction, latency us (from the scheduled start under -R), script, ...
            lat.append(("tpcb", int(line.split()[2]) / 1e6))
    return lat, float(m.group(1)) if m else float("nan")


# --- the experiment -----------------------------------------------------------

def server_settings(cfg, db, pooler):
    """What the page records about one configuration as it ran."""
    keys = ["max_connections", "shared_buffers", "work_mem"]
    if cfg.mccdb:
        keys += ["mccdb.schedule", "mccdb.corun_slots", "mccdb.schedule_min_cost", "mccdb.max_wait"]
    with pg.connect(db, base=False) as c:
        got = {k: c.execute(f"show {k}").fetchone()[0] for k in keys}
        if cfg.mccdb:
            got["slots (mccdb_scheduler())"] = c.execute("select slots from mccdb_scheduler()").fetchone()[0]
    if pooler is not None:
        got.update({k: v for k, v in pooler.settings().items() if v is not None})
    return got


def page_name(a):
    return f"scheduler-vs-pooler-{a.mix}-{a.mode}" + (f"-pw{a.parallel_workers}" if a.parallel_workers else "")


def ratio(x, y):
    return x / y if y and not math.isnan(y) else float("nan")


TWO_POOLS = "two pools"      # the ratio keys' name for the two-pool PgBouncer, whatever its pools


def add_ratios(got, two_pools=None, one_pool="pgbouncer"):
    """got: {config: {class: stats}} of one repetition (and one load): each
    class's ratios over stock and over the one-pool PgBouncer configuration
    named one_pool (keys 'qph/pgbouncer', ...) of the same repetition, and
    over the two-pool one named two_pools (keys 'qph/two pools', ...)."""
    bases = [("stock", "stock", ("qph", "p95", "p99", "mean")), (one_pool, "pgbouncer", ("qph", "mean", "p95"))]
    if two_pools:
        bases.append((two_pools, TWO_POOLS, ("qph", "mean", "p95", "p99")))
    for name, per_cls in got.items():
        for cls, s in per_cls.items():
            for base, label, keys in bases:
                b = got.get(base, {}).get(cls)
                for k in keys:
                    s[f"{k}/{label}"] = ratio(s[k], b[k]) if b else float("nan")


def two_pool_config(cfgs):
    """The name of the first two-pool PgBouncer configuration of cfgs, or None."""
    return next((c.name for c in cfgs if c.oltp_pool is not None), None)


def one_pool_config(cfgs):
    """The name the 'vs pgbouncer' ratios are over: `pgbouncer` when it is
    there, else the first one-pool PgBouncer configuration (or 'pgbouncer')."""
    ones = [c.name for c in cfgs if c.pool is not None and c.oltp_pool is None]
    return "pgbouncer" if "pgbouncer" in ones or not ones else ones[0]


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--mix", choices=MIX_NAMES, required=True)
    ap.add_argument("--mode", choices=("closed", "open"), default="closed")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help=f"comma-separated, from: {configs.KNOWN}")
    ap.add_argument("--clients", type=int, default=6, help="closed-loop clients (and those measuring capacity)")
    ap.add_argument("--per-client", type=int, default=10, help="queries each closed-loop client runs")
    ap.add_argument("--load", default="0.5,0.8,0.95", help="open loop: fractions of the capacity")
    ap.add_argument("--capacity", type=float, help="open loop: the capacity in queries per hour (else measured)")
    ap.add_argument("--arrivals", type=int, default=60, help="open loop: at most this many arrivals")
    ap.add_argument("--seconds", type=float, default=600, help="open loop: arrivals only within this time")
    ap.add_argument("--max-conns", type=int, default=32, help="open loop: the client-side connection pool")
    ap.add_argument("--parallel-workers", type=int, default=0, help="max_parallel_workers_per_gather")
    ap.add_argument("--oltp-rate", type=float, default=20, help="bimodal, adhoc: TPC-B-like transactions per second")
    ap.add_argument("--oltp-clients", type=int, default=2, help="bimodal, adhoc: pgbench clients")
    ap.add_argument("--oltp-seconds", type=float, default=60, help="bimodal, adhoc, closed loop: pgbench's -T")
    ap.add_argument("--oltp-scale", type=int, default=10, help="bimodal, adhoc: pgbench -i scale")
    ap.add_argument("--one-pool-only", action="store_true",
                    help="do not add the two-pool PgBouncer beside a one-pool one")
    ap.add_argument("--statement-timeout", type=float, default=1800)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pooler-port", type=int, default=configs.POOLER_PORT)
    ap.add_argument("--name", default=None, help="page name (default scheduler-vs-pooler-MIX-MODE[-pwN])")
    a = ap.parse_args(argv)
    cfgs = configs.parse_list(a.configs)
    added = None
    if not a.one_pool_only:
        cfgs, added = configs.with_two_pools(cfgs)
    two_pools = two_pool_config(cfgs)
    loads = [float(x) for x in a.load.split(",") if x] if a.mode == "open" else [None]
    if any(not 0 < x <= 1.5 for x in loads if x is not None):
        raise SystemExit("--load: fractions of the capacity, e.g. 0.5,0.8,0.95")
    if a.mix in OLTP_MIXES and not shutil.which("pgbench"):
        raise SystemExit("pgbench is not on PATH (Debian: postgresql-client-15 ships it)")
    say = say_fn(a.quiet)
    name = a.name or page_name(a)
    srv = pg.server_info(a.db)
    res = report.Result(name, f"Scheduler vs pooler: the {a.mix} mix, {a.mode} loop", srv, scale_of(a.db), a.outdir)
    own = max(a.clients, os.cpu_count() or 1) if a.mode == "closed" else a.max_conns
    own *= 1 + a.parallel_workers       # each query's backend and its workers
    guard = res.guard = start_guard(a, say, own_load=own + (a.oltp_clients if a.mix in OLTP_MIXES else 0))
    groups = mix(a.mix)
    if a.mix in OLTP_MIXES:
        ensure_pgbench_tables(a.db, a.oltp_scale, say)

    # the work: the same in every configuration
    seqs = [sequence(groups, a.seed * 1000 + k, a.per_client) for k in range(a.clients)]
    capacity_note = ""
    capacity = a.capacity / 3600 if a.capacity else None
    if a.mode == "open" and capacity is None:
        stock = configs.parse("stock")
        configs.start_server(stock, a.db)
        with guard.measuring("capacity (stock, closed loop)"):
            wall, done, _ = run_closed(seqs, a.db, {}, a)
        capacity = len(done) / wall
        capacity_note = (f"Capacity measured first: `stock`, closed loop, {a.clients} clients x {a.per_client} "
                         f"queries of the mix's analytics (no pgbench beside them), {len(done)} in {wall:.1f} s "
                         f"= {capacity * 3600:.0f} queries/hour.")
        say(f"capacity: {capacity * 3600:.0f} queries/hour")
    elif capacity is not None:
        capacity_note = f"Capacity given (--capacity): {capacity * 3600:.0f} queries/hour."
    plans = {}
    for load in loads:
        if load is None:
            continue
        arr = poisson_schedule(load * capacity, a.seed, a.arrivals, a.seconds)
        if not arr:
            raise SystemExit(f"no arrival within --seconds {a.seconds} at load {load}")
        plans[load] = (arr, sequence(groups, a.seed * 7919 + int(load * 1000), len(arr)))

    per = {}            # (load, config, class) -> {metric: [per repetition]}
    recorded = {}       # config -> settings as it ran
    extras = {}         # (load, config) -> {key: [per repetition]}
    try:
        with tempfile.TemporaryDirectory(prefix="mccdb-workload-") as tmpname:
            tmp = pathlib.Path(tmpname)
            for r in range(a.reps):
                for load in loads:
                    order = cfgs[:]
                    random.Random(a.seed * 100 + r * 10 + loads.index(load)).shuffle(order)
                    got = {}
                    for cfg in order:
                        configs.start_server(cfg, a.db)
                        if a.mix in OLTP_MIXES:
                            with pg.connect(a.db) as c:
                                c.execute("truncate pgbench_history")
                        with configs.clients_of(cfg, a.pooler_port, a.db) as (target, env, pooler):
                            recorded.setdefault(cfg.name, server_settings(cfg, a.db, pooler))
                            what = f"{cfg.name}" + (f", load {load}" if load else "") + f" (repetition {r + 1})"
                            say(f"repetition {r + 1}: {what}")
                            with guard.measuring(what):
                                got[cfg.name], extra = run_one(cfg, target, env, load, plans, seqs, a, tmp,
                                                               pooler)
                        for k, v in extra.items():
                            extras.setdefault((load, cfg.name), {}).setdefault(k, []).append(v)
                        s = got[cfg.name].get("all analytics", {})
                        say(f"  {cfg.name:>16}: {s.get('n', 0)} queries, {s.get('qph', 0):.0f}/h, "
                            f"mean {s.get('mean', 0):.2f} s, p95 {s.get('p95', 0):.2f} s")
                    add_ratios(got, two_pools, one_pool_config(cfgs))
                    for cname, per_cls in got.items():
                        for cls, s in per_cls.items():
                            for k, v in s.items():
                                per.setdefault((load, cname, cls), {}).setdefault(k, []).append(v)
    finally:
        configs.restore_server(a.db)
    write_page(res, a, cfgs, groups, loads, plans, capacity_note, per, recorded, extras, added, capacity)
    return res, per


@contextlib.contextmanager
def queue_sampler(cfg, pooler, db):
    """The idle-while-waiting sampler of cfg's queue for the block: mccdb's
    gate, the pooler's clients waiting for a connection, none for stock."""
    with contextlib.ExitStack() as stack:
        if cfg.mccdb:
            waiting = idle_wait.gate_waiting(stack.enter_context(pg.connect(db, base=False)))
        elif pooler is not None:
            waiting = idle_wait.pooler_waiting(stack.enter_context(pooler.console()))
        else:
            waiting = lambda: 0     # noqa: E731 (no queue)
        sampler = idle_wait.IdleWhileWaiting(waiting)
        sampler.start()
        try:
            yield sampler
        finally:
            sampler.stop()


def run_one(cfg, target, env, load, plans, seqs, a, tmp, pooler=None):
    """One configuration, one repetition: ({class: stats}, extra values)."""
    with queue_sampler(cfg, pooler, a.db) as sampler:
        st, extra = run_work(cfg, target, env, load, plans, seqs, a, tmp, sampler.stop)
    extra["CPU idle CPU-s"] = sampler.idle_s
    extra["CPU idle while work waited CPU-s"] = sampler.idle_waiting_s
    extra["work waited s"] = sampler.waiting_s
    return st, extra


def run_work(cfg, target, env, load, plans, seqs, a, tmp, analytics_done=lambda: None):
    """The mix's analytics (and pgbench) in one configuration; calls
    analytics_done() when the analytics end, before pgbench's end."""
    oltp = None
    extra = {}
    adb = configs.dbname_for(cfg, a.db, "analytics")     # the database itself, or its class's pooler alias
    odb = configs.dbname_for(cfg, a.db, "oltp")
    if load is None:
        if a.mix in OLTP_MIXES:
            oltp = start_pgbench(odb, env, a, a.oltp_seconds, tmp)
        wall, done, finished = run_closed(seqs, adb, target, a)
        analytics_done()
        extra["wall s"] = wall
        extra["one client left s"] = lone_tail(finished)
    else:
        arr, items = plans[load]
        box = {}
        if a.mix in OLTP_MIXES:
            def started():
                box["oltp"] = start_pgbench(odb, env, a, arr[-1], tmp)
        else:
            started = None
        wall, done, waited = run_open(arr, items, adb, target, a, started)
        analytics_done()
        oltp = box.get("oltp")
        extra["wall s"] = wall
        extra["longest wait for a client connection s"] = waited
    st = class_stats(done, wall)
    if oltp is not None:
        lat, tps = finish_pgbench(oltp, tmp)
        if lat:
            ost = class_stats(lat, 1.0)["tpcb"]
            ost["qph"] = tps * 3600
            st["tpcb"] = ost
    return st, extra


def pooler_text(a, cfgs, added):
    """What the page says about the PgBouncer setups it compares, or ''."""
    poolers = [c for c in cfgs if c.pool is not None]
    if not poolers:
        return ""
    oltp = a.mix in OLTP_MIXES
    text = ("PgBouncer (transaction pooling, stock server behind it): "
            + "; ".join(f"`{c.name}`: " + (f"a pool per workload class, pgbench's OLTP through the database "
                                          f"alias `{configs.dbname_for(c, a.db, 'oltp')}` (pool_size "
                                          f"{c.oltp_pool}), every analytics query through "
                                          f"`{configs.dbname_for(c, a.db, 'analytics')}` (pool_size {c.pool})"
                                          if c.oltp_pool is not None else
                                          f"one pool of {c.pool} for every client") for c in poolers) + ".")
    if any(c.oltp_pool is not None for c in poolers) and not oltp:
        text += " This mix has no OLTP: the two-pool setup's analytics pool is the one-pool setup's pool."
    if a.mix == "adhoc":
        text += (" In the ad-hoc mix short and long analytics come from the same clients, role and database:"
                 " no pooler can put them in separate pools.")
    if added:
        text += f" (`{added}` added beside the one-pool setup; --one-pool-only leaves it out.)"
    return text + "\n"


def write_page(res, a, cfgs, groups, loads, plans, capacity_note, per, recorded, extras, added=None,
               capacity=None):
    parts = [f"{share:.0%} {items[0].cls} ({', '.join(i.name for i in items)})" for share, items in groups]
    res.add(f"Mix `{a.mix}` (fixed in mccdb_bench.workload): " + "; ".join(parts) + "."
            + (f" Beside them pgbench's TPC-B-like script at {a.oltp_rate:g} transactions/s "
               f"(`pgbench -b tpcb-like -R {a.oltp_rate:g} -c {a.oltp_clients}`, scale {a.oltp_scale}, same "
               "database; latency from each transaction's scheduled start)" if a.mix in OLTP_MIXES else "") + "\n")
    if a.mode == "closed":
        res.add(f"Closed loop: {a.clients} clients, each its own connection and a seeded sequence of "
                f"{a.per_client} queries (seed {a.seed}), the same in every configuration, run to the end."
                + (f" pgbench runs {a.oltp_seconds:g} s from the start." if a.mix in OLTP_MIXES else "") + "\n")
    else:
        res.add("Open loop: Poisson arrivals (seed " + str(a.seed) + ") at each load's share of the capacity, "
                + "; ".join(f"load {ld}: {len(plans[ld][0])} arrivals in {plans[ld][0][-1]:.1f} s "
                            f"({len(plans[ld][0]) / plans[ld][0][-1] * 3600:.0f}/hour)"
                            for ld in loads) +
                f"; each on a free connection of {a.max_conns} opened before the run; latency from the "
                f"arrival to COMMIT's answer. {capacity_note}\n")
    res.add(f"Every query one transaction (BEGIN, SET LOCAL settings, the query, COMMIT); "
            f"max_parallel_workers_per_gather = {a.parallel_workers}, jit off. Each configuration from a "
            f"restarted server after the quiet-machine guard; configurations in a new random order in each of "
            f"{a.reps} repetitions; median (min-max) over the repetitions; ratios within a repetition.\n")
    if pooler_text(a, cfgs, added):
        res.add(pooler_text(a, cfgs, added))
    res.add("Run times also show the CPUs' idle time while the analytics ran (both CPUs, /proc/stat, iowait counted as "
            "idle) and the part of it in the 0.1 s intervals that began with a statement waiting: in mccdb's gate "
            "(`mccdb_queue`) or for a PgBouncer server connection (SHOW POOLS' cl_waiting); stock has no queue. "
            "Idle CPU while work waited is capacity the queue left unused.\n")
    res.table(["configuration", "what", "settings as it ran"],
              [[c.name, c.describe(), ", ".join(f"{k} = {v}" for k, v in recorded.get(c.name, {}).items())]
               for c in cfgs])
    classes = sorted({k[2] for k in per}, key=lambda c: CLASSES_ORDER.index(c) if c in CLASSES_ORDER else 99)
    if len([c for c in classes if c != "tpcb"]) == 2:    # one analytics class: 'all analytics' is it again
        classes.remove("all analytics")
    two = two_pool_config(cfgs) is not None
    cols = [("n", 0, "queries"), ("qph", 0, "per hour"), ("qph/stock", 2, "vs stock"),
            ("qph/pgbouncer", 2, "vs pgbouncer")] + ([("qph/" + TWO_POOLS, 2, "vs two pools")] if two else []) + [
            ("mean", None, "mean s"), ("mean/pgbouncer", 2, "mean vs pgbouncer")] + (
            [("mean/" + TWO_POOLS, 2, "mean vs two pools")] if two else []) + [
            ("p50", None, "p50 s"), ("p95", None, "p95 s"), ("p95/stock", 2, "p95 vs stock")] + (
            [("p95/" + TWO_POOLS, 2, "p95 vs two pools")] if two else []) + [
            ("p99", None, "p99 s"), ("p99/stock", 2, "p99 vs stock")] + (
            [("p99/" + TWO_POOLS, 2, "p99 vs two pools")] if two else [])
    def load_label(load):
        """The load aimed at and the load the arrivals made of the capacity."""
        if load is None:
            return ""
        arrivals = plans[load][0]
        measured = len(arrivals) / arrivals[-1] / capacity if capacity else None
        return f", load {load} aimed" + (f", {measured:.0%} of capacity measured" if measured else "")

    for load in loads:
        for cls in classes:
            title = f"**{cls}**" + load_label(load)
            res.add(title + (" (pgbench's tps x 3600)" if cls == "tpcb" else "") + "\n")
            rows = []
            for c in cfgs:
                d = per.get((load, c.name, cls))
                if not d:
                    continue
                sec = 3 if cls == "tpcb" else 2     # milliseconds matter for TPC-B
                rows.append([c.name] + [stats.summarize(d.get(k, [])).fmt(sec if dg is None else dg)
                                        for k, dg, _ in cols])
            res.table(["configuration"] + [h for _, _, h in cols], rows)
        rows = [[c.name] + [stats.summarize(v).fmt(2) for v in extras.get((load, c.name), {}).values()]
                for c in cfgs]
        keys = list(next(iter(extras.values()), {}).keys())
        if keys:
            res.add("Run times" + load_label(load) + "\n")
            res.table(["configuration"] + keys, [r for r in rows if len(r) == len(keys) + 1])
    plot(res, a, cfgs, loads, per)


def plot(res, a, cfgs, loads, per):
    """Throughput and p95 of all analytics per configuration (and load)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    width = 0.8 / len(loads)
    for j, load in enumerate(loads):
        for ax, key in zip(axes, ("qph", "p95")):
            sm = [stats.summarize(per.get((load, c.name, "all analytics"), {}).get(key, [])) for c in cfgs]
            xs = [i + j * width for i in range(len(cfgs))]
            ax.bar(xs, [s.median for s in sm], width, label=f"load {load}" if load else None,
                   yerr=[[s.median - s.lo for s in sm], [s.hi - s.median for s in sm]], capsize=2)
    for ax, title in zip(axes, ("analytics queries per hour", "analytics p95 latency (s)")):
        ax.set_xticks([i + width * (len(loads) - 1) / 2 for i in range(len(cfgs))])
        ax.set_xticklabels([c.name for c in cfgs], rotation=20, fontsize=8)
        ax.set_ylabel(title)
        ax.set_title(f"{a.mix} mix, {a.mode} loop: median and min-max of {a.reps} repetitions", fontsize=8)
        if loads[0] is not None:
            ax.legend(fontsize=7)
    res.figure(fig)


if __name__ == "__main__":
    sys.exit(run(main))
