"""Admission by memory (issue 50): big hash joins in a memory cgroup, with and without mccdb.memory_budget.

The project cluster of the libpq environment is restarted into each
configuration (--configs) and the table read once (its buffers shared by
every configuration alike).  Then --queries sessions connect, their
backends are moved into a memory cgroup limited to --headroom
(harness.cgroup: v1 here, v2 elsewhere; the postmaster stays outside, as a
DBA protects it from the OOM killer), and each runs one hash join of the
table with itself, all at once, with work_mem raised (--work-mem) so that
every hash table is built in memory, and together they need more than the
headroom:

  stock          mccdb not in shared_preload_libraries
  stock-unlimited  the same in a cgroup without a limit: the time stock
                 needs when it survives
  mccdb-slots    mccdb preloaded, mccdb.schedule = shortest,
                 mccdb.corun_slots = --queries: the gate admits every one
                 at once (slots hold none back), no memory budget
  mccdb-budget   the same with mccdb.memory_budget = --budget

Per run: the queries that completed and those that failed (a backend the
OOM killer took, the sessions a crash of another backend dropped), the OOM
kills in the cgroup, the cgroup's peak use, temporary files written
(pg_stat_database; not known after a crash, which resets it), and the wall
time from the first query's start to the last one's end.  Configurations
interleaved in a seeded random order in each of --reps repetitions.

--db (default memory_budget) is made, with mccdb and the table in it, when
it is not there.  Needs root or passwordless sudo (the cgroup) and a
project cluster on this host.  Smoke run (--no-guard: not a result):

    eval "$(scripts/pg-cluster.sh env NAME)"
    .venv/bin/python -m mccdb_bench.memory_budget --no-guard --outdir /tmp/x --rows 200000 \\
        --work-mem 64MB --headroom 64MB --budget 32MB --reps 1
"""
import os
import random
import statistics
import sys
import threading
import time

import psycopg

from .harness import pg, report, stats
from .harness.cgroup import MemoryCgroup
from .harness.cli import parser, run, say_fn, start_guard

