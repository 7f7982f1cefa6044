"""Page colouring in the test kernel under memory pressure: compaction, parked pages, fragmented memory, reclaim, exhaustion.

Boots the patched test kernel (kernel-patch, QEMU TCG, 1 GiB, the colours of
the guest's LLC geometry: 256) --boots times and runs, in each, the
selftests whose header comments say what they do:
  color_pressure  compaction of fragmented memory in rounds without and with
                  a colour policy elsewhere (huge-page blocks made, then 32
                  huge pages faulted with THP defrag "always"); the pages a
                  process bound to 8 colours parks, and the order-10 free
                  blocks before it ran and after it exited
  color_fragment  a child bound to one colour on fragmented memory touches
                  256 pages: all of them, or SIGBUS
  color_reclaim   a child bound to colour 0 while page cache fills memory:
                  its pages, and the cache reclaim aimed at colour 0 freed
  color_exhaust   a child bound to colour 0 touches twice the colour's share
                  beside a bigger bystander on other colours: the OOM kill
                  within the colours, the bystander spared
Each boot is one configuration of the quiet-machine guard.  These are
functional results (counts, not timings): what the guest's programs saw.

    python -m mccdb_bench.kernel_pressure [--boots 5]
"""
import re

from .harness import cli, guest, report

ROUND = re.compile(r"pressure: round (\d+) try (\d+) (with|without) a colour policy elsewhere: compaction made "
                   r"(-?\d+) huge-page blocks \((\d+) before, (\d+) after\); then (\d+) of (\d+) huge pages faulted")
PARKED_WHILE = re.compile(r"pressure: (\d+) pages parked while")
ORDER10 = re.compile(r"pressure: order-10 free blocks (-?\d+) before, (-?\d+) after .*; (\d+) pages parked after")
FRAGMENT_FREE = re.compile(r"(\d+) of colour (\d+); then")
CHILD_PAGES = re.compile(r"child: (\d+) pages of colour")
RECLAIM = re.compile(r"page cache (\d+) -> (\d+) MiB; reclaimed (\d+) -> (\d+)")
EXHAUST_BIND = re.compile(r"BIND: (.*?) after touching (\d+) of (\d+) pages")


def first(pattern, lines):
    return next((m for m in map(pattern.search, lines) if m), None)


def pressure_row(p):
    """color_pressure: made without / with (per round), huge pages, parked, order-10 blocks."""
    if p is None:
        return ["**did not run**"] * 4
    tries = [m.groups() for m in map(ROUND.search, p.lines) if m]
    # a round's last try counts; earlier ones stopped early (color_pressure.c)
    last = {r: (t, w, m, a, h, n) for r, t, w, m, b, a, h, n in tries}
    made = {w: ", ".join(f"{int(m)} ({a})" + (f" at try {t}" if t != "1" else "")
                         for t, ww, m, a, h, n in last.values() if ww == w) or "-"
            for w in ("without", "with")}
    huge = ", ".join(sorted({f"{h} of {n}" for *_, h, n in last.values()})) or "-"
    pw, o10 = first(PARKED_WHILE, p.lines), first(ORDER10, p.lines)
    parked = f"{int(pw.group(1)):,} / {o10.group(3)}" if pw and o10 else "-"
    blocks = f"{o10.group(1)} / {o10.group(2)}" if o10 else "-"
    return [f"{made['without']}; with: {made['with']}", huge, parked, blocks]


def fragment_cell(p):
    if p is None:
        return "**did not run**"
    free = first(FRAGMENT_FREE, p.lines)
    got = [int(m.group(1)) for m in map(CHILD_PAGES.search, p.lines) if m]
    sigbus = any("SIGBUS" in x for x in p.not_ok())
    text = f"{max(got) if got else 0}+ of 256 pages" if sigbus else ("256 of 256 pages" if not p.not_ok() else "failed")
    return (f"{'**SIGBUS** after ' if sigbus else ''}{text}"
            + (f" ({free.group(1)} free frames of the colour)" if free else ""))


def reclaim_cell(p):
    if p is None:
        return "**did not run**"
    m = first(RECLAIM, p.lines)
    return (f"{p.tap()}" + (f"; page cache {m.group(1)} → {m.group(2)} MiB, reclaimed {m.group(3)} → {m.group(4)}"
                            if m else ""))


def exhaust_cell(p):
    if p is None:
        return "**did not run**"
    m = first(EXHAUST_BIND, p.lines)
    return p.tap() + (f"; bound child: {m.group(1)} after {m.group(2)} of {m.group(3)} pages" if m else "")


def main(argv=None):
    ap = cli.parser(__doc__)
    ap.add_argument("--boots", type=int, default=5, help="boots of the guest (default 5)")
    ap.add_argument("--name", default="kernel-memory-pressure")
    a = ap.parse_args(argv)
    if a.boots < 1:
        ap.error("--boots must be at least 1")
    say = cli.say_fn(a.quiet)
    initramfs = guest.build("initramfs-pressure")
    res = report.Result(a.name, "Page colouring under memory pressure (inside the guest)",
                        outdir=a.outdir, system=[
                            f"{guest.GUEST}, 256 colours from the guest's LLC geometry",
                            ("Programs: `color_pressure`, `color_fragment`, `color_reclaim`, `color_exhaust` "
                             "in kernel-patch/selftests (their header comments say what they do)")])
    res.guard = cli.start_guard(a, say, own_load=1)
    boots = guest.guarded_boots(res.guard, initramfs, a.boots, "pressure", say=say)
    passed = sum(b.rc == 0 for b in boots)
    res.add(guest.release_line(boots))
    res.add(f"{passed} of {a.boots} boots passed (boot-test.sh: every program's TAP ok, dmesg clean, "
            "the sentinel line reached).\n")
    res.add("## Compaction and parked pages (`color_pressure`)\n\n"
            "Rounds alternate without and with a process holding a bind policy on colours 0-7 and 1,024 "
            "coloured pages; after a warm-up round (not shown), each round fragments memory and compacts it. "
            "\"Made\" is the huge-page-sized free blocks compaction made (in brackets: the blocks after it); "
            "the coloured process parks pages before the fragmenter runs, so the rounds with it start from "
            "fewer blocks.\n")
    res.table(["boot", "made without; with", "huge pages faulted after", "pages parked: while it ran / after it exited",
               "order-10 free blocks: before / after"],
              [[i] + pressure_row(b.programs.get("color_pressure")) for i, b in enumerate(boots, 1)])
    res.add("## A bind policy on fragmented memory, beside page cache, and at exhaustion\n")
    res.table(["boot", "`color_fragment`: a child bound to one colour", "`color_reclaim`", "`color_exhaust`"],
              [[i, fragment_cell(b.programs.get("color_fragment")), reclaim_cell(b.programs.get("color_reclaim")),
                exhaust_cell(b.programs.get("color_exhaust"))] for i, b in enumerate(boots, 1)])
    res.add("Logs: " + ", ".join(guest.log_name(b) for b in boots) + ".\n\n"
            "What each fix of the series changed, measured against the series before it, is in "
            "kernel-patch/TESTING.md (those before/after runs used series that are no longer on main).")
    return res


if __name__ == "__main__":
    raise SystemExit(cli.run(main))
