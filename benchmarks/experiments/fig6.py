#!/usr/bin/env python3
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
    .venv/bin/python benchmarks/experiments/fig6.py --db plq --reps 3
    .venv/bin/python benchmarks/experiments/fig6.py --db ssb --quick     # a few minutes
"""
import subprocess
import sys

from common import fmt_bytes, parser, say_fn, plq_query, locality, scale_of, pg, report, stats

POLICIES = ["off", "sls", "mls", "adaptive", "predictive"]
GATE = ["set mccdb.min_cost = 0"]  # small scales: every instance goes through the gate


def ensure_matrix(db, calibrate, say):
    """True when the adaptive policy has a matrix loaded (after --calibrate if asked)."""
    with pg.connect(db) as c:
        if c.execute("select interference_loaded from mccdb_scheduler()").fetchone()[0]:
            return True
        if c.execute("select count(*) from mccdb_interference").fetchone()[0] > 0:
            c.execute("select mccdb_load_interference()")
            return True
    if calibrate:
        say("no interference matrix: running benchmarks/calibrate.py --runs 1")
        env_db = {"PGDATABASE": db} if db else {}
        import os
        subprocess.run([sys.executable, str(pg_root() / "benchmarks" / "calibrate.py"), "--runs", "1"],
                       check=True, env={**os.environ, **env_db})
        return True
    return False


def pg_root():
    import pathlib
    return pathlib.Path(__file__).resolve().parents[2]


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--plq", default="1,5,12,25")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, no separate plot name")
    ap.add_argument("--calibrate", action="store_true",
                    help="run calibrate.py first when mccdb_interference is empty")
    ap.add_argument("--name", default=None)
    a = ap.parse_args(argv)
    if a.quick:
        a.reps = 1
        a.calibrate = True
    name = a.name or ("fig6-co-scheduling-quick" if a.quick else "fig6-co-scheduling")
    say = say_fn(a.quiet)
    ns = [int(x) for x in a.plq.split(",")]
    srv = pg.server_info(a.db)
    res = report.Result(name, "Figure 6: co-scheduling hash-join and index-join instances",
                        srv, scale_of(a.db), a.outdir)
    have_matrix = ensure_matrix(a.db, a.calibrate, say)
    policies = POLICIES if have_matrix else [p for p in POLICIES if p != "adaptive"]
    with pg.connect(a.db) as c:
        slots = c.execute("select slots from mccdb_scheduler()").fetchone()[0]
    rows, plot = [], {}
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
                   for p in policies}
            for r in range(a.reps):
                off_batch = None
                for p in policies:
                    pg.set_schedule(p, a.db)
                    total, qs = pg.run_batch([h, h, i, i], p, a.db)
                    d = per[p]
                    for x in qs[:2]:
                        d["hexec"].append(x["exec"] / alone[h.name])
                        if x["cpu"] is not None and alone_cpu[h.name]:
                            d["hcpu"].append(x["cpu"] / alone_cpu[h.name])
                        d["hresp"].append(x["response"] / alone[h.name])
                    for x in qs[2:]:
                        d["iexec"].append(x["exec"] / alone[i.name])
                    d["batch"].append(total)
                    if p == "off":
                        off_batch = total
                    d["rel"].append(total / off_batch)
                    d["lim"].append(total / limit)
                    say(f"  rep {r + 1} {p:>8}: batch {total:.2f} s ({total / off_batch:.2f}x off), hash exec "
                        + ", ".join(f"{x['exec']:.2f}" for x in qs[:2]) + " s, index exec "
                        + ", ".join(f"{x['exec']:.2f}" for x in qs[2:]) + " s")
            for p in policies:
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
            "in the same run; batch ratio is over the `off` batch of the same repetition. CPU: the "
            "backend's CPU time (/proc/PID/schedstat), which waiting for a CPU or a slot does not "
            "inflate. "
            f"Median over {a.reps} repetition(s) (min-max). " +
            ("" if have_matrix else "**adaptive skipped: no interference matrix "
             "(run benchmarks/calibrate.py or pass --calibrate).** ") + "\n")
    res.table(["query", "hash plan class", "schedule", "hash instances: exec / alone",
               "hash instances: CPU / alone CPU", "hash instances: response / alone", "index instances: exec / alone",
               "batch s", "batch / off", "batch / zero-interference limit"], rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    w = 0.8 / len(policies)
    for k, p in enumerate(policies):
        xs = [j + k * w for j in range(len(ns))]
        ax1.bar(xs, [plot[(n, p)][0].median for n in ns], w, label=p)
        ax2.bar(xs, [plot[(n, p)][1].median for n in ns], w, label=p)
    for ax, t in ((ax1, "hash-join instances: exec / alone"), (ax2, "batch time / off")):
        ax.set_xticks([j + w * (len(policies) - 1) / 2 for j in range(len(ns))])
        ax.set_xticklabels([f"PLQ_{n}" for n in ns])
        ax.axhline(1.0, color="black", lw=0.5)
        ax.set_title(t, fontsize=10)
    ax1.legend(fontsize=8)
    res.figure(fig)
    return res, rows


if __name__ == "__main__":
    res, _ = main()
    print(res.text())
    print(f"wrote {res.write()}")
