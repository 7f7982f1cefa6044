"""Online learning: how fast the predictive policy's matrix orders the classes.

From an empty learned matrix (mccdb_learned_reset()), clients run a stream of
hash-join (strong) and index-join (weak) PLQ instances through the gate under
mccdb.schedule = predictive.  After every --step finished gated queries the
learned cells strong|strong, strong|weak, weak|strong and weak|weak are read
(mccdb_learned_interference()) and ranked.  The reference is a calibration
of the same two queries measured first, --ref-rounds rounds per cell (each
round: the target alone, then beside a looping co-runner; median and
min-max of the ratios).  Reported: the cells, their sample counts and the
fraction of cell pairs ordered as the reference orders them, over all six
pairs and over the pairs the reference separates (their min-max ranges do
not overlap), per step.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.learning --db ssb --queries 200
"""
import os
import random
import sys
import threading
import time

from .harness import pg, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import plq_query, scale_of

CELLS = [("strong", "strong"), ("strong", "weak"), ("weak", "strong"), ("weak", "weak")]


def ranking(values):
    """Cell names ordered from the least to the most slowdown."""
    return [c for c, _ in sorted(values.items(), key=lambda kv: kv[1])]


def pairwise_agreement(a, b, pairs=None):
    """Fraction of cell pairs (all, or those given) ordered the same way in two
    {cell: value} maps; None when there are no pairs."""
    keys = list(a)
    pairs = pairs if pairs is not None else [(x, y) for i, x in enumerate(keys) for y in keys[i + 1:]]
    same = sum((a[x] < a[y]) == (b[x] < b[y]) for x, y in pairs)
    return same / len(pairs) if pairs else None


def separated_pairs(ref):
    """Cell pairs whose reference ranges (min-max over the rounds) do not overlap."""
    keys = list(ref)
    return [(x, y) for i, x in enumerate(keys) for y in keys[i + 1:]
            if ref[x].hi < ref[y].lo or ref[y].hi < ref[x].lo]


def measure_reference(queries, rounds, db, say):
    """{cell: Summary of co-run/alone ratios} for the experiment's own queries."""
    by_class = {"strong": queries[0], "weak": queries[1]}
    out = {}
    for t, r in CELLS:
        alone, co = pg.alone_vs_corun(by_class[t], [by_class[r]], rounds, db)
        out[(t, r)] = stats.summarize(stats.ratios(co, alone))
        say(f"  reference {t}|{r}: {out[(t, r)].fmt()}")
    return out


