#!/usr/bin/env python3
"""Print the MCC-DB locality class of query files, as mccdb estimates them.

    show_locality.py [--force hash|index] FILE.sql ...

Connects with the libpq environment (PGHOST, PGPORT, PGDATABASE, ...).
For each file: the joins of the plan PostgreSQL picks, the hash tables that
decide S, the class, and S against the LLC.  --force hash plans with nested
loops and merge joins disabled (the paper's hash-join plan); --force index
with hash and merge joins, bitmap scans, memoize and materialize disabled
(its index-join plan).
"""
import argparse
import pathlib
import sys

import psycopg

FORCE = {
    "hash": ["enable_nestloop = off", "enable_mergejoin = off"],
    "index": ["enable_hashjoin = off", "enable_mergejoin = off",
              "enable_bitmapscan = off", "enable_memoize = off",
              "enable_material = off"],
}


def mb(n):
    if n < 1048576:
        return f"{n / 1024:.0f} kB"
    return f"{n / 1048576:.1f} MB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", choices=sorted(FORCE))
    ap.add_argument("files", nargs="+", type=pathlib.Path)
    args = ap.parse_args()

    with psycopg.connect(autocommit=True) as conn:
        for setting in FORCE.get(args.force, []):
            conn.execute(f"set {setting}")
        llc = conn.execute("select llc_bytes from mccdb_cache_geometry()").fetchone()[0]
        label = f" ({args.force}-join plans)" if args.force else ""
        print(f"\nLocality{label}, LLC C = {mb(llc)}:")
        print(f"  {'query':<10} {'locality':<9} {'S':>10}  {'basis':<24} hash tables (counted*)")
        for f in args.files:
            sql = f.read_text().strip().rstrip(";")
            loc, s, basis = conn.execute(
                "select locality, hash_table_bytes, basis from mccdb_locality(%s)",
                (sql,)).fetchone()
            tables = conn.execute(
                "select relation, counted, est_bytes from mccdb_plan_tables(%s) "
                "where kind = 'hash join' order by plan_node_id", (sql,)).fetchall()
            desc = ", ".join(f"{r or '?'}{'*' if c else ''} {mb(b)}" for r, c, b in tables)
            print(f"  {f.stem:<10} {loc:<9} {mb(s):>10}  {basis:<24} {desc or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
