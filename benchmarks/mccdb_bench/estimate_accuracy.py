"""Estimated vs actual hash table size for every hash join of query files.

Runs each query under EXPLAIN (ANALYZE, FORMAT JSON) on a server with mccdb
and reads the MCC-DB group: per hash join, the planner's rows and mccdb's
estimated bytes beside the rows and bytes the executor really built.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.estimate_accuracy --db ssb   # the SSB queries, PLQ hash joins

--force-hash files are run with nested loops and merge joins disabled (the
paper's hash-join PLQ plans).  Each query runs --runs times (default 2):
the first run (after mccdb_learned_reset(), which the script calls) sizes its
hash tables from the planner's rows, later runs from the sizes the query
measured before (mccdb.learn_table_sizes); the table gives the error of the
first and of the last run.  Without files: the 13 SSB queries, and the 25
PLQ queries with --force-hash.  Writes docs/results/locality-estimation.md
(--outdir, --name).
"""
import pathlib
import sys

from .harness import pg, report
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of
from .paths import PLQ_DIR, SSB_QUERIES

INTRO = """For every hash join, mccdb's estimate of the in-memory hash table (section 4
of the paper; layout in [../design.md](../design.md)) beside what the executor
really built (bucket array + used dense chunks, read at ExecutorEnd), from
`EXPLAIN (ANALYZE, FORMAT JSON)`. Plans are PostgreSQL's own choice for the
query files, and the hash-join plan (nested loops and merge joins off) for
the --force-hash files (PLQ).
"""


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


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("files", nargs="*", type=pathlib.Path)
    ap.add_argument("--force-hash", nargs="*", type=pathlib.Path, default=None)
    ap.add_argument("--runs", type=int, default=2, help="runs of each query (the last is reported)")
    ap.add_argument("--name", default="locality-estimation")
    args = ap.parse_args(argv)
    say = say_fn(args.quiet)
    if not args.files and args.force_hash is None:
        args.files = sorted(SSB_QUERIES.glob("q*.sql"))
        args.force_hash = sorted(PLQ_DIR.glob("plq_*.sql"))
    args.force_hash = args.force_hash or []

    res = report.Result(args.name, "Locality estimation: estimated vs actual hash table size",
                        pg.server_info(args.db), scale_of(args.db), args.outdir)
    guard = res.guard = start_guard(args, say, own_load=1)
    rows = []
    with pg.connect(args.db) as conn, guard.measuring("the EXPLAIN ANALYZE runs"):
        conn.execute("select mccdb_learned_reset()")
        conn.execute("set mccdb.explain = on")
        for forced, files in ((False, args.files), (True, args.force_hash)):
            conn.execute(f"set enable_nestloop = {'off' if forced else 'on'}")
            conn.execute(f"set enable_mergejoin = {'off' if forced else 'on'}")
            for f in files:
                sql = f.read_text().strip().rstrip(";")
                runs = [tables(conn, sql) for _ in range(max(1, args.runs))]
                for (loc1, first), (loc, t) in zip(runs[0], runs[-1]):
                    rows.append((f.stem, loc1 if loc1 == loc else f"{loc1} → {loc}", first, t))
                say(f"{f.stem} done")

    out = [INTRO,
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
    res.add("\n".join(out))
    return res


if __name__ == "__main__":
    sys.exit(run(main))