TABLE = "mem_budget_fact"
QUERY = f"select sum(length(b.pad)) from {TABLE} a join {TABLE} b on a.id = b.id"
CONFIGS = ("stock", "stock-unlimited", "mccdb-slots", "mccdb-budget")
CGROUP = "mccdb-memory-budget"
UNITS = {"kB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}


def parse_size(text):
    for unit, mult in UNITS.items():
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return int(text[:-len(unit)]) * mult
    raise SystemExit(f"a size like 512MB or 2GB, not {text!r}")


def ensure_table(db, rows, say):
    """The database (made if it is not there, with mccdb in it) and its table."""
    if pg.ensure_database(db):
        say(f"created database {db}")
    with pg.connect(db, base=False) as c:
        c.execute("create extension if not exists mccdb")
        c.execute("alter extension mccdb update")
        have = c.execute("select count(*) from pg_class where relname = %s", (TABLE,)).fetchone()[0]
        if have and c.execute(f"select count(*) from {TABLE}").fetchone()[0] == rows:
            return
        say(f"loading {TABLE}: {rows} rows")
        c.execute(f"drop table if exists {TABLE}")
        c.execute(f"create table {TABLE} (id int, pad text)")
        c.execute(f"insert into {TABLE} select g, md5(g::text) from generate_series(1, %s) g", (rows,))
        c.execute(f"vacuum analyze {TABLE}")


def apply_config(name, n, budget, db):
    """Restart the cluster into the configuration."""
    if name.startswith("stock"):
        pg.set_preload(False, db)
        return
    pg.set_preload(True, db)
    pg.restart_with({"mccdb.schedule": "shortest", "mccdb.corun_slots": str(n),
                     "mccdb.memory_budget": f"{budget // 1024}kB" if name == "mccdb-budget" else None},
                    db)


def restore_server(db):
    pg.set_preload(True, db)
    pg.restart_with({"mccdb.schedule": None, "mccdb.corun_slots": None, "mccdb.memory_budget": None}, db)


def temp_files(db):
    with pg.connect(db, base=False) as c:
        return c.execute("select temp_files from pg_stat_database where datname = current_database()"
                         ).fetchone()[0]


def plan_memory(db, work_mem):
    """The hash join's memory: mccdb's estimate (EXPLAIN) and PostgreSQL's
    own peak (EXPLAIN ANALYZE's Memory Usage of the Hash node), in bytes."""
    with pg.connect(db, settings=[f"set work_mem = '{work_mem}'", "set mccdb.explain = on"]) as c:
        est = c.execute("explain (format json) " + QUERY).fetchone()[0][0]["MCC-DB"]["Working Memory Bytes"]
        c.execute("set mccdb.explain = off")
        plan = c.execute("explain (analyze, format json) " + QUERY).fetchone()[0][0]["Plan"]

    def peak_kb(node):
        own = node.get("Peak Memory Usage") if node.get("Node Type") == "Hash" else None
        return max([own or 0] + [peak_kb(p) for p in node.get("Plans", [])])
    return est, peak_kb(plan) * 1024


def one_run(db, n, work_mem, cgroup):
    """n sessions, their backends in cgroup, each run QUERY at once; per
    query (ok, sqlstate, message, start, end): sqlstate None for a
    connection lost without one."""
    results = [None] * n
    conns = [pg.connect(db, settings=[f"set work_mem = '{work_mem}'"]) for _ in range(n)]
    for c in conns:
        cgroup.add(c.info.backend_pid)
    start = threading.Barrier(n)

    def work(i):
        start.wait()
        t0 = time.perf_counter()
        try:
            conns[i].execute(QUERY).fetchall()
            results[i] = (True, None, None, t0, time.perf_counter())
        except psycopg.Error as e:
            lines = str(e).splitlines()
            results[i] = (False, e.sqlstate, f"{e.sqlstate or 'no SQLSTATE'}: {lines[0] if lines else ''}",
                          t0, time.perf_counter())
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        try:
            c.close()
        except psycopg.Error:
            pass
    return results


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows of the table each query joins with itself")
    ap.add_argument("--queries", type=int, default=6, help="sessions running the join at once")
    ap.add_argument("--work-mem", default="1GB")
    ap.add_argument("--headroom", default="1GB", help="the cgroup's limit over its use after the warm-up")
    ap.add_argument("--budget", default="640MB", help="mccdb.memory_budget of mccdb-budget")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="memory-budget")
    a = ap.parse_args(argv)
    cfgs = [c for c in a.configs.split(",") if c]
    unknown = set(cfgs) - set(CONFIGS)
    if unknown:
        raise SystemExit(f"--configs: unknown {sorted(unknown)}; known: {', '.join(CONFIGS)}")
    headroom, budget = parse_size(a.headroom), parse_size(a.budget)
    db = a.db or "memory_budget"
    say = say_fn(a.quiet)
    if not os.environ.get("PGHOST", "").startswith("/"):
        raise SystemExit('this restarts a project cluster: eval "$(scripts/pg-cluster.sh env NAME)" first')

    pg.set_preload(True, "postgres")
    ensure_table(db, a.rows, say)
    est, actual = plan_memory(db, a.work_mem)
    srv = pg.server_info(db)
    res = report.Result(a.name, "Admission by memory: big hash joins in a memory cgroup", srv,
                        f"{a.rows} rows joined with themselves, {a.queries} at once", a.outdir)
    guard = res.guard = start_guard(a, say, own_load=a.queries)
    cg = MemoryCgroup(CGROUP, headroom)
    runs = []
    rng = random.Random(a.seed)
    try:
        for rep in range(a.reps):
            order = list(cfgs)
            rng.shuffle(order)
            for name in order:
                say(f"rep {rep + 1}/{a.reps}: {name}")
                apply_config(name, a.queries, budget, db)
                with pg.connect(db) as c:
                    c.execute(f"select count(*) from {TABLE}")   # into shared buffers, outside the cgroup
                cg.limit = -1 if name == "stock-unlimited" else headroom
                cg.create()
                cg.reset_peak()
                kills0, temp0 = cg.oom_kills(), temp_files(db)
                with guard.measuring(f"{name} rep {rep + 1}"):
                    load_before = report.loadavg()
                    got = one_run(db, a.queries, a.work_mem, cg)
                pg.wait_until_up(db, timeout=120.0)
                ok = [r for r in got if r[0]]
                failed = [r for r in got if not r[0]]
                kills = cg.oom_kills() - kills0
                # a backend killed: the others get 57P02 (crash of another process) or lose the connection
                crashed = kills > 0 or any(r[1] in (None, "57P02") for r in failed)
                run_row = {"rep": rep + 1, "config": name, "completed": len(ok), "failed": len(failed),
                           "oom_kills": kills, "crashed": crashed, "peak": cg.peak(), "limit": cg.limit,
                           "temp_files": None if crashed else temp_files(db) - temp0,
                           "wall": max(r[4] for r in got) - min(r[3] for r in got),
                           "errors": sorted({r[2] for r in failed}), "load_before": load_before}
                if name == "mccdb-budget" and not crashed:
                    with pg.connect(db) as c:
                        run_row["alone"] = c.execute("select admitted_alone from mccdb_scheduler()").fetchone()[0]
                runs.append(run_row)
                say(f"  {len(ok)} completed, {len(failed)} failed, {kills} OOM kills, "
                    f"wall {run_row['wall']:.1f} s, peak {report.fmt_bytes(cg.peak() or 0)}")
    finally:
        cg.remove()
        restore_server(db)
    write_page(res, a, cfgs, runs, est, actual, headroom, budget)
    return res


