"""The simulator's memory loops timed natively, for its miss-overlap model.

Runs `llcsim time SPEC` (benchmarks/llcsim/guest, built by `run.sh build`)
on this machine for a random pointer chase (every load depends on the one
before), independent random loads, a sequential stream and hash-join
probes (a random bucket, then the chain it points to), all over --kib
of memory on transparent huge pages, in a shuffled order in each of --reps
rounds, each behind the quiet-machine guard.  Writes the ns per load of
every run and the guard's record as JSON (--out), which
`benchmarks/llcsim/scripts/analyze.py mlp --native` compares with the
simulated cycles.

    .venv/bin/python -m mccdb_bench.llcsim_native --out benchmarks/llcsim/build/mlp-native.json
"""
import argparse
import json
import os
import pathlib
import platform
import random
import re
import subprocess
import sys
import time

from .harness import quiet
from .harness.cli import say_fn
from .paths import BENCH, ROOT

BINARY = BENCH / "llcsim" / "build" / "guest" / "llcsim"
TIME_LINE = re.compile(r"LLCSIM-TIME spec=(\S+) units=(\d+) ns=(\d+) ns_per_unit=([\d.]+)")


def specs(kib, loads):
    """kind -> the guest program's SPEC: one pass of the chase over kib (one
    load per 64 B line), `loads` loads of the random and the stream loop,
    `loads` probes of a hash table of about kib (36 B per entry)."""
    return {"chase": f"chase/{kib}/1", "rand": f"rand/{kib}/{loads}", "stream": f"stream/{kib}/{loads}",
            "hash": f"hash/{kib * 1024 // 36}/{loads}"}


def relative(arg):
    """A path inside the repository as the page should print it."""
    p = pathlib.Path(arg)
    return str(p.relative_to(ROOT)) if p.is_absolute() and p.is_relative_to(ROOT) else arg


def time_one(binary, spec):
    """ns per load of one native run of `llcsim time SPEC`."""
    out = subprocess.run([str(binary), "time", spec], check=True, capture_output=True, text=True).stdout
    m = TIME_LINE.search(out)
    if not m:
        raise RuntimeError(f"llcsim time {spec}: no LLCSIM-TIME line in {out!r}")
    return float(m.group(4))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(BINARY), help="the llcsim guest program (static)")
    ap.add_argument("--kib", type=int, default=262144, help="working set of each loop (default 256 MiB)")
    ap.add_argument("--loads", type=int, default=4000000, help="loads of the random and the stream loop, probes of the hash loop")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--seed", type=int, default=1, help="of the order of the loops in each round")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--no-guard", action="store_true", help="skip the quiet-machine guard (tests only)")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.kib < 1024 or a.loads < 1:
        ap.error("--reps >= 1, --kib >= 1024 and --loads >= 1")
    if not os.access(a.binary, os.X_OK):
        ap.error(f"{a.binary} is not an executable (benchmarks/llcsim/run.sh build)")
    say = say_fn(a.quiet)
    guard = quiet.Unguarded() if a.no_guard else quiet.Guard(say, own_load=1)
    load0 = guard.start()
    t0 = time.time()
    loops = specs(a.kib, a.loads)
    rng = random.Random(a.seed)
    runs = {k: [] for k in loops}
    for r in range(a.reps):
        order = list(loops)
        rng.shuffle(order)
        for kind in order:
            with guard.measuring(f"{kind}, round {r + 1}"):
                runs[kind].append(time_one(a.binary, loops[kind]))
            say(f"  round {r + 1} {kind}: {runs[kind][-1]:.2f} ns per load")
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    out = {"specs": loops, "ns_per_load": runs, "reps": a.reps,
           "machine": f"{cpu}, {os.cpu_count()} vCPUs, Linux {platform.release()}",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
           "minutes": round((time.time() - t0) / 60, 1),
           "load_at_start": load0, "guard": guard.summary().strip(),
           "command": " ".join([".venv/bin/python -m mccdb_bench.llcsim_native"] +
                               [relative(x) for x in (argv or sys.argv[1:])])}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    say(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
