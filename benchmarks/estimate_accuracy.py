#!/usr/bin/env python3
"""Estimated vs actual hash table size for every hash join of query files.

Runs each query under EXPLAIN (ANALYZE, FORMAT JSON) on a server with mccdb
and reads the MCC-DB group: per hash join, the planner's rows and mccdb's
estimated bytes beside the rows and bytes the executor really built.

    eval "$(scripts/pg-cluster.sh env demo)"
    PGDATABASE=ssb .venv/bin/python benchmarks/estimate_accuracy.py \\
        benchmarks/ssb/queries/q*.sql --force-hash benchmarks/plq/plq_*.sql

--force-hash files are run with nested loops and merge joins disabled (the
paper's hash-join PLQ plans).  Prints Markdown; --out writes it to a file.
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
    for t in top.get("Tables", []):
        if t["Kind"] == "Hash Join":
            yield top["Locality"], t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=pathlib.Path)
    ap.add_argument("--force-hash", nargs="*", type=pathlib.Path, default=[])
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()

    rows = []
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("set max_parallel_workers_per_gather = 0")
        conn.execute("set jit = off")
        version = conn.execute("show server_version").fetchone()[0]
        geo = conn.execute("select size_bytes, llc_bytes from mccdb_cache_geometry()").fetchone()
        for forced, files in ((False, args.files), (True, args.force_hash)):
            conn.execute(f"set enable_nestloop = {'off' if forced else 'on'}")
            conn.execute(f"set enable_mergejoin = {'off' if forced else 'on'}")
            for f in files:
                sql = f.read_text().strip().rstrip(";")
                for loc, t in tables(conn, sql):
                    rows.append((f.stem, loc, t))
                print(f"{f.stem} done", file=sys.stderr)

    out = [f"Machine: {machine.describe()}; "
           f"PostgreSQL {version}; LLC (sysfs) {geo[0] // 1048576} MB, C in use {geo[1] // 1048576} MB.",
           f"Database: `{os.environ.get('PGDATABASE', '')}`.",
           "",
           "| query | class | hash table on | est rows | actual rows | est bytes | actual bytes | error |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    errors = []
    for name, loc, t in rows:
        est, act = t["Estimated Bytes"], t.get("Actual Bytes")
        err = (est - act) / act * 100 if act else None
        if err is not None:
            errors.append(abs(err))
        arows = t.get("Actual Rows")
        out.append(f"| {name} | {loc} | {t.get('Relation', '?')} | {t['Estimated Rows']:.0f} | "
                   f"{'-' if arows is None else f'{arows:.0f}'} | {est:,} | "
                   f"{'-' if act is None else f'{act:,}'} | {'-' if err is None else f'{err:+.1f}%'} |")
    out.append("")
    if errors:
        out.append(f"{len(errors)} hash joins; worst |error| {max(errors):.1f}%, "
                   f"mean |error| {sum(errors) / len(errors):.1f}%.")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
