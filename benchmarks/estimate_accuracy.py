#!/usr/bin/env python3
"""Estimated vs actual hash table size for every hash join of query files.

Runs each query under EXPLAIN (ANALYZE, FORMAT JSON) on a server with mccdb
and reads the MCC-DB group: per hash join, the planner's rows and mccdb's
estimated bytes beside the rows and bytes the executor really built.

    eval "$(scripts/pg-cluster.sh env demo)"
    PGDATABASE=ssb .venv/bin/python benchmarks/estimate_accuracy.py \\
        benchmarks/ssb/queries/q*.sql --force-hash benchmarks/plq/plq_*.sql

--force-hash files are run with nested loops and merge joins disabled (the
paper's hash-join PLQ plans).  Each query runs --runs times (default 2):
the first run (after mccdb_learned_reset(), which the script calls) sizes its
hash tables from the planner's rows, later runs from the sizes the query
measured before (mccdb.learn_table_sizes); the table gives the error of the
first and of the last run.  Prints Markdown; --out writes it to a file.
"""
import argparse
import os
import pathlib
import sys

import psycopg

from harness import machine


def tables(conn, sql):
    plan = conn.execute("explain (analyze, timing off, format json) " + sql).fetchone()[0]
    top = plan[0]["MCC-DB"]
    return [(top["Locality"], t) for t in top.get("Tables", []) if t["Kind"] == "Hash Join"]


def error(t):
    """Signed error of the size mccdb used, in percent of what was built."""
    est, act = t["Estimated Bytes"], t.get("Actual Bytes")
    return (est - act) / act * 100 if act else None


def fmt_err(e):
    return "-" if e is None else f"{e:+.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=pathlib.Path)
    ap.add_argument("--force-hash", nargs="*", type=pathlib.Path, default=[])
    ap.add_argument("--runs", type=int, default=2, help="runs of each query (the last is reported)")
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()

    rows = []
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("set max_parallel_workers_per_gather = 0")
        conn.execute("set jit = off")
        conn.execute("select mccdb_learned_reset()")
        version = conn.execute("show server_version").fetchone()[0]
        geo = conn.execute("select size_bytes, llc_bytes from mccdb_cache_geometry()").fetchone()
        for forced, files in ((False, args.files), (True, args.force_hash)):
            conn.execute(f"set enable_nestloop = {'off' if forced else 'on'}")
            conn.execute(f"set enable_mergejoin = {'off' if forced else 'on'}")
            for f in files:
                sql = f.read_text().strip().rstrip(";")
                runs = [tables(conn, sql) for _ in range(max(1, args.runs))]
                for (loc1, first), (loc, t) in zip(runs[0], runs[-1]):
                    rows.append((f.stem, loc1 if loc1 == loc else f"{loc1} → {loc}", first, t))
                print(f"{f.stem} done", file=sys.stderr)

    out = [f"Machine: {machine.describe()}; "
           f"PostgreSQL {version}; LLC (sysfs) {geo[0] // 1048576} MB, C in use {geo[1] // 1048576} MB.",
           f"Database: `{os.environ.get('PGDATABASE', '')}`.",
           "",
           f"Runs per query: {args.runs}; run 1 is the first after `mccdb_learned_reset()`.",
           "",
           "| query | class (run 1 → last) | hash table on | planner rows | actual rows | run 1 bytes | run 1 error "
           f"| run {args.runs} source | run {args.runs} bytes | actual bytes | run {args.runs} error |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    errs = {"first": [], "last": []}
    for name, loc, first, t in rows:
        act = t.get("Actual Bytes")
        for which, x in (("first", first), ("last", t)):
            if error(x) is not None:
                errs[which].append(abs(error(x)))
        arows = t.get("Actual Rows")
        out.append(f"| {name} | {loc} | {t.get('Relation', '?')} | {t['Estimated Rows']:.0f} | "
                   f"{'-' if arows is None else f'{arows:.0f}'} | {first['Estimated Bytes']:,} | "
                   f"{fmt_err(error(first))} | {t.get('Size Source', '?')} | {t['Estimated Bytes']:,} | "
                   f"{'-' if act is None else f'{act:,}'} | {fmt_err(error(t))} |")
    out.append("")
    for which, label in (("first", "run 1"), ("last", f"run {args.runs}")):
        e = errs[which]
        if e:
            within = sum(1 for x in e if x <= 5.0)
            out.append(f"{label}: {len(e)} hash joins; worst |error| {max(e):.1f}%, "
                       f"mean |error| {sum(e) / len(e):.1f}%, within 5%: {within} of {len(e)}.")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
