"""Page colouring in the trace kernel: interrupts off and fault time at a colour's exhaustion.

Boots the patched kernel with the irqs-off latency tracer (test.config plus
kernel-patch/configs/trace.config, `make -C kernel-patch kernel-trace`;
QEMU TCG, 1 GiB) --boots times at each colour count, the counts
interleaved, and runs kernel-patch/selftests/color_latency in each, its
children on the guest's last CPU: a child without a colour policy faults
twice a colour's share of pages one by one (the base line), then a child
bound to colour 0 and immune to the OOM killer faults as many until
SIGBUS (from the colour's exhaustion on, every fault runs the whole slow
path), then the same beside 2,000 empty memory cgroups, then the same
again without them (what the phases' order does, apart from the groups).
For each phase: the longest section with interrupts off on that CPU
(tracing_cpumask; tracing_max_latency, reset at the phase's start) and
where it ended, and the child's fault times.  Each boot is one configuration of
the quiet-machine guard.  Absolute times are TCG emulation with the tracer
on; the phases within a boot are what this compares.

    python -m mccdb_bench.kernel_latency [--boots 3] [--colors 16,256]
"""
import re

from .harness import cli, guest, report, stats
from .kernel_faults import bench_values

PHASES = [
    ("uncoloured", "uncoloured faults (base line)"),
    ("exhaust", "bound to colour 0, to SIGBUS"),
    ("memcgs", "the same beside 2,000 memory cgroups"),
    ("exhaust2", "bound again, the groups removed"),
]
MEASURES = [
    ("irqsoff_us", "longest section with interrupts off, µs"),
    ("fault_p50_us", "fault time, median µs"),
    ("fault_p99_us", "fault time, p99 µs"),
    ("fault_max_us", "fault time, max µs"),
    ("sigbus_fault_us", "the fault that got SIGBUS, µs"),
    ("pages", "pages faulted"),
]
WHERE_LINE = re.compile(r"^where (\w+): (.*)$")


def program_values(program):
    """({name: value} of '# bench' lines, {phase: where}) of color_latency."""
    where = {}
    for line in program.diag("where "):
        if m := WHERE_LINE.match(line):
            where[m.group(1)] = m.group(2)
    return bench_values(program), where


def parse_colors(text):
    colors = [int(x) for x in text.split(",") if x.strip()]
    if not colors or any(c < 1 or c & (c - 1) for c in colors):
        raise ValueError(f"--colors {text!r}: powers of two, comma-separated")
    return colors


def cell(values, digits):
    s = stats.summarize(values)
    return s.fmt(digits, thousands=True) if s.n else "-"


def main(argv=None):
    ap = cli.parser(__doc__)
    ap.add_argument("--boots", type=int, default=3, help="boots at each colour count (default 3)")
    ap.add_argument("--colors", default="16,256", help="page_colors= of the boots (default 16,256)")
    ap.add_argument("--name", default="kernel-lock-hold")
    a = ap.parse_args(argv)
    if a.boots < 1:
        ap.error("--boots must be at least 1")
    try:
        colors = parse_colors(a.colors)
    except ValueError as e:
        ap.error(str(e))
    say = cli.say_fn(a.quiet)
    initramfs = guest.build("initramfs-latency", "kernel-trace")
    res = report.Result(
        a.name, "Page colouring: interrupts off and fault time at a colour's exhaustion (inside the guest)",
        outdir=a.outdir, system=[
            "Guest: the patched kernel with the irqs-off latency tracer (test.config + trace.config, "
            "`make -C kernel-patch kernel-trace`) under QEMU TCG (`-cpu qemu64,l3-cache=on -m 1024 -smp 2`)",
            "Program: `kernel-patch/selftests/color_latency` (its header comment says what it does)"])
    res.guard = cli.start_guard(a, say, own_load=1)
    boots = []     # (colors, rep, Boot, values, where)
    for rep in range(1, a.boots + 1):
        for c in colors:
            for b in guest.guarded_boots(res.guard, initramfs, 1, f"latency-{c}c-r{rep}",
                                         f"page_colors={c}", say, kernel=guest.TRACE_KERNEL):
                prog = b.programs.get("color_latency")
                v, w = program_values(prog) if prog else ({}, {})
                boots.append((c, rep, b, prog, v, w))
    good = [x for x in boots if x[2].rc == 0 and x[4]]
    res.add(guest.release_line([x[2] for x in boots]))
    res.add(f"{len(good)} of {len(boots)} boots passed (boot-test.sh verdict 0: every program's TAP ok, "
            "dmesg clean) and measured; the tables are over those, median (min-max).\n")
    for c in colors:
        mine = [v for cc, _, _, _, v, _ in good if cc == c]
        res.add(f"**page_colors={c}** ({len(mine)} boots)\n")
        rows = []
        for key, what in MEASURES:
            row = [what]
            for phase, _ in PHASES:
                xs = [v[f"{phase}_{key}"] for v in mine if f"{phase}_{key}" in v]
                row.append(cell(xs, 0 if key in ("pages", "irqsoff_us") else 1))
            rows.append(row)
        res.table(["measurement", *[title for _, title in PHASES]], rows)
    res.add("Where the longest section with interrupts off ended (the tracer's record), per boot:\n")
    res.table(["boot", "colours", "verdict", "color_latency", *[p for p, _ in PHASES], "log"],
              [[i, c, "pass" if b.rc == 0 else f"**rc {b.rc}**", p.tap() if p else "**did not run**",
                *[w.get(phase, "-") for phase, _ in PHASES], guest.log_name(b)]
               for i, (c, _, b, p, _, w) in enumerate(boots, 1)])
    return res


if __name__ == "__main__":
    raise SystemExit(cli.run(main))
