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

Writes docs/results/planning-overhead.md (--outdir, --name): medians and ratios.

    .venv/bin/python -m mccdb_bench.planning_overhead --scale 1 --rounds 300
"""
import statistics
import subprocess
import sys
import time

import psycopg

from . import ssb_generate
from .harness import report
from .harness.cli import parser, run, say_fn, start_guard
from .paths import CLUSTER_SCRIPT as CLUSTER
from .paths import SSB_QUERIES, VAR

INTRO = """What mccdb adds before a query runs: the plan walk and hash table estimate
(section 4), done when EXPLAIN shows it (and, for the recent-queries view,
once at ExecutorEnd). Measured as the client-side time of `EXPLAIN <query>`
(parse, plan, executor start/end in explain-only mode, output), because that
path includes the estimation and its output while running nothing. Three
configurations interleaved in one run; the stock cluster is a file copy of
the mccdb cluster, so both have the same statistics and plans.
"""


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
    """SSB at the scale into the cluster, unless it is there already."""
    gen = ["--dsn", conninfo, "--scale", str(scale)]
    if ssb_generate.main(gen + ["--check"]) != 0:
        if ssb_generate.main(gen + ["--progress", "lines"]) != 0:
            raise SystemExit("loading SSB failed")


def time_explain(conn, sql):
    t0 = time.perf_counter_ns()
    conn.execute("explain " + sql).fetchall()
    return (time.perf_counter_ns() - t0) / 1000.0


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--scale", default="1")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--name", default="planning-overhead")
    args = ap.parse_args(argv)
    say = say_fn(args.quiet)

    # The stock cluster is a copy of the loaded one, so both have the same
    # statistics and plan every query the same way.
    mccdb = start("overhead-mccdb", 54392, preload=True)
    load(mccdb, args.scale)
    subprocess.run([str(CLUSTER), "stop", "overhead-mccdb"], check=True)
    subprocess.run([str(CLUSTER), "destroy", "overhead-stock"], check=True)
    clusters = VAR / "clusters"
    subprocess.run(["cp", "-a", str(clusters / "overhead-mccdb"), str(clusters / "overhead-stock")],
                   check=True)
    stock = start("overhead-stock", 54391, preload=False)
    mccdb = start("overhead-mccdb", 54392, preload=True)
    res = report.Result(args.name, "Planning overhead of the locality estimation",
                        scale=f"SSB SF {args.scale}", outdir=args.outdir)
    guard = res.guard = start_guard(args, say, own_load=1)
    try:
        with psycopg.connect(stock, autocommit=True) as cs, \
                psycopg.connect(mccdb, autocommit=True) as cl, \
                psycopg.connect(mccdb, autocommit=True) as ce:
            cl.execute("create extension if not exists mccdb")
            cl.execute("set mccdb.explain = off")
            ce.execute("set mccdb.explain = on")
            res.server = {k: cs.execute(f"show {k}").fetchone()[0]
                          for k in ("server_version", "shared_buffers", "work_mem")}
            res.server["version"] = res.server.pop("server_version")
            rows = []
            guard.before("the EXPLAIN rounds")
            for f in sorted(SSB_QUERIES.glob("q*.sql")):
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
                say(f"{f.stem}: stock {m['stock']:.0f} us, loaded {m['loaded']:.0f} us, "
                    f"estimated {m['estimated']:.0f} us")
        guard.after()
    finally:
        subprocess.run([str(CLUSTER), "stop", "overhead-stock"])
        subprocess.run([str(CLUSTER), "stop", "overhead-mccdb"])

    res.add(INTRO)
    res.add(f"Median client-side time of `EXPLAIN <query>` over {args.rounds} interleaved rounds.\n")
    res.table(["query", "stock us", "mccdb loaded, explain off us", "mccdb estimating us",
               "loaded / stock", "estimating / stock"],
              [[name, f"{m['stock']:.0f}", f"{m['loaded']:.0f}", f"{m['estimated']:.0f}",
                f"{m['loaded'] / m['stock']:.3f}", f"{m['estimated'] / m['stock']:.3f}"]
               for name, m in rows])
    ratios = [m["estimated"] / m["stock"] for _, m in rows]
    res.add(f"\nMedian of the per-query ratios estimating / stock: {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}).")
    return res


if __name__ == "__main__":
    sys.exit(run(main))
