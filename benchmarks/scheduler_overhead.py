#!/usr/bin/env python3
"""Overheads of mccdb's plan selection and admission gate, without contention.

1. Planning: server-side "Planning Time" of EXPLAIN (SUMMARY) for each SSB
   query with mccdb.plan_policy = sls (three candidate plans), with sls but
   the query below mccdb.plan_above_cost (the threshold path: one plan), and
   off (PostgreSQL's one plan), three sessions interleaved in one run.
2. Admission: client-side time of a small query that goes through the gate
   (mccdb.min_cost = 0) beside the same query bypassing it (min_cost huge),
   with mccdb.schedule = mls and nothing else running, interleaved.

Needs a running cluster with mccdb and the SSB database (libpq environment),
e.g. the demo cluster:

    scripts/pg-cluster.sh start demo --port 54323
    eval "$(scripts/pg-cluster.sh env demo)"
    PGDATABASE=ssb .venv/bin/python benchmarks/scheduler_overhead.py --rounds 200
"""
import argparse
import datetime
import pathlib
import statistics
import sys
import time

import psycopg

from harness import machine
from harness.quiet import Guard, loadavg1

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = "select count(*) from supplier where s_region = 'ASIA'"


def planning_ms(conn, sql):
    plan = conn.execute("explain (summary, format json) " + sql).fetchone()[0]
    return plan[0]["Planning Time"]


def elapsed_us(conn, sql):
    t0 = time.perf_counter_ns()
    conn.execute(sql).fetchall()
    return (time.perf_counter_ns() - t0) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()

    lines = []
    guard = Guard()
    guard.start()
    started = datetime.datetime.now()
    load_before = loadavg1()
    with psycopg.connect(autocommit=True) as stock, psycopg.connect(autocommit=True) as sls, \
            psycopg.connect(autocommit=True) as thr, psycopg.connect(autocommit=True) as ctl:
        for c in (stock, sls, thr):
            c.execute("set max_parallel_workers_per_gather = 0")
        stock.execute("set mccdb.plan_policy = off")
        sls.execute("set mccdb.plan_policy = sls")
        sls.execute("set mccdb.plan_above_cost = 0")
        thr.execute("set mccdb.plan_policy = sls")
        thr.execute("set mccdb.plan_above_cost = 1e30")
        version = ctl.execute("show server_version").fetchone()[0]
        guard.before("planning")
        lines += [f"Machine: {machine.describe()}; PostgreSQL {version}; database "
                  f"`{ctl.info.dbname}` (SSB). Run {started:%Y-%m-%d %H:%M}; 1-minute load before "
                  f"{load_before:.2f}; quiet-machine guard passed (CPUs at most "
                  f"{100 * guard.checks[-1][2]:.0f}% busy before the run). Command: "
                  f"`PGDATABASE={ctl.info.dbname} .venv/bin/python benchmarks/scheduler_overhead.py "
                  f"--rounds {args.rounds}`.", "",
                  "## Planning time with candidate generation, and below mccdb.plan_above_cost", "",
                  f"Median server-side planning time over {args.rounds} interleaved rounds: `off` "
                  "(PostgreSQL's plan), `sls` with every query given candidates (plan_above_cost 0), "
                  "and `sls` with the query below plan_above_cost (the threshold path).", "",
                  "| query | off ms | sls ms | sls / off | below threshold ms | below threshold / off |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        ratios, thr_ratios = [], []
        for f in sorted((ROOT / "benchmarks" / "ssb" / "queries").glob("q*.sql")):
            sql = f.read_text().strip().rstrip(";")
            t = {"off": [], "sls": [], "thr": []}
            for _ in range(10):
                planning_ms(stock, sql), planning_ms(sls, sql), planning_ms(thr, sql)
            for _ in range(args.rounds):
                t["off"].append(planning_ms(stock, sql))
                t["sls"].append(planning_ms(sls, sql))
                t["thr"].append(planning_ms(thr, sql))
            m = {k: statistics.median(v) for k, v in t.items()}
            ratios.append(m["sls"] / m["off"])
            thr_ratios.append(m["thr"] / m["off"])
            lines.append(f"| {f.stem} | {m['off']:.3f} | {m['sls']:.3f} | {m['sls'] / m['off']:.2f} "
                         f"| {m['thr']:.3f} | {m['thr'] / m['off']:.2f} |")
            print(f.stem, m, file=sys.stderr)
        lines += ["", f"Candidates: median ratio {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f}). Below the threshold: median ratio "
                  f"{statistics.median(thr_ratios):.2f} (min {min(thr_ratios):.2f}, max {max(thr_ratios):.2f}).", ""]

        # admission: schedule is server-wide; min_cost decides per session
        ctl.execute("alter system set mccdb.schedule = 'mls'")
        ctl.execute("select pg_reload_conf()")
        time.sleep(0.5)
        try:
            with psycopg.connect(autocommit=True) as gated, psycopg.connect(autocommit=True) as bypass:
                assert gated.execute("show mccdb.schedule").fetchone()[0] == "mls"
                gated.execute("set mccdb.min_cost = 0")
                bypass.execute("set mccdb.min_cost = 1e30")
                before = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0]
                t = {"gated": [], "bypass": []}
                for _ in range(50):
                    elapsed_us(gated, SMALL), elapsed_us(bypass, SMALL)
                for _ in range(args.rounds * 5):
                    t["gated"].append(elapsed_us(gated, SMALL))
                    t["bypass"].append(elapsed_us(bypass, SMALL))
                admitted = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0] - before
        finally:
            ctl.execute("alter system reset mccdb.schedule")
            ctl.execute("select pg_reload_conf()")
        assert admitted == args.rounds * 5 + 50, f"every gated query went through the gate ({admitted})"
        m = {k: statistics.median(v) for k, v in t.items()}
        lines += ["## Admission overhead without contention", "",
                  f"`{SMALL}`, median client-side time over {args.rounds * 5} interleaved rounds, "
                  f"mccdb.schedule = mls, nothing else running; {admitted} admissions counted.", "",
                  "| path | median us |", "| --- | ---: |",
                  f"| bypassing the gate (min_cost above the query's cost) | {m['bypass']:.1f} |",
                  f"| through the gate | {m['gated']:.1f} |",
                  f"| difference: admission per query | {m['gated'] - m['bypass']:.1f} |"]

    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
