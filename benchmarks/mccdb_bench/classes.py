"""Workload classes (issue 50): two roles, a high and a low class, under one mixed load.

Two roles share the server (the workload chosen before any class was
measured, and kept):

  reports  (role wl_reports) --reports clients, each the 13 SSB queries in a
           seeded order --per-client times over: dashboards that wait for
           their answers
  batch    (role wl_batch) --batch clients, each --batch-queries of the long
           index joins of the `long` mix (PLQ_12, 18, 25 through lineorder's
           index, 10 s and more at SF 1), seeded

Configurations (interleaved in a new seeded order each repetition, each on
a restarted server after the quiet-machine guard):

  stock       mccdb not preloaded, clients connect directly
  pgbouncer2  the stock server behind PgBouncer with a pool per role, as a
              DBA separates them: batch through the alias DB_analytics
              (pool_size --batch-pool: --batch-slots, or the CPUs when that
              is 0), reports through DB_oltp (pool_size --reports-pool)
  shared      mccdb preloaded, mccdb.schedule = --policy, both roles in one
              class (default): the gate's slots only
  classes     the same, and two classes: reports (priority 10, no slot
              limit), batch (priority 0, slots --batch-slots; 0: no slot
              limit, priority only); ALTER ROLE ... SET mccdb.class puts
              each role in its class

Each query is one transaction (BEGIN, SET LOCAL settings, the query,
COMMIT), latency from BEGIN to COMMIT's answer.  While the clients run, a
sampler reads each role's slots running in the gate (mccdb_queue) 20 times
a second under mccdb, or its active backends (pg_stat_activity) otherwise.
Reported per role: mean, p50, p95, p99 latency and throughput; per
configuration the most running at once per role, and under mccdb each
class's admissions after mccdb.max_wait and its longest wait.

    eval "$(scripts/pg-cluster.sh env NAME)"
    .venv/bin/python -m mccdb_bench.classes --db ssb --reps 3
"""
import os
import random
import statistics
import sys
import threading
import time

import psycopg

from . import configs
from .harness import pg, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .workload import long_items, ssb_items

ROLES = {"reports": "wl_reports", "batch": "wl_batch"}
CONFIGS = ("stock", "pgbouncer2", "shared", "classes")
SAMPLE_S = 0.05


def ensure_roles(db):
    """The two plain login roles, able to read the database's tables."""
    with pg.connect(db, base=False) as c:
        for role in ROLES.values():
            if not c.execute("select 1 from pg_roles where rolname = %s", (role,)).fetchone():
                c.execute(f"create role {role} login")
            c.execute(f"grant select on all tables in schema public to {role}")


def set_classes(db, cfg_name, batch_slots):
    """The classes the configuration runs with: none (every role in
    default), or reports and batch; each role's mccdb.class to match."""
    with pg.connect(db, base=False) as c:
        if cfg_name in ("shared", "classes"):
            c.execute("delete from mccdb_class")
        if cfg_name == "classes":
            c.execute("insert into mccdb_class (name, priority, slots) values "
                      "('reports', 10, NULL), ('batch', 0, %s)", (batch_slots or None,))
            for cls, role in ROLES.items():
                c.execute(f"alter role {role} set mccdb.class = '{cls}'")
        else:
            for role in ROLES.values():
                c.execute(f"alter role {role} reset all")


def sequences(a):
    """{role class: [each client's items]}, seeded."""
    ssb, long_ = ssb_items(), long_items()
    rnd = random.Random(a.seed)
    reports = []
    for _ in range(a.reports):
        seq = []
        for _ in range(a.per_client):
            seq += rnd.sample(ssb, len(ssb))
        reports.append(seq)
    batch = [[rnd.choice(long_) for _ in range(a.batch_queries)] for _ in range(a.batch)]
    return {"reports": reports, "batch": batch}


class Sampler(threading.Thread):
    """The most slots running in the gate (mccdb) or active backends (stock)
    of each role at once."""

    def __init__(self, db, mccdb):
        super().__init__(daemon=True)
        self.db, self.mccdb = db, mccdb
        self.most = {cls: 0 for cls in ROLES}
        self.samples = 0
        self.stop = threading.Event()

    def run(self):
        with pg.connect(self.db, base=False) as c:
            if self.mccdb:
                c.execute("set mccdb.schedule_min_cost = 1e30")
                sql = ("select case r.rolname when 'wl_reports' then 'reports' else 'batch' end, sum(q.slots) "
                       "from mccdb_queue q join pg_roles r on r.oid = q.userid "
                       "where q.state = 'running' and r.rolname in ('wl_reports', 'wl_batch') group by 1")
            else:
                sql = ("select case usename when 'wl_reports' then 'reports' else 'batch' end, count(*) "
                       "from pg_stat_activity where state = 'active' and usename in ('wl_reports', 'wl_batch') "
                       "group by 1")
            while not self.stop.is_set():
                for cls, n in c.execute(sql).fetchall():
                    if cls in self.most:
                        self.most[cls] = max(self.most[cls], n)
                self.samples += 1
                time.sleep(SAMPLE_S)


