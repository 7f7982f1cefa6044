"""Write the synthetic PLQ_1..PLQ_25 queries of the MCC-DB paper (section 4.2.1).

    .venv/bin/python -m mccdb_bench.make_plq          # (re)write benchmarks/plq/plq_01.sql .. plq_25.sql
    .venv/bin/python -m mccdb_bench.make_plq --check  # exit 1 if a committed file differs

PLQ_n joins part and lineorder and sums lo_revenue over the parts whose
p_category is one of the first n categories in the fixed order CATEGORIES
(MFGR#11, MFGR#12, ..., MFGR#15, MFGR#21, ..., MFGR#55: lexicographic).
"""

import argparse
import sys
from pathlib import Path

from .paths import PLQ_DIR

CATEGORIES = [f"MFGR#{m}{c}" for m in range(1, 6) for c in range(1, 6)]


def plq_sql(n: int) -> str:
    if not 1 <= n <= len(CATEGORIES):
        raise ValueError(f"PLQ_n needs 1 <= n <= {len(CATEGORIES)}, got {n}")
    cats = CATEGORIES[:n]
    disj = " or ".join(f"p_category = '{c}'" for c in cats)
    return (
        f"-- PLQ_{n}: synthetic part-lineorder query of MCC-DB (VLDB 2009), section 4.2.1.\n"
        f"-- {n} disjunct(s) on p_category ({cats[0]} .. {cats[-1]} in the fixed order of\n"
        f"-- benchmarks/plq/README.md), selectivity on part about {4 * n}%.\n"
        f"select sum(lo_revenue)\n"
        f"from part, lineorder\n"
        f"where p_partkey = lo_partkey\n"
        f"  and ({disj});\n"
    )


def path(n: int) -> Path:
    return PLQ_DIR / f"plq_{n:02d}.sql"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="verify the committed files instead of writing them")
    args = ap.parse_args(argv)
    stale = []
    for n in range(1, len(CATEGORIES) + 1):
        p, text = path(n), plq_sql(n)
        if args.check:
            if not p.exists() or p.read_text() != text:
                stale.append(p.name)
        else:
            p.write_text(text)
    if stale:
        print("out of date: " + ", ".join(stale) + " (run python -m mccdb_bench.make_plq)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
