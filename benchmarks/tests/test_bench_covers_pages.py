"""make bench re-makes every page of docs/results with the command the page names.

Each measured page names the command that made it (``Command: `...` `` in its
header).  make bench must run exactly that command, or the page is one no one
can reproduce with it.  make bench's commands are read from the Makefiles
(``make -n``) and from benchmarks/run_all.sh (its ``bench MODULE ARGS`` lines
with the script's defaults), never typed here.
"""
import re
import shlex
import subprocess

import pytest

from mccdb_bench.paths import RESULTS, ROOT

# Pages no experiment writes, and who does.
NOT_AN_EXPERIMENT = {
    "README.md": "the index, written by python -m mccdb_bench.results_index",
    "fresh-machine.md": "rows of ../shared/fresh-machine.sh runs (make test and make demo, not make bench)",
    "llcsim-findings.md": "a hand-written reading of the llcsim pages",
}
COMMAND = re.compile(r"Command: `([^`]+)`")
PYTHON = re.compile(r"^\S*python3? -m ")
DEFAULT = re.compile(r"^(\w+)=\$\{\w+:-([^}]*)\}$")
BENCH_LINE = re.compile(r"^\s*bench (\w+)(.*)$")


def normal(cmd):
    """A command with its interpreter's path dropped: `python -m x ...`."""
    return " ".join(shlex.split(PYTHON.sub("python -m ", cmd.strip())))


def run_all_commands():
    """The experiments benchmarks/run_all.sh runs, with its default settings."""
    defaults, cmds = {}, set()
    for line in (ROOT / "benchmarks" / "run_all.sh").read_text().splitlines():
        m = DEFAULT.match(line.strip())
        if m:
            defaults[m.group(1)] = m.group(2)
            continue
        m = BENCH_LINE.match(line)
        if not m:
            continue
        args = []
        for word in shlex.split(m.group(2)):
            word = re.sub(r"\$\{?(\w+)\}?", lambda v: defaults[v.group(1)], word)
            if "*" in word:
                args += sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(word))
            else:
                args.append(word)
        cmds.add(normal(" ".join(["python -m", "mccdb_bench." + m.group(1)] + args)))
    return cmds


def make_commands():
    """The commands of make bench's targets other than bench-native."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), "bench-sim", "bench-guest"],
                         capture_output=True, text=True, check=True).stdout
    return {normal(line) for line in out.splitlines() if line.strip() and not line.startswith("make ")}


@pytest.fixture(scope="module")
def bench_commands():
    return run_all_commands() | make_commands()


def test_run_all_reads_as_expected():
    cmds = run_all_commands()
    assert "python -m mccdb_bench.fig4 --db plq --rounds 5" in cmds
    assert not any("$" in c for c in cmds), "a variable of run_all.sh left unexpanded"


@pytest.mark.parametrize("page", sorted(p.name for p in RESULTS.glob("*.md")))
def test_make_bench_runs_the_command_the_page_names(page, bench_commands):
    if page in NOT_AN_EXPERIMENT:
        pytest.skip(NOT_AN_EXPERIMENT[page])
    m = COMMAND.search((RESULTS / page).read_text())
    assert m, f"{page} names no command"
    assert normal(m.group(1)) in bench_commands, (
        f"{page} was made by `{m.group(1)}`, which make bench does not run")
