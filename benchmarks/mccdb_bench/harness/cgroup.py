"""A memory cgroup to run a PostgreSQL server in, with a limit: cgroup v1
(/sys/fs/cgroup/memory/NAME, memory.limit_in_bytes) where the memory
controller is mounted that way, else cgroup v2 (/sys/fs/cgroup/NAME,
memory.max).  Writing the control files needs root: as another user they
are written through `sudo -n tee`.

What a benchmark reads of it: the peak (v1 memory.max_usage_in_bytes, v2
memory.peak where the kernel has it) and the OOM kills in it (oom_kill of
v1 memory.oom_control, of v2 memory.events).
"""
import os
import pathlib
import subprocess

ROOT = pathlib.Path("/sys/fs/cgroup")


def _write(path, value):
    if os.geteuid() == 0:
        path.write_text(f"{value}\n")
    else:
        subprocess.run(["sudo", "-n", "tee", str(path)], input=f"{value}\n", text=True,
                       check=True, stdout=subprocess.DEVNULL)


def _keyed(path):
    """A flat keyed file (memory.oom_control, memory.events) as a dict of ints."""
    out = {}
    for line in path.read_text().splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            out[k] = int(v)
    return out


class MemoryCgroup:
    def __init__(self, name, limit_bytes):
        """limit_bytes: -1 for none."""
        self.v1 = (ROOT / "memory" / "memory.limit_in_bytes").exists()
        self.path = (ROOT / "memory" / name) if self.v1 else (ROOT / name)
        self.limit = limit_bytes

    def create(self):
        """Make it (if it is not there) and set its limit; without swap in it
        (v1: swappiness 0), so that going over the limit means the OOM killer."""
        if not self.path.is_dir():
            if os.geteuid() == 0:
                self.path.mkdir()
            else:
                subprocess.run(["sudo", "-n", "mkdir", str(self.path)], check=True)
        if self.v1:
            _write(self.path / "memory.limit_in_bytes", self.limit)
            _write(self.path / "memory.swappiness", 0)
        else:
            _write(self.path / "memory.max", self.limit if self.limit >= 0 else "max")
            _write(self.path / "memory.swap.max", 0)
        return self

    def add(self, pid):
        """Move a process in: the processes it forks from now on are in it too."""
        _write(self.path / "cgroup.procs", pid)

    def reset_peak(self):
        """v1: the peak starts again from the current use (v2's memory.peak cannot be reset before 6.12)."""
        if self.v1:
            _write(self.path / "memory.max_usage_in_bytes", 0)

    def peak(self):
        f = self.path / ("memory.max_usage_in_bytes" if self.v1 else "memory.peak")
        return int(f.read_text()) if f.exists() else None

    def oom_kills(self):
        if self.v1:
            return _keyed(self.path / "memory.oom_control").get("oom_kill", 0)
        return _keyed(self.path / "memory.events").get("oom_kill", 0)

    def remove(self):
        """Move what is left in it to the root group, then remove it."""
        if not self.path.is_dir():
            return
        parent = self.path.parent
        for pid in (self.path / "cgroup.procs").read_text().split():
            try:
                _write(parent / "cgroup.procs", pid)
            except (OSError, subprocess.CalledProcessError):
                pass    # it exited meanwhile
        if os.geteuid() == 0:
            self.path.rmdir()
        else:
            subprocess.run(["sudo", "-n", "rmdir", str(self.path)], check=True)
