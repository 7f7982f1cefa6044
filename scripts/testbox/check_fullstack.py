#!/usr/bin/env python3
"""Check what the test box guest (scripts/testbox/guest/fullstack) recorded.

Reads the unpacked archive (var/testbox/out), prints TAP, writes a Markdown
report and exits 1 if a check failed.  The page data come from the guest's
`pagecolor --pages PID` (one line per resident page of anonymous and shared
memory, from /proc/PID/pagemap) and /proc/PID/color_maps, taken for both
backends before the co-run ("base"), about every TCG second during it and
once after the queries ("end").
"""
import argparse
import datetime
import os
import platform
import re
import sys
from collections import Counter
from pathlib import Path

TROUBLE = re.compile(r"BUG:|WARNING:|Oops|KASAN|general protection fault|UBSAN|Bad page|"
                     r"list_(add|del) corruption|blocked for more than|deadlock|"
                     r"inconsistent lock state|suspicious RCU usage")


def parse_list(text):
    """'0-2,5' -> {0, 1, 2, 5}"""
    out = set()
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        elif part:
            out.add(int(part))
    return out


def fmt_list(colors):
    colors = sorted(colors)
    runs, i = [], 0
    while i < len(colors):
        j = i
        while j + 1 < len(colors) and colors[j + 1] == colors[j] + 1:
            j += 1
        runs.append(str(colors[i]) if i == j else f"{colors[i]}-{colors[j]}")
        i = j + 1
    return ",".join(runs)


class Vma:
    def __init__(self, line):
        fields = line.split(None, 5)
        start, end = fields[0].split("-")
        self.start, self.end = int(start, 16), int(end, 16)
        self.perms = fields[1]
        self.path = fields[5] if len(fields) > 5 else ""
        self.pages = {}          # vaddr -> (pfn, colour), anonymous/shared memory
        self.hist = Counter()    # colour -> pages, file mappings

    @property
    def private_anon(self):
        return self.perms[3] == "p" and (self.path in ("", "[heap]", "[stack]"))


def read_pages(path):
    vmas = []
    for line in path.read_text().splitlines():
        if line.startswith("vma "):
            vmas.append(Vma(line[4:]))
        elif line.startswith("hist"):
            for item in line.split()[1:]:
                c, n = item[1:].split("=")
                vmas[-1].hist[int(c)] += int(n)
        elif line and not line.startswith("#"):
            va, pfn, c = line.split()
            vmas[-1].pages[int(va, 16)] = (int(pfn, 16), int(c))
    return vmas


