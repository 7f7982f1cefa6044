"""Section 7.3: stock optimizer vs mccdb's plan selection, on the PLQ whose
hash-join and index-join plans are closest in cost and on PLQ_13 (the
paper's moderate PLQ, its index plan 17.2% above the hash plan there).

Each PLQ_n is run as four instances submitted together, each on its own
connection, in three configurations per repetition: stock (the same cluster
restarted without mccdb in shared_preload_libraries, the optimizer's plan),
off (mccdb loaded, plan_policy and schedule off: what loading it costs) and
mccdb (plan_policy = mls, schedule = mls, the batch held and released with
mccdb_hold_admission).  The order is new every repetition (stock, a
restart, first or last in turn); the quiet-machine guard checks the machine
before each configuration.  The table gives batch times and their ratio to
the stock batch of the same repetition.

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.sec73 --db plq --reps 5
"""
import argparse
import random
import sys

from .harness import pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of
from .harness.report import fmt_bytes

GATE = ["set mccdb.min_cost = 0"]
PAPER_PLQ = 13


def candidates(db, n):
    with pg.connect(db) as c:
        return {r[0]: r[1:] for r in c.execute(
            "select candidate, cost, locality, hash_table_bytes from mccdb_plan_candidates(%s)",
            (sqlfiles.plq(n),))}


def closest(db, say):
    best = None
    for n in range(1, 26):
        cand = candidates(db, n)
        if "hash join" not in cand or "index join" not in cand:
            continue
        ch, ci = cand["hash join"][0], cand["index join"][0]
        gap = abs(ch / ci - 1)
        say(f"PLQ_{n}: hash {ch:,.0f} ({cand['hash join'][1]}), index {ci:,.0f}, "
            f"standard picks {'hash' if cand['standard'][0] == ch else 'index' if cand['standard'][0] == ci else '?'}")
        if best is None or gap < best[1]:
            best = (n, gap)
    return best[0]


def describe(n, cand):
    std = cand["standard"]
    ch, ci = cand["hash join"][0], cand["index join"][0]
    return (f"PLQ_{n}: hash join {ch:,.0f} ({cand['hash join'][1]}, {fmt_bytes(cand['hash join'][2])}), "
            f"index join {ci:,.0f} ({cand['index join'][1]}, {ci / ch - 1:+.0%} over the hash plan); "
            f"the stock optimizer picks the {'hash' if std[0] == ch else 'index'} join.")


