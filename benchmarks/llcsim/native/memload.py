"""Native memory contention on this machine, for llcsim's bandwidth term.

Three measurements, each in alternating pairs (alone, then beside a
co-runner pinned to the other vCPU, stopped with SIGSTOP while the
measured loop runs alone), every pair behind the quiet-machine guard:

  chase   llc_knee.c's pointer chase (ns per dependent load) over 2, 4, 8
          and 256 MiB, alone and beside stream_antagonist.c (1 GiB): the
          DRAM latency under another vCPU's traffic (256 MiB) and, smaller,
          the LLC share it leaves; a size KIB:ADDS is a paced chase (ADDS
          dependent adds after each load: a line's reuse interval as long
          as in a slower loop's table)
  stream  stream_antagonist's loop timed (bwload.c stream: lines read and
          written back per ns) alone and beside stream_antagonist: the
          bandwidth one stream gets, and two together
  smt     bwload.c's dependent ALU loop and a 256 KiB (L2-resident) chase,
          alone and beside the same loop on the other vCPU: slower beside
          means the two vCPUs share a physical core (SMT siblings)

With --placement every pair also records, just before and after it, the
ns a cache line takes to go from one vCPU to the other and back (bwload.c
pingpong): the host schedules each vCPU on a core of its choosing, and a
pair whose vCPUs sat in different L3s (another CCX) shares no LLC.
--only chase skips the stream and smt measurements.

Writes JSON (--out; benchmarks/llcsim/calibration/native-memload.json is
the committed one) with every run, medians and min-max, the guard's record
and the command; scripts/calibrate.py bandwidth fits the term from it.

    .venv/bin/python benchmarks/llcsim/native/memload.py --out benchmarks/llcsim/calibration/native-memload.json
"""
import argparse
import json
import os
import pathlib
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from mccdb_bench import llc_knee
from mccdb_bench.harness import placement, quiet
from mccdb_bench.harness.placement import run_pinned
from mccdb_bench.harness.cli import say_fn
from mccdb_bench.native_study import STREAM_SOURCE, Stream, chase_ns

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]


