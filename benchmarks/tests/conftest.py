import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[1]
for p in (BENCH, BENCH / "experiments", BENCH / "tpch"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
