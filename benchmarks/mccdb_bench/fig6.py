"""Figure 6: co-scheduling a batch of hash-join and index-join instances.

For each PLQ_n, a batch of four instances -- two with the hash-join plan, two
with the B-tree index-join plan, each on its own connection -- is submitted
together (queued with mccdb_hold_admission(true), then released; under 'off'
there is no gate and the four start at a barrier) under mccdb.schedule = off,
sls, mls, adaptive and predictive. Reported per PLQ and policy: slowdown of the hash-join
instances (execution time admitted..released from mccdb_recent_queries, over
the hash plan's alone time; and response time from the release, over the same),
and the batch time (release to the last finish) over the 'off' batch time of
the same repetition and over the zero-interference limit (the four alone
times shared by the slots, or the longest, whichever is more).

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.fig6 --db plq --reps 3
    .venv/bin/python -m mccdb_bench.fig6 --db ssb --quick     # a few minutes
"""
import argparse
import random
import sys

from . import calibrate as calibrate_matrix
from .harness import pg, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import locality, plq_query, scale_of
from .harness.report import fmt_bytes

POLICIES = ["off", "sls", "mls", "adaptive", "predictive"]
GATE = ["set mccdb.min_cost = 0"]  # small scales: every instance goes through the gate


def ensure_matrix(db, calibrate, say, guard):
    """True when the adaptive policy has a matrix loaded (measured first, with
    the experiment's guard, when asked to calibrate)."""
    with pg.connect(db) as c:
        if c.execute("select interference_loaded from mccdb_scheduler()").fetchone()[0]:
            return True
        if c.execute("select count(*) from mccdb_interference").fetchone()[0] > 0:
            c.execute("select mccdb_load_interference()")
            return True
    if calibrate:
        say("no interference matrix: measuring it (mccdb_bench.calibrate, 1 round per pair)")
        probes = calibrate_matrix.find_probes(db)
        calibrate_matrix.store(db, calibrate_matrix.measure(db, probes, 1, guard, say))
        return True
    return False


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--plq", default="1,5,12,25")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, no separate plot name")
    ap.add_argument("--calibrate", action="store_true",
                    help="measure the interference matrix first when mccdb_interference is empty")
    ap.add_argument("--name", default=None)
    ap.add_argument("--stock", action=argparse.BooleanOptionalAction, default=None,
                    help="also run each batch on a stock server (the same cluster restarted "
                         "without mccdb preloaded); default: on, off with --quick")
    a = ap.parse_args(argv)
    if a.quick:
        a.reps = 1
        a.calibrate = True
    if a.stock is None:
        a.stock = not a.quick
    name = a.name or ("fig6-co-scheduling-quick" if a.quick else "fig6-co-scheduling")
    say = say_fn(a.quiet)
    ns = [int(x) for x in a.plq.split(",")]
    srv = pg.server_info(a.db)
    res = report.Result(name, "Figure 6: co-scheduling hash-join and index-join instances",
                        srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say)
    have_matrix = ensure_matrix(a.db, a.calibrate, say, guard)
    policies = POLICIES if have_matrix else [p for p in POLICIES if p != "adaptive"]
    with pg.connect(a.db) as c:
        slots = c.execute("select slots from mccdb_scheduler()").fetchone()[0]
    rows, plot = [], {}
    configs = (["stock"] if a.stock else []) + policies
    try:
        for n in ns:
            h, i = plq_query(n, "hash"), plq_query(n, "index")
            h.settings += GATE
            i.settings += GATE
            hc, hb = locality(a.db, h)
            ic, _ = locality(a.db, i)
            pg.set_schedule("off", a.db)
            alone, alone_cpu = {}, {}
            for q in (h, i):
                with pg.session(q, a.db) as c:
                    pg.timed(c, q.sql)  # warm
                    ms = [pg.timed_cpu(c, q.sql) for _ in range(max(1, a.reps))]
                    alone[q.name] = stats.summarize([w for w, _ in ms]).median
                    alone_cpu[q.name] = stats.summarize([u for _, u in ms]).median if all(
                        u is not None for _, u in ms) else None
            say(f"PLQ_{n}: hash {hc} ({fmt_bytes(hb)}) alone {alone[h.name]:.2f} s, "
                f"index {ic} alone {alone[i.name]:.2f} s")
            # no schedule can finish the batch sooner than this without interference
            limit = max(2 * (alone[h.name] + alone[i.name]) / slots, alone[h.name], alone[i.name])
            per = {p: {"hexec": [], "hresp": [], "hcpu": [], "iexec": [], "batch": [], "rel": [], "lim": []}
                   for p in configs}
            for r in range(a.reps):
                # a new order each repetition; the stock server (a restart) first or last
                order = policies[:]
                random.Random(1000 * n + r).shuffle(order)
                if a.stock:
                    order = ["stock"] + order if r % 2 == 0 else order + ["stock"]
                batches = {}
                for p in order:
                    if p == "stock":
                        pg.set_preload(False, a.db)
                        for q in (h, i):  # the restart emptied shared_buffers
                            with pg.session(q, a.db) as c:
                                pg.timed(c, q.sql)
                    else:
                        pg.set_schedule(p, a.db)
                    guard.before(f"PLQ_{n} {p} (repetition {r + 1})")
                    batches[p] = pg.run_batch([h, h, i, i], p, a.db)
                    guard.after()
                    if p == "stock":
                        pg.set_preload(True, a.db)
                        for q in (h, i):
                            with pg.session(q, a.db) as c:
                                pg.timed(c, q.sql)
                base = batches["stock" if a.stock else "off"][0]
                for p in configs:
                    total, qs = batches[p]
                    d = per[p]
                    for x in qs[:2]:
                        d["hexec"].append(x["exec"] / alone[h.name])
                        if x["cpu"] is not None and alone_cpu[h.name]:
                            d["hcpu"].append(x["cpu"] / alone_cpu[h.name])
                        d["hresp"].append(x["response"] / alone[h.name])
                    for x in qs[2:]:
                        d["iexec"].append(x["exec"] / alone[i.name])
                    d["batch"].append(total)
                    d["rel"].append(total / base)
                    d["lim"].append(total / limit)
                    say(f"  rep {r + 1} {p:>10}: batch {total:.2f} s ({total / base:.2f}x "
                        f"{'stock' if a.stock else 'off'}), hash exec "
                        + ", ".join(f"{x['exec']:.2f}" for x in qs[:2]) + " s, index exec "
                        + ", ".join(f"{x['exec']:.2f}" for x in qs[2:]) + " s")
            for p in configs:
                d = per[p]
                s_h, s_r, s_b = (stats.summarize(d[k]) for k in ("hexec", "hresp", "rel"))
                rows.append([f"PLQ_{n}", f"{hc} {fmt_bytes(hb)}", p, s_h.fmt(), stats.summarize(d["hcpu"]).fmt(),
                             s_r.fmt(),
                             stats.summarize(d["iexec"]).fmt(), stats.summarize(d["batch"]).fmt(2), s_b.fmt(),
                             stats.summarize(d["lim"]).fmt()])
                plot[(n, p)] = (s_h, s_b)
    finally:
        pg.set_schedule("off", a.db)
        pg.reset_schedule(a.db)
    res.add("Each batch: 2 hash-join + 2 index-join instances of PLQ_n (`force_hash.sql`, "
            "`force_index.sql`), one connection each, submitted together; `mccdb.corun_slots` "
            "default (CPUs sharing the LLC = 2). Slowdowns are over the plan's alone time measured "
            "in the same run; the batch ratio is over the " +
            ("stock batch (the same cluster restarted without mccdb in shared_preload_libraries; "
             "`off` is mccdb loaded with its policies off) " if a.stock else "`off` batch ") +
            "of the same repetition; configurations in a new random order each repetition. CPU: the "
            "backend's CPU time (/proc/PID/schedstat), which waiting for a CPU or a slot does not "
            "inflate. "
            f"Median over {a.reps} repetition(s) (min-max). " +
            ("" if have_matrix else "**adaptive skipped: no interference matrix "
             "(run `python -m mccdb_bench.calibrate` or pass --calibrate).** ") + "\n")
    res.table(["query", "hash plan class", "schedule", "hash instances: exec / alone",
               "hash instances: CPU / alone CPU", "hash instances: response / alone", "index instances: exec / alone",
               "batch s", "batch / stock" if a.stock else "batch / off", "batch / zero-interference limit"], rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    w = 0.8 / len(configs)
    base_name = "stock" if a.stock else "off"
    for k, p in enumerate(configs):
        xs = [j + k * w for j in range(len(ns))]
        for ax, idx in ((ax1, 0), (ax2, 1)):
            sm = [plot[(n, p)][idx] for n in ns]
            # error bars: min-max over the repetitions
            ax.bar(xs, [x.median for x in sm], w, label=p,
                   yerr=[[x.median - x.lo for x in sm], [x.hi - x.median for x in sm]], capsize=2)
    for ax, t, yl in ((ax1, "hash-join instances", "execution time / alone"),
                      (ax2, "batch of 2 hash + 2 index joins", f"batch time / {base_name}")):
        ax.set_xticks([j + w * (len(configs) - 1) / 2 for j in range(len(ns))])
        ax.set_xticklabels([f"PLQ_{n}" for n in ns])
        ax.set_xlabel("query")
        ax.set_ylabel(yl)
        ax.axhline(1.0, color="black", lw=0.5)
        ax.set_title(t, fontsize=10)
    ax2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    res.figure(fig)
    return res, rows


if __name__ == "__main__":
    sys.exit(run(main))
