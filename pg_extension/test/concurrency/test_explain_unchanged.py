"""Loading mccdb with its default settings leaves EXPLAIN as it was.

The same EXPLAINs, in every format and with VERBOSE and ANALYZE, on the
preloaded test cluster (default mccdb settings) and on a server without
the preload (scripts/pg-cluster.sh start nopreload, the cluster
run-tests.sh runs make installcheck REGRESS=no_preload against) give the
same bytes, but for the "Query Identifier" VERBOSE prints where mccdb
turned compute_query_id on (as pg_stat_statements does; docs/usage.md).
"""
import json
import os
import re
import subprocess

import psycopg
import pytest

from conftest import ROOT

NOPRELOAD_PORT = os.environ.get("MCCDB_NOPRELOAD_PORT", "54322")
# what the plans depend on, set on the test cluster by run-tests.sh
PLANNER_SETTINGS = ("work_mem", "max_parallel_workers_per_gather")

SETUP = """
drop table if exists xc_dim, xc_fact;
create table xc_dim (k int primary key, name text, grp int);
insert into xc_dim select g, 'name-' || g, g % 10 from generate_series(1, 20000) g;
create table xc_fact (k int, v int);
insert into xc_fact select (g % 20000) + 1, g from generate_series(1, 25000) g;
create index xc_fact_k on xc_fact (k);
analyze xc_dim, xc_fact;
"""

QUERIES = [
    "select sum(v) from xc_dim join xc_fact using (k) where grp < 3",
    "select grp, count(*) from xc_dim join xc_fact using (k) group by grp",
    "select sum(v) from xc_dim join xc_fact using (k) where xc_dim.k < 50",
    "select count(*) from xc_fact where k in (select k from xc_dim where grp = 1)",
    "select count(*) from xc_fact",
]

OPTIONS = [
    "", "costs off", "verbose", "verbose, format json", "verbose, format xml",
    "format yaml", "analyze, costs off, timing off, summary off, buffers off",
    "analyze, verbose, costs off, timing off, summary off, buffers off, format json",
]


def strip_query_id(text, options):
    if "json" in options:
        doc = json.loads(text)
        for q in doc:
            q.pop("Query Identifier", None)
        return json.dumps(doc, indent=2)
    return "\n".join(line for line in text.split("\n")
                     if not re.search(r"Query Identifier|<Query-Identifier>", line))


def explain_all(conn):
    conn.execute("set jit = off")
    out = {}
    for q in QUERIES:
        for o in OPTIONS:
            rows = conn.execute(f"explain ({o}) {q}" if o else f"explain {q}").fetchall()
            text = "\n".join(r[0] if isinstance(r[0], str) else json.dumps(r[0]) for r in rows)
            out[(q, o)] = strip_query_id(text, o)
    conn.execute("prepare xc_p as " + QUERIES[0])
    out[("execute", "")] = "\n".join(r[0] for r in conn.execute("explain execute xc_p").fetchall())
    return out


@pytest.fixture
def stock():
    """A connection to the server without the preload, started here with the
    planner settings of the test cluster, and stopped afterwards."""
    script = str(ROOT / "scripts" / "pg-cluster.sh")
    with psycopg.connect(dbname="postgres", autocommit=True) as c:
        sets = [a for k in PLANNER_SETTINGS
                for a in ("--set", f"{k} = '{c.execute(f'show {k}').fetchone()[0]}'")]
    subprocess.run([script, "start", "nopreload", "--port", NOPRELOAD_PORT, "--no-preload", *sets],
                   check=True, stdout=subprocess.DEVNULL)
    try:
        env = subprocess.run([script, "env", "nopreload"], check=True, capture_output=True,
                             text=True).stdout
        host = re.search(r"PGHOST='([^']*)'", env).group(1)
        with psycopg.connect(host=host, port=NOPRELOAD_PORT, user="postgres", dbname="postgres",
                             autocommit=True) as c:
            yield c
    finally:
        subprocess.run([script, "stop", "nopreload"], check=True, stdout=subprocess.DEVNULL)


def test_default_settings_leave_explain_unchanged(stock):
    assert "mccdb" not in stock.execute("show shared_preload_libraries").fetchone()[0]
    with psycopg.connect(dbname="postgres", autocommit=True) as loaded:
        assert "mccdb" in loaded.execute("show shared_preload_libraries").fetchone()[0]
        try:
            for c in (loaded, stock):
                c.execute(SETUP)
            got, want = explain_all(loaded), explain_all(stock)
        finally:
            for c in (loaded, stock):
                c.execute("drop table if exists xc_dim, xc_fact")
    # the comparison covers what mccdb would annotate: a hash join, in text
    assert "Hash Join" in want[(QUERIES[0], "")], want[(QUERIES[0], "")]
    assert want.keys() == got.keys()
    for key in want:
        assert got[key] == want[key], key
