"""CPU time a PostgreSQL server spends, from /proc/PID/stat: every process of it.

A pgbench run's backends are born after the run starts and exit when it
ends, so reading each live process's time before and after misses them.
The kernel adds a process's utime and stime to its parent's cutime and
cstime when the parent reaps it, and the postmaster reaps every backend,
worker and auxiliary process.  So the server's CPU time at an instant is

    postmaster's utime + stime + cutime + cstime
    + for each live child: its utime + stime + cutime + cstime

and its difference over a run is all the CPU the server used in it, the
backends that came and went included.  A child that exited but was not
reaped yet (a zombie) still shows its own times, so it is counted once
either way; settle() waits until the run's backends are gone before the
second reading all the same.

Resolution: /proc reports clock ticks (SC_CLK_TCK, usually 100 a second),
10 ms per process and reading; over a run of seconds with 1-16 backends
that is well under 1% of the total.  Waiting for a CPU is not counted:
this is less disturbed by other work on the machine than throughput is
(cache and memory-bandwidth contention still show).
"""
import os
import time

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_stat(text):
    """(pid, ppid, utime, stime, cutime, cstime) in ticks from one
    /proc/PID/stat line.  The command name (field 2) is in parentheses and
    may hold spaces and parentheses itself: the fields after it are read
    from the last ')'."""
    pid = int(text.split(" ", 1)[0])
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime..cstime are 14..17
    ppid = int(rest[1])
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    return pid, ppid, utime, stime, cutime, cstime


def read_stat(pid, proc="/proc"):
    """parse_stat of /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"{proc}/{pid}/stat") as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def children(pid, proc="/proc"):
    """PIDs of the live processes whose parent is pid (a scan of /proc)."""
    out = []
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        st = read_stat(name, proc)
        if st is not None and st[1] == pid:
            out.append(st[0])
    return out


def tree_ticks(postmaster, proc="/proc", tries=20, user_only=False):
    """(ticks, live children's PIDs): the server's CPU time so far, as the
    module's docstring sums it (user_only: utime and cutime alone).  A child reaped between reading it and
    reading the postmaster would be counted twice or not at all, so the
    reading is taken again until the children were the same before and
    after it.  RuntimeError when the postmaster is not readable (a server
    on another host, or not running)."""
    for _ in range(tries):
        kids_before = sorted(children(postmaster, proc))
        st = read_stat(postmaster, proc)
        if st is None:
            raise RuntimeError(f"/proc/{postmaster}/stat is not readable: the server must run on this host")
        # utime, stime, cutime, cstime are st[2:6]
        fields = (2, 4) if user_only else (2, 3, 4, 5)
        total = sum(st[i] for i in fields)
        kids = []
        for child in kids_before:
            c = read_stat(child, proc)
            if c is not None and c[1] == postmaster:
                total += sum(c[i] for i in fields)
                kids.append(child)
        if kids == kids_before and sorted(children(postmaster, proc)) == kids_before:
            return total, kids
    return total, kids


def seconds(ticks):
    return ticks / CLK_TCK


class ServerCPU:
    """The server's CPU seconds over a run: start(), the run, stop()."""

    def __init__(self, postmaster, proc="/proc"):
        self.postmaster, self.proc = int(postmaster), proc
        self.t0 = self.before = None

    def start(self):
        self.t0, kids = tree_ticks(self.postmaster, self.proc)
        self.before = set(kids)
        return self

    def settle(self, timeout=5.0, poll=0.02):
        """Wait (up to timeout s) until no client backend is left that was
        not there at start(): the run's backends have exited and were
        reaped (autovacuum workers, which come and go by themselves, are
        not waited for)."""
        return settle(self.postmaster, self.before, timeout, poll, self.proc)

    def stop(self, settle=True):
        """CPU seconds since start(); settles first (settle=False: not)."""
        if settle:
            self.settle()
        t1, _ = tree_ticks(self.postmaster, self.proc)
        return seconds(t1 - self.t0)


def cmdline(pid, proc="/proc"):
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def settle(postmaster, before=(), timeout=5.0, poll=0.02, proc="/proc"):
    """Wait (up to timeout s) until every child of postmaster that is not
    in before is an autovacuum worker; True if it came to that."""
    before = set(before)
    deadline = time.monotonic() + timeout
    while True:
        new = [p for p in children(postmaster, proc) if p not in before]
        if all("autovacuum worker" in cmdline(p, proc) for p in new):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def postmaster_of(backend_pid, proc="/proc"):
    """The postmaster's PID: a backend's parent."""
    st = read_stat(backend_pid, proc)
    if st is None:
        raise RuntimeError(f"backend {backend_pid} is not in {proc}: the server must run on this host")
    return st[1]
