"""The workload-classes benchmark's pure parts: its seeded sequences and its paired ratios."""
import argparse

from mccdb_bench import classes


def args(**kw):
    base = dict(reports=3, per_client=2, batch=3, batch_queries=2, seed=1)
    base.update(kw)
    return argparse.Namespace(**base)


def test_the_sequences_are_seeded_and_sized():
    a = classes.sequences(args())
    b = classes.sequences(args())
    assert [[i.name for i in s] for s in a["reports"]] == [[i.name for i in s] for s in b["reports"]]
    assert len(a["reports"]) == 3 and all(len(s) == 26 for s in a["reports"])
    # each pass over the SSB queries runs every one of them once
    assert all(sorted(i.name for i in s[:13]) == sorted(i.name for i in s[13:]) for s in a["reports"])
    assert len(a["batch"]) == 3 and all(len(s) == 2 for s in a["batch"])
    assert all(i.cls == "long" for s in a["batch"] for i in s)
    other = classes.sequences(args(seed=2))
    assert [i.name for i in other["reports"][0]] != [i.name for i in a["reports"][0]]


def test_ratios_are_taken_within_each_repetition():
    runs = [{"config": "classes", "rep": 1, "wall": 10.0}, {"config": "shared", "rep": 1, "wall": 20.0},
            {"config": "classes", "rep": 2, "wall": 30.0}, {"config": "shared", "rep": 2, "wall": 30.0},
            {"config": "classes", "rep": 3, "wall": 5.0}]
    # rep 3 has no shared run: it is left out, never paired with another repetition's
    assert classes.paired(runs, "classes", "shared", lambda r: r["wall"]) == "0.75 (0.50-1.00)"