def fmt_pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--step", type=int, default=20)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--hash", type=int, default=5, help="PLQ_n run with the hash-join plan (strong)")
    ap.add_argument("--index", type=int, default=12, help="PLQ_n run with the index-join plan (weak)")
    ap.add_argument("--think", type=float, default=1.0,
                    help="mean seconds a client waits between queries (exponential): the stream "
                         "needs quiet moments, since only runs alone anchor the alone times")
    ap.add_argument("--ref-rounds", type=int, default=5, help="rounds per reference cell")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    res = report.Result("learning-curve", "Online learning of the interference matrix (predictive policy)",
                        pg.server_info(a.db), scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=max(a.clients, os.cpu_count() or 1))
    queries = [plq_query(a.hash, "hash"), plq_query(a.index, "index")]
    pg.set_schedule("off", a.db)
    guard.before("the reference")
    ref_range = measure_reference(queries, a.ref_rounds, a.db, say)
    guard.after()
    ref = {cell: ref_range[cell].median for cell in CELLS}
    separated = separated_pairs(ref_range)
    for q in queries:
        q.settings.append("set mccdb.min_cost = 0")

    pg.set_schedule("predictive", a.db)
    done, lock, errors = [0], threading.Lock(), []
    curve = []
    try:
        with pg.connect(a.db) as c:
            c.execute("select mccdb_learned_reset()")
        guard.before("the stream")

        def client(i):
            rnd = random.Random(i)
            conns = {q.name: pg.session(q, a.db) for q in queries}
            try:
                while True:
                    with lock:
                        if done[0] >= a.queries:
                            return
                    time.sleep(rnd.expovariate(1.0 / a.think) if a.think > 0 else 0)
                    q = rnd.choice(queries)
                    conns[q.name].execute(q.sql).fetchall()
                    with lock:
                        done[0] += 1
            except Exception as e:  # reported below
                errors.append(e)
            finally:
                for conn in conns.values():
                    conn.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        for t in threads:
            t.start()
        next_step = a.step
        with pg.connect(a.db) as c:
            while any(t.is_alive() for t in threads):
                time.sleep(0.2)
                with lock:
                    n = done[0]
                if n >= next_step or not any(t.is_alive() for t in threads):
                    rows = c.execute("select target, corunner, slowdown, samples "
                                     "from mccdb_learned_interference()").fetchall()
                    got = {(t, r): (s, k) for t, r, s, k in rows}
                    learned = {cell: got[cell][0] for cell in CELLS}
                    curve.append((n, learned, {cell: got[cell][1] for cell in CELLS},
                                  pairwise_agreement(learned, ref),
                                  pairwise_agreement(learned, ref, separated)))
                    say(f"  {n:4d} queries: " + ", ".join(f"{t[0]}|{r[0]} {learned[(t, r)]:.2f}"
                                                          for t, r in CELLS)
                        + f", order agrees {fmt_pct(curve[-1][3])} (separated pairs {fmt_pct(curve[-1][4])})")
                    next_step += a.step
        for t in threads:
            t.join()
        guard.after()
        if errors:
            raise errors[0]
    finally:
        pg.set_schedule("off", a.db)
        pg.reset_schedule(a.db)

    res.add(f"{a.clients} clients run PLQ_{a.hash} with the hash-join plan (strong) and PLQ_{a.index} with "
            f"the index-join plan (weak), chosen at random, through the gate (`mccdb.schedule = predictive`, "
            f"`mccdb.min_cost = 0`, default slots) from an empty learned matrix, {a.queries} queries in all, "
            f"each client waiting {a.think} s on average (exponential) between queries. "
            "Cells are target|co-runner slowdowns as `mccdb_learned_interference()` shows them after the "
            "number of finished queries in the first column (samples in brackets). The reference: the same "
            f"two queries measured first with the gate off, {a.ref_rounds} rounds per cell (the target alone, "
            "then beside its co-runner looping on another connection), median (min-max) of the ratios. "
            "Agreement: the fraction of the 6 pairs of cells the learned matrix orders as the reference "
            f"does, and of the {len(separated)} pair(s) the reference separates (min-max ranges apart: "
            + (", ".join(f"{x[0][0]}|{x[1][0]} vs {y[0][0]}|{y[1][0]}" for x, y in separated) or "none")
            + ").\n")
    res.table(["queries"] + [f"{t}|{r}" for t, r in CELLS] + ["order agrees (6 pairs)",
                                                             f"separated pairs ({len(separated)})"],
              [[str(n)] + [f"{learned[c]:.2f} ({samples[c]})" for c in CELLS] + [fmt_pct(agree), fmt_pct(sep)]
               for n, learned, samples, agree, sep in curve]
              + [["reference"] + [ref_range[c].fmt() for c in CELLS] + ["ranking: " + " < ".join(
                  f"{t[0]}|{r[0]}" for t, r in ranking(ref)), ""]])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [n for n, *_ in curve]
    for cell in CELLS:
        line, = ax.plot(xs, [learned[cell] for _, learned, *_ in curve], marker="o", ms=3,
                        label=f"{cell[0]}|{cell[1]} learned")
        ax.axhline(ref[cell], color=line.get_color(), ls="--", lw=0.8)
        ax.axhspan(ref_range[cell].lo, ref_range[cell].hi, color=line.get_color(), alpha=0.08)
    ax.set_xlabel("finished gated queries")
    ax.set_ylabel("slowdown (co-run / alone)")
    ax.set_title("learned cells (solid), the reference median (dashed) and min-max (band)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    res.figure(fig)
    return res, curve


if __name__ == "__main__":
    sys.exit(run(main))
