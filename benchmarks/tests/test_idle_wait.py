"""The idle-while-waiting sampler: idle CPU time counted only while work waited."""
import itertools

import pytest

from mccdb_bench.harness import idle_wait


def fake_cpu(monkeypatch, idle_ticks_per_sample):
    """/proc/stat as a counter: each read adds that many idle ticks."""
    ticks = itertools.count(0, idle_ticks_per_sample)
    monkeypatch.setattr(idle_wait, "cpu_times", lambda: (next(ticks), 0))


def sampled(waiting, samples):
    """The sampler run until it has called waiting() `samples` times."""
    calls = itertools.count(1)
    done = idle_wait.threading.Event()

    def counted():
        if next(calls) >= samples:
            done.set()
        return waiting()
    s = idle_wait.IdleWhileWaiting(counted, interval=0.001)
    s.start()
    assert done.wait(10)
    return s.stop()


def test_idle_time_counts_only_while_a_statement_waits(monkeypatch):
    fake_cpu(monkeypatch, idle_wait.TICKS)      # one idle CPU-second a sample
    queue = itertools.cycle([1, 0])             # waiting in every other interval
    s = sampled(lambda: next(queue), 21)
    assert s.idle_s >= 20
    assert s.idle_waiting_s == pytest.approx(s.idle_s / 2, abs=1)
    assert 0 < s.waiting_s < 1


def test_no_queue_no_idle_while_waiting(monkeypatch):
    fake_cpu(monkeypatch, idle_wait.TICKS)
    s = sampled(lambda: 0, 10)
    assert s.idle_s >= 9 and s.idle_waiting_s == 0 and s.waiting_s == 0


def test_a_failing_queue_read_is_reported_not_lost():
    def broken():
        raise OSError("connection lost")
    s = idle_wait.IdleWhileWaiting(broken, interval=0.001)
    s.start()
    with pytest.raises(RuntimeError, match="sampling the queue: connection lost"):
        s.stop()
