#!/usr/bin/env python3
"""Measure what mccdb's locality estimation adds to planning an SSB query.

Starts two project-local clusters with the same SSB data and statistics (one
is a copy of the other), one without mccdb (stock) and one with mccdb
preloaded, and times `EXPLAIN <query>` (parse, plan,
executor start/end in explain-only mode, output: the path a plan takes before
it runs) for each of the 13 SSB queries, interleaving three configurations in
one run so that the ratios are not skewed by the machine's drift:

  stock      no mccdb in shared_preload_libraries
  loaded     mccdb preloaded, mccdb.explain = off (hooks, no estimation)
  estimated  mccdb preloaded, mccdb.explain = on  (hooks + estimation + output)

Prints a Markdown table of medians and ratios (and writes it with --out).

    .venv/bin/python benchmarks/planning_overhead.py --scale 1 --rounds 300
"""
import argparse
import pathlib
import statistics
import subprocess
import sys
import time

import psycopg

from harness import machine
from harness.quiet import Guard, loadavg1

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scripts" / "pg-cluster.sh"
PY = sys.executable


def cluster_env(name):
    out = subprocess.run([str(CLUSTER), "env", name], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for part in out.replace("export ", "").split():
        k, v = part.split("=", 1)
        env[k] = v.strip("'")
    return env


def start(name, port, preload):
    args = [str(CLUSTER), "start", name, "--port", str(port),
            "--set", "shared_buffers = 512MB",
            "--set", "max_parallel_workers_per_gather = 0"]
    if not preload:
        args.append("--no-preload")
    subprocess.run(args, check=True)
    env = cluster_env(name)
    conninfo = f"host={env['PGHOST']} port={env['PGPORT']} user=postgres"
    with psycopg.connect(conninfo + " dbname=postgres", autocommit=True) as c:
        if not c.execute("select 1 from pg_database where datname = 'ssb'").fetchone():
            c.execute("create database ssb")
    return conninfo + " dbname=ssb"


def load(conninfo, scale):
    gen = [PY, str(ROOT / "benchmarks" / "ssb" / "ssb_generate.py"),
           "--dsn", conninfo, "--scale", str(scale)]
    if subprocess.run(gen + ["--check"], capture_output=True).returncode != 0:
        subprocess.run(gen + ["--progress", "lines"], check=True)


def time_explain(conn, sql):
    t0 = time.perf_counter_ns()
    conn.execute("explain " + sql).fetchall()
    return (time.perf_counter_ns() - t0) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="1")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()

    # The stock cluster is a copy of the loaded one, so both have the same
    # statistics and plan every query the same way.
    mccdb = start("overhead-mccdb", 54392, preload=True)
    load(mccdb, args.scale)
    subprocess.run([str(CLUSTER), "stop", "overhead-mccdb"], check=True)
    subprocess.run([str(CLUSTER), "destroy", "overhead-stock"], check=True)
    clusters = ROOT / "var" / "clusters"
    subprocess.run(["cp", "-a", str(clusters / "overhead-mccdb"), str(clusters / "overhead-stock")],
                   check=True)
    stock = start("overhead-stock", 54391, preload=False)
    mccdb = start("overhead-mccdb", 54392, preload=True)
    guard = Guard(say=lambda m: print(m, file=sys.stderr), own_load=1)
    load_start = guard.start()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        with psycopg.connect(stock, autocommit=True) as cs, \
                psycopg.connect(mccdb, autocommit=True) as cl, \
                psycopg.connect(mccdb, autocommit=True) as ce:
            cl.execute("create extension if not exists mccdb")
            cl.execute("set mccdb.explain = off")
            ce.execute("set mccdb.explain = on")
            version = cs.execute("show server_version").fetchone()[0]
            rows = []
            guard.before("the EXPLAIN rounds")
            for f in sorted((ROOT / "benchmarks" / "ssb" / "queries").glob("q*.sql")):
                sql = f.read_text().strip().rstrip(";")
                assert "MCC-DB" in str(ce.execute("explain " + sql).fetchall())
                for c in (cs, cl, ce):
                    for _ in range(args.warmup):
                        time_explain(c, sql)
                t = {"stock": [], "loaded": [], "estimated": []}
                for _ in range(args.rounds):
                    t["stock"].append(time_explain(cs, sql))
                    t["loaded"].append(time_explain(cl, sql))
                    t["estimated"].append(time_explain(ce, sql))
                m = {k: statistics.median(v) for k, v in t.items()}
                rows.append((f.stem, m))
                print(f"{f.stem}: stock {m['stock']:.0f} us, loaded {m['loaded']:.0f} us, "
                      f"estimated {m['estimated']:.0f} us", file=sys.stderr)
        guard.after()
    finally:
        subprocess.run([str(CLUSTER), "stop", "overhead-stock"])
        subprocess.run([str(CLUSTER), "stop", "overhead-mccdb"])

    lines = [
        f"Machine: {machine.describe()}; PostgreSQL {version}; SSB scale {args.scale}.",
        f"Run: {started}; 1-minute load when the guard let it start {load_start:.2f}, "
        f"after {loadavg1():.2f}.",
        guard.summary().rstrip("\n").lstrip("- "),
        f"Command: `.venv/bin/python benchmarks/planning_overhead.py --scale {args.scale} "
        f"--rounds {args.rounds}`",
        f"Median client-side time of `EXPLAIN <query>` over {args.rounds} interleaved rounds.",
        "",
        "| query | stock us | mccdb loaded, explain off us | mccdb estimating us | loaded / stock | estimating / stock |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, m in rows:
        lines.append(f"| {name} | {m['stock']:.0f} | {m['loaded']:.0f} | {m['estimated']:.0f} | "
                     f"{m['loaded'] / m['stock']:.3f} | {m['estimated'] / m['stock']:.3f} |")
    ratios = [m["estimated"] / m["stock"] for _, m in rows]
    lines.append("")
    lines.append(f"Median of the per-query ratios estimating / stock: {statistics.median(ratios):.3f} "
                 f"(min {min(ratios):.3f}, max {max(ratios):.3f}).")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