def run_plq(a, n, guard, say):
    """Batch times of the three configurations for PLQ_n, a.reps repetitions."""
    sql = sqlfiles.plq(n)
    slack = [f"set mccdb.cost_slack = {a.cost_slack}"] if a.cost_slack is not None else []
    queries = {"stock": pg.Query(f"PLQ_{n} stock", sql, GATE),
               "off": pg.Query(f"PLQ_{n} off", sql, GATE + ["set mccdb.plan_policy = off"]),
               "mccdb": pg.Query(f"PLQ_{n} mccdb", sql, GATE + ["set mccdb.plan_policy = mls"] + slack)}
    schedule = {"stock": "stock", "off": "off", "mccdb": "mls"}
    times = {k: [] for k in queries}
    plans = []

    def warm(q):
        with pg.session(q, a.db) as c:
            pg.timed(c, sql)

    warm(queries["off"])
    for r in range(a.reps):
        order = ["off", "mccdb"]
        random.Random(100 * n + r).shuffle(order)
        if a.stock:
            order = ["stock"] + order if r % 2 == 0 else order + ["stock"]
        for k in order:
            if k == "stock":
                pg.set_preload(False, a.db)
                warm(queries[k])        # the restart emptied shared_buffers
            else:
                pg.set_schedule(schedule[k], a.db)
            guard.before(f"PLQ_{n} {k} (repetition {r + 1})")
            if k == "mccdb":
                with pg.connect(a.db) as c:
                    seq0 = c.execute("select coalesce(max(seq), 0) from mccdb_recent_queries").fetchone()[0]
            t, per = pg.run_batch([queries[k]] * a.instances, schedule[k], a.db)
            guard.after()
            times[k].append(t)
            if k == "mccdb":
                with pg.connect(a.db) as c:
                    got = c.execute("select est_bytes from mccdb_recent_queries where seq > %s "
                                    "and pid = any(%s) order by seq",
                                    (seq0, [x["pid"] for x in per])).fetchall()
                plans.append(", ".join("hash" if (b or 0) > 0 else "index" for (b,) in got))
            if k == "stock":
                pg.set_preload(True, a.db)
                warm(queries["off"])
        base = times["stock" if a.stock else "off"][-1]
        say(f"PLQ_{n} rep {r + 1}: " + ", ".join(f"{k} {times[k][-1]:.2f} s ({times[k][-1] / base:.2f}x)"
                                                  for k in queries if times[k]) + f"; mccdb plans: {plans[-1]}")
    return times, plans


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--plq", default=None,
                    help=f"comma-separated PLQ numbers (default: the closest costs and {PAPER_PLQ})")
    ap.add_argument("--cost-slack", type=float, default=None,
                    help="mccdb.cost_slack for the mccdb sessions (default: the server's, 0.30)")
    ap.add_argument("--stock", action=argparse.BooleanOptionalAction, default=True,
                    help="run the stock configuration (a restart without mccdb preloaded)")
    ap.add_argument("--name", default="sec7.3-plan-selection")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Section 7.3: stock plan vs mccdb plan selection (MLS)",
                        srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=a.instances)
    ns = [int(x) for x in a.plq.split(",")] if a.plq else sorted({closest(a.db, say), PAPER_PLQ})
    base_name = "stock" if a.stock else "off"
    rows, plot = [], {}
    try:
        for n in ns:
            cand = candidates(a.db, n)
            res.add(describe(n, cand) + "\n")
            times, plans = run_plq(a, n, guard, say)
            base = times[base_name]
            for k, ts in times.items():
                if not ts:
                    continue
                ratio = stats.summarize([t / b for t, b in zip(ts, base)])
                rows.append([f"PLQ_{n}", k, stats.summarize(ts).fmt(2), ratio.fmt(),
                             "; ".join(sorted(set(plans))) if k == "mccdb" else
                             ("the optimizer's" if k != "stock" else "the optimizer's (no mccdb)")])
                plot[(n, k)] = stats.summarize(ts)
    finally:
        pg.set_schedule("off", a.db)
        pg.reset_schedule(a.db)
    res.add(f"{a.instances} instances per batch, one connection each, `mccdb.corun_slots` default; "
            f"mccdb.cost_slack: {a.cost_slack if a.cost_slack is not None else 'server default (0.30)'}. "
            f"Median (min-max) over {a.reps} repetitions; ratios are per repetition over the "
            f"{base_name} batch of the same repetition.\n")
    res.table(["query", "configuration", "batch s", f"batch / {base_name}", "plans"], rows)
    draw(res, plot, ns, a.instances)
    return res, rows


def draw(res, plot, ns, instances):
    """plot: {(n, configuration): Summary of batch seconds}; adds the PNG to res."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.8))
    keys = [k for k in ("stock", "off", "mccdb") if any((n, k) in plot for n in ns)]
    width = 0.8 / len(keys)
    for j, k in enumerate(keys):
        xs = [i + j * width for i in range(len(ns))]
        s = [plot[(n, k)] for n in ns]
        ax.bar(xs, [x.median for x in s], width,
               yerr=[[x.median - x.lo for x in s], [x.hi - x.median for x in s]], capsize=3, label=k)
    ax.set_xticks([i + width * (len(keys) - 1) / 2 for i in range(len(ns))], [f"PLQ_{n}" for n in ns])
    ax.set_ylabel(f"batch time of {instances} instances (s)")
    ax.set_xlabel("query")
    ax.set_title("Section 7.3: batch time (median, min-max)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return res.figure(fig)


def replot(md_path):
    """Redraw the PNG from an existing page's batch table (no measurement)."""
    import re
    res, text = report.Result.of_page(md_path)
    instances = int(re.search(r"^(\d+) instances per batch", text, re.M).group(1))
    reps = int(re.search(r"over (\d+) repetitions", text).group(1))
    headers, rows = next(t for t in report.page_tables(text) if t[0][:3] == ["query", "configuration", "batch s"])
    plot = {(int(q.removeprefix("PLQ_")), k): stats.parse(batch, reps) for q, k, batch, *_ in rows}
    ns = sorted({n for n, _ in plot})
    return draw(res, plot, ns, instances)


if __name__ == "__main__":
    sys.exit(run(main, replot=replot))
