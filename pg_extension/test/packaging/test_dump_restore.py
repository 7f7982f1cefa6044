"""pg_dump and pg_restore keep mccdb's configuration.

The interference matrix (mccdb_interference) is registered with
pg_extension_config_dump: a dump holds CREATE EXTENSION plus the table's
rows, and a restore into a new database gives the same matrix back.  Needs
a server with mccdb preloaded (the libpq environment points at it) and
MCCDB_PG_BINDIR with pg_dump, pg_restore and psql of the same major version.
"""
import os
import subprocess
import uuid

import psycopg
import pytest

BINDIR = os.environ.get("MCCDB_PG_BINDIR", "")
MATRIX = [("strong", "strong", 1.42), ("strong", "weak", 1.08),
          ("weak", "strong", 1.01), ("moderate", "weak", 1.2)]


def tool(name):
    path = os.path.join(BINDIR, name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} not found: set MCCDB_PG_BINDIR to the server's bin directory")
    return path


@pytest.fixture
def databases():
    names = [f"mccdb_dump_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("src", "dst")]
    with psycopg.connect(dbname="postgres", autocommit=True) as c:
        for n in names:
            c.execute(f"create database {n}")
    yield names
    with psycopg.connect(dbname="postgres", autocommit=True) as c:
        for n in names:
            c.execute(f"drop database if exists {n} with (force)")


def matrix(db):
    with psycopg.connect(dbname=db) as c:
        return c.execute("select target, corunner, slowdown from mccdb_interference "
                         "order by 1, 2").fetchall()


def fill_source(src):
    with psycopg.connect(dbname=src, autocommit=True) as c:
        c.execute("create extension mccdb")
        for row in MATRIX:
            c.execute("insert into mccdb_interference (target, corunner, slowdown) "
                      "values (%s, %s, %s)", row)


@pytest.mark.parametrize("fmt", ["custom", "plain"])
def test_dump_and_restore_keep_the_interference_matrix(databases, fmt, tmp_path):
    src, dst = databases
    fill_source(src)
    want = matrix(src)
    assert len(want) == len(MATRIX)

    dump = tmp_path / f"mccdb.{fmt}"
    subprocess.run([tool("pg_dump"), f"--format={fmt}", "--file", str(dump), src], check=True)
    if fmt == "custom":
        subprocess.run([tool("pg_restore"), "--exit-on-error", "--dbname", dst, str(dump)],
                       check=True)
    else:
        subprocess.run([tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dst,
                        "-f", str(dump)], check=True, stdout=subprocess.DEVNULL)

    assert matrix(dst) == want
    with psycopg.connect(dbname=dst) as c:
        assert c.execute("select extversion from pg_extension where extname = 'mccdb'"
                         ).fetchone()[0] == c.execute(
            "select default_version from pg_available_extensions where name = 'mccdb'"
        ).fetchone()[0]
        # the restored table still refuses what the loader would refuse
        with pytest.raises(psycopg.errors.CheckViolation):
            c.execute("insert into mccdb_interference (target, corunner, slowdown) "
                      "values ('weak', 'weak', 0)")


def test_the_dump_holds_the_rows_and_not_the_extension_objects(databases):
    src, _ = databases
    fill_source(src)
    sql = subprocess.run([tool("pg_dump"), "--format=plain", src], check=True,
                         capture_output=True, text=True).stdout
    assert "CREATE EXTENSION IF NOT EXISTS mccdb" in sql
    # the rows, as COPY data of the configuration table
    assert "COPY public.mccdb_interference" in sql
    assert "strong\tstrong\t1.42" in sql
    # no object of the extension is dumped on its own
    assert "CREATE TABLE public.mccdb_interference" not in sql
    assert "CREATE FUNCTION public.mccdb_locality" not in sql


CLASSES = [("analytics", 2, 0, 50.0, 600000, "run", None), ("oltp", None, 10, None, 2000, None, 50)]
CLASS_COLUMNS = ("name, slots, priority, memory_share, queue_timeout, queue_timeout_action, "
                 "short_query")


@pytest.mark.parametrize("fmt", ["custom", "plain"])
def test_dump_and_restore_keep_the_workload_classes_and_load_them(databases, fmt, tmp_path):
    """The classes are the server's (mccdb_classes): restoring the table's
    rows loads them, as committing a change of the table does."""
    src, dst = databases
    try:
        with psycopg.connect(dbname=src, autocommit=True) as c:
            c.execute("create extension mccdb")
            for row in CLASSES:
                c.execute(f"insert into mccdb_class ({CLASS_COLUMNS}) "
                          "values (%s, %s, %s, %s, %s, %s, %s)", row)
            want = c.execute(f"select {CLASS_COLUMNS} from mccdb_classes order by name"
                             ).fetchall()
            assert [r[0] for r in want] == ["analytics", "default", "oltp"]
        dump = tmp_path / f"mccdb.{fmt}"
        subprocess.run([tool("pg_dump"), f"--format={fmt}", "--file", str(dump), src],
                       check=True)
        # the server forgets them: only the dump has them now
        with psycopg.connect(dbname=src, autocommit=True) as c:
            c.execute("delete from mccdb_class")
            assert c.execute("select count(*) from mccdb_classes").fetchone() == (1,)
        if fmt == "custom":
            subprocess.run([tool("pg_restore"), "--exit-on-error", "--dbname", dst, str(dump)],
                           check=True)
        else:
            subprocess.run([tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dst,
                            "-f", str(dump)], check=True, stdout=subprocess.DEVNULL)
        with psycopg.connect(dbname=dst, autocommit=True) as c:
            assert c.execute(f"select {CLASS_COLUMNS} from mccdb_class order by name"
                             ).fetchall() == sorted(CLASSES)
            assert c.execute(f"select {CLASS_COLUMNS} from mccdb_classes order by name"
                             ).fetchall() == want
    finally:
        with psycopg.connect(dbname=dst, autocommit=True) as c:
            if c.execute("select 1 from pg_extension where extname = 'mccdb'").fetchone():
                c.execute("delete from mccdb_class")
