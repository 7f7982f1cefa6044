"""Learned hash table sizes stay with their database and their plan node
(issue 26, defect 9).

A queryid names no database, and a database made from another as its
template has the same relation OIDs, so the same queryids: a size learned
in one must not stand in for the estimate in the other. And one queryid
planned another way numbers its nodes otherwise: a size learned for a node
over one relation must not be used for a node of that id over another.
"""
import psycopg
import pytest

from conftest import connect

A, B = "mccdb_sizes_a", "mccdb_sizes_b"
JOIN = "select count(*) from fact join dim using (k)"


def session(dbname):
    c = psycopg.connect(dbname=dbname, autocommit=True)
    c.execute("set max_parallel_workers_per_gather = 0")
    c.execute("set mccdb.learn_table_sizes = on")
    c.execute("set mccdb.explain = on")
    return c


def sources(c, sql):
    """Each hash table's Size Source in EXPLAIN (planner or learned)."""
    # VERBOSE: a plain EXPLAIN estimates from the plan alone (explain.c)
    plan = c.execute("explain (verbose, format json) " + sql).fetchone()[0][0]["MCC-DB"]
    return sorted(t["Size Source"] for t in plan.get("Tables", []))


@pytest.fixture
def databases():
    with connect() as ctl:
        for d in (B, A):
            ctl.execute(f"drop database if exists {d}")
        ctl.execute(f"create database {A} template template0")
        yield ctl
        for d in (B, A):
            ctl.execute(f"drop database if exists {d} with (force)")


def test_a_size_learned_in_one_database_is_not_used_in_its_copy(databases):
    with session(A) as a:
        a.execute("create table dim (k int primary key, g int)")
        a.execute("create table fact (k int, v int)")
        a.execute("insert into dim select g, g % 100 from generate_series(1, 100000) g")
        a.execute("insert into fact select (g % 100000) + 1, g from generate_series(1, 200000) g")
        a.execute("analyze dim, fact")
        a.execute(JOIN).fetchall()
        # the control: the run was learned where it ran
        assert "learned" in sources(a, JOIN)
    databases.execute(f"create database {B} template {A}")
    with session(B) as b:
        # one row each, not analysed yet (autovacuum's threshold is 50 rows):
        # the planner still hashes dim, in the node of the same id
        b.execute("truncate dim, fact")
        b.execute("insert into dim values (1, 1)")
        b.execute("insert into fact values (1, 1)")
        plan = b.execute("explain (verbose, format json) " + JOIN).fetchone()[0][0]["MCC-DB"]
        assert [(t["Kind"], t.get("Relation")) for t in plan["Tables"]] == [("Hash Join", "dim")], plan
        got = sources(b, JOIN)
        assert got == ["planner"], got


def test_a_size_learned_for_one_node_is_not_used_for_another_of_its_id(databases):
    with session(A) as a:
        a.execute("create table dim (k int, g int)")
        a.execute("create table fact (k int, v int)")
        a.execute("insert into dim select g, g from generate_series(1, 1000) g")
        a.execute("insert into fact select (g % 1000) + 1, g from generate_series(1, 300000) g")
        a.execute("analyze dim, fact")
        before = a.execute("explain (verbose, format json) " + JOIN).fetchone()[0][0]["MCC-DB"]["Tables"]
        a.execute(JOIN).fetchall()
        assert "learned" in sources(a, JOIN)
        # the same query, the sides swapped: the Hash node of that id now holds fact
        a.execute("truncate dim, fact")
        a.execute("insert into dim select g, g from generate_series(1, 300000) g")
        a.execute("insert into fact select (g % 1000) + 1, g from generate_series(1, 1000) g")
        a.execute("analyze dim, fact")
        after = a.execute("explain (verbose, format json) " + JOIN).fetchone()[0][0]["MCC-DB"]["Tables"]
        assert [(t["Plan Node"], t.get("Relation")) for t in before] == [(3, "dim")], before
        assert [(t["Plan Node"], t.get("Relation")) for t in after] == [(3, "fact")], after
        assert sources(a, JOIN) == ["planner"]