def write_page(res, a, cfgs, runs, est, actual, headroom, budget):
    res.add(f"{a.queries} sessions each run `{QUERY}` at once, with `work_mem = {a.work_mem}` (and "
            f"`hash_mem_multiplier` at its default), parallel workers off. After each restart the table is read "
            f"once (into shared buffers, outside the cgroup); the sessions' backends are then moved into a memory "
            f"cgroup limited to {a.headroom}, the postmaster staying outside (as a DBA keeps it from the OOM "
            f"killer). No swap in it: over the limit the kernel's OOM killer takes one of the backends, and the "
            f"postmaster then ends every session and recovers. `mccdb-budget` sets `mccdb.memory_budget = {a.budget}`; both "
            f"mccdb configurations run `mccdb.schedule = shortest` with `mccdb.corun_slots = {a.queries}`, so "
            f"that slots hold no query back. {a.reps} repetitions, configurations in a seeded random order "
            f"(seed {a.seed}).\n")
    res.add(f"One query's hash table: mccdb's estimate (EXPLAIN, Working Memory Bytes) "
            f"{report.fmt_bytes(est)}; PostgreSQL's own peak (EXPLAIN ANALYZE, the Hash node's Peak Memory "
            f"Usage) {report.fmt_bytes(actual)}. {a.queries} of them: {report.fmt_bytes(a.queries * actual)} "
            f"against a headroom of {report.fmt_bytes(headroom)}.\n")
    rows = []
    for c in cfgs:
        rs = [r for r in runs if r["config"] == c]
        if not rs:
            continue
        survived = [r["wall"] for r in rs if not r["crashed"]]
        rows.append([c, len(rs), f"{sum(r['completed'] for r in rs)} of {a.queries * len(rs)}",
                     sum(r["oom_kills"] for r in rs), sum(1 for r in rs if r["crashed"]),
                     stats.summarize(survived).fmt(1) if survived else "-",
                     stats.summarize([r["wall"] for r in rs]).fmt(1),
                     report.fmt_bytes(statistics.median(r["peak"] for r in rs if r["peak"] is not None)),
                     ", ".join(str(r["temp_files"]) if r["temp_files"] is not None else "?" for r in rs)])
    res.table(["configuration", "runs", "queries completed", "OOM kills", "runs with a crash",
               "wall s, runs without a crash: median (min-max)", "wall s, all runs",
               "cgroup peak (median)", "temp files per run"], rows)
    res.add("Every run:\n")
    res.table(["rep", "configuration", "completed", "failed", "OOM kills", "wall s",
               "limit", "peak", "temp files", "admitted alone (counter)", "errors", "load before"],
              [[r["rep"], r["config"], r["completed"], r["failed"], r["oom_kills"], f"{r['wall']:.1f}",
                report.fmt_bytes(r["limit"]) if r["limit"] >= 0 else "none",
                report.fmt_bytes(r["peak"] or 0), r["temp_files"] if r["temp_files"] is not None else "?",
                r.get("alone", "-"), "; ".join(r["errors"])[:160] or "-", r["load_before"]] for r in runs])


if __name__ == "__main__":
    sys.exit(run(main))
