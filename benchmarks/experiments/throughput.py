#!/usr/bin/env python3
"""Throughput: many clients on a mixed SSB / TPC-H stream, stock vs each policy.

Each client has its own connection and a seeded random sequence of queries
drawn from the 13 SSB queries and a set of TPC-H queries (TPC-H tables in
schema --tpch-schema of the same database); the same sequences are replayed
under every configuration. A configuration runs for --duration seconds; at the
deadline queries still running are cancelled and not counted. Reported:
completed queries per hour and the 95th percentile latency, and both as ratios
over stock from the same run.

Configurations: stock (mccdb.schedule = off, plan_policy = off), sls and mls
(schedule and plan_policy both set), adaptive (schedule adaptive with the
measured matrix, plan_policy off).

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python benchmarks/experiments/throughput.py --db ssb --clients 6 --duration 90
"""
import random
import threading
import time

import psycopg

from common import parser, say_fn, scale_of, pg, report, sqlfiles, stats
from fig6 import ensure_matrix

CONFIGS = {"stock": ("off", "off"), "sls": ("sls", "sls"), "mls": ("mls", "mls"),
           "adaptive": ("adaptive", "off")}


def stream(seed, pool, length=500):
    rnd = random.Random(seed)
    return [rnd.choice(pool) for _ in range(length)]


def run_config(name, sched, plan, clients_streams, duration, db, say):
    pg.set_schedule(sched, db)
    done, cancelled = [], [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + duration
    conns = [pg.connect(db, [f"set mccdb.plan_policy = {plan}", "set statement_timeout = '300s'"])
             for _ in clients_streams]

    def client(k):
        c = conns[k]
        for q in clients_streams[k]:
            if time.perf_counter() >= deadline:
                return
            c.execute(f"set search_path = {q.settings_path}")
            t0 = time.perf_counter()
            try:
                c.execute(q.sql).fetchall()
            except psycopg.errors.QueryCanceled:
                with lock:
                    cancelled[0] += 1
                return
            t1 = time.perf_counter()
            if t1 > deadline:
                with lock:
                    cancelled[0] += 1
                return
            with lock:
                done.append((q.name, t1 - t0))

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(len(conns))]
    for t in threads:
        t.start()
    time.sleep(max(0.0, deadline - time.perf_counter()))
    for c in conns:
        c.cancel_safe()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    lat = [x for _, x in done]
    qph = len(done) * 3600 / duration
    p95 = stats.percentile(lat, 95) if lat else float("nan")
    say(f"{name:>8}: {len(done)} queries ({qph:,.0f}/h), p95 {p95:.2f} s, cut at deadline {cancelled[0]}")
    return {"n": len(done), "qph": qph, "p95": p95, "median": stats.summarize(lat).median,
            "cut": cancelled[0], "done": done}


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--duration", type=float, default=90.0, help="seconds per configuration")
    ap.add_argument("--tpch", default="1,3,5,6,10,12,14,19", help="TPC-H query numbers in the mix")
    ap.add_argument("--tpch-schema", default="tpch")
    ap.add_argument("--configs", default="stock,sls,mls,adaptive")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slices", type=int, default=1,
                    help="split each configuration's time into this many slices, run round-robin")
    ap.add_argument("--calibrate", action="store_true", help="measure the matrix first if missing")
    ap.add_argument("--name", default="throughput")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Throughput: mixed SSB/TPC-H stream, stock vs mccdb policies",
                        srv, scale_of(a.db), a.outdir)
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
    if "adaptive" in configs and not ensure_matrix(a.db, a.calibrate, say):
        configs.remove("adaptive")
        res.add("**adaptive skipped: no interference matrix.**\n")
    streams = [stream(a.seed * 1000 + k, pool) for k in range(a.clients)]
    # warm the buffer pool: every query of the pool once
    with pg.connect(a.db) as c:
        for q in pool:
            c.execute(f"set search_path = {q.settings_path}")
            pg.timed(c, q.sql)
    out = {}
    try:
        # round-robin slices, so a change in the machine's load hits every configuration alike
        for sl in range(a.slices):
            for name in configs:
                sched, plan = CONFIGS[name]
                load = report.loadavg().split()[0]
                r = run_config(f"{name} {sl + 1}/{a.slices}", sched, plan, streams, a.duration / a.slices,
                               a.db, say)
                o = out.setdefault(name, {"done": [], "cut": 0, "loads": []})
                o["done"] += r["done"]
                o["cut"] += r["cut"]
                o["loads"].append(load)
        for name, o in out.items():
            lat = [x for _, x in o["done"]]
            o.update(n=len(lat), qph=len(lat) * 3600 / a.duration,
                     p95=stats.percentile(lat, 95) if lat else float("nan"),
                     median=stats.summarize(lat).median)
    finally:
        pg.set_schedule("off", a.db)
        pg.reset_schedule(a.db)
    base = out.get("stock")
    rows = []
    for name, r in out.items():
        rows.append([name, r["n"], f"{r['qph']:,.0f}", f"{r['qph'] / base['qph']:.2f}" if base else "",
                     f"{r['median']:.2f}", f"{r['p95']:.2f}", f"{r['p95'] / base['p95']:.2f}" if base else "",
                     r["cut"], " ".join(r["loads"])])
    res.add(f"{a.clients} clients, each its own connection and seeded random stream over {len(pool)} "
            f"queries (13 SSB + TPC-H {a.tpch}); {a.duration:.0f} s per configuration in {a.slices} "
            "slice(s), configurations round-robin; each slice restarts the streams; queries still running at the deadline are cancelled and not counted. Parallel "
            "workers off, `mccdb.corun_slots` default (2).\n")
    res.table(["configuration", "completed", "queries/hour", "vs stock", "median latency s",
               "p95 latency s", "p95 vs stock", "cut at deadline", "load average (1 min) at each slice"], rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    names = list(out)
    ax1.bar(names, [out[n]["qph"] for n in names])
    ax1.set_title("queries per hour", fontsize=10)
    ax2.bar(names, [out[n]["p95"] for n in names], color="tab:orange")
    ax2.set_title("95th percentile latency (s)", fontsize=10)
    res.figure(fig)
    return res, out


if __name__ == "__main__":
    res, _ = main()
    print(res.text())
    print(f"wrote {res.write()}")
