#!/usr/bin/env python3
"""Check that the docs quote the results pages as the pages say (issue 52).

Usage: scripts/check-doc-claims.py [ROOT]     (ROOT: the repository, default
this script's parent's parent).  Exit 0 and "ok" when every rule holds, else
exit 1 and one line per violation: `file:line: rule: what`.  Python 3.11
standard library only; reads files, runs nothing.

Units (what "next to" means)
----------------------------
A Markdown file is cut into units; fenced code blocks are skipped.

- A table row (a line starting with `|`) is a unit.  A row whose first cell
  is empty continues the row above it and takes that row's links too.  A
  table none of whose rows links a page takes the links of the paragraph
  right above it (its caption).
- Any other text is cut into paragraphs: runs of non-blank lines, broken at
  a blank line, a heading (`#`), a list item (`- `, `* `, `1. `) and a table.
- A paragraph is cut into sentences at a full stop followed by white space
  and a capital letter or a backtick.

A number is next to a link when it is in the same table row as the link
(continuations and captions as above), or in the same sentence; a number in a
sentence without a link is next to the links of its paragraph, if it has any.
Several links: the number must be on at least one of their pages.

Links: a Markdown link target, or a bare path or file name, naming an
existing docs/results/NAME.md (`results/x.md`, `docs/results/x.md`, `x.md`,
or a glob such as `llcsim-map-llc*.md`, which names every page it matches),
or a bare page name with a hyphen that is the stem of such a page
(`llcsim-compare`).

Rules
-----
(a) numbers: in README.md, docs/usage.md and docs/design.md, every number
    next to a link to a results page must appear on that page.  Numbers are
    ratios `1.07x` (decimals only: `4x the table` is a size, not a result),
    both ends of ranges `0.95-1.08x` and of intervals `(0.88-1.43)`,
    percentages `15%` / `12-36%`, seconds with decimals `8.61 s` and
    milliseconds `6 ms`; in a table row every decimal number.  Code spans
    are skipped, and so is a parenthesis right after one (a setting and
    its value: `mccdb.short_query` (250 ms)).  On the page, every number counts once thousands
    separators are dropped (`13,218` = 13218) and trailing zeros are
    ignored (`1.5` = `1.50`).  A percentage p matches a percentage p on the
    page (`p%`) or a ratio 1 + p/100 or 1 - p/100 (`36% later` for `1.36`);
    a ratio r matches any number r or a percentage 100 |r - 1| (`1.50x` for
    `50%`).
(b) the simulator's caveat: CAVEAT (below, case and line breaks ignored)
    must be
    - on every page under docs/ (and benchmarks/llcsim/README.md) that
      quotes a simulated figure: a unit that links or names an llcsim page,
      or says simulator / simulated / "the model", and has a ratio or a
      percentage in it; and on every llcsim-*.md page (not on
      docs/results/fresh-machine.md, a log of test runs, NOT_RESULTS);
    - in that very unit (paragraph or table row) in README.md,
      docs/usage.md, docs/design.md and benchmarks/llcsim/README.md;
    - in the first paragraph of docs/results/llcsim-findings.md after its
      title (the findings lead with it).
(c) stale "not yet": no unit under docs/ (or in README.md) says a thing is
    not measured / run / written yet (NOT_YET) unless it names a results
    page that does not exist (`x.md` with no docs/results/x.md).  A
    "not yet" that names no page at all is reported too: name the page
    that is missing, or say what exists.
"""
import fnmatch
import pathlib
import re
import sys
from decimal import Decimal, InvalidOperation

CAVEAT = "fails validation against PostgreSQL"
SOURCES = ("README.md", "docs/usage.md", "docs/design.md")
LLCSIM_README = "benchmarks/llcsim/README.md"
FINDINGS = "docs/results/llcsim-findings.md"
NOT_YET = re.compile(r"\bnot\s+(?:yet\s+(?:measured|run|written)|(?:measured|run|written)\s+yet)\b", re.I)

NUM = r"\d+(?:\.\d+)?"
DEC = r"\d+\.\d+"
RATIO = re.compile(rf"(?<![\w.])({DEC})(?:\s*-\s*({DEC}))?\s*x\b")
INTERVAL = re.compile(rf"\(({DEC})\s*-\s*({DEC})\)")
PERCENT = re.compile(rf"(?<![\w.+-])({NUM})(?:\s*-\s*({NUM}))?\s*%")
SECONDS = re.compile(rf"(?<![\w.])({DEC})\s*s\b")
MILLIS = re.compile(rf"(?<![\w.])({NUM})\s*ms\b")
ANY_DEC = re.compile(rf"(?<![\w.])({DEC})(?![\w.]*\d)")
PAGE_NUM = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
CODE_SPAN = re.compile(r"`[^`]*`")
SETTING = re.compile(r"`[^`]*`\s*\([^()]*\)")     # `mccdb.short_query` (250 ms): a setting's value
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
BARE_MD = re.compile(r"(?<![\w/.*-])((?:[\w.-]+/)*[\w.*-]+\.md)\b")
STEM = re.compile(r"(?<![\w/.-])([a-z0-9]+(?:[.-][a-z0-9]+)*-[a-z0-9.]*[a-z0-9])(?![\w/-]|\.md)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z`])")
SIM_WORDS = re.compile(r"\bsimulat(?:or|ed|ion)\b|\bthe model\b", re.I)
NOT_RESULTS = {"docs/results/fresh-machine.md"}   # a log of test runs: quotes test outcomes, not results
SIM_FIGURE = re.compile(rf"(?<![\w.])(?:{DEC}\s*x\b|{NUM}\s*%|{NUM}(?:-{NUM})? points?\b)")


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


