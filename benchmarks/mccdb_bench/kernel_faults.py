"""Page colouring in the test kernel: fault throughput coloured vs uncoloured, and the migrate cost.

Boots the patched test kernel (kernel-patch, QEMU TCG, 1 GiB) --boots times
with page_colors=16 and runs kernel-patch/selftests/color_bench in each:
31 interleaved runs of faulting 16 MiB of anonymous 4 KiB pages
uncoloured (MADV_NOHUGEPAGE), coloured with all 16 colours and with 8 of
them, medians; then 16 MiB faulted uncoloured and moved to colours 0-7
with color_mbind(PREFERRED, COLOR_MBIND_MIGRATE), the median time per page
of the range.  Each boot is one configuration of the quiet-machine guard.
Absolute numbers are TCG emulation; the ratios within a boot are what this
measures.

    python -m mccdb_bench.kernel_faults [--boots 5]
"""
import re

from .harness import cli, guest, report, stats

COLORS = 16        # the measures below name 16 and 8 of 16 colours
BENCH_LINE = re.compile(r"^bench (\w+) ([-0-9.]+)$")
MEASURES = [
    ("fault_pages_per_s_uncoloured", "faults/s, uncoloured", 0),
    ("fault_pages_per_s_all_colours", "faults/s, coloured with all 16 colours", 0),
    ("fault_pages_per_s_half_colours", "faults/s, coloured with 8 of 16 colours", 0),
    ("ratio_all_colours_vs_uncoloured", "coloured (all) / uncoloured throughput", 3),
    ("ratio_half_colours_vs_uncoloured", "coloured (half) / uncoloured throughput", 3),
    ("migrate_us_per_page", "migrate, µs per page of the range (about half the pages move)", 3),
]


def bench_values(program):
    """{name: value} of color_bench's '# bench NAME VALUE' lines."""
    out = {}
    for line in program.diag("bench "):
        if m := BENCH_LINE.match(line):
            out[m.group(1)] = float(m.group(2))
    return out


def main(argv=None):
    ap = cli.parser(__doc__)
    ap.add_argument("--boots", type=int, default=5, help="boots of the guest (default 5)")
    ap.add_argument("--name", default="kernel-fault-throughput")
    a = ap.parse_args(argv)
    if a.boots < 1:
        ap.error("--boots must be at least 1")
    say = cli.say_fn(a.quiet)
    initramfs = guest.build("initramfs-bench")
    res = report.Result(a.name, "Page colouring: fault throughput and migrate cost (inside the guest)",
                        outdir=a.outdir, system=[
                            f"{guest.GUEST}, booted with `page_colors={COLORS}`",
                            "Program: `kernel-patch/selftests/color_bench` (its header comment says what it times)"])
    res.guard = cli.start_guard(a, say, own_load=1)
    boots = []
    for b in guest.guarded_boots(res.guard, initramfs, a.boots, "bench", f"page_colors={COLORS}", say):
        prog = b.programs.get("color_bench")
        boots.append((b, prog, bench_values(prog) if prog else {}))
    good = [v for b, p, v in boots if b.rc == 0 and all(k in v for k, _, _ in MEASURES)]
    res.add(guest.release_line([b for b, _, _ in boots]))
    res.add(f"{len(good)} of {a.boots} boots passed and measured everything (boot-test.sh verdict 0, "
            "every `# bench` line present); the table is over those, median (min-max).\n")
    rows = []
    for key, what, digits in MEASURES:
        s = stats.summarize([v[key] for v in good])
        rows.append([what, s.fmt(digits, thousands=not digits)])
    res.table(["measurement", f"median (min-max) over {len(good)} boots"], rows)
    res.add("Per boot:\n")
    res.table(["boot", "verdict", "color_bench", "all / uncoloured", "half / uncoloured", "migrate µs/page", "log"],
              [[i, "pass" if b.rc == 0 else f"**rc {b.rc}**", p.tap() if p else "**did not run**",
                v.get("ratio_all_colours_vs_uncoloured", "-"), v.get("ratio_half_colours_vs_uncoloured", "-"),
                v.get("migrate_us_per_page", "-"), guest.log_name(b)]
               for i, (b, p, v) in enumerate(boots, 1)])
    return res


if __name__ == "__main__":
    raise SystemExit(cli.run(main))
