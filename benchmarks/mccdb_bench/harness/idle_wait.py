"""CPU left idle while work waited: what a gate or a pooler must not do.

A gate that keeps two statements running on two CPUs is only free if no
CPU sits idle while a statement waits in its queue (a statement that
waits for I/O or a lock, or ends, frees a CPU the queue could use).  The
sampler reads the CPUs' idle time (/proc/stat) and the number of waiting
statements every `interval` seconds and adds up the idle CPU-seconds of
the intervals that began with a statement waiting.  Stock has no queue:
its idle time is the whole figure to compare with.
"""
import os
import threading
import time

from .pgbouncer import console_rows
from .quiet import cpu_times

TICKS = os.sysconf("SC_CLK_TCK")


class IdleWhileWaiting(threading.Thread):
    """Samples until stop(); then .idle_s (idle CPU-seconds, all CPUs),
    .idle_waiting_s (those while a statement waited) and .waiting_s
    (seconds with a statement waiting).  waiting() -> int is called from
    this thread only; a failure ends the sampling and is re-raised by
    stop()."""

    def __init__(self, waiting, interval=0.1):
        super().__init__(daemon=True)
        self.waiting, self.interval = waiting, interval
        self.idle_s = self.idle_waiting_s = self.waiting_s = 0.0
        self._ended = threading.Event()
        self._error = None

    def run(self):
        try:
            idle0, _ = cpu_times()
            t0, queued = time.monotonic(), self.waiting() > 0
            while not self._ended.wait(self.interval):
                idle1, _ = cpu_times()
                t1 = time.monotonic()
                idle = (idle1 - idle0) / TICKS
                self.idle_s += idle
                if queued:
                    self.idle_waiting_s += idle
                    self.waiting_s += t1 - t0
                idle0, t0, queued = idle1, t1, self.waiting() > 0
        except Exception as e:  # reported by stop(), not lost in the thread
            self._error = e

    def stop(self):
        """Ends the sampling (again: a no-op); the sampler."""
        self._ended.set()
        self.join(10)
        error, self._error = self._error, None
        if error is not None:
            raise RuntimeError(f"sampling the queue: {error}") from error
        return self


def gate_waiting(conn):
    """waiting() for mccdb: statements waiting in the gate (mccdb_queue)."""
    return lambda: conn.execute("select count(*) from mccdb_queue where state = 'waiting'").fetchone()[0]


def pooler_waiting(console):
    """waiting() for PgBouncer: clients waiting for a server connection
    (SHOW POOLS' cl_waiting, every pool) on an open admin console
    connection (PgBouncer.console())."""
    def waiting():
        names, rows = console_rows(console, "SHOW POOLS")
        col = names.index("cl_waiting")
        return sum(int(row[col]) for row in rows)
    return waiting
