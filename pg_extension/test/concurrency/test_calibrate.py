"""benchmarks/calibrate.py end to end on the test cluster's SSB database:
it finds probes, measures, stores the matrix and loads it into the scheduler."""
import os
import pathlib
import subprocess
import sys

import psycopg

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_calibration_stores_and_loads_an_interference_matrix():
    env = dict(os.environ, PGDATABASE="ssb")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "calibrate.py"), "--runs", "1"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "probe strong" in out.stdout and "loaded into the scheduler" in out.stdout
    with psycopg.connect(dbname="ssb", autocommit=True) as c:
        try:
            rows = c.execute("select target, corunner, slowdown from mccdb_interference").fetchall()
            assert len(rows) >= 4, rows  # strong and weak probes exist at any scale
            assert {r[0] for r in rows} >= {"strong", "weak"}
            assert all(0 < r[2] < 100 for r in rows), rows
            assert c.execute("select interference_loaded from mccdb_scheduler()").fetchone()[0]
        finally:
            c.execute("delete from mccdb_interference")
            c.execute("select mccdb_load_interference()")
