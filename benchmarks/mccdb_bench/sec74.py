"""Section 7.4: the long SSB queries -- estimated vs actual hash table size,
estimated class, and the measured slowdown in every pairing.

Each of the 13 SSB queries runs once alone (after a warming run); the --long
longest are kept. For them: mccdb's estimate and the actual size of their hash
tables (mccdb_recent_queries after a run), the class, and for every ordered
pair (target, co-runner) the target's slowdown beside the co-runner looping on
its own connection (per round alone then co-run, median over rounds). Then:
does the class predict the slowdown here?

    eval "$(scripts/pg-cluster.sh env bench)"
    .venv/bin/python -m mccdb_bench.sec74 --db ssb --long 5 --rounds 3
"""
import sys

from .harness import pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of
from .harness.report import fmt_bytes

ORDER = {"strong": 0, "moderate": 1, "weak": 2}


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--long", type=int, default=5, help="how many of the longest SSB queries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="sec7.4-ssb-pairs")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Section 7.4: long SSB queries, estimated class and measured slowdown",
                        srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=2)
    info = {}
    for name in sqlfiles.ssb_names():
        q = pg.Query(f"Q{name[1:]}", sqlfiles.ssb(name))
        with pg.session(q, a.db) as c:
            pg.timed(c, q.sql)
            t = pg.timed(c, q.sql)
            loc, est, act = c.execute(
                "select locality, est_bytes, actual_bytes from mccdb_recent_queries "
                "where pid = pg_backend_pid() order by seq desc limit 1").fetchone()
        info[q.name] = dict(q=q, t=t, loc=loc, est=est, act=act)
        say(f"{q.name}: {t:.2f} s, {loc}, est {fmt_bytes(est)}, actual {fmt_bytes(act)}")
    longq = sorted(info, key=lambda k: -info[k]["t"])[:a.long]
    longq.sort(key=lambda k: (ORDER.get(info[k]["loc"], 3), info[k]["est"] or 0))
    res.add("All 13 SSB queries, stock plans (parallel workers off), one warm run then one timed run; "
            f"the {a.long} longest are paired below.\n")
    res.table(["query", "alone s", "class", "estimated S", "actual S", "error", "long"],
              [[k, f"{v['t']:.2f}", v["loc"], fmt_bytes(v["est"]), fmt_bytes(v["act"]),
                f"{100 * (v['est'] - v['act']) / v['act']:+.1f}%" if v["act"] else "n/a",
                "yes" if k in longq else ""] for k, v in info.items()])
    slow, slow_cpu = {}, {}
    for t in longq:
        for c in longq:
            say(f"{t} beside {c}")
            guard.before(f"{t} beside {c}")
            m = pg.alone_vs_corun_cpu(info[t]["q"], [info[c]["q"]], a.rounds, a.db, say)
            guard.after()
            slow[(t, c)] = stats.summarize(stats.ratios(m["co"], m["alone"]))
            slow_cpu[(t, c)] = stats.summarize(stats.ratios(m["co_cpu"], m["alone_cpu"]))
    res.add(f"\nSlowdown of the row query (co-run / alone, same round; median over {a.rounds} rounds, "
            "(min-max)) beside the column query looping on its own connection:\n")
    res.table(["target \\ co-runner"] + [f"{c} ({info[c]['loc']})" for c in longq],
              [[f"{t} ({info[t]['loc']})"] + [slow[(t, c)].fmt() for c in longq] for t in longq])
    if any(v.n for v in slow_cpu.values()):
        res.add("\nThe same, as the target backend's CPU time co-run / alone (from /proc/PID/schedstat: "
                "waiting for a CPU does not count, cache-miss stalls do):\n")
        res.table(["target \\ co-runner"] + [f"{c} ({info[c]['loc']})" for c in longq],
                  [[f"{t} ({info[t]['loc']})"] + [slow_cpu[(t, c)].fmt() for c in longq] for t in longq])
    by = {}
    for (t, c), s in slow.items():
        by.setdefault((info[t]["loc"], info[c]["loc"]), []).append((s.median, slow_cpu[(t, c)].median))
    res.add("\nBy class pair (median of the pair medians; n = pairs):\n")
    res.table(["target class", "co-runner class", "slowdown (wall)", "slowdown (CPU)", "n"],
              [[tc, cc, f"{stats.summarize([x for x, _ in v]).median:.2f}",
                f"{stats.summarize([y for _, y in v]).median:.2f}", len(v)] for (tc, cc), v in sorted(by.items())])
    # rank agreement: does a larger target S (stronger reuse that fits less) go with a larger slowdown?
    tgt = [(info[t]["act"] or info[t]["est"] or 0, stats.summarize([slow[(t, c)].median for c in longq]).median)
           for t in longq]
    res.add("\nPer target: hash table size vs its median slowdown over all co-runners:\n")
    res.table(["target", "class", "actual S", "median slowdown over co-runners"],
              [[t, info[t]["loc"], fmt_bytes(info[t]["act"]), f"{m:.2f}"] for t, (_, m) in zip(longq, tgt)])
    draw(res, [[slow[(t, c)].median for c in longq] for t in longq], [(q, info[q]["loc"]) for q in longq])
    return res, slow, slow_cpu, info, longq


def draw(res, m, queries):
    """m[i][j]: median slowdown of queries[i] beside queries[j]; queries: (name, class)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(m, cmap="Reds")
    ax.set_xticks(range(len(queries)))
    ax.set_xticklabels([f"{q}\n{c}" for q, c in queries], fontsize=7)
    ax.set_yticks(range(len(queries)))
    ax.set_yticklabels([f"{q} {c}" for q, c in queries], fontsize=7)
    lo, hi = min(map(min, m)), max(map(max, m))
    for i in range(len(queries)):
        for j in range(len(queries)):
            dark = hi > lo and (m[i][j] - lo) / (hi - lo) > 0.6
            ax.text(j, i, f"{m[i][j]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    ax.set_xlabel("co-runner")
    ax.set_ylabel("target")
    fig.colorbar(im, label="slowdown")
    ax.set_title("Long SSB queries: slowdown in every pairing", fontsize=10)
    return res.figure(fig)


def replot(md_path):
    """Redraw the PNG from an existing page's slowdown table (no measurement)."""
    import re
    res, text = report.Result.of_page(md_path)
    headers, rows = next(t for t in report.page_tables(text) if t[0][0] == "target \\ co-runner")
    queries = [re.match(r"(\S+) \((\w+)\)", h).groups() for h in headers[1:]]
    return draw(res, [[stats.parse(c).median for c in r[1:]] for r in rows], queries)


if __name__ == "__main__":
    sys.exit(run(main, replot=replot))
