"""Figure 4: slowdown of the hash-join PLQ_n against its hash table size.

Each PLQ_n (hash join forced, hash table on part) runs alone and beside one
co-runner looping on its own connection: the hash-join, B-tree index-join or
bitmap-index-join plan of PLQ_{corunner}. Per round the target runs alone then
co-running, so each slowdown is a ratio taken within one round; the table
gives the median over rounds and (min-max).

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.fig4 --db plq --rounds 3
"""
import sys

from .harness import pg, report, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import last_actual, locality, plq_query, scale_of


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--plq", default="1,2,3,5,8,12,17,25", help="PLQ n values (targets)")
    ap.add_argument("--corunner", type=int, default=25, help="PLQ n of the co-runners")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="fig4-hash-join-slowdown")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    ns = [int(x) for x in a.plq.split(",")]
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Figure 4: hash-join slowdown against hash table size",
                        srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=2)
    kinds = ["hash", "index", "bitmap"]
    corunners = {k: plq_query(a.corunner, k) for k in kinds}
    rows, plot = [], {k: [] for k in kinds}
    for n in ns:
        q = plq_query(n, "hash")
        cls, est = locality(a.db, q)
        with pg.session(q, a.db) as c:
            c.execute(q.sql).fetchall()
            actual = last_actual(c)
        say(f"PLQ_{n}: {cls}, estimated {est / 1048576:.1f} MB, actual {actual / 1048576 if actual else 0:.1f} MB")
        row = [f"PLQ_{n}", f"{est / 1048576:.1f}", f"{actual / 1048576:.1f}" if actual else "?", cls]
        alone_all, cpu_cells = [], []
        for k in kinds:
            say(f" beside PLQ_{a.corunner} {k} join")
            guard.before(f"PLQ_{n} beside PLQ_{a.corunner} {k} join")
            m = pg.alone_vs_corun_cpu(q, [corunners[k]], a.rounds, a.db, say)
            guard.after()
            s = stats.summarize(stats.ratios(m["co"], m["alone"]))
            s_cpu = stats.summarize(stats.ratios(m["co_cpu"], m["alone_cpu"]))
            alone_all += m["alone"]
            row.append(s.fmt())
            cpu_cells.append(s_cpu.fmt())
            plot[k].append(((actual or est) / 1048576, s))
            if s_cpu.n:
                plot.setdefault(k + " cpu", []).append(((actual or est) / 1048576, s_cpu))
        row.insert(4, stats.summarize(alone_all).fmt(0 if min(alone_all) > 10 else 2))
        rows.append(row + cpu_cells)
    C = srv.get("llc_used", 0) / 1048576
    res.add(f"Target: PLQ_n with its hash-join plan (`force_hash.sql`); co-runner: PLQ_{a.corunner} "
            f"with the plan named in the column, looping on its own connection. Slowdown = co-run "
            f"time / alone time of the same round, median over {a.rounds} rounds (min-max). "
            f"Parallel workers off, JIT off, buffer pool warmed by a first run. Classes with "
            f"C = {C:.0f} MB (`mccdb.llc_size`): strong below {C / 3:.1f} MB, weak from {3 * C:.0f} MB.\n")
    res.table(["target", "est. hash table MB", "actual MB", "class", "alone s",
               f"beside hash join PLQ_{a.corunner}", f"beside index join PLQ_{a.corunner}",
               f"beside bitmap join PLQ_{a.corunner}", "CPU-time ratio beside hash",
               "CPU-time ratio beside index", "CPU-time ratio beside bitmap"], rows)
    res.add("\nCPU-time ratio: the target backend's CPU time (/proc/PID/schedstat) co-run / alone "
            "in the same round; waiting for a CPU does not count, cache-miss stalls do.\n")
    draw(res, plot, kinds, C, a.corunner)
    return res, rows


def draw(res, plot, kinds, C, corunner):
    """plot: {kind: [(hash table MB, Summary)]}; adds the PNG to res."""
    a_corunner = corunner
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    has_cpu = any(plot.get(k + " cpu") for k in kinds)
    if has_cpu:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    else:
        fig, ax = plt.subplots(figsize=(7, 4))
    for k, mk in zip(kinds, "osd"):
        if not has_cpu:
            continue
        xs = [x for x, _ in plot[k + " cpu"]]
        ys = [s.median for _, s in plot[k + " cpu"]]
        err = [[s.median - s.lo for _, s in plot[k + " cpu"]], [s.hi - s.median for _, s in plot[k + " cpu"]]]
        ax2.errorbar(xs, ys, yerr=err, marker=mk, capsize=3, label=f"beside {k} join PLQ_{a_corunner}")
    if has_cpu:
        from matplotlib.ticker import ScalarFormatter as SF
        ax2.set_xscale("log")
        ax2.xaxis.set_major_formatter(SF())
        ax2.xaxis.set_minor_formatter(SF())
        ax2.tick_params(axis="x", which="minor", labelsize=7)
        ax2.axhline(1.0, color="black", lw=0.5)
        for x in (C / 3, C, 3 * C):
            ax2.axvline(x, color="gray", ls=":", lw=0.8)
        ax2.set_xlabel("hash table size of the target PLQ_n (MB, actual)")
        ax2.set_title("CPU time of the target: co-run / alone", fontsize=10, pad=14)
    for k, mk in zip(kinds, "osd"):
        xs = [x for x, _ in plot[k]]
        ys = [s.median for _, s in plot[k]]
        err = [[s.median - s.lo for _, s in plot[k]], [s.hi - s.median for _, s in plot[k]]]
        ax.errorbar(xs, ys, yerr=err, marker=mk, capsize=3, label=f"beside {k} join PLQ_{a_corunner}")
    for x, lab in ((C / 3, "C/3"), (C, "C"), (3 * C, "3C")):
        if C:
            ax.axvline(x, color="gray", ls=":", lw=0.8)
            ax.text(x, 1.01, lab, fontsize=7, ha="center", va="bottom", transform=ax.get_xaxis_transform())
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_xscale("log")
    from matplotlib.ticker import ScalarFormatter
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("hash table size of the target PLQ_n (MB, actual)")
    ax.set_ylabel("slowdown (co-run / alone)")
    ax.set_title("Hash-join PLQ_n beside a co-runner: wall time", fontsize=10, pad=14)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3)
    return res.figure(fig)


def replot(md_path, corunner=25):
    """Redraw the PNG from an existing page's first table (no measurement)."""
    import re
    res, text = report.Result.of_page(md_path)
    C = float(re.search(r"C = ([0-9.]+) MB", text).group(1))
    kinds = ["hash", "index", "bitmap"]
    plot = {}
    headers, rows = report.page_tables(text)[0]
    for cells in rows:
        for k, cell in zip(kinds + [k + " cpu" for k in kinds], cells[5:11]):
            s = stats.parse(cell, 3)
            if s is not None:
                plot.setdefault(k, []).append((float(cells[2]), s))
    return draw(res, plot, kinds, C, corunner)


if __name__ == "__main__":
    sys.exit(run(main, replot=replot))