def run_clients(seqs, cfg, target, db, a):
    """Every client's sequence to its end, each role through its own alias
    under two pools; {class: [latency s]}, wall s."""
    lat = {cls: [] for cls in seqs}
    errors, lock = [], threading.Lock()
    pool_of = {"reports": "oltp", "batch": "analytics"}
    conns = {cls: [configs.connect_client(configs.dbname_for(cfg, db, pool_of[cls]),
                                          dict(target, user=ROLES[cls])) for _ in clients]
             for cls, clients in seqs.items()}
    n = sum(len(v) for v in seqs.values())
    barrier = threading.Barrier(n + 1)

    def client(cls, k):
        barrier.wait()
        try:
            for item in seqs[cls][k]:
                settings = configs.local_settings(0, list(item.settings) + [
                    f"set statement_timeout = '{int(a.statement_timeout)}s'"])
                t = configs.run_transaction(conns[cls][k], settings, item.sql)
                with lock:
                    lat[cls].append(t)
        except Exception as e:  # a failed client fails the run, after it
            errors.append(f"{cls} client {k}: {e}")

    threads = [threading.Thread(target=client, args=(cls, k), daemon=True)
               for cls in seqs for k in range(len(seqs[cls]))]
    try:
        for t in threads:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        for cs in conns.values():
            for c in cs:
                c.close()
    if errors:
        raise RuntimeError("; ".join(errors))
    return lat, wall


def class_counters(db):
    with pg.connect(db, base=False) as c:
        return {r[0]: {"after_max_wait": r[1], "wait_max_ms": r[2], "wait_p95_ms": r[3]}
                for r in c.execute("select name, admitted_after_max_wait, wait_max_ms, wait_p95_ms "
                                   "from mccdb_classes").fetchall()}


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--reports", type=int, default=3, help="reports clients")
    ap.add_argument("--per-client", type=int, default=2, help="times each reports client runs the 13 SSB queries")
    ap.add_argument("--batch", type=int, default=3, help="batch clients")
    ap.add_argument("--batch-queries", type=int, default=2, help="long queries per batch client")
    ap.add_argument("--batch-slots", type=int, default=1, help="the batch class's slots (0: no limit, priority only)")
    ap.add_argument("--batch-pool", type=int, default=None,
                    help="PgBouncer's batch pool (default --batch-slots, or the CPUs when that is 0)")
    ap.add_argument("--reports-pool", type=int, default=2, help="PgBouncer's reports pool")
    ap.add_argument("--policy", default="shortest")
    ap.add_argument("--statement-timeout", type=float, default=600)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="workload-classes")
    a = ap.parse_args(argv)
    cfgs = [c for c in a.configs.split(",") if c]
    unknown = set(cfgs) - set(CONFIGS)
    if unknown:
        raise SystemExit(f"--configs: unknown {sorted(unknown)}; known: {', '.join(CONFIGS)}")
    db = a.db or "ssb"
    if a.batch_slots < 0:
        raise SystemExit("--batch-slots: 0 or more")
    a.batch_pool = a.batch_pool or a.batch_slots or (os.cpu_count() or 1)
    say = say_fn(a.quiet)
    ensure_roles(db)
    seqs = sequences(a)
    srv = pg.server_info(db)
    res = report.Result(a.name, "Workload classes: a high and a low class under one mixed load", srv,
                        f"{a.reports} reports clients x {a.per_client * 13} SSB queries, "
                        f"{a.batch} batch clients x {a.batch_queries} long index joins", a.outdir)
    guard = res.guard = start_guard(a, say, own_load=a.reports + a.batch)
    runs = []
    rng = random.Random(a.seed)
    pooler_cfg = configs.parse(f"pgbouncer2-{a.batch_pool}-{a.reports_pool}")
    try:
        for rep in range(a.reps):
            order = list(cfgs)
            rng.shuffle(order)
            for name in order:
                say(f"rep {rep + 1}/{a.reps}: {name}")
                mccdb = name in ("shared", "classes")
                cfg = pooler_cfg if name == "pgbouncer2" else (
                    configs.parse(f"mccdb:{a.policy}") if mccdb else configs.parse("stock"))
                configs.start_server(cfg, db)
                set_classes(db, name, a.batch_slots)
                with configs.clients_of(cfg, db=db, users=list(ROLES.values())) as (target, _env, _pooler):
                    sampler = Sampler(db, mccdb)
                    with guard.measuring(f"{name} rep {rep + 1}"):
                        load_before = report.loadavg()
                        sampler.start()
                        try:
                            lat, wall = run_clients(seqs, cfg, target, db, a)
                        finally:
                            sampler.stop.set()
                            sampler.join(5)
                row = {"rep": rep + 1, "config": name, "wall": wall, "lat": lat, "most": dict(sampler.most),
                       "samples": sampler.samples, "load_before": load_before,
                       "counters": class_counters(db) if mccdb else None}
                runs.append(row)
                say(f"  wall {wall:.1f} s; reports p95 {stats.percentile(lat['reports'], 95):.2f} s, "
                    f"batch mean {statistics.fmean(lat['batch']):.1f} s; most at once {row['most']}")
    finally:
        if any(c in ("shared", "classes") for c in cfgs):
            configs.start_server(configs.parse(f"mccdb:{a.policy}"), db)
            set_classes(db, "shared", a.batch_slots)
        configs.restore_server(db)
    write_page(res, a, cfgs, runs)
    return res


