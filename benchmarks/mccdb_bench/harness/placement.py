"""Where the host put the two vCPUs of this machine, read from the time a
cache line takes to go from one to the other and back (bwload.c pingpong).

The host schedules each vCPU on a core of its choosing and moves it: about
a third of the time the two sit in different L3s (core complexes), and a
co-runner there shares no last-level cache with the target
(docs/machine.md).  A round trip under SPLIT_NS means one L3 (73-148 ns
measured), over it two (332-423 ns).  A pair is counted as one L3 when the
readings taken around it all say so.
"""
import os
import subprocess

from mccdb_bench import llc_knee
from mccdb_bench.paths import BENCH

BWLOAD = BENCH / "llcsim" / "native" / "bwload.c"
SPLIT_NS = 200.0


def build(outdir):
    """bwload.c compiled into outdir (its path)."""
    return llc_knee.build(outdir, BWLOAD)


def run_pinned(cmd, cpu):
    """cmd's standard output, run on CPU cpu (None: anywhere)."""
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True,
                          preexec_fn=pre).stdout


def round_trip_ns(exe, cpus, n=100000):
    """ns a cache line takes from one vCPU of cpus to the other and back."""
    return float(run_pinned([exe, "pingpong", *cpus, n], None).split()[1])


def one_l3(readings):
    """True when every round trip (ns) says the two vCPUs shared an L3."""
    return all(r < SPLIT_NS for r in readings)
