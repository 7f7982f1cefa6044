"""TPC-H data from DuckDB's tpch extension (dbgen), loaded into PostgreSQL with COPY.

    eval "$(scripts/pg-cluster.sh env NAME)"
    PGDATABASE=tpch .venv/bin/python -m mccdb_bench.tpch_load --scale 1
    PGDATABASE=ssb  .venv/bin/python -m mccdb_bench.tpch_load --scale 1 --schema tpch
    PGDATABASE=tpch .venv/bin/python -m mccdb_bench.tpch_load --check --scale 1

The generator is dbgen as shipped in DuckDB's tpch extension (PyPI packages
`duckdb` and `duckdb-extension-tpch`; no network access at load time).  Each
table is written to a '|'-separated file in a temporary directory and streamed
to PostgreSQL with COPY FROM STDIN, progress shown per table.  Then the spec's
primary keys, the foreign-key-side indexes the 22 queries use, ANALYZE, and the
row-count check against the spec (clause 4.2.5: SF x base, lineitem about
6,001,215 x SF).  Exit codes: 0 ok, 1 check failed, 2 usage or connection error.
"""
import argparse
import glob
import math
import os
import sys
import tempfile
import time

import psycopg

from .harness.cli import conninfo, database_option

TABLES = {
    "region": """r_regionkey integer not null, r_name char(25) not null,
                 r_comment varchar(152) not null""",
    "nation": """n_nationkey integer not null, n_name char(25) not null,
                 n_regionkey integer not null, n_comment varchar(152) not null""",
    "supplier": """s_suppkey integer not null, s_name char(25) not null,
                   s_address varchar(40) not null, s_nationkey integer not null,
                   s_phone char(15) not null, s_acctbal numeric(15,2) not null,
                   s_comment varchar(101) not null""",
    "customer": """c_custkey integer not null, c_name varchar(25) not null,
                   c_address varchar(40) not null, c_nationkey integer not null,
                   c_phone char(15) not null, c_acctbal numeric(15,2) not null,
                   c_mktsegment char(10) not null, c_comment varchar(117) not null""",
    "part": """p_partkey integer not null, p_name varchar(55) not null,
               p_mfgr char(25) not null, p_brand char(10) not null,
               p_type varchar(25) not null, p_size integer not null,
               p_container char(10) not null, p_retailprice numeric(15,2) not null,
               p_comment varchar(23) not null""",
    "partsupp": """ps_partkey integer not null, ps_suppkey integer not null,
                   ps_availqty integer not null, ps_supplycost numeric(15,2) not null,
                   ps_comment varchar(199) not null""",
    "orders": """o_orderkey integer not null, o_custkey integer not null,
                 o_orderstatus char(1) not null, o_totalprice numeric(15,2) not null,
                 o_orderdate date not null, o_orderpriority char(15) not null,
                 o_clerk char(15) not null, o_shippriority integer not null,
                 o_comment varchar(79) not null""",
    "lineitem": """l_orderkey integer not null, l_partkey integer not null,
                   l_suppkey integer not null, l_linenumber integer not null,
                   l_quantity numeric(15,2) not null, l_extendedprice numeric(15,2) not null,
                   l_discount numeric(15,2) not null, l_tax numeric(15,2) not null,
                   l_returnflag char(1) not null, l_linestatus char(1) not null,
                   l_shipdate date not null, l_commitdate date not null,
                   l_receiptdate date not null, l_shipinstruct char(25) not null,
                   l_shipmode char(10) not null, l_comment varchar(44) not null""",
}

PRIMARY_KEYS = {
    "region": "r_regionkey", "nation": "n_nationkey", "supplier": "s_suppkey",
    "customer": "c_custkey", "part": "p_partkey", "partsupp": "ps_partkey, ps_suppkey",
    "orders": "o_orderkey", "lineitem": "l_orderkey, l_linenumber",
}

# Foreign-key columns the 22 queries join on (PK indexes cover the rest).
INDEXES = [
    ("lineitem", "l_partkey, l_suppkey"), ("lineitem", "l_suppkey"),
    ("orders", "o_custkey"), ("orders", "o_orderdate"),
    ("partsupp", "ps_suppkey"), ("customer", "c_nationkey"),
    ("supplier", "s_nationkey"), ("nation", "n_regionkey"),
]


def expected_counts(sf):
    """Spec cardinalities (TPC-H 4.2.5): exact for fixed-size and SF-scaled tables;
    lineitem as (centre, tolerance): 6,001,215 at SF 1, otherwise 6,000,000 x SF
    +- 6 standard deviations of the order line count (1..7 uniform per order)."""
    orders = math.floor(1_500_000 * sf)
    exact = {
        "region": 5, "nation": 25,
        "supplier": math.floor(10_000 * sf), "customer": math.floor(150_000 * sf),
        "part": math.floor(200_000 * sf), "partsupp": math.floor(800_000 * sf),
        "orders": orders,
    }
    if sf == 1:
        line = (6_001_215, 0)
    else:
        line = (4 * orders, 6 * 2 * math.sqrt(orders) + 1)
    return exact, line


