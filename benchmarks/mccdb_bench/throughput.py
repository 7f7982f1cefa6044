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
predictive, plan_policy off), adaptive (with the calibrated matrix), and
pgbouncer / pgbouncer-N (the stock server behind PgBouncer, transaction
pooling, a pool of the CPUs or of N; mccdb_bench.configs; pgbouncer2 and
pgbouncer2-A-O are accepted too, but with no OLTP in the stream their
analytics pool of A is all that serves it). Each query is
one transaction (BEGIN, its settings as SET LOCAL, the query, COMMIT) in
every configuration, as a client of a transaction pooler must send it; its
latency runs from BEGIN to COMMIT's answer, so it includes the pooler's
wait for a server connection. Each repetition runs them in a new random
order, each after the quiet-machine guard.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.throughput --db ssb --clients 6 --reps 3
"""
import os
import random
import sys
import threading
import time

from .fig6 import ensure_matrix
from . import configs
from .harness import pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of



def stream(seed, pool, length):
    rnd = random.Random(seed)
    return [rnd.choice(pool) for _ in range(length)]


def run_config(cfg, streams, db, target=None):
    """Run every client's stream to its end, each query one transaction with
    its settings as SET LOCAL (as a client of a transaction pooler must),
    on the server or the pooler target names; (wall seconds, [(query,
    latency s)])."""
    done, errors = [], []
    lock = threading.Lock()
    extra = [f"set mccdb.plan_policy = {cfg.plan_policy}"] if cfg.plan_policy else []
    # every query here is analytics: a two-pool PgBouncer serves them from its analytics pool
    conns = [configs.connect_client(configs.dbname_for(cfg, db, "analytics"), target or {}) for _ in streams]
    barrier = threading.Barrier(len(streams) + 1)

    def client(k):
        c = conns[k]
        barrier.wait()
        try:
            for q in streams[k]:
                lat = configs.run_transaction(c, configs.local_settings(0, extra + [
                    "set statement_timeout = '600s'", f"set search_path = {q.settings_path}"]), q.sql)
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
        raise RuntimeError(f"{cfg.name}: " + "; ".join(errors))
    return wall, done


def repeat_configs(cfgs, reps, seed, guard, run_one, db, say, pooler_port=configs.POOLER_PORT):
    """Run every configuration (configs.Config) in each repetition, in a new
    random order, each on a restarted server (behind a PgBouncer started
    for it, for the pooler's) after the guard; run_one(cfg, target, env)
    returns a dict with 'qph' and 'latencies' (and anything else to keep),
    target and env being where the clients connect (psycopg keywords,
    libpq variables; empty for the server itself).  Returns {config name:
    {key: [per repetition]}} with 'median', 'p95' and the ratios
    'qph_rel', 'p95_rel' over stock of the same repetition added."""
    per = {c.name: {} for c in cfgs}
    try:
        for r in range(reps):
            order = cfgs[:]
            random.Random(seed * 100 + r).shuffle(order)
            got = {}
            for cfg in order:
                name = cfg.name
                configs.start_server(cfg, db)
                with configs.clients_of(cfg, pooler_port, db) as (target, env, _):
                    guard.before(f"{name} (repetition {r + 1})")
                    say(f"repetition {r + 1}: {name}")
                    got[name] = run_one(cfg, target, env)
                    guard.after()
                lat = got[name].pop("latencies")
                got[name].update(median=stats.summarize(lat).median, p95=stats.percentile(lat, 95))
            for name, m in got.items():
                if "stock" in got:
                    m.update(qph_rel=m["qph"] / got["stock"]["qph"], p95_rel=m["p95"] / got["stock"]["p95"])
                for k, v in m.items():
                    per[name].setdefault(k, []).append(v)
    finally:
        configs.restore_server(db)
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
    ap.add_argument("--configs", default="stock,off,sls,mls,predictive",
                    help=f"comma-separated, from: {configs.KNOWN}")
    ap.add_argument("--pooler-port", type=int, default=configs.POOLER_PORT,
                    help="PgBouncer's port in the pgbouncer configurations")
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
    cfgs = configs.parse_list(a.configs)
    if any(c.schedule == "adaptive" for c in cfgs) and not ensure_matrix(a.db, a.calibrate, say, guard):
        cfgs = [c for c in cfgs if c.schedule != "adaptive"]
        res.add("**adaptive skipped: no interference matrix.**\n")
    streams = [stream(a.seed * 1000 + k, pool, a.per_client) for k in range(a.clients)]

    def one(cfg, target, env):
        name = cfg.name
        wall, done = run_config(cfg, streams, a.db, target)
        lat = [x for _, x in done]
        say(f"  {name:>10}: {len(done)} queries in {wall:.1f} s, median {stats.summarize(lat).median:.2f} s")
        return {"qph": len(done) * 3600 / wall, "wall": wall, "latencies": lat}

    per = repeat_configs(cfgs, a.reps, a.seed, guard, one, a.db, say, a.pooler_port)
    rows = [[name] + [stats.summarize(d.get(k, [])).fmt(digits) for k, digits in
                      (("wall", 1), ("qph", 0), ("qph_rel", 2), ("median", 2), ("p95", 2), ("p95_rel", 2))]
            for name, d in per.items()]
    res.add(f"{a.clients} clients, each its own connection and a seeded random stream of {a.per_client} "
            f"queries over {len(pool)} (13 SSB + TPC-H {a.tpch}), the same streams in every configuration, "
            "run to their end. Each configuration starts from a restarted server; configurations in a new "
            f"random order in each of {a.reps} repetitions; median (min-max) over the repetitions; ratios "
            "over stock are taken within a repetition. Parallel workers off, `mccdb.corun_slots` default "
            "(2 here). Each query is one transaction (BEGIN, SET LOCAL settings, the query, COMMIT); "
            "latency from BEGIN to COMMIT.\n")
    res.add("Configurations: " + "; ".join(f"`{c.name}`: {c.describe()}" for c in cfgs) + ".\n")
    res.table(["configuration", "all streams done, s", "queries/hour", "queries/hour vs stock",
               "median latency s", "p95 latency s", "p95 vs stock"], rows)
    plot_rates(res, per, a.reps)
    return res, per


if __name__ == "__main__":
    sys.exit(run(main))