def summary(runs, cfg, fn):
    xs = [fn(r) for r in runs if r["config"] == cfg]
    return stats.summarize(xs).fmt(2) if xs else "-"


def paired(runs, num, den, fn):
    """fn(num's run) / fn(den's run) per repetition: median (min-max)."""
    by = {(r["config"], r["rep"]): r for r in runs}
    xs = [fn(by[(num, rep)]) / fn(by[(den, rep)]) for (c, rep) in by if c == num and (den, rep) in by]
    return stats.summarize(xs).fmt(2) if xs else "-"


def write_page(res, a, cfgs, runs):
    res.add(f"Two roles share the server. `reports` ({ROLES['reports']}): {a.reports} clients, each the 13 SSB "
            f"queries {a.per_client} times in a seeded order. `batch` ({ROLES['batch']}): {a.batch} clients, each "
            f"{a.batch_queries} long index joins (PLQ_12, 18, 25 forced through lineorder's index). Closed loop, "
            f"fixed work, parallel workers off, one transaction per query. `shared` and `classes` run "
            f"`mccdb.schedule = {a.policy}` with the gate's default slots (the CPUs sharing the LLC); `classes` "
            f"adds the classes `reports` (priority 10, no slot limit) and `batch` (priority 0, "
            f"{f'slots {a.batch_slots}' if a.batch_slots else 'no slot limit: priority only'}); `pgbouncer2` puts "
            f"batch in a pool of {a.batch_pool} and reports in a pool of {a.reports_pool}. {a.reps} repetitions, configurations in a seeded random order (seed {a.seed}).\n")
    p95 = lambda cls: lambda r: stats.percentile(r["lat"][cls], 95)  # noqa: E731
    mean = lambda cls: lambda r: statistics.fmean(r["lat"][cls])  # noqa: E731
    p99 = lambda cls: lambda r: stats.percentile(r["lat"][cls], 99)  # noqa: E731
    qph = lambda cls: lambda r: len(r["lat"][cls]) * 3600 / r["wall"]  # noqa: E731
    rows = []
    for c in cfgs:
        rows.append([c, summary(runs, c, mean("reports")), summary(runs, c, p95("reports")),
                     summary(runs, c, p99("reports")), summary(runs, c, mean("batch")),
                     summary(runs, c, p95("batch")), summary(runs, c, lambda r: r["wall"]),
                     summary(runs, c, qph("reports")), summary(runs, c, qph("batch"))])
    res.add("Latency in seconds and throughput in queries per hour, median (min-max) over the repetitions:\n")
    res.table(["configuration", "reports mean", "reports p95", "reports p99", "batch mean", "batch p95",
               "wall s", "reports q/h", "batch q/h"], rows)
    ratio_rows = []
    for den in ("shared", "pgbouncer2", "stock"):
        if "classes" in cfgs and den in cfgs:
            ratio_rows.append([f"classes / {den}", paired(runs, "classes", den, p95("reports")),
                               paired(runs, "classes", den, mean("reports")),
                               paired(runs, "classes", den, mean("batch")),
                               paired(runs, "classes", den, lambda r: r["wall"])])
    if ratio_rows:
        res.add("Ratios within each repetition, median (min-max):\n")
        res.table(["ratio", "reports p95", "reports mean", "batch mean", "wall"], ratio_rows)
    res.add("Every run (most at once: each role's slots running in the gate (mccdb_queue) under mccdb, its "
            "active backends in pg_stat_activity otherwise, sampled every 50 ms; under mccdb each class's admissions after "
            "mccdb.max_wait and its longest wait):\n")
    res.table(["rep", "configuration", "wall s", "reports p95 s", "batch mean s", "most at once reports / batch",
               "samples", "batch admitted after max_wait", "batch longest wait s", "load before"],
              [[r["rep"], r["config"], f"{r['wall']:.1f}", f"{p95('reports')(r):.2f}",
                f"{mean('batch')(r):.1f}", f"{r['most']['reports']} / {r['most']['batch']}", r["samples"],
                r["counters"]["batch"]["after_max_wait"] if r["counters"] and "batch" in r["counters"] else "-",
                f"{r['counters']['batch']['wait_max_ms'] / 1000:.1f}"
                if r["counters"] and "batch" in r["counters"] and r["counters"]["batch"]["wait_max_ms"] else "-",
                r["load_before"]] for r in runs])


if __name__ == "__main__":
    sys.exit(run(main))
