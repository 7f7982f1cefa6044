"""Shared bits of the experiment commands."""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from harness import pg, report, sqlfiles, stats  # noqa: E402,F401


def parser(doc):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    ap.add_argument("--db", default=None, help="database (default: PGDATABASE)")
    ap.add_argument("--outdir", default=None, help="where the .md and .png go (default docs/results)")
    ap.add_argument("--quiet", action="store_true")
    return ap


def say_fn(quiet):
    def say(msg):
        if not quiet:
            print(msg, flush=True)
    return say


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


def scale_of(dbname):
    with pg.connect(dbname) as c:
        try:
            r = c.execute("select * from ssb_load_info").fetchone()
            cols = [d.name for d in c.execute("select * from ssb_load_info limit 0").description]
            info = dict(zip(cols, r))
        except Exception:
            return "?"
        parts = c.execute("select count(*) from part").fetchone()[0]
        lo = c.execute("select reltuples::bigint from pg_class where relname = 'lineorder'").fetchone()[0]
    return f"SSB SF {info.get('scale', '?')} (lineorder ~{lo:,} rows, part {parts:,} rows)"


def fmt_bytes(b):
    if b is None:
        return "?"
    return f"{b / 1048576:.1f} MB" if b >= 1048576 else f"{b / 1024:.0f} kB"