def read_cmap(path):
    """color_maps: '<start>-<end> <mode> <colours> N<c>=<pages>...'"""
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        start, end = (int(x, 16) for x in f[0].split("-"))
        counts = {int(k[1:]): int(v) for k, v in (x.split("=") for x in f[3:])}
        out.append((start, end, f[1], f[2], counts))
    return out


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = []
        self.rows = []

    def __call__(self, ok, what, detail=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {what}" + (f" ({detail})" if detail else ""))
        self.rows.append((ok, what, detail))
        if not ok:
            self.failed.append(what)
        return ok


def main():
    a = parse_args()
    t = Tap()
    try:
        return check(a, t)
    except (OSError, ValueError, IndexError) as e:
        # A guest that stopped early leaves files missing or empty.
        t(False, "the guest recorded everything the checks need", f"{type(e).__name__}: {e}")
        print(f"# {t.n - len(t.failed)} of {t.n} checks passed")
        return 1


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--boot-rc", type=int, default=0)
    ap.add_argument("--scale", default="?")
    ap.add_argument("--plq-hash", default="?")
    ap.add_argument("--plq-index", default="?")
    ap.add_argument("--mem", default="?")
    ap.add_argument("--cmd", default="scripts/testbox/testbox.sh")
    ap.add_argument("--guard", type=Path, help="the quiet-machine guard's lines for the guest run")
    ap.add_argument("--record", type=Path,
                    help="also write the report to this results page, keeping its index and analysis blocks")
    return ap.parse_args()


def check(a, t):
    out = a.out
    notes = []

    t(a.boot_rc == 0, "guest booted, its own steps passed, console clean (boot-test.sh)",
      f"exit {a.boot_rc}")
    nr = int((out / "nr_colors").read_text())
    part = (out / "partition.txt").read_text().strip().split("|")
    backend, pool_text, status = part[0], part[1], part[3]
    nbuffers = int(part[5]) if len(part) > 5 else 0
    t(backend == "page colours", "mccdb partitions with page colours", status)
    pool = parse_list(pool_text)
    hash_colors = set(range(nr)) - pool or set(range(nr))
    t(0 < len(pool) < nr, "the buffer pool has some colours, not all",
      f"pool {pool_text} of {nr}; shared_buffers {part[4]}")

    classes = {}
    for kind in ("hash", "index"):
        text = (out / f"explain-{kind}.txt").read_text()
        m = re.search(r"\b(strong|moderate|weak)\b", text, re.I)
        classes[kind] = m.group(1).lower() if m else "?"
    t(classes["hash"] in ("strong", "moderate") and classes["index"] == "weak",
      "EXPLAIN: the hash join is strong or moderate, the index join weak",
      f"hash {classes['hash']}, index {classes['index']}")

    snaps = {k: sorted(out.glob(f"snap-{k}-*.pages")) for k in ("hash", "index")}
    parsed = {p: read_pages(p) for k in snaps for p in snaps[k]}
    base = {k: parsed[out / f"snap-{k}-base.pages"] for k in ("hash", "index")}
    t(all(len(v) >= 3 for v in snaps.values()), "snapshots before, during and after the co-run",
      f"hash {len(snaps['hash'])}, index {len(snaps['index'])}")

    # Buffer pool: the VMA color_maps shows with the pool's policy.
    pool_len = nbuffers * 8192
    pool_vma_ok, pool_hist, outside_pool, cmap_outside = True, Counter(), 0, 0
    for kind in ("hash", "index"):
        for p in snaps[kind]:
            cm = [e for e in read_cmap(p.with_suffix(".cmap"))
                  if e[2] == "preferred" and parse_list(e[3]) == pool]
            big = [e for e in cm if pool_len <= e[1] - e[0] <= pool_len + 8192]
            if not big:
                pool_vma_ok = False
                continue
            start, end, _, _, counts = big[0]
            cmap_outside += sum(n for c, n in counts.items() if c not in pool)
            vma = [v for v in parsed[p] if v.start == start and v.end == end]
            if not vma:
                pool_vma_ok = False
                continue
            h = Counter(c for _, c in vma[0].pages.values())
            outside_pool += sum(n for c, n in h.items() if c not in pool)
            if sum(h.values()) > sum(pool_hist.values()):
                pool_hist = h
    t(pool_vma_ok, "both backends map the buffer pool as one VMA, preferred on the pool colours",
      f"{pool_len // 1048576} MiB")
    t(sum(pool_hist.values()) > 0 and outside_pool == 0 and cmap_outside == 0,
      "every resident buffer pool page has a buffer-pool colour (pagemap and color_maps)",
      f"up to {sum(pool_hist.values())} pages resident; {outside_pool} outside by pagemap, "
      f"{cmap_outside} by color_maps")

    def new_private(kind):
        """Pages of private anonymous memory not present (same PFN) at base."""
        seen = {(va, pfn) for v in base[kind] if v.private_anon for va, (pfn, _) in v.pages.items()}
        per_snap = []
        for p in snaps[kind]:
            pages = {(va, pfn, c) for v in parsed[p] if v.private_anon
                     for va, (pfn, c) in v.pages.items() if (va, pfn) not in seen}
            per_snap.append((p.stem, pages))
        return per_snap

    hsnaps = new_private("hash")
    hall = set().union(*(s for _, s in hsnaps))
    hout = Counter(c for _, _, c in hall if c not in hash_colors)
    peak_name, peak = max(hsnaps, key=lambda s: len(s[1]))
    hh = Counter(c for _, _, c in peak)
    t(len(hall) > 0 and not hout,
      "the hash join's new pages are all on the colours mccdb gave it",
      f"{len(hall)} new pages over all snapshots, {sum(hout.values())} outside {fmt_list(hash_colors)}")
    per_color = [hh.get(c, 0) for c in sorted(hash_colors)]
    mean = sum(per_color) / len(per_color)
    spread_ok = min(per_color) > 0 and max(per_color) <= 2 * mean + 1
    t(spread_ok, "the hash table is spread over all of those colours",
      f"snapshot {peak_name}: {len(peak)} pages, per colour min {min(per_color)}, "
      f"mean {mean:.1f}, max {max(per_color)}")

    isnaps = new_private("index")
    iall = set().union(*(s for _, s in isnaps))
    iout = Counter(c for _, _, c in iall if c not in pool)
    t(len(iall) > 0 and not iout,
      "the index join never got a page outside its colours (the buffer pool's)",
      f"{len(iall)} new pages over all snapshots, {sum(iout.values())} outside {pool_text}")

    rows = []
    for line in (out / "recent.txt").read_text().splitlines():
        f = line.split("|")
        if len(f) >= 7 and f[4]:
            rows.append(f)
    hpid, ipid = (out / "hash.pid").read_text().strip(), (out / "index.pid").read_text().strip()
    hrun = [r for r in rows if r[0] == hpid]
    irun = [r for r in rows if r[0] == ipid]
    overlap = False
    if hrun and irun:
        h, i = hrun[-1], irun[-1]
        overlap = float(h[4]) < float(i[5]) and float(i[4]) < float(h[5])
        notes.append(f"mccdb_recent_queries: hash join {h[1]}, estimated {h[2]} B, actual {h[3]} B, "
                     f"waited {float(h[6]):.0f} ms; index join {i[1]}, waited {float(i[6]):.0f} ms")
    t(overlap, "MLS admitted the hash join and the index join together (admitted/released overlap)")

    for kind in ("hash", "index"):
        got = (out / f"mccdb-{kind}.txt").read_text().strip()
        want = (out / f"stock-{kind}.txt").read_text().strip()
        t(got == want and re.fullmatch(r"\d+", got) is not None,
          f"{kind}-join result with mccdb equals the stock server's", got)

    dmesg = (out / "dmesg.txt").read_text()
    bad = [line for line in dmesg.splitlines() if TROUBLE.search(line)]
    t(not bad, "dmesg has no BUG, WARNING, Oops or lockdep report", bad[0] if bad else "")
    slog = "\n".join(p.read_text() for p in sorted(out.glob("server-*.log")))
    errs = [line for line in slog.splitlines() if re.search(r"\b(ERROR|FATAL|PANIC|WARNING):", line)]
    t(not errs, "the server logs have no ERROR, FATAL, PANIC or WARNING", errs[0] if errs else "")

    write_report(a, t, notes, nr, pool_text, hash_colors, pool_hist, hh, peak_name, out)
    print(f"# {t.n - len(t.failed)} of {t.n} checks passed")
    return 1 if t.failed else 0


def guard_lines(path):
    """The quiet-machine guard's record of the guest run (testbox.sh)."""
    try:
        return path.read_text().rstrip("\n")
    except (AttributeError, OSError):
        return "- **No quiet-machine guard record for this guest run.**"


def write_report(a, t, notes, nr, pool_text, hash_colors, pool_hist, hh, peak_name, out):
    hw = (out / "hardware.txt").read_text().strip()
    lines = [
        "# Full stack on the patched kernel (test box)",
        "",
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        "`scripts/testbox/testbox.sh` (`make test-box`): the page colouring kernel "
        "(`kernel-patch/scripts/kernel-tree.sh build guest`) under QEMU TCG, 2 vCPUs, "
        f"{a.mem} MiB, `page_colors={nr}`; PostgreSQL 15 with mccdb preloaded "
        "(mccdb.schedule = mls, 2 co-run slots, partitioning on its defaults), "
        f"SSB SF {a.scale}. PLQ_{a.plq_hash} with a forced hash join and PLQ_{a.plq_index} "
        "with a forced index nested loop run together; the guest snapshots both "
        "backends' pages (`pagecolor --pages`: /proc/PID/pagemap) and "
        "/proc/PID/color_maps throughout, then runs both queries on a stock "
        "server (no mccdb).",
        "",
        f"Host: {platform.node()}, {os.cpu_count()} vCPUs, Linux {platform.release()}. Command: "
        f"`{a.cmd}`.",
        "",
        guard_lines(a.guard),
        "",
        "Guest cache geometry (`pagecolor --hardware`):",
        "",
        "```",
        hw,
        "```",
        "",
        "| # | check | result | detail |",
        "|---|-------|--------|--------|",
    ]
    for i, (ok, what, detail) in enumerate(t.rows, 1):
        lines.append(f"| {i} | {what} | {'ok' if ok else '**FAILED**'} | {detail} |")
    lines += ["", f"Buffer pool colours {pool_text}; pages per colour (pagemap, the fullest snapshot): "
              + ", ".join(f"{c}: {n}" for c, n in sorted(pool_hist.items())), "",
              f"Hash join colours {fmt_list(hash_colors)}; its new pages per colour at "
              f"{peak_name}: " + ", ".join(f"{c}: {hh.get(c, 0)}" for c in sorted(hash_colors)), ""]
    lines += [f"- {n}" for n in notes]
    lines += ["", "What the checks mean: \"new pages\" are pages of private anonymous memory "
              "(heap, anonymous mmaps, stack) whose address and PFN were not there in the "
              "snapshot before the query. The hash join is a prepared statement with a generic "
              "plan, executed once before that snapshot, so the measured execution neither "
              "parses nor plans and all its new pages are the executor's; the index join ran "
              "without warm-up, so all of its planning and execution memory is checked. Shared memory other than "
              "the buffer pool (lock tables, statistics) is not checked: its pages take the "
              "colours of whichever backend touches them first."]
    text = "\n".join(lines) + "\n"
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(text)
    if a.record:
        from mccdb_bench.harness.report import write_page
        write_page(a.record, text)


if __name__ == "__main__":
    sys.exit(main())
