"""Markdown tables, matplotlib plots and the header every result carries."""
import datetime
import os
import pathlib
import re
import shlex
import sys

from ..paths import RESULTS, ROOT

# The page's entry in docs/results/README.md (mccdb_bench.results_index).
INDEX_BLOCK = re.compile(r"<!--\s*results-index\s*\n(.*?)-->", re.S)
STALE = "STALE, from the run before this one: "
# What someone wrote about a run, kept when the page is re-made, marked as
# belonging to the run before (results_index refuses it until it is redone).
ANALYSIS_BLOCK = re.compile(r"<!-- analysis:.*?-->\n.*?<!-- /analysis -->", re.S)
ANALYSIS_STALE = ("**STALE: written for the run before this one; its numbers are that run's, "
                  "not those of the tables above.**")
from . import machine


def md_table(headers, rows):
    """A GitHub Markdown table; cells are str()-ed, '|' escaped."""
    if any(len(r) != len(headers) for r in rows):
        raise ValueError("row length differs from the header")

    def cell(x):
        return str(x).replace("|", "\\|").replace("\n", " ")
    out = ["| " + " | ".join(cell(h) for h in headers) + " |",
           "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def cache_sizes():
    """'L1d 48K, L2 1024K, L3 32768K' from sysfs of cpu0."""
    base = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")
    parts = []
    for d in sorted(base.glob("index*")):
        try:
            level = (d / "level").read_text().strip()
            typ = (d / "type").read_text().strip()
            size = (d / "size").read_text().strip()
        except OSError:
            continue
        if typ == "Instruction":
            continue
        parts.append(f"L{level}{'d' if typ == 'Data' else ''} {size}")
    return ", ".join(parts) or "?"


def command_line():
    """The command that is running, as one would type it in the checkout."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        argv = ["-m", spec.name]      # python -m mccdb_bench.<experiment>
    else:
        arg0 = sys.argv[0]
        if os.path.exists(arg0):
            arg0 = os.path.relpath(os.path.abspath(arg0), ROOT)
        argv = [arg0]
    return ".venv/bin/python " + " ".join(shlex.quote(a) for a in argv + sys.argv[1:])


def write_page(path, text):
    """Write a results page.  The earlier version's analysis block (written by
    hand) and results-index block (docs/results/README.md is made from it)
    are kept, both marked stale: the index refuses the page until someone
    writes them for the new run."""
    path = pathlib.Path(path)
    before = path.read_text() if path.exists() else ""
    analysis = ANALYSIS_BLOCK.search(before)
    if analysis:
        block = analysis.group(0)
        if ANALYSIS_STALE not in block:
            first, _, rest = block.partition("\n")
            block = f"{first}\n{ANALYSIS_STALE}\n\n{rest}"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    old = INDEX_BLOCK.search(before)
    if old:
        block = re.sub(r"^headline: (?!STALE)", "headline: " + STALE, old.group(0), flags=re.M)
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
    return path


def page_tables(text):
    """The Markdown tables of a page, in order: [(headers, rows)] of cell strings."""
    tables, cur = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cur is None:
            cur = (cells, [])
            tables.append(cur)
        elif not all(set(c) <= set("-: ") for c in cells):
            cur[1].append(cells)
    return tables


class Result:
    """Collects one experiment's Markdown; write() puts it in docs/results/NAME.md."""

    def __init__(self, name, title, server=None, scale="", outdir=None, system=None):
        """system: Markdown lines naming what was measured when it is not a
        PostgreSQL server (a guest kernel); they replace the server lines."""
        self.name, self.title = name, title
        self.system = system
        self.outdir = pathlib.Path(outdir) if outdir else RESULTS
        self.load_before = loadavg()
        self.started = datetime.datetime.now()
        self.server = server or {}
        self.scale = scale
        self.body = []
        self.guard = None       # a quiet.Guard, when the experiment used one
        self.machine = None     # the measured machine, when not this one (of_page)

    def add(self, text):
        self.body.append(text.rstrip() + "\n")

    def table(self, headers, rows):
        self.add(md_table(headers, rows))

    def figure(self, fig, suffix="", alt=""):
        import matplotlib
        matplotlib.use("Agg")
        self.outdir.mkdir(parents=True, exist_ok=True)
        png = self.outdir / f"{self.name}{suffix}.png"
        fig.text(0.01, -0.06, f"{self.machine or machine.describe()}; {self.scale}; PostgreSQL "
                 f"{self.server.get('version', '?')}", fontsize=6, color="gray", transform=fig.transFigure)
        fig.savefig(png, dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt
        plt.close(fig)
        self.add(f"![{alt or self.title}]({png.name})")
        return png

    @classmethod
    def of_page(cls, md_path):
        """The Result of an existing page, to redraw its figure from its tables
        (an experiment's --replot): name, scale and server read from the page."""
        path = pathlib.Path(md_path)
        text = path.read_text()
        res = cls(path.stem, "", {}, "", path.parent)
        scale = re.search(r"^- Scale: (.*)$", text, re.M)
        version = re.search(r"^- PostgreSQL (.*?), shared_buffers", text, re.M)
        measured_on = re.search(r"^- Machine: (.*?);", text, re.M)
        res.scale = scale.group(1) if scale else ""
        res.server = {"version": version.group(1) if version else "?"}
        res.machine = measured_on.group(1) if measured_on else None
        return res, text

    def header(self):
        s = self.server
        llc = ""
        if "llc_sysfs" in s:
            llc = (f"; mccdb C = {s['llc_used'] / 1048576:.1f} MB ({s.get('llc_source', '?')}, "
                   f"sysfs LLC {s['llc_sysfs'] / 1048576:.0f} MB)")
        dur = datetime.datetime.now() - self.started
        if self.system is not None:
            under_test = "".join(f"- {line}\n" for line in self.system)
        else:
            under_test = (f"- PostgreSQL {s.get('version', '?')}, shared_buffers {s.get('shared_buffers', '?')}, "
                          f"work_mem {s.get('work_mem', '?')}{llc}\n"
                          f"- Scale: {self.scale}\n"
                          f"- Hardware counters (`mccdb.counters`): {s.get('counters', 'not queried')}\n")
        return (f"# {self.title}\n\n"
                f"- Machine: {machine.describe()}; caches {cache_sizes()}\n"
                + under_test +
                f"- Load average (1/5/15 min) {self.load_start_text()}, after: {loadavg()}\n"
                + (self.guard.summary() if self.guard else "") +
                f"- Run: {self.started:%Y-%m-%d %H:%M}, {dur.total_seconds() / 60:.1f} min\n"
                f"- Command: `{command_line()}`\n\n")

    def load_start_text(self):
        """The load the experiment started at: after the guard's wait, when it waited."""
        if self.guard is not None and self.guard.started_at_load is not None:
            return (f"when the guard let the experiment start: 1-minute {self.guard.started_at_load:.2f} "
                    f"({self.load_before} before it waited)")
        return f"before: {self.load_before}"

    def text(self):
        return self.header() + "\n".join(self.body)

    def write(self):
        """Write NAME.md (write_page())."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        return write_page(self.outdir / f"{self.name}.md", self.text())


def fmt_bytes(b):
    if b is None:
        return "?"
    return f"{b / 1048576:.1f} MB" if b >= 1048576 else f"{b / 1024:.0f} kB"
