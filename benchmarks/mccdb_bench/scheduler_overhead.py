"""Overheads of mccdb's plan selection and admission gate, without contention.

1. Planning: server-side "Planning Time" of EXPLAIN (SUMMARY) for each SSB
   query with mccdb.plan_policy = sls (three candidate plans), with sls but
   the query below mccdb.plan_choice_min_cost (the threshold path: one plan), and
   off (PostgreSQL's one plan), three sessions interleaved in one run.
2. Admission: client-side time of a small query that goes through the gate
   (mccdb.min_cost = 0) beside the same query bypassing it (min_cost huge),
   with mccdb.schedule = mls and nothing else running, interleaved.

Needs a running cluster with mccdb and the SSB database (libpq environment),
e.g. the demo cluster:

    scripts/pg-cluster.sh start demo --port 54323
    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.scheduler_overhead --db ssb --rounds 200

Writes docs/results/scheduler-overhead.md (--outdir, --name).
"""
import statistics
import sys
import time

from .harness import pg, report
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of
from .paths import SSB_QUERIES

SMALL = "select count(*) from supplier where s_region = 'ASIA'"


def planning_ms(conn, sql):
    plan = conn.execute("explain (summary, format json) " + sql).fetchone()[0]
    return plan[0]["Planning Time"]


def elapsed_us(conn, sql):
    t0 = time.perf_counter_ns()
    conn.execute(sql).fetchall()
    return (time.perf_counter_ns() - t0) / 1000.0


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--name", default="scheduler-overhead")
    args = ap.parse_args(argv)
    say = say_fn(args.quiet)

    db = args.db
    res = report.Result(args.name, "Overheads of plan selection and the admission gate",
                        pg.server_info(db), scale_of(db), args.outdir)
    guard = res.guard = start_guard(args, say, own_load=1)
    lines = []
    with pg.connect(db) as stock, pg.connect(db) as sls, pg.connect(db) as thr, pg.connect(db) as ctl:
        stock.execute("set mccdb.plan_policy = off")
        sls.execute("set mccdb.plan_policy = sls")
        sls.execute("set mccdb.plan_choice_min_cost = 0")
        thr.execute("set mccdb.plan_policy = sls")
        thr.execute("set mccdb.plan_choice_min_cost = 1e30")
        guard.before("planning")
        lines += ["## Planning time with candidate generation, and below mccdb.plan_choice_min_cost", "",
                  f"Median server-side planning time over {args.rounds} interleaved rounds: `off` "
                  "(PostgreSQL's plan), `sls` with every query given candidates (plan_choice_min_cost 0), "
                  "and `sls` with the query below plan_choice_min_cost (the threshold path).", "",
                  "| query | off ms | sls ms | sls / off | below threshold ms | below threshold / off |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        ratios, thr_ratios = [], []
        for f in sorted(SSB_QUERIES.glob("q*.sql")):
            sql = f.read_text().strip().rstrip(";")
            t = {"off": [], "sls": [], "thr": []}
            for _ in range(10):
                planning_ms(stock, sql), planning_ms(sls, sql), planning_ms(thr, sql)
            for _ in range(args.rounds):
                t["off"].append(planning_ms(stock, sql))
                t["sls"].append(planning_ms(sls, sql))
                t["thr"].append(planning_ms(thr, sql))
            m = {k: statistics.median(v) for k, v in t.items()}
            ratios.append(m["sls"] / m["off"])
            thr_ratios.append(m["thr"] / m["off"])
            lines.append(f"| {f.stem} | {m['off']:.3f} | {m['sls']:.3f} | {m['sls'] / m['off']:.2f} "
                         f"| {m['thr']:.3f} | {m['thr'] / m['off']:.2f} |")
            say(f"{f.stem}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in m.items()))
        guard.after()
        lines += ["", f"Candidates: median ratio {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f}). Below the threshold: median ratio "
                  f"{statistics.median(thr_ratios):.2f} (min {min(thr_ratios):.2f}, max {max(thr_ratios):.2f}).", ""]

        # admission: schedule is server-wide; min_cost decides per session
        ctl.execute("alter system set mccdb.schedule = 'mls'")
        ctl.execute("select pg_reload_conf()")
        time.sleep(0.5)
        guard.before("admission")
        try:
            with pg.connect(db, base=False) as gated, pg.connect(db, base=False) as bypass:
                assert gated.execute("show mccdb.schedule").fetchone()[0] == "mls"
                gated.execute("set mccdb.min_cost = 0")
                bypass.execute("set mccdb.min_cost = 1e30")
                before = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0]
                t = {"gated": [], "bypass": []}
                for _ in range(50):
                    elapsed_us(gated, SMALL), elapsed_us(bypass, SMALL)
                for _ in range(args.rounds * 5):
                    t["gated"].append(elapsed_us(gated, SMALL))
                    t["bypass"].append(elapsed_us(bypass, SMALL))
                admitted = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0] - before
        finally:
            guard.after()
            ctl.execute("alter system reset mccdb.schedule")
            ctl.execute("select pg_reload_conf()")
        assert admitted == args.rounds * 5 + 50, f"every gated query went through the gate ({admitted})"
        m = {k: statistics.median(v) for k, v in t.items()}
        lines += ["## Admission overhead without contention", "",
                  f"`{SMALL}`, median client-side time over {args.rounds * 5} interleaved rounds, "
                  f"mccdb.schedule = mls, nothing else running; {admitted} admissions counted.", "",
                  "| path | median us |", "| --- | ---: |",
                  f"| bypassing the gate (min_cost above the query's cost) | {m['bypass']:.1f} |",
                  f"| through the gate | {m['gated']:.1f} |",
                  f"| difference: admission per query | {m['gated'] - m['bypass']:.1f} |"]

    res.add("\n".join(lines))
    return res


if __name__ == "__main__":
    sys.exit(run(main))
