"""Throughput: many clients on a mixed SSB / TPC-H stream, stock vs each policy.

Each client has its own connection and a seeded random sequence of
--per-client queries drawn from the 13 SSB queries and a set of TPC-H queries
(TPC-H tables in schema --tpch-schema of the same database). Every
configuration runs the same sequences to the end (fixed work, nothing is cut
at a deadline), from a freshly restarted server (an empty buffer pool for
all alike). Reported: queries per hour (all queries over the time the last
client finished) and the median and 95th percentile latency, each also as a
ratio over stock from the same repetition.

Configurations: stock (the cluster restarted without mccdb in
shared_preload_libraries), off (mccdb loaded, its policies off), sls and mls
(schedule and plan_policy both set, as the paper), predictive (schedule
predictive, plan_policy off), adaptive (with the calibrated matrix). Each
repetition runs them in a new random order, each after the quiet-machine
guard.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.throughput --db ssb --clients 6 --reps 3
"""
import os
import random
import sys
import threading
import time

from .fig6 import ensure_matrix
from .harness import pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of

# configuration -> (mccdb.schedule, mccdb.plan_policy); stock has no mccdb at all
CONFIGS = {"stock": (None, None), "off": ("off", "off"), "sls": ("sls", "sls"), "mls": ("mls", "mls"),
           "predictive": ("predictive", "off"), "adaptive": ("adaptive", "off")}


def stream(seed, pool, length):
    rnd = random.Random(seed)
    return [rnd.choice(pool) for _ in range(length)]


def start_server(name, db):
    """A restarted server for the configuration: no mccdb for stock, else its schedule."""
    sched, _ = CONFIGS[name]
    pg.set_preload(sched is not None, db)
    if sched is not None:
        pg.set_schedule(sched, db)


def run_config(name, streams, db):
    """Run every client's stream to its end; (wall seconds, [(query, latency s)])."""
    _, plan = CONFIGS[name]
    done, errors = [], []
    lock = threading.Lock()
    extra = [f"set mccdb.plan_policy = {plan}"] if plan else []
    conns = [pg.connect(db, extra + ["set statement_timeout = '600s'"]) for _ in streams]
    barrier = threading.Barrier(len(streams) + 1)

    def client(k):
        c = conns[k]
        barrier.wait()
        try:
            for q in streams[k]:
                c.execute(f"set search_path = {q.settings_path}")
                lat = pg.timed(c, q.sql)
                with lock:
                    done.append((q.name, lat))
        except Exception as e:   # reported after the run; a failed stream fails the experiment
            errors.append(f"client {k}: {e}")

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(len(conns))]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise RuntimeError(f"{name}: " + "; ".join(errors))
    return wall, done


def repeat_configs(configs, reps, seed, guard, run_one, db, say):
    """Run every configuration in each repetition, in a new random order, each
    on a restarted server after the guard; run_one(name) returns a dict with
    'qph' and 'latencies' (and anything else to keep).  Returns
    {config: {key: [per repetition]}} with 'median', 'p95' and the ratios
    'qph_rel', 'p95_rel' over stock of the same repetition added."""
    per = {c: {} for c in configs}
    try:
        for r in range(reps):
            order = configs[:]
            random.Random(seed * 100 + r).shuffle(order)
            got = {}
            for name in order:
                start_server(name, db)
                guard.before(f"{name} (repetition {r + 1})")
                say(f"repetition {r + 1}: {name}")
                got[name] = run_one(name)
                guard.after()
                lat = got[name].pop("latencies")
                got[name].update(median=stats.summarize(lat).median, p95=stats.percentile(lat, 95))
            for name, m in got.items():
                if "stock" in got:
                    m.update(qph_rel=m["qph"] / got["stock"]["qph"], p95_rel=m["p95"] / got["stock"]["p95"])
                for k, v in m.items():
                    per[name].setdefault(k, []).append(v)
    finally:
        pg.set_preload(True, db)
        pg.set_schedule("off", db)
        pg.reset_schedule(db)
    return per


def plot_rates(res, per, reps, rate_label="queries per hour"):
    """Queries per hour and p95 latency per configuration, median and min-max bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    names = list(per)
    for ax, key, title, color in ((ax1, "qph", rate_label, "tab:blue"),
                                  (ax2, "p95", "95th percentile latency (s)", "tab:orange")):
        sm = [stats.summarize(per[n].get(key, [])) for n in names]
        ax.bar(names, [s.median for s in sm], color=color,
               yerr=[[s.median - s.lo for s in sm], [s.hi - s.median for s in sm]], capsize=3)
        ax.set_xlabel("configuration")
        ax.set_ylabel(title)
        ax.set_title(f"median and min-max of {reps} repetitions", fontsize=9)
    res.figure(fig)


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--per-client", type=int, default=10, help="queries each client runs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tpch", default="1,3,5,6,10,12,14,19", help="TPC-H query numbers in the mix")
    ap.add_argument("--tpch-schema", default="tpch")
    ap.add_argument("--configs", default="stock,off,sls,mls,predictive")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calibrate", action="store_true", help="measure the matrix first if missing (adaptive)")
    ap.add_argument("--name", default="throughput")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Throughput: mixed SSB/TPC-H stream, stock vs mccdb policies",
                        srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=max(a.clients, os.cpu_count() or 1))
    pool = []
    for n in sqlfiles.ssb_names():
        q = pg.Query(f"SSB {n}", sqlfiles.ssb(n))
        q.settings_path = "public"
        pool.append(q)
    for n in [int(x) for x in a.tpch.split(",") if x]:
        q = pg.Query(f"TPC-H Q{n}", sqlfiles.tpch(n))
        q.settings_path = f"{a.tpch_schema}, public"
        pool.append(q)
    configs = [c for c in a.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
    if "adaptive" in configs and not ensure_matrix(a.db, a.calibrate, say, guard):
        configs.remove("adaptive")
        res.add("**adaptive skipped: no interference matrix.**\n")
    streams = [stream(a.seed * 1000 + k, pool, a.per_client) for k in range(a.clients)]
    def one(name):
        wall, done = run_config(name, streams, a.db)
        lat = [x for _, x in done]
        say(f"  {name:>10}: {len(done)} queries in {wall:.1f} s, median {stats.summarize(lat).median:.2f} s")
        return {"qph": len(done) * 3600 / wall, "wall": wall, "latencies": lat}

    per = repeat_configs(configs, a.reps, a.seed, guard, one, a.db, say)
    rows = [[name] + [stats.summarize(d.get(k, [])).fmt(digits) for k, digits in
                      (("wall", 1), ("qph", 0), ("qph_rel", 2), ("median", 2), ("p95", 2), ("p95_rel", 2))]
            for name, d in per.items()]
    res.add(f"{a.clients} clients, each its own connection and a seeded random stream of {a.per_client} "
            f"queries over {len(pool)} (13 SSB + TPC-H {a.tpch}), the same streams in every configuration, "
            "run to their end. Each configuration starts from a restarted server; configurations in a new "
            f"random order in each of {a.reps} repetitions; median (min-max) over the repetitions; ratios "
            "over stock are taken within a repetition. Parallel workers off, `mccdb.corun_slots` default "
            "(2 here).\n")
    res.table(["configuration", "all streams done, s", "queries/hour", "queries/hour vs stock",
               "median latency s", "p95 latency s", "p95 vs stock"], rows)
    plot_rates(res, per, a.reps)
    return res, per


if __name__ == "__main__":
    sys.exit(run(main))
