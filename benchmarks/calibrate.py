#!/usr/bin/env python3
"""mccdb-calibrate: measure the interference between locality classes here.

The paper's Table 1 (who slows down whom) was measured on a 2009 Core 2; on
other CPUs it differs (see shared/ENVIRONMENT.md).  This runs one PLQ probe
per locality class alone and beside a co-runner of each class, and stores
slowdown = co-run time / alone time (medians) in mccdb_interference, then
loads it into the scheduler (mccdb.schedule = adaptive uses it).

Probes, classified by mccdb with the server's current C (mccdb.llc_size):
the hash-join PLQ_n of each class with the fewest categories, and for weak
also the index-join PLQ_25 (the paper's WL_IJ).  A class with no probe at
this data scale keeps no row, and is reported.

    eval "$(scripts/pg-cluster.sh env demo)"
    PGDATABASE=ssb .venv/bin/python benchmarks/calibrate.py --runs 3
"""
import argparse
import pathlib
import statistics
import sys
import threading
import time

import psycopg

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLQ = ROOT / "benchmarks" / "plq"
FORCE = {
    "hash": ["set enable_nestloop = off", "set enable_mergejoin = off"],
    "index": ["set enable_hashjoin = off", "set enable_mergejoin = off",
              "set enable_bitmapscan = off", "set enable_memoize = off",
              "set enable_material = off"],
}
CLASSES = ["strong", "moderate", "weak"]


class Probe:
    def __init__(self, name, plan, sql, locality):
        self.name, self.plan, self.sql, self.locality = name, plan, sql, locality

    def session(self):
        conn = psycopg.connect(autocommit=True)
        conn.execute("set max_parallel_workers_per_gather = 0")
        conn.execute("set mccdb.min_cost = 1e30")  # never wait in the scheduler
        for s in FORCE[self.plan]:
            conn.execute(s)
        return conn

    def __str__(self):
        return f"{self.name} ({self.plan} join, {self.locality})"


def find_probes():
    probes = {}
    with psycopg.connect(autocommit=True) as conn:
        for n in range(1, 26):
            sql = (PLQ / f"plq_{n:02d}.sql").read_text().strip().rstrip(";")
            for plan in ("hash", "index"):
                for s in FORCE[plan]:
                    conn.execute(s)
                loc = conn.execute("select locality from mccdb_locality(%s)", (sql,)).fetchone()[0]
                conn.execute("reset all")
                if plan == "hash" and loc not in probes:
                    probes[loc] = Probe(f"PLQ_{n}", plan, sql, loc)
                if plan == "index" and n == 25:
                    probes.setdefault("weak", Probe(f"PLQ_{n}", plan, sql, loc))
    return probes


def timed(conn, sql):
    t0 = time.perf_counter()
    conn.execute(sql).fetchall()
    return time.perf_counter() - t0


def alone(probe, runs):
    with probe.session() as c:
        timed(c, probe.sql)  # warm
        return statistics.median(timed(c, probe.sql) for _ in range(runs))


def corun(target, corunner, runs):
    stop = threading.Event()

    def loop():
        with corunner.session() as c:
            while not stop.is_set():
                c.execute(corunner.sql).fetchall()

    t = threading.Thread(target=loop)
    t.start()
    try:
        with target.session() as c:
            time.sleep(0.2)  # let the co-runner get going
            return statistics.median(timed(c, target.sql) for _ in range(runs))
    finally:
        stop.set()
        t.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per measurement (median)")
    args = ap.parse_args()

    probes = find_probes()
    for cls in CLASSES:
        print(f"probe {cls:<8}: {probes.get(cls, 'none at this scale and C')}")
    base = {cls: alone(p, args.runs) for cls, p in probes.items()}
    rows = []
    for tc, target in probes.items():
        for cc, corunner in probes.items():
            s = corun(target, corunner, args.runs) / base[tc]
            rows.append((tc, cc, s))
            print(f"{tc:>8} beside {cc:<8}: {s:.2f}x  ({target} alone {base[tc] * 1000:.0f} ms)")

    with psycopg.connect(autocommit=True) as conn:
        with conn.transaction():
            conn.execute("delete from mccdb_interference")
            for r in rows:
                conn.execute("insert into mccdb_interference (target, corunner, slowdown) "
                             "values (%s, %s, %s)", r)
        loaded = conn.execute("select mccdb_load_interference()").fetchone()[0]
        llc = conn.execute("select llc_bytes from mccdb_cache_geometry()").fetchone()[0]
    print(f"\nstored {len(rows)} slowdowns in mccdb_interference, {loaded} loaded into the scheduler")
    missing = [c for c in CLASSES if c not in probes]
    if missing:
        print(f"no probe for: {', '.join(missing)} (C = {llc // 1048576} MB; "
              "a larger SSB scale or a smaller mccdb.llc_size gives bigger classes)")
    print("suggested: mccdb.schedule = 'adaptive'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
