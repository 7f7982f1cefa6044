"""mccdb-calibrate: measure the interference between locality classes here.

The paper's Table 1 (who slows down whom) was measured on a 2009 Core 2; on
other CPUs it differs (docs/machine.md).  This runs one PLQ probe per
locality class alone and beside a co-runner of each class, and stores
slowdown = co-run time / alone time (median of the rounds' paired ratios) in
mccdb_interference, then loads it into the scheduler (mccdb.schedule =
adaptive uses it).

Probes, classified by mccdb with the server's current C (mccdb.llc_size):
the hash-join PLQ_n of each class with the fewest categories, and for weak
also the index-join PLQ_25 (the paper's WL_IJ).  A class with no probe at
this data scale keeps no row, and is reported.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.calibrate --db ssb --runs 3
"""
import statistics
import sys

from .harness import pg, stats
from .harness.cli import parser, say_fn, start_guard
from .harness.probes import locality, plq_query

CLASSES = ["strong", "moderate", "weak"]
# Probes never wait in mccdb's admission gate: they measure the cache, not the scheduler.
NO_GATE = "set mccdb.min_cost = 1e30"


def find_probes(db):
    """{class: Query}: the first hash-join PLQ_n of each class, and PLQ_25's
    index join as the weak probe when no hash join is weak."""
    probes = {}
    for n in range(1, 26):
        q = plq_query(n, "hash")
        cls = locality(db, q)[0]
        probes.setdefault(cls, q)
    probes.setdefault("weak", plq_query(25, "index"))
    for q in probes.values():
        q.settings.append(NO_GATE)
    return probes


def measure(db, probes, runs, guard, say):
    """[(target class, co-runner class, stats.Summary of the slowdowns)] over
    every pair, the co-run and alone times paired by round."""
    rows = []
    for tc, target in probes.items():
        for cc, corunner in probes.items():
            with guard.measuring(f"{target.name} beside {corunner.name}"):
                alone, co = pg.alone_vs_corun(target, [corunner], runs, db)
            s = stats.summarize(stats.ratios(co, alone))
            rows.append((tc, cc, s))
            say(f"{tc:>8} beside {cc:<8}: {s.fmt(2, 'x')}  ({target.name} alone "
                f"{statistics.median(alone) * 1000:.0f} ms)")
    return rows


def store(db, rows):
    """Replace mccdb_interference with the rows' medians and load it;
    returns the count loaded."""
    with pg.connect(db) as conn:
        with conn.transaction():
            conn.execute("delete from mccdb_interference")
            for tc, cc, s in rows:
                conn.execute("insert into mccdb_interference (target, corunner, slowdown) "
                             "values (%s, %s, %s)", (tc, cc, s.median))
        return conn.execute("select mccdb_load_interference()").fetchone()[0]


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--runs", type=int, default=3, help="rounds (alone, then co-run) per pair")
    a = ap.parse_args(argv)
    say = say_fn(a.quiet)
    guard = start_guard(a, say, own_load=2)

    probes = find_probes(a.db)
    for cls in CLASSES:
        p = probes.get(cls)
        say(f"probe {cls:<8}: {p.name if p else 'none at this scale and C'}")
    rows = measure(a.db, probes, a.runs, guard, say)
    loaded = store(a.db, rows)
    say(f"\nstored {len(rows)} slowdowns in mccdb_interference, {loaded} loaded into the scheduler")
    missing = [c for c in CLASSES if c not in probes]
    if missing:
        llc = pg.server_info(a.db).get("llc_used", 0)
        say(f"no probe for: {', '.join(missing)} (C = {llc // 1048576} MB; "
            "a larger SSB scale or a smaller mccdb.llc_size gives bigger classes)")
    say("suggested: mccdb.schedule = 'adaptive'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
