#!/usr/bin/env python3
"""mccdb-calibrate: everything the policies need from this host.

1. the effective LLC one query sees (pointer-chase knee, benchmarks/llc_knee.py);
2. with --apply: ALTER SYSTEM SET mccdb.llc_size to it and reload, so the
   classes are measured against it;
3. the interference matrix between locality classes (benchmarks/calibrate.py,
   PLQ probes, stored in mccdb_interference and loaded), unless --no-matrix;
4. prints the suggested settings.

    eval "$(scripts/pg-cluster.sh env demo)"
    PGDATABASE=ssb .venv/bin/python benchmarks/mccdb_calibrate.py --apply
"""
import argparse
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import llc_knee  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apply", action="store_true",
                    help="ALTER SYSTEM SET mccdb.llc_size and reload (superuser)")
    ap.add_argument("--no-matrix", action="store_true", help="skip the PLQ interference matrix")
    ap.add_argument("--runs", type=int, default=3, help="passed to calibrate.py")
    a = ap.parse_args(argv)

    print("== effective LLC (pointer chase) ==", flush=True)
    pts = llc_knee.measure()
    for b, ns in pts:
        print(f"{b / 1048576:8.2f} MiB {ns:8.1f} ns")
    k = llc_knee.knee(pts)
    eff = k["effective_bytes"]
    mb = max(1, round(eff / 1048576)) if eff else 1
    print(f"effective LLC {mb} MB (cache {k['lat_cache_ns']:.0f} ns, memory {k['lat_memory_ns']:.0f} ns)")
    if a.apply:
        import psycopg
        with psycopg.connect(autocommit=True) as c:
            c.execute(f"alter system set mccdb.llc_size = '{mb}MB'")
            c.execute("select pg_reload_conf()")
        print(f"applied: mccdb.llc_size = '{mb}MB' (postgresql.auto.conf, reloaded)")
    if not a.no_matrix:
        print("\n== interference matrix (PLQ probes) ==", flush=True)
        rc = subprocess.run([sys.executable, str(HERE / "calibrate.py"), "--runs", str(a.runs)]).returncode
        if rc:
            print(f"calibrate.py failed (exit {rc})")
            return rc
    print("\nsuggested settings:")
    print(f"  mccdb.llc_size = '{mb}MB'")
    if not a.no_matrix:
        print("  mccdb.schedule = 'adaptive'   # uses the matrix just stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
