"""What loading mccdb costs an OLTP workload: pgbench against stock.

A DBA deciding whether to preload mccdb on a server that also serves short
transactions wants to know what the hooks cost when nothing needs them.
Two project-local clusters with the same pgbench data (the second is a file
copy of the first): one without mccdb (stock), one with mccdb preloaded.
pgbench's two built-in scripts, each run for --seconds with --clients
clients, configurations interleaved (their order rotates each repetition):

  stock       no mccdb in shared_preload_libraries
  loaded      mccdb preloaded, every setting at its default
  predictive  mccdb preloaded, mccdb.schedule = predictive (the statements,
              all cheaper than mccdb.schedule_min_cost, pass the gate)

Writes docs/results/oltp-overhead.md (--outdir, --name): tps per
repetition, the median, and each configuration's ratio to stock with its
spread.

    .venv/bin/python -m mccdb_bench.oltp_overhead --scale 10 --clients 4 --seconds 20 --reps 3
"""
import os
import re
import statistics
import subprocess
import sys

import psycopg

from .harness import report
from .harness.cli import parser, run, say_fn, start_guard
from .paths import CLUSTER_SCRIPT as CLUSTER
from .paths import VAR
from .planning_overhead import cluster_env

CONFIGS = ("stock", "loaded", "predictive")
MODES = (("TPC-B-like", []), ("select only", ["-S"]))

INTRO = """What preloading mccdb costs short transactions when nothing needs it:
pgbench's TPC-B-like script (updates, an insert, a select per transaction)
and its select-only script, on a cluster without mccdb and on one with mccdb
preloaded at its defaults (and with the gate on: `predictive`, through which
every statement passes below `mccdb.schedule_min_cost`). The two clusters
hold the same data (one is a file copy of the other); configurations are
interleaved and their order rotates each repetition. `synchronous_commit =
off` on both, so that the transaction rate is bound by the CPUs, where the
hooks' cost shows, rather than by the disk's flushes.
"""


def start(name, port, preload):
    args = [str(CLUSTER), "start", name, "--port", str(port),
            "--set", "shared_buffers = 512MB", "--set", "max_connections = 50",
            "--set", "synchronous_commit = off"]
    if not preload:
        args.append("--no-preload")
    subprocess.run(args, check=True)
    env = cluster_env(name)
    return env, f"host={env['PGHOST']} port={env['PGPORT']} user=postgres"


def pgbench(env, args, clients, seconds):
    """One pgbench run; its tps (excluding connection time)."""
    cmd = ["pgbench", "-n", "-M", "prepared", "-c", str(clients),
           "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(seconds)] + args + ["pgbench"]
    out = subprocess.run(cmd, env={**os.environ, **env}, check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"^tps = ([0-9.]+)", out, re.M)
    if m is None:
        raise RuntimeError(f"no tps in pgbench's output:\n{out}")
    return float(m.group(1))


def set_schedule(conninfo, value):
    with psycopg.connect(conninfo + " dbname=postgres", autocommit=True) as c:
        c.execute(f"alter system set mccdb.schedule = '{value}'")
        c.execute("select pg_reload_conf()")


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--name", default="oltp-overhead")
    args = ap.parse_args(argv)
    say = say_fn(args.quiet)

    env_m, mccdb = start("oltp-mccdb", 54394, preload=True)
    with psycopg.connect(mccdb + " dbname=postgres", autocommit=True) as c:
        if not c.execute("select 1 from pg_database where datname = 'pgbench'").fetchone():
            c.execute("create database pgbench")
    subprocess.run(["pgbench", "-i", "-q", "-s", str(args.scale), "pgbench"],
                   env={**os.environ, **env_m}, check=True, capture_output=True)
    with psycopg.connect(mccdb + " dbname=pgbench", autocommit=True) as c:
        c.execute("vacuum analyze")
    subprocess.run([str(CLUSTER), "stop", "oltp-mccdb"], check=True)
    subprocess.run([str(CLUSTER), "destroy", "oltp-stock"], check=True)
    clusters = VAR / "clusters"
    subprocess.run(["cp", "-a", str(clusters / "oltp-mccdb"), str(clusters / "oltp-stock")], check=True)
    env_s, stock = start("oltp-stock", 54393, preload=False)
    env_m, mccdb = start("oltp-mccdb", 54394, preload=True)

    res = report.Result(args.name, "OLTP overhead: pgbench with and without mccdb",
                        scale=f"pgbench scale {args.scale}", outdir=args.outdir)
    # its own load: a backend per client and pgbench's threads
    guard = res.guard = start_guard(args, say, own_load=args.clients + min(args.clients, os.cpu_count() or 1))
    tps = {(mode, cfg): [] for mode, _ in MODES for cfg in CONFIGS}
    try:
        with psycopg.connect(stock + " dbname=pgbench", autocommit=True) as c:
            res.server = {k: c.execute(f"show {k}").fetchone()[0]
                          for k in ("server_version", "shared_buffers", "max_connections")}
            res.server["version"] = res.server.pop("server_version")
        with psycopg.connect(mccdb + " dbname=pgbench", autocommit=True) as c:
            defaults = {k: c.execute(f"show mccdb.{k}").fetchone()[0]
                        for k in ("schedule", "explain", "track", "partition", "placement")}
        for rep in range(args.reps):
            order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
            for mode, flags in MODES:
                for cfg in order:
                    env = env_s if cfg == "stock" else env_m
                    if cfg != "stock":
                        set_schedule(mccdb, "predictive" if cfg == "predictive" else "off")
                    with guard.measuring(f"{mode}, {cfg}, repetition {rep + 1}"):
                        t = pgbench(env, flags, args.clients, args.seconds)
                    tps[(mode, cfg)].append(t)
                    say(f"rep {rep + 1} {mode} {cfg}: {t:.0f} tps")
    finally:
        set_schedule(mccdb, "off")
        subprocess.run([str(CLUSTER), "stop", "oltp-stock"])
        subprocess.run([str(CLUSTER), "stop", "oltp-mccdb"])

    res.add(INTRO)
    res.add("mccdb's settings in `loaded`: " + ", ".join(f"`mccdb.{k} = {v}`" for k, v in defaults.items())
            + f". pgbench -M prepared, {args.clients} clients, {args.seconds} s a run, "
            f"{args.reps} repetitions.\n")
    rows = []
    for mode, _ in MODES:
        base = tps[(mode, "stock")]
        for cfg in CONFIGS:
            v = tps[(mode, cfg)]
            ratios = [a / b for a, b in zip(v, base)]
            rows.append([mode, cfg, ", ".join(f"{x:.0f}" for x in v), f"{statistics.median(v):.0f}",
                         f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"])
    res.table(["script", "configuration", "tps per repetition", "median tps",
               "/ stock, same repetition: median (min-max)"], rows)
    return res


if __name__ == "__main__":
    sys.exit(run(main))
