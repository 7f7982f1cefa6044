"""The quiet-machine guard: waits, refuses, and reports what it saw."""
import pytest

from mccdb_bench.harness import quiet


def test_refuses_a_busy_machine_after_its_timeout(monkeypatch):
    monkeypatch.setattr(quiet, "cpu_busy", lambda seconds=2.0: 0.95)
    monkeypatch.setattr(quiet.time, "sleep", lambda s: None)
    g = quiet.Guard(say=lambda m: None, busy=0.10, timeout=0)
    with pytest.raises(quiet.NotQuiet, match="95% busy"):
        g.before("PLQ_1 sls")


def test_waits_for_a_quiet_machine_and_records_it(monkeypatch):
    seen = iter([0.9, 0.5, 0.02])
    monkeypatch.setattr(quiet, "cpu_busy", lambda seconds=2.0: next(seen))
    monkeypatch.setattr(quiet, "loadavg1", lambda: 0.3)
    monkeypatch.setattr(quiet.time, "sleep", lambda s: None)
    said = []
    g = quiet.Guard(say=said.append, busy=0.10, timeout=60)
    g.before("PLQ_1 mls")
    g.after()
    assert len(said) == 2, "it said why it waited, twice"
    assert g.checks == [["PLQ_1 mls", 0.3, 0.02, 0.3]]
    assert "at most 2% busy" in g.summary()
    assert "Warning" not in g.summary()


def summary_after_one_config(monkeypatch, own_load, load_after):
    """The guard's summary after one configuration that left the load at load_after."""
    monkeypatch.setattr(quiet, "cpu_busy", lambda seconds=2.0: 0.0)
    loads = iter([0.2, load_after])
    monkeypatch.setattr(quiet, "loadavg1", lambda: next(loads))
    g = quiet.Guard(say=lambda m: None, own_load=own_load)
    g.before("x")
    g.after()
    return g.summary()


def test_warns_when_the_load_rose_beyond_the_benchmark(monkeypatch):
    assert "Warning: the 1-minute load reached 3.40" in summary_after_one_config(monkeypatch, 2, 3.4)


def test_the_benchmarks_own_sessions_are_not_something_else(monkeypatch):
    # six clients make a load of up to six themselves
    summary = summary_after_one_config(monkeypatch, 6, 4.2)
    assert "Warning" not in summary and "own sessions reach 6" in summary


def test_start_refuses_a_loaded_machine(monkeypatch):
    monkeypatch.setattr(quiet, "loadavg1", lambda: 4.0)
    monkeypatch.setattr(quiet.time, "sleep", lambda s: None)
    with pytest.raises(quiet.NotQuiet, match="load average 4.00"):
        quiet.Guard(say=lambda m: None, load=0.5, timeout=0).start()


def test_cpu_busy_reads_proc_stat():
    b = quiet.cpu_busy(0.05)
    assert 0.0 <= b <= 1.0


def test_the_report_gives_the_load_the_experiment_started_at(monkeypatch, tmp_path):
    from mccdb_bench.harness import report
    loads = iter([1.7, 0.4])
    monkeypatch.setattr(quiet, "loadavg1", lambda: next(loads))
    monkeypatch.setattr(quiet.time, "sleep", lambda s: None)
    res = report.Result("x", "x", outdir=tmp_path)
    res.guard = quiet.Guard(say=lambda m: None, load=0.5, timeout=60)
    res.guard.start()
    assert "when the guard let the experiment start: 1-minute 0.40" in res.header()


def test_the_command_line_runs_the_command_behind_the_guard(monkeypatch, tmp_path):
    monkeypatch.setattr(quiet, "cpu_busy", lambda seconds=2.0: 0.0)
    monkeypatch.setattr(quiet, "loadavg1", lambda: 0.1)
    summary = tmp_path / "guard.md"
    rc = quiet.main(["--summary", str(summary), "--own-load", "2", "--", "sh", "-c", "exit 3"])
    assert rc == 3, "the command's status"
    text = summary.read_text()
    assert "Host load average (1/5/15 min) when the guard let the run start: 1-minute 0.10" in text
    assert "before each of 1 configuration the CPUs were at most 0% busy" in text


def test_the_command_line_refuses_a_loaded_machine_and_runs_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(quiet, "loadavg1", lambda: 4.0)
    monkeypatch.setattr(quiet.time, "sleep", lambda s: None)
    monkeypatch.setenv("MCCDB_QUIET_TIMEOUT", "0")
    ran = tmp_path / "ran"
    rc = quiet.main(["--summary", str(tmp_path / "g.md"), "--", "touch", str(ran)])
    assert rc == 75 and not ran.exists() and not (tmp_path / "g.md").exists()


def test_the_command_line_without_the_guard_says_so(tmp_path):
    summary = tmp_path / "guard.md"
    assert quiet.main(["--no-guard", "--summary", str(summary), "--", "true"]) == 0
    assert "No quiet-machine guard (--no-guard)" in summary.read_text()