class Unit:
    """A table row or a paragraph: its text, first line, links (page stems)."""

    def __init__(self, kind, line, text):
        self.kind, self.line, self.text = kind, line, text
        self.links = set()
        self.sentences = []     # [(text, links)] for paragraphs


class Checker:
    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.results = self.root / "docs" / "results"
        self.pages = {p.stem: p for p in sorted(self.results.glob("*.md"))}
        self.page_numbers = {}
        self.errors = []

    # --- links -------------------------------------------------------------

    def links_in(self, text):
        """Stems of the results pages text links or names (code spans included:
        `docs/results/x.md` in backticks is still a reference)."""
        found = set()
        targets = [t.split("#")[0] for t in MD_LINK.findall(text)] + BARE_MD.findall(text)
        for t in targets:
            name = t.rsplit("/", 1)[-1]
            if not name.endswith(".md"):
                continue
            if "/" in t and "results/" not in t and not t.startswith("results"):
                if not (t.startswith("../results/") or "/" not in t.rstrip("/")):
                    continue
            stem = name[:-3]
            if "*" in stem:
                found |= {s for s in self.pages if fnmatch.fnmatch(s, stem)}
            elif stem in self.pages and stem != "README":
                found.add(stem)
        for stem in STEM.findall(text):
            if stem in self.pages:
                found.add(stem)
        return found

    def missing_pages_named(self, text):
        """File names x.md in text with no docs/results/x.md (and not another doc)."""
        out = []
        for t in MD_LINK.findall(text) + BARE_MD.findall(text):
            name = t.split("#")[0].rsplit("/", 1)[-1]
            if name.endswith(".md") and "*" not in name and name[:-3] not in self.pages \
                    and not (self.root / "docs" / name).exists() and not (self.root / name).exists():
                out.append(name)
        return out

    # --- units ---------------------------------------------------------------

    def units(self, text):
        lines = text.splitlines()
        units, para, para_line, fence = [], [], 0, False
        last_para = None        # the paragraph right above the current table
        table = []              # rows of the current table

        def close_para():
            nonlocal para, last_para
            if para:
                u = Unit("para", para_line, " ".join(s.strip() for s in para))
                u.links = self.links_in(u.text)
                for s in SENTENCE_END.split(u.text):
                    u.sentences.append((s, self.links_in(s)))
                units.append(u)
                last_para = u
            para = []

        def close_table():
            nonlocal table
            if table and not any(r.links for r in table) and last_para is not None:
                for r in table:
                    r.links = set(last_para.links)
            table = []

        for i, raw in enumerate(lines, 1):
            s = raw.strip()
            if s.startswith("```") or s.startswith("~~~"):
                close_para()
                close_table()
                fence = not fence
                continue
            if fence:
                continue
            if s.startswith("|"):
                close_para()
                cells = [c.strip() for c in s.strip("|").split("|")]
                if all(set(c) <= set("-: ") for c in cells):
                    continue
                u = Unit("row", i, s)
                u.links = self.links_in(s)
                if table and cells and cells[0] == "" and not u.links:
                    u.links = set(table[-1].links)
                    u.continues = True
                table.append(u)
                units.append(u)
                continue
            close_table()
            if not s or s.startswith("#"):
                close_para()
                if s.startswith("#"):
                    last_para = None
                continue
            if LIST_ITEM.match(raw):
                close_para()
            if not para:
                para_line = i
            para.append(raw)
        close_para()
        close_table()
        # a continuation row inherits what its first row got from a caption
        prev = None
        for u in units:
            if u.kind == "row" and getattr(u, "continues", False) and prev is not None and not u.links:
                u.links = set(prev.links)
            if u.kind == "row":
                prev = u
        return units

    # --- rule (a) --------------------------------------------------------------

    def numbers_of_page(self, stem):
        """(every number, the numbers written as percentages) of a page."""
        if stem not in self.page_numbers:
            text = self.pages[stem].read_text()
            nums, pcts = set(), set()
            for m in PAGE_NUM.finditer(text):
                try:
                    v = Decimal(m.group(0).replace(",", "")).normalize()
                except InvalidOperation:
                    continue
                nums.add(v)
                if re.match(r"\s*%", text[m.end():]):
                    pcts.add(v)
            self.page_numbers[stem] = (nums, pcts)
        return self.page_numbers[stem]

    @staticmethod
    def quoted(text, table_row):
        """[(kind, number string)] of the figures text quotes."""
        text = CODE_SPAN.sub(" ", SETTING.sub(" ", text))
        out = []
        spans = []
        for rx, kind in ((RATIO, "ratio"), (INTERVAL, "ratio"), (PERCENT, "percent"),
                         (SECONDS, "number"), (MILLIS, "number")):
            for m in rx.finditer(text):
                spans.append(m.span())
                out += [(kind, g) for g in m.groups() if g]
        if table_row:
            for m in ANY_DEC.finditer(text):
                if not any(a <= m.start() < b for a, b in spans):
                    out.append(("number", m.group(1)))
        return out

    def on_page(self, kind, num, stems):
        v = Decimal(num).normalize()
        for stem in stems:
            nums, pcts = self.numbers_of_page(stem)
            if kind == "percent":
                if v in pcts or any((r.quantize(Decimal("0.01")).normalize() in nums)
                                    for r in (1 + v / 100, 1 - v / 100) if 0 < r < 10):
                    return True
                continue
            if v in nums:
                return True
            if kind == "ratio" and (((v - 1) * 100).normalize() in pcts or ((1 - v) * 100).normalize() in pcts):
                return True
        return False

    def check_numbers(self, rel):
        path = self.root / rel
        if not path.exists():
            return
        for u in self.units(path.read_text()):
            if u.kind == "row":
                groups = [(u.text, u.links)]
            else:
                groups = [(s, links or u.links) for s, links in u.sentences]
            for text, links in groups:
                if not links:
                    continue
                for kind, num in self.quoted(text, u.kind == "row"):
                    if not self.on_page(kind, num, links):
                        self.errors.append(f"{rel}:{u.line}: numbers: {num}{'%' if kind == 'percent' else ''} "
                                           f"is not on {', '.join(sorted(s + '.md' for s in links))}")

    # --- rule (b) --------------------------------------------------------------

    def quotes_simulator(self, u):
        sim = any(s.startswith("llcsim") for s in u.links) or SIM_WORDS.search(u.text)
        return bool(sim and SIM_FIGURE.search(CODE_SPAN.sub(" ", u.text)))

    def has_caveat(self, text):
        return CAVEAT.lower() in squash(text).lower()

    def check_caveat(self, rel, per_unit):
        path = self.root / rel
        if not path.exists():
            return
        text = path.read_text()
        units = self.units(text)
        quoting = [u for u in units if self.quotes_simulator(u)]
        if (quoting or path.name.startswith("llcsim-")) and not self.has_caveat(text):
            first = quoting[0].line if quoting else 1
            self.errors.append(f"{rel}:{first}: caveat: quotes the simulator without '{CAVEAT}' on the page")
        if per_unit:
            for u in quoting:
                if not self.has_caveat(u.text):
                    self.errors.append(f"{rel}:{u.line}: caveat: a simulated figure without '{CAVEAT}' "
                                       f"in the same {'table row' if u.kind == 'row' else 'paragraph'}")
        if rel == FINDINGS:
            lead = next((u for u in units if u.kind == "para"), None)
            if lead is None or not self.has_caveat(lead.text):
                self.errors.append(f"{rel}:{lead.line if lead else 1}: caveat: the findings do not lead "
                                   f"with '{CAVEAT}'")

    # --- rule (c) --------------------------------------------------------------

    def check_not_yet(self, rel):
        path = self.root / rel
        for u in self.units(path.read_text()):
            m = NOT_YET.search(squash(u.text))
            if not m:
                continue
            if self.missing_pages_named(u.text):
                continue
            named = sorted(s + ".md" for s in u.links)
            what = f"about {', '.join(named)}, which exist" if named else "naming no missing page"
            self.errors.append(f"{rel}:{u.line}: not-yet: '{m.group(0)}' {what}")

    # --- all -------------------------------------------------------------------

    def run(self):
        for rel in SOURCES:
            self.check_numbers(rel)
        docs = sorted(str(p.relative_to(self.root)) for p in (self.root / "docs").rglob("*.md"))
        for rel in [d for d in docs if d not in NOT_RESULTS] + [LLCSIM_README]:
            self.check_caveat(rel, per_unit=rel in SOURCES or rel == LLCSIM_README)
        for rel in docs + ["README.md"]:
            if (self.root / rel).exists():
                self.check_not_yet(rel)
        return self.errors


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    root = pathlib.Path(argv[0]) if argv else pathlib.Path(__file__).resolve().parent.parent
    errors = Checker(root).run()
    for e in errors:
        print(e)
    print(f"{len(errors)} violation(s)" if errors else "ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
