"""mccdb-calibrate: everything the policies need from this host.

1. the effective LLC one query sees (pointer-chase knee, mccdb_bench.llc_knee);
2. with --apply: ALTER SYSTEM SET mccdb.llc_size to it and reload, so the
   classes are measured against it;
3. the interference matrix between locality classes (mccdb_bench.calibrate,
   PLQ probes, stored in mccdb_interference and loaded), unless --no-matrix;
4. the suggested settings.

Writes docs/results/calibration.md (--outdir, --name).

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.calibrate_host --db ssb --apply
"""
import sys

from . import calibrate, llc_knee
from .harness import pg, report
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--apply", action="store_true",
                    help="ALTER SYSTEM SET mccdb.llc_size and reload (superuser)")
    ap.add_argument("--no-matrix", action="store_true", help="skip the PLQ interference matrix")
    ap.add_argument("--runs", type=int, default=3, help="rounds per pair of the matrix")
    ap.add_argument("--name", default="calibration")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    res = report.Result(a.name, "Calibration: effective LLC (pointer-chase knee) and the interference matrix",
                        pg.server_info(a.db), scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=2)

    say("== effective LLC (pointer chase) ==")
    with guard.measuring("the pointer chase"):
        pts = llc_knee.measure()
    k = llc_knee.knee(pts)
    eff = k["effective_bytes"]
    mb = max(1, round(eff / 1048576)) if eff else 1
    res.add("## Pointer chase (ns per dependent load, best of 3)\n")
    res.table(["working set MiB", "ns"], [[f"{b / 1048576:.2f}", f"{ns:.1f}"] for b, ns in pts])
    res.add(f"\nKnee: the largest working set below cache + 10% of the way to memory latency "
            f"({k['lat_cache_ns']:.0f} + 0.1 x ({k['lat_memory_ns']:.0f} - {k['lat_cache_ns']:.0f}) = "
            f"{k['threshold_ns']:.0f} ns): **effective LLC {mb} MB**.\n")
    say(f"effective LLC {mb} MB (cache {k['lat_cache_ns']:.0f} ns, memory {k['lat_memory_ns']:.0f} ns)")
    if a.apply:
        with pg.connect(a.db) as c:
            c.execute(f"alter system set mccdb.llc_size = '{mb}MB'")
            c.execute("select pg_reload_conf()")
        res.add(f"Applied: `mccdb.llc_size = '{mb}MB'` (postgresql.auto.conf, reloaded) before the matrix.\n")
    if not a.no_matrix:
        say("\n== interference matrix (PLQ probes) ==")
        probes = calibrate.find_probes(a.db)
        rows = calibrate.measure(a.db, probes, a.runs, guard, say)
        loaded = calibrate.store(a.db, rows)
        res.add(f"## Interference matrix (PLQ probes, {a.runs} rounds per pair)\n\n"
                "Probes: " + ", ".join(f"{cls} {q.name}" for cls, q in probes.items()) +
                ". Slowdown = co-run time / alone time of the same round, median (min-max); "
                f"stored in `mccdb_interference` and loaded into the scheduler ({loaded} cells).\n")
        res.table(["target", "co-runner", "slowdown"], [[tc, cc, s.fmt(2, "x")] for tc, cc, s in rows])
    res.add("\nSuggested settings: `mccdb.llc_size = '" + f"{mb}MB'`" +
            ("" if a.no_matrix else ", `mccdb.schedule = 'adaptive'` (uses the matrix just stored)") + ".")
    return res


if __name__ == "__main__":
    sys.exit(run(main))