class Spinner:
    """A co-runner that needs no 'ready' line: started, pinned, given
    `settle` seconds to set up, then stopped until start()."""

    def __init__(self, cmd, cpu, settle=1.0):
        pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
        self.proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, preexec_fn=pre)
        time.sleep(settle)
        self.stop()

    def start(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        time.sleep(0.05)

    def stop(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        time.sleep(0.05)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def stream_lines_per_ns(exe, mib, secs, cpu):
    return float(run_pinned([exe, "stream", mib, secs], cpu).split()[1])


def alu_ns(exe, iters, cpu):
    return float(run_pinned([exe, "alu", iters], cpu).split()[1])


def summary(xs):
    return {"median": round(statistics.median(xs), 4), "min": round(min(xs), 4), "max": round(max(xs), 4)}


def paired(guard, say, label, measure, corunner, pairs, placement=None):
    """pairs x (alone, beside corunner) of measure(); per-pair ratios;
    with placement (a callable), its value before and after each pair."""
    alone, beside, where = [], [], []
    for i in range(pairs):
        with guard.measuring(f"{label}, pair {i + 1}"):
            before = placement() if placement else None
            alone.append(measure())
            corunner.start()
            try:
                beside.append(measure())
            finally:
                corunner.stop()
            if placement:
                where.append([before, placement()])
        say(f"  {label} pair {i + 1}: alone {alone[-1]:.4g}, beside {beside[-1]:.4g}"
            + (f", pingpong {where[-1][0]:.0f}/{where[-1][1]:.0f} ns" if placement else ""))
    ratio = [b / a for a, b in zip(alone, beside)]
    out = {"alone": alone, "beside": beside, "alone_s": summary(alone), "beside_s": summary(beside),
           "ratio": summary(ratio)}
    if placement:
        out["pingpong"] = where
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--chase-kib", default="2048,4096,8192,262144",
                    help="chase sizes, KIB or KIB:ADDS (a paced chase, ADDS a multiple of 64)")
    ap.add_argument("--chase-accesses", type=int, default=2000000)
    ap.add_argument("--stream-mib", type=int, default=1024)
    ap.add_argument("--stream-secs", type=float, default=2.0)
    ap.add_argument("--alu-iters", type=int, default=500000000)
    ap.add_argument("--cpus", default="0,1", help="CPU of the measured loop, CPU of the co-runner")
    ap.add_argument("--placement", action="store_true",
                    help="record the vCPU-to-vCPU cache-line round trip before and after each pair")
    ap.add_argument("--only", choices=["chase"], help="only the chase measurements")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--no-guard", action="store_true", help="skip the quiet-machine guard (tests only)")
    a = ap.parse_args(argv)
    cpu_t, cpu_c = (int(x) for x in a.cpus.split(","))
    say = say_fn(a.quiet)
    guard = quiet.Unguarded() if a.no_guard else quiet.Guard(say, own_load=2)
    load0 = guard.start()
    t0 = time.time()
    out = {"chase": {}, "pairs": a.pairs}
    with tempfile.TemporaryDirectory() as tmp:
        knee = llc_knee.build(tmp)
        bw = placement.build(tmp)
        notes = set()
        stream = Stream(llc_knee.build(tmp, STREAM_SOURCE), a.stream_mib, cpu_c, notes)
        where = (lambda: placement.round_trip_ns(bw, (cpu_t, cpu_c))) if a.placement else None
        try:
            for key in a.chase_kib.split(","):
                kib, adds = llc_knee.chase_key(key)
                out["chase"][key] = paired(guard, say, f"chase {key} KiB ns/load",
                                           lambda: chase_ns(knee, kib, a.chase_accesses, cpu_t, adds),
                                           stream, a.pairs, where)
            if a.only != "chase":
                out["stream"] = paired(guard, say, "stream lines/ns",
                                       lambda: stream_lines_per_ns(bw, a.stream_mib, a.stream_secs, cpu_t),
                                       stream, a.pairs, where)
        finally:
            stream.close()
        if a.only == "chase":
            write_json(a.out, dict(out, what="llc_knee.c's chase (ns per load) alone and beside "
                                   "stream_antagonist.c on the other vCPU (alternating pairs)",
                                   pinning=sorted(notes)), t0, load0, guard, "memload.py", argv, say)
            return 0
        co = Spinner([bw, "alu", 1 << 62], cpu_c)
        try:
            out["smt_alu"] = paired(guard, say, "ALU ns/iteration", lambda: alu_ns(bw, a.alu_iters, cpu_t),
                                    co, a.pairs)
        finally:
            co.close()
        co = Spinner([knee, 256, 256, 1, 1 << 62], cpu_c)
        try:
            out["smt_l2chase"] = paired(guard, say, "chase 256 KiB ns/load",
                                        lambda: chase_ns(knee, 256, 20 * a.chase_accesses, cpu_t), co, a.pairs)
        finally:
            co.close()
    out.update({
        "what": "llc_knee.c's chase (ns per load) alone and beside stream_antagonist.c on the other vCPU; "
                "the stream loop's lines per ns alone and beside stream_antagonist; a dependent ALU loop "
                "(ns per iteration) and a 256 KiB chase alone and beside the same loop on the other vCPU. "
                "Alternating pairs, each behind the quiet-machine guard; ratio = beside / alone per pair.",
        "pinning": sorted(notes) + [f"measured loop on CPU {cpu_t}, co-runner on CPU {cpu_c}"],
    })
    write_json(a.out, out, t0, load0, guard, "memload.py", argv, say)
    return 0


def write_json(path, out, t0, load0, guard, script, argv, say):
    """out with the run's provenance (machine, date, guard, command) as JSON."""
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    out.update({
        "machine": f"{platform.node()}: {cpu}, {os.cpu_count()} vCPUs, Linux {platform.release()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
        "minutes": round((time.time() - t0) / 60, 1), "load_at_start": load0,
        "guard": guard.summary().strip() if hasattr(guard, "summary") else "no guard (--no-guard)",
        "command": " ".join([f".venv/bin/python benchmarks/llcsim/native/{script}"] +
                            [os.path.relpath(x, REPO) if x.startswith(str(REPO) + "/") else x
                             for x in (argv or sys.argv[1:])]),
    })
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    say(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
