"""Where the repository keeps what the benchmarks read and write.

The package is installed editable from benchmarks/ (scripts/install-deps.sh),
so these are the checkout's own directories.
"""
import pathlib

BENCH = pathlib.Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
PLQ_DIR = BENCH / "plq"
SSB_DIR = BENCH / "ssb"
SSB_QUERIES = SSB_DIR / "queries"
SSB_TEST = SSB_DIR / "test"
TPCH_QUERIES = BENCH / "tpch" / "queries"
RESULTS = ROOT / "docs" / "results"
CLUSTER_SCRIPT = ROOT / "scripts" / "pg-cluster.sh"
VAR = ROOT / "var"
