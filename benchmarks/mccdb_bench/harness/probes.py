"""What mccdb and the data set say about a query: the PLQ queries with a
forced plan, their locality class and hash-table bytes, and the scale."""
import psycopg

from . import pg, sqlfiles


def plq_query(n, plan):
    return pg.Query(f"PLQ_{n} {plan}", sqlfiles.plq(n), sqlfiles.force(plan))


def locality(dbname, q):
    """(class, estimated bytes) of q under its settings, from mccdb_locality()."""
    with pg.session(q, dbname) as c:
        return c.execute("select locality, hash_table_bytes from mccdb_locality(%s)", (q.sql,)).fetchone()


def last_actual(conn):
    """Actual hash table bytes of the last query this connection ran."""
    row = conn.execute("select actual_bytes from mccdb_recent_queries where pid = pg_backend_pid() "
                       "order by seq desc limit 1").fetchone()
    return row[0] if row else None


def tpch_scale_of(c):
    """'TPC-H SF 0.1 (lineitem 600,572 rows)' from tpch_load's record, or None."""
    try:
        with c.transaction():
            scale = c.execute("select scale from tpch_load_info").fetchone()[0]
            rows = c.execute("select count(*) from lineitem").fetchone()[0]
    except psycopg.Error:
        return None
    return f"TPC-H SF {scale} (lineitem {rows:,} rows)"


def scale_of(dbname):
    with pg.connect(dbname) as c:
        try:
            with c.transaction():
                r = c.execute("select * from ssb_load_info").fetchone()
                cols = [d.name for d in c.execute("select * from ssb_load_info limit 0").description]
            info = dict(zip(cols, r))
        except psycopg.Error:
            return tpch_scale_of(c) or "?"
        parts = c.execute("select count(*) from part").fetchone()[0]
        lo = c.execute("select reltuples::bigint from pg_class where relname = 'lineorder'").fetchone()[0]
    return f"SSB SF {info.get('scale', '?')} (lineorder ~{lo:,} rows, part {parts:,} rows)"
