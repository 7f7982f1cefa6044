"""mccdb-calibrate: everything the policies need from this host.

1. the effective LLC one query sees (pointer-chase knee, mccdb_bench.llc_knee);
2. with --apply: ALTER SYSTEM SET mccdb.llc_size to it and reload, so the
   classes are measured against it;
3. the interference matrix between locality classes (mccdb_bench.calibrate,
   PLQ probes, stored in mccdb_interference and loaded), unless --no-matrix;
4. prints the suggested settings.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.calibrate_host --db ssb --apply
"""
import sys

from . import calibrate, llc_knee
from .harness import pg
from .harness.cli import parser, say_fn, start_guard


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--apply", action="store_true",
                    help="ALTER SYSTEM SET mccdb.llc_size and reload (superuser)")
    ap.add_argument("--no-matrix", action="store_true", help="skip the PLQ interference matrix")
    ap.add_argument("--runs", type=int, default=3, help="rounds per pair of the matrix")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    guard = start_guard(a, say, own_load=2)

    print("== effective LLC (pointer chase) ==", flush=True)
    with guard.measuring("the pointer chase"):
        pts = llc_knee.measure()
    for b, ns in pts:
        print(f"{b / 1048576:8.2f} MiB {ns:8.1f} ns")
    k = llc_knee.knee(pts)
    eff = k["effective_bytes"]
    mb = max(1, round(eff / 1048576)) if eff else 1
    print(f"effective LLC {mb} MB (cache {k['lat_cache_ns']:.0f} ns, memory {k['lat_memory_ns']:.0f} ns)")
    if a.apply:
        with pg.connect(a.db) as c:
            c.execute(f"alter system set mccdb.llc_size = '{mb}MB'")
            c.execute("select pg_reload_conf()")
        print(f"applied: mccdb.llc_size = '{mb}MB' (postgresql.auto.conf, reloaded)")
    if not a.no_matrix:
        print("\n== interference matrix (PLQ probes) ==", flush=True)
        rows = calibrate.measure(a.db, calibrate.find_probes(a.db), a.runs, guard, say)
        loaded = calibrate.store(a.db, rows)
        print(f"stored {len(rows)} slowdowns in mccdb_interference, {loaded} loaded into the scheduler")
    print("\nsuggested settings:")
    print(f"  mccdb.llc_size = '{mb}MB'")
    if not a.no_matrix:
        print("  mccdb.schedule = 'adaptive'   # uses the matrix just stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
