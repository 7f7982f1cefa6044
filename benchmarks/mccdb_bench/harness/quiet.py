"""The quiet-machine guard every experiment runs before each configuration.

A benchmark run beside another job (a kernel build, a test suite) measures
that job.  Before the experiment, the 1-minute load average must be below a
threshold (MCCDB_QUIET_LOAD, default 0.5); before each configuration, the
machine's CPUs must be idle while the benchmark is (at most
MCCDB_QUIET_BUSY, default 10 % busy over 2 s, from /proc/stat) -- the load
average would still count the previous configuration's own queries for a
minute or more.  The guard waits (up to MCCDB_QUIET_TIMEOUT seconds,
default 600) and then refuses, saying so.  Every check is recorded, and the
report says when the load rose during a configuration.

Experiments that are not Python (the simulator's guest runs) run behind it
as one configuration:

    python -m mccdb_bench.harness.quiet --summary FILE [--no-guard] -- CMD...

waits for the quiet machine, runs CMD, writes the guard's Markdown lines
to FILE (a report includes them) and exits with CMD's status.
"""
import argparse
import contextlib
import os
import subprocess
import sys
import time


class NotQuiet(RuntimeError):
    pass


def loadavg1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_times():
    """All CPUs' (idle, total) time so far in clock ticks (/proc/stat);
    idle counts iowait too: a CPU waiting for I/O could run something."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + (v[4] if len(v) > 4 else 0), sum(v)


def cpu_busy(seconds=2.0):
    """Fraction of all CPUs' time spent not idle over `seconds`."""
    i0, t0 = cpu_times()
    time.sleep(seconds)
    i1, t1 = cpu_times()
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


class Guard:
    def __init__(self, say=print, load=None, busy=None, timeout=None, own_load=None):
        """own_load: the load the experiment itself makes (its sessions that can
        run at once; default the number of CPUs), beyond which the report warns."""
        self.say = say
        self.own_load = own_load if own_load is not None else (os.cpu_count() or 1)
        self.load = float(load if load is not None else os.environ.get("MCCDB_QUIET_LOAD", "0.5"))
        self.busy = float(busy if busy is not None else os.environ.get("MCCDB_QUIET_BUSY", "0.10"))
        self.timeout = float(timeout if timeout is not None else os.environ.get("MCCDB_QUIET_TIMEOUT", "600"))
        self.checks = []        # (configuration, load before, busy before, load after)
        self.started_at_load = None     # the 1-minute load when start() let the experiment begin

    def _wait(self, what, ok, describe):
        deadline = time.time() + self.timeout
        while True:
            good, value = ok()
            if good:
                return value
            if time.time() > deadline:
                raise NotQuiet(f"the machine is not quiet before {what}: {describe(value)} after waiting "
                               f"{self.timeout:.0f} s; stop the other work (builds, tests) and run again")
            self.say(f"  waiting for a quiet machine before {what}: {describe(value)}")
            time.sleep(10)

    def start(self):
        """Before the experiment: the 1-minute load average under the threshold."""
        self.started_at_load = self._wait("the experiment", lambda: ((v := loadavg1()) < self.load, v),
                                          lambda v: f"1-minute load average {v:.2f} >= {self.load}")
        return self.started_at_load

    def before(self, config):
        """Before one configuration: the CPUs idle while the benchmark is."""
        busy = self._wait(config, lambda: ((b := cpu_busy()) <= self.busy, b),
                          lambda b: f"CPUs {100 * b:.0f}% busy > {100 * self.busy:.0f}%")
        self.checks.append([config, loadavg1(), busy, None])

    def after(self):
        if self.checks and self.checks[-1][3] is None:
            self.checks[-1][3] = loadavg1()

    @contextlib.contextmanager
    def measuring(self, config):
        """before(config), the body, after(): one guarded configuration."""
        self.before(config)
        try:
            yield
        finally:
            self.after()

    def summary(self):
        """Markdown lines for the report: the guard's settings and what it saw."""
        if not self.checks:
            return ""
        busy = max(c[2] for c in self.checks)
        loads = [c[1] for c in self.checks] + [c[3] for c in self.checks if c[3] is not None]
        text = (f"- Quiet-machine guard: 1-minute load < {self.load} before the experiment; before each of "
                f"{len(self.checks)} configuration{'s' if len(self.checks) != 1 else ''} the CPUs were at most {100 * busy:.0f}% busy over 2 s "
                f"(limit {100 * self.busy:.0f}%); 1-minute load during the run {min(loads):.2f}-{max(loads):.2f} "
                f"(the benchmark's own sessions reach {self.own_load})\n")
        if max(loads) > self.own_load + 0.5:
            text += (f"- **Warning: the 1-minute load reached {max(loads):.2f}, more than the benchmark's "
                     f"own {self.own_load} sessions explain: something else ran during this experiment.**\n")
        return text


class Unguarded:
    """The guard's stand-in under --no-guard (tests): checks nothing, and the
    report's header says that the page was written without the guard."""
    started_at_load = None
    checks = ()

    def start(self):
        return None

    def before(self, config):
        pass

    def after(self):
        pass

    @contextlib.contextmanager
    def measuring(self, config):
        yield

    def summary(self):
        return ("- **No quiet-machine guard (--no-guard): a test run; its numbers are not results.**\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Run one command behind the quiet-machine guard.")
    ap.add_argument("--summary", required=True, help="file for the guard's Markdown lines")
    ap.add_argument("--own-load", type=float, help="the load the command itself makes (default: the CPUs)")
    ap.add_argument("--what", default="the run", help="the configuration's name in messages")
    ap.add_argument("--no-guard", action="store_true", help="check nothing (tests); the lines say so")
    ap.add_argument("command", nargs="+", help="the command (after --)")
    a = ap.parse_args(argv)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731 -- stdout belongs to the command
    guard = Unguarded() if a.no_guard else Guard(say, own_load=a.own_load)
    before = " ".join(open("/proc/loadavg").read().split()[:3])
    try:
        started = guard.start()
        with guard.measuring(a.what):
            rc = subprocess.run(a.command).returncode
    except NotQuiet as e:
        say(f"quiet: {e}")
        return 75     # EX_TEMPFAIL: nothing ran
    after = " ".join(open("/proc/loadavg").read().split()[:3])
    start = (f"when the guard let the run start: 1-minute {started:.2f} ({before} before it waited)"
             if started is not None else f"before: {before}")
    with open(a.summary, "w") as f:
        f.write(f"- Host load average (1/5/15 min) {start}, after: {after}\n" + guard.summary())
    return rc


if __name__ == "__main__":
    sys.exit(main())
