"""Table 2 and Figure 5: cache partitioning (page colouring) experiments.

They need real cache partitioning. This asks mccdb_partition(); when it
reports no partitioning back end (no page colours in this kernel, no resctrl),
the result file says so and the experiment is skipped. On this machine the
simulator runs them (benchmarks/llcsim/run.sh table2: llcsim-table2.md).

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.fig5_table2 --db plq
"""
import sys

from .harness import pg, report
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--name", default="fig5-table2-partitioning")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Table 2 and Figure 5: cache partitioning", srv, scale_of(a.db), a.outdir)
    # nothing is timed unless partitioning exists; the guard keeps the rule
    res.guard = start_guard(a, say, own_load=1)
    with res.guard.measuring("the partitioning status"):
        backend, status, colors, nr = pg.partition_status(a.db)
    res.table(["mccdb_partition(): backend", "status", "buffer_pool_colors", "nr_colors"],
              [[backend, status, colors, nr]])
    available = backend not in (None, "", "none", "unavailable") and "unavailable" not in (status or "")
    if available:
        msg = (f"partitioning back end `{backend}` is available, but this command does not run the "
               "partitioned experiments (the simulator does: llcsim-table2.md).")
    else:
        msg = "skipped: no page colouring in this kernel (and no resctrl): " + (status or "")
    res.add("\n**" + msg + "**\n")
    res.add("Guest-physical page colours do not select real cache sets on this VM either "
            "([../machine.md](../machine.md)), so even a patched kernel here could only check correctness; "
            "Table 2 and Figure 5 come from the simulator: [llcsim-table2](llcsim-table2.md), "
            "[llcsim-findings](llcsim-findings.md).\n")
    say(msg)
    return res, available


if __name__ == "__main__":
    sys.exit(run(main))
