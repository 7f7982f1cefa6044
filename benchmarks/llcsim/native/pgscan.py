"""PostgreSQL's executor against a memory latency, natively, for llcsim's
cpi_dyn (run.sh cpi-dyn --measure).

A base CPI is a property of the code: the loops that fit CPI, ROB and MSHR
(gaploop.py's dependent adds) run one instruction a cycle natively, while
PostgreSQL's executor, on rows in the cache, runs about three (valgrind
counts the same ~1,800 instructions a probe row natively that the guest
counts; docs/results/llcsim-calibration.md).  This pins PostgreSQL's own:
a cached sequential scan and aggregate (`select sum(k)` over the native
study's probe table, not the validation's hash join), CPU ns a row of the
backend pinned to CPU 0, against a random pointer chase over 256 MiB on
transparent huge pages (`llcsim time`, the unit of every loop), each round
behind the quiet-machine guard.  The simulated side (`--sim-list`: the
guest's list for pg/pgscan) runs the same query over the table scaled as
pg-validate scales it, with the chase.

Needs the server of the native study (the libpq environment, --db) with its
probe table (created here when missing, as native_study does).

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python benchmarks/llcsim/native/pgscan.py --out benchmarks/llcsim/calibration/native-pgscan.json
"""
import os
import pathlib
import sys

from loopcli import run

HERE = pathlib.Path(__file__).resolve().parent
BINARY = HERE.parent / "build" / "guest" / "llcsim"
NATIVE_ROWS = 2516580           # the native study's probe table (4x its largest build)
SIM_SCALE = 4                   # pg-validate's: the native LLC share and tables over 4
SIM_REPS = 3
CHASE_TAG, SCAN_TAG = 700, 710  # the simulated chase; the scan's repetitions from SCAN_TAG
SIM_CHASE_KIB = 65536


def sim_list():
    """The guest's list: pg/pgscan over the probe table scaled as pg-validate's."""
    return f"pgscan:{NATIVE_ROWS // SIM_SCALE}:{SIM_REPS}:{SIM_CHASE_KIB}:{CHASE_TAG}:{SCAN_TAG}"


def scan_sql(rows):
    from mccdb_bench.native_study import probe_table
    return f"select sum(k) from {probe_table(rows)}"


def main(argv=None):
    a, started = run(__doc__, BINARY, sim_list, argv, [
        ("--db", {"default": "ssb"}), ("--rows", {"type": int, "default": NATIVE_ROWS}),
        ("--kib", {"type": int, "default": 262144}), ("--rounds", {"type": int, "default": 10})])
    if a is None:
        return 0
    from mccdb_bench.harness import pg
    from mccdb_bench.llcsim_native import time_one
    from mccdb_bench.native_study import ensure_tables
    from memload import summary, write_json
    say, guard, load0, t0 = started
    ensure_tables(a.db, [], a.rows, None, say)
    q = scan_sql(a.rows)
    scan, chase = [], []
    with pg.connect(a.db) as conn:
        os.sched_setaffinity(conn.info.backend_pid, {0})
        pg.timed(conn, q)                       # into shared buffers
        for r in range(a.rounds):
            with guard.measuring(f"round {r + 1}"):
                _, cpu = pg.timed_cpu(conn, q)
                if cpu is None:
                    raise SystemExit("pgscan.py: the backend's CPU time is not readable (server on another host?)")
                scan.append(1e9 * cpu / a.rows)
                chase.append(time_one(a.binary, f"chase/{a.kib}/1"))
            say(f"  round {r + 1}: scan {scan[-1]:.2f} ns a row, chase {chase[-1]:.2f} ns a load")
    out = {
        "what": "a cached sequential scan and aggregate in PostgreSQL (CPU ns a row of the backend, pinned to "
                "CPU 0) and a random pointer chase (llcsim time, ns a load) natively, in alternation; "
                "ratio = scan / chase per round: PostgreSQL's executor against a memory latency",
        "query": q, "rows": a.rows, "rounds": a.rounds, "chase_spec": f"chase/{a.kib}/1",
        "sim": {"rows": a.rows // SIM_SCALE, "reps": SIM_REPS, "chase_kib": SIM_CHASE_KIB,
                "chase_tag": CHASE_TAG, "scan_tag": SCAN_TAG},
        "scan_ns_per_row": summary(scan), "chase_ns": summary(chase),
        "ratio": summary([s / c for s, c in zip(scan, chase)]),
        "runs": {"scan": scan, "chase": chase},
    }
    write_json(a.out, out, t0, load0, guard, "pgscan.py", argv, say)
    return 0


if __name__ == "__main__":
    sys.exit(main())