def check_counts(counts, sf):
    """List of error strings (empty: all tables as the spec says)."""
    exact, (centre, tol) = expected_counts(sf)
    errors = []
    for t, n in exact.items():
        if counts.get(t) != n:
            errors.append(f"{t}: {counts.get(t)} rows, spec says {n:,}")
    got = counts.get("lineitem")
    if got is None or abs(got - centre) > tol:
        errors.append(f"lineitem: {got} rows, spec says {centre:,.0f} +- {tol:,.0f}")
    return errors


def table_counts(conn, schema):
    return {t: conn.execute(f"select count(*) from {schema}.{t}").fetchone()[0] for t in TABLES}


def tpch_extension_path():
    import duckdb_extension_tpch
    hits = glob.glob(os.path.join(os.path.dirname(duckdb_extension_tpch.__file__),
                                  "extensions", "*", "tpch.duckdb_extension"))
    if not hits:
        raise RuntimeError("duckdb-extension-tpch has no extension file")
    return hits[0]


def generate(sf, outdir, say):
    import duckdb
    t0 = time.time()
    d = duckdb.connect()
    d.execute(f"load '{tpch_extension_path()}'")
    d.execute(f"call dbgen(sf={sf})")
    files = {}
    for t in TABLES:
        path = os.path.join(outdir, f"{t}.tbl")
        d.execute(f"copy {t} to '{path}' (format csv, delimiter '|', header false)")
        files[t] = path
    say(f"dbgen sf={sf} (duckdb {duckdb.__version__}): {time.time() - t0:.1f} s")
    return files


def copy_file(conn, schema, table, path, say, progress):
    size = os.path.getsize(path)
    done, t0, last = 0, time.time(), 0.0
    with conn.cursor() as cur:
        with cur.copy(f"copy {schema}.{table} from stdin (format csv, delimiter '|')") as cp:
            with open(path, "rb") as f:
                while True:
                    buf = f.read(1 << 20)
                    if not buf:
                        break
                    cp.write(buf)
                    done += len(buf)
                    now = time.time()
                    if progress and now - last > 2:
                        say(f"  {table}: {100 * done / max(size, 1):5.1f}% of {size / 1e6:.0f} MB")
                        last = now
    say(f"{table}: {size / 1e6:.1f} MB in {time.time() - t0:.1f} s")


def load(conn, sf, schema, say, progress=True):
    conn.execute("set maintenance_work_mem = '1GB'")
    conn.execute("set synchronous_commit = off")
    conn.execute(f"create schema if not exists {schema}")
    for t in TABLES:
        conn.execute(f"drop table if exists {schema}.{t} cascade")
        conn.execute(f"create table {schema}.{t} ({TABLES[t]})")
    with tempfile.TemporaryDirectory(prefix="tpch-") as d:
        files = generate(sf, d, say)
        for t in TABLES:
            copy_file(conn, schema, t, files[t], say, progress)
    for t, cols in PRIMARY_KEYS.items():
        t0 = time.time()
        conn.execute(f"alter table {schema}.{t} add primary key ({cols})")
        say(f"primary key {t} ({cols}): {time.time() - t0:.1f} s")
    for t, cols in INDEXES:
        t0 = time.time()
        name = f"{t}_{cols.replace(', ', '_')}_idx"
        conn.execute(f"create index {name} on {schema}.{t} ({cols})")
        say(f"index {name}: {time.time() - t0:.1f} s")
    conn.execute(f"create table if not exists {schema}.tpch_load_info "
                 "(scale numeric, generator text, loaded_at timestamptz default now())")
    conn.execute(f"delete from {schema}.tpch_load_info")
    import duckdb
    conn.execute(f"insert into {schema}.tpch_load_info (scale, generator) values (%s, %s)",
                 (sf, f"duckdb {duckdb.__version__} tpch dbgen"))
    for t in TABLES:
        conn.execute(f"analyze {schema}.{t}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], parents=[database_option()])
    ap.add_argument("--scale", type=float, default=1.0, help="scale factor (default 1)")
    ap.add_argument("--schema", default="public")
    ap.add_argument("--dsn", default="", help="libpq connection string (default: environment)")
    ap.add_argument("--check", action="store_true", help="only check the row counts")
    ap.add_argument("--progress", choices=["lines", "none"], default="lines")
    a = ap.parse_args(argv)
    a.dsn = conninfo(a.dsn, a.db)
    if not 0 < a.scale <= 100:
        print("error: --scale must be in (0, 100]", file=sys.stderr)
        return 2

    def say(msg):
        if a.progress != "none":
            print(f"[tpch] {msg}", flush=True)
    try:
        conn = psycopg.connect(a.dsn, autocommit=True)
    except psycopg.Error as e:
        print(f"error: cannot connect: {e}", file=sys.stderr)
        return 2
    t0 = time.time()
    try:
        with conn:
            if not a.check:
                load(conn, a.scale, a.schema, say, a.progress != "none")
            counts = table_counts(conn, a.schema)
    except psycopg.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    errors = check_counts(counts, a.scale)
    for t in TABLES:
        print(f"{t:>9}: {counts[t]:>11,}")
    if errors:
        for e in errors:
            print(f"CHECK FAILED {e}")
        return 1
    print(f"check ok: row counts match TPC-H at SF {a.scale:g} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
