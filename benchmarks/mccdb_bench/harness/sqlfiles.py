"""Query files and plan-forcing recipes."""
import pathlib
import re

from ..paths import PLQ_DIR
from ..paths import SSB_QUERIES as SSB_DIR
from ..paths import TPCH_QUERIES as TPCH_DIR


def strip_sql(text):
    """One statement from a query file: comments and the final ';' removed."""
    lines = [re.sub(r"--.*$", "", line) for line in text.splitlines()]
    sql = "\n".join(line.rstrip() for line in lines if line.strip()).strip()
    while sql.endswith(";"):
        sql = sql[:-1].rstrip()
    if ";" in sql:
        raise ValueError("more than one statement")
    if not sql:
        raise ValueError("no statement")
    return sql


def read_query(path):
    return strip_sql(pathlib.Path(path).read_text())


def read_settings(path):
    """The 'set x = y' statements of a force_*.sql file, in order."""
    out = []
    for line in pathlib.Path(path).read_text().splitlines():
        line = re.sub(r"--.*$", "", line).strip().rstrip(";").strip()
        if not line:
            continue
        if not line.lower().startswith("set "):
            raise ValueError(f"{path}: not a set command: {line}")
        out.append(line)
    return out


def force(plan):
    """Settings forcing 'hash', 'index' or 'bitmap' joins for the PLQ queries."""
    if plan in (None, "stock"):
        return []
    return read_settings(PLQ_DIR / f"force_{plan}.sql")


def plq(n):
    if not 1 <= n <= 25:
        raise ValueError("PLQ_n: n in 1..25")
    return read_query(PLQ_DIR / f"plq_{n:02d}.sql")


def ssb(name):
    """ssb('q1.1') -> the SSB query text."""
    return read_query(SSB_DIR / f"{name}.sql")


def ssb_names():
    return sorted(p.stem for p in SSB_DIR.glob("q*.sql"))


def tpch(n):
    return read_query(TPCH_DIR / f"q{n:02d}.sql")
