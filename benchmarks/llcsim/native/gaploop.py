"""Independent random loads K dependent adds apart, natively, for the window
of llcsim's overlap model (run.sh window --measure).

A core hides a miss under the instructions after it only as far as its
reorder buffer reaches: with K serially dependent adds after every load
(the guest program's `gap/KIB/LOADS/k=K`, addresses from a generator in
registers, the adds using no loaded value), the misses overlap while K is
small next to the window and stop overlapping once one iteration fills it;
each then costs what the window cannot cover.  The mlp loops (at most ~20
instructions a miss) never fill it, so they do not pin it (the fit's ROB 224
and 320 tie); this curve does.  A pointer chase over the same memory is the
unit, as in the mlp loops: ratio = chase ns per load / loop ns per load.

Native: the chase and every K over --kib (256 MiB, transparent huge pages,
`llcsim time` pinned to CPU 0), --rounds rounds, each behind the
quiet-machine guard.  Simulated (`--sim-list`, the guest's initramfs list):
the same over 64 MiB (32x the simulated LLC, as the mlp loops), fewer loads.

Writes JSON (--out; calibration/native-window.json is the committed one);
`scripts/calibrate.py window` compares a guest run with it.

    .venv/bin/python benchmarks/llcsim/native/gaploop.py --out benchmarks/llcsim/calibration/native-window.json
"""
import pathlib
import random
import sys

from loopcli import run

HERE = pathlib.Path(__file__).resolve().parent
BINARY = HERE.parent / "build" / "guest" / "llcsim"
KS = (0, 64, 128, 256, 512, 1024)
CHASE_TAG, GAP_TAG = 700, 701     # the simulated chase; K's loop is GAP_TAG + its index
SIM_KIB, SIM_LOADS = 65536, 200000


def native_specs(kib, loads):
    """name -> SPEC of the native runs: one pass of the chase, `loads` loads per K."""
    return {"chase": f"chase/{kib}/1", **{f"k{k}": f"gap/{kib}/{loads}/k={k}" for k in KS}}


def sim_list():
    """The guest's initramfs list: the chase and each K's loop on THP."""
    return " ".join([f"llcsim:run:chase/{SIM_KIB}/1/thp:{CHASE_TAG}"] +
                    [f"llcsim:run:gap/{SIM_KIB}/{SIM_LOADS}/k={k}/thp:{GAP_TAG + i}" for i, k in enumerate(KS)])


def main(argv=None):
    a, started = run(__doc__, BINARY, sim_list, argv, [
        ("--kib", {"type": int, "default": 262144}), ("--loads", {"type": int, "default": 1000000}),
        ("--rounds", {"type": int, "default": 3})])
    if a is None:
        return 0
    from mccdb_bench.llcsim_native import time_one
    from memload import summary, write_json
    say, guard, load0, t0 = started
    specs = native_specs(a.kib, a.loads)
    runs = {name: [] for name in specs}
    rng = random.Random(1)
    for r in range(a.rounds):
        order = list(specs)
        rng.shuffle(order)
        with guard.measuring(f"round {r + 1}"):
            for name in order:
                runs[name].append(time_one(a.binary, specs[name]))
        say(f"  round {r + 1}: " + ", ".join(f"{n} {runs[n][-1]:.2f} ns" for n in specs))
    out = {
        "what": "independent random loads with K serially dependent adds after each (llcsim time gap/KIB/LOADS/k=K) "
                "and a random pointer chase over the same memory, natively (CPU 0, THP), ns per load; ratio = "
                "chase / loop per round: the window of llcsim's overlap model",
        "ks": list(KS), "specs": specs, "rounds": a.rounds,
        "sim": {"chase_tag": CHASE_TAG, "gap_tag": GAP_TAG, "kib": SIM_KIB, "loads": SIM_LOADS},
        "ns_per_load": {n: summary(v) for n, v in runs.items()},
        "ratio": {n: summary([c / x for c, x in zip(runs["chase"], v)]) for n, v in runs.items() if n != "chase"},
        "runs": runs,
    }
    write_json(a.out, out, t0, load0, guard, "gaploop.py", argv, say)
    return 0


if __name__ == "__main__":
    sys.exit(main())
