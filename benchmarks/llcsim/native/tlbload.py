"""The same memory loops on 4 KiB pages and on transparent huge pages, natively,
for llcsim's TLB model (run.sh calibrate-tlb --measure).

Each loop of LOOPS is the guest program's (`benchmarks/llcsim/build/guest/
llcsim time SPEC`, pinned to CPU 0 by itself) once with `/thp` (2 MiB
aligned, MADV_HUGEPAGE: the pages the committed mlp loops ran on) and once
with `/4k` (MADV_NOHUGEPAGE), in alternating pairs (--pairs, THP first), every
pair behind the quiet-machine guard.  The 4 KiB run over the THP run of a
pair is what the translation costs: a pointer chase of 512 KiB (in the
L2) and of 4 MiB (in the L3), beyond the L1 DTLB's 72 x 4 KiB but within
the L2 DTLB's 3072 (STLB hits, no walk); of 32 and 128 MiB (beyond the
STLB: page walks); and independent random loads over 128 MiB (walks that
overlap).  The simulated loops (`sim`) are the same over 4 (the simulated
caches' and TLBs' scale, as in run.sh pg-validate: native LLC share 8 MB,
simulated LLC 2 MiB), with less work (modeled time does not need repeats).

Writes JSON (--out; calibration/native-tlb.json is the committed one) with
every run, per-pair ratios, the guard's record and the command;
scripts/calibrate.py tlb fits the walk from it.  `--sim-list` prints the
guest's initramfs list of the simulated loops instead (run.sh uses it).

    .venv/bin/python benchmarks/llcsim/native/tlbload.py --out benchmarks/llcsim/calibration/native-tlb.json
"""
import pathlib
import sys

from loopcli import run

HERE = pathlib.Path(__file__).resolve().parent
BINARY = HERE.parent / "build" / "guest" / "llcsim"

# (name, native SPEC, simulated SPEC (sizes over 4), tag of the simulated
# THP run; its 4 KiB run is tag + 1)
LOOPS = [
    ("chase 512 KiB", "chase/512/256", "chase/128/64", 600),
    ("chase 4 MiB", "chase/4096/32", "chase/1024/8", 602),
    ("chase 32 MiB", "chase/32768/4", "chase/8192/2", 604),
    ("chase 128 MiB", "chase/131072/1", "chase/32768/1", 606),
    ("rand 128 MiB", "rand/131072/4000000", "rand/32768/500000", 608),
]
PAGES = ("thp", "4k")


def sim_list():
    """The guest's initramfs list: each simulated loop on THP, then on 4 KiB pages."""
    return " ".join(f"llcsim:run:{sim}/{pg}:{tag + i}" for _, _, sim, tag in LOOPS for i, pg in enumerate(PAGES))


def main(argv=None):
    a, started = run(__doc__, BINARY, sim_list, argv, [("--pairs", {"type": int, "default": 5})])
    if a is None:
        return 0
    from mccdb_bench.llcsim_native import time_one
    from memload import summary, write_json
    say, guard, load0, t0 = started
    loops = []
    for name, spec, sim, tag in LOOPS:
        runs = {pg: [] for pg in PAGES}
        for i in range(a.pairs):
            with guard.measuring(f"{name}, pair {i + 1}"):
                for pg in PAGES:
                    runs[pg].append(time_one(a.binary, f"{spec}/{pg}"))
            say(f"  {name} pair {i + 1}: thp {runs['thp'][-1]:.3f} ns, 4k {runs['4k'][-1]:.3f} ns")
        ratio = [b / t for t, b in zip(runs["thp"], runs["4k"])]
        loops.append({"name": name, "spec": spec, "sim_spec": sim, "tag": tag, "ns_per_unit": runs,
                      "thp_s": summary(runs["thp"]), "4k_s": summary(runs["4k"]), "ratio": summary(ratio)})
    out = {
        "what": "the guest program's loops timed natively (llcsim time SPEC, CPU 0) on transparent huge pages "
                "(/thp) and on 4 KiB pages (/4k), alternating pairs (THP first), each behind the quiet-machine "
                "guard; ratio = 4 KiB / THP ns per unit, per pair",
        "loops": loops, "pairs": a.pairs, "scale": 4,
        "thp": pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip(),
    }
    write_json(a.out, out, t0, load0, guard, "tlbload.py", argv, say)
    return 0

if __name__ == "__main__":
    sys.exit(main())
