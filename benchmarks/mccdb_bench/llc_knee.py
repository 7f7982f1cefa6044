"""Effective last-level cache one thread sees: the knee of a pointer chase.

Compiles llc_knee.c (beside this file) (cc -O2) into a temporary directory, runs it
over working sets from MIN to MAX, and reports the largest size whose latency
is still below lat_cache + KNEE x (lat_memory - lat_cache) (KNEE 0.1: where the
latency starts to climb), where lat_cache is
the lowest latency at or below 4 MB and lat_memory the median of the three
largest sizes.  On a machine shared with other tenants this is much smaller
than the L3 sysfs reports (docs/machine.md).

    .venv/bin/python -m mccdb_bench.llc_knee          # table and the knee
    .venv/bin/python -m mccdb_bench.llc_knee --json   # machine-readable
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "llc_knee.c"


def build(outdir, source=SOURCE):
    """Compile source (default llc_knee.c) with cc -O2 into outdir, named after it."""
    exe = pathlib.Path(outdir) / pathlib.Path(source).stem
    subprocess.run(["cc", "-O2", "-o", str(exe), str(source), "-lm"], check=True)
    return exe


def chase_key(key):
    """A chase's name, 'KIB' or 'KIB:ADDS' (paced: ADDS dependent adds after
    each load, llc_knee.c's fifth argument) -> (KIB, ADDS)."""
    kib, _, adds = str(key).partition(":")
    kib, adds = int(kib), int(adds or 0)
    if kib < 64 or adds < 0 or adds % 64:
        raise ValueError(f"chase {key!r}: KIB (64 or more) or KIB:ADDS, ADDS a multiple of 64")
    return kib, adds


def parse(text):
    """'<bytes> <ns>' lines -> [(bytes, ns)]; other lines are an error."""
    points = []
    for line in text.splitlines():
        if not line.strip():
            continue
        b, ns = line.split()
        points.append((int(b), float(ns)))
    return points


def knee(points, fraction=0.1):
    """Largest size below the latency threshold before the first size above it."""
    if len(points) < 4:
        raise ValueError("need at least 4 sizes")
    points = sorted(points)
    small = [ns for b, ns in points if b <= 4 << 20] or [points[0][1]]
    lat_cache = min(small)
    lat_mem = statistics.median(ns for _, ns in points[-3:])
    threshold = lat_cache + fraction * (lat_mem - lat_cache)
    effective = None
    for b, ns in points:
        if ns > threshold:
            break
        effective = b
    return {"effective_bytes": effective, "lat_cache_ns": lat_cache,
            "lat_memory_ns": lat_mem, "threshold_ns": threshold}


def measure(min_kb=1024, max_kb=65536, steps=4, accesses=4000000):
    with tempfile.TemporaryDirectory() as d:
        exe = build(d)
        out = subprocess.run([str(exe), str(min_kb), str(max_kb), str(steps), str(accesses)],
                             check=True, capture_output=True, text=True).stdout
    return parse(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-kb", type=int, default=1024)
    ap.add_argument("--max-kb", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=4, help="sizes per doubling")
    ap.add_argument("--accesses", type=int, default=4000000)
    ap.add_argument("--knee", type=float, default=0.1,
                    help="threshold as a fraction of the way from cache to memory latency")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    pts = measure(a.min_kb, a.max_kb, a.steps, a.accesses)
    k = knee(pts, a.knee)
    if a.json:
        print(json.dumps({"points": pts, **k}))
    else:
        for b, ns in pts:
            print(f"{b / 1048576:8.2f} MiB {ns:8.1f} ns")
        eff = k["effective_bytes"]
        print(f"cache {k['lat_cache_ns']:.1f} ns, memory {k['lat_memory_ns']:.1f} ns, "
              f"threshold {k['threshold_ns']:.1f} ns")
        print(f"effective LLC: {eff / 1048576:.1f} MiB" if eff else "effective LLC: below the smallest size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
