"""mccdb's benchmarks: one package, one command per experiment.

    .venv/bin/python -m mccdb_bench.fig4 --db plq
    .venv/bin/python -m mccdb_bench.calibrate --db plq

harness/ holds what every experiment shares (sessions and co-runs, the
quiet-machine guard, reports, the command-line options); the loaders
(ssb_generate, tpch_load, make_plq) write the data sets the experiments read.
See benchmarks/README.md.
"""
