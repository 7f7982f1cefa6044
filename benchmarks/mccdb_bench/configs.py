"""The configurations the stream experiments compare: stock, PgBouncer, mccdb.

A configuration's name says which server the clients reach and how:

  stock          the project cluster restarted without mccdb in
                 shared_preload_libraries, clients connect to it
  pgbouncer      the same stock server behind PgBouncer (transaction
                 pooling), default_pool_size = the CPUs
  pgbouncer-N    the same, default_pool_size = N
  pgbouncer2     the same stock server behind PgBouncer with a pool per
                 workload class, as a DBA sets up a mixed server: OLTP
                 clients connect to the database alias DB_oltp (its own
                 pool of OLTP_POOL = 8 server connections), analytics to
                 DB_analytics (a pool of the CPUs)
  pgbouncer2-A-O the same, analytics pool A, OLTP pool O
  off, sls, mls, predictive, adaptive
                 mccdb preloaded, mccdb.schedule = that policy (sls and mls
                 with mccdb.plan_policy too, as the paper; the others with
                 plan_policy off)
  mccdb:POLICY   mccdb preloaded, mccdb.schedule = POLICY, plan_policy off
                 (any value the server accepts: a policy added later)

Every configuration starts from a restarted server (pg.set_preload), so
all start from an empty buffer pool.
"""
import contextlib
import os
import re
from dataclasses import dataclass
from typing import Optional

from .harness import pg
from .harness.pgbouncer import PgBouncer

# bare names: (mccdb.schedule, mccdb.plan_policy)
POLICIES = {"off": ("off", "off"), "sls": ("sls", "sls"), "mls": ("mls", "mls"),
            "predictive": ("predictive", "off"), "adaptive": ("adaptive", "off")}
KNOWN = "stock, pgbouncer, pgbouncer-N, pgbouncer2, pgbouncer2-A-O, " + ", ".join(POLICIES) + ", mccdb:POLICY"
# the pooler's port when the command line does not give one
POOLER_PORT = 54395
# pgbouncer2's OLTP pool when the name does not give one (issue 50's setup:
# analytics pool 2, OLTP pool 8 on 2 CPUs)
OLTP_POOL = 8
# the workload classes a two-pool PgBouncer separates: OLTP, and every analytics class
POOL_CLASSES = ("oltp", "analytics")


@dataclass(frozen=True)
class Config:
    name: str
    schedule: Optional[str] = None      # mccdb.schedule; None: a stock server, mccdb not preloaded
    plan_policy: Optional[str] = None   # mccdb.plan_policy the clients set (None: not set)
    pool: Optional[int] = None          # PgBouncer's default_pool_size (two pools: analytics'); None: no pooler
    oltp_pool: Optional[int] = None     # two pools: the OLTP alias's pool_size; None: one pool for all

    @property
    def mccdb(self):
        return self.schedule is not None

    def describe(self):
        """What the page records about the configuration."""
        if self.oltp_pool is not None:
            return (f"stock server behind PgBouncer, transaction pooling, a pool per workload class: "
                    f"analytics pool_size {self.pool}, OLTP pool_size {self.oltp_pool} (database aliases)")
        if self.pool is not None:
            return f"stock server behind PgBouncer, transaction pooling, default_pool_size {self.pool}"
        if not self.mccdb:
            return "stock server (mccdb not in shared_preload_libraries), clients connect directly"
        plan = f", mccdb.plan_policy = {self.plan_policy}" if self.plan_policy else ""
        return f"mccdb preloaded, mccdb.schedule = {self.schedule}{plan}"


def parse(name, cpus=None):
    """The Config a name on the command line means; ValueError for anything else."""
    cpus = cpus or os.cpu_count() or 1
    if name == "stock":
        return Config(name)
    m = re.fullmatch(r"pgbouncer(?:-([0-9]+))?", name)
    if m:
        pool = int(m.group(1)) if m.group(1) else cpus
        if pool < 1:
            raise ValueError(f"{name}: a pool of at least one connection")
        return Config(name, pool=pool)
    m = re.fullmatch(r"pgbouncer2(?:-([0-9]+)-([0-9]+))?", name)
    if m:
        pool, oltp = (int(m.group(1)), int(m.group(2))) if m.group(1) else (cpus, OLTP_POOL)
        if min(pool, oltp) < 1:
            raise ValueError(f"{name}: pools of at least one connection")
        return Config(name, pool=pool, oltp_pool=oltp)
    if name in POLICIES:
        sched, plan = POLICIES[name]
        return Config(name, sched, plan)
    m = re.fullmatch(r"mccdb:([a-z_][a-z0-9_]*)", name)
    if m:
        sched, plan = POLICIES.get(m.group(1), (m.group(1), "off"))
        return Config(name, sched, plan)
    raise ValueError(f"unknown configuration {name!r}; known: {KNOWN}")


def parse_list(text, cpus=None):
    """'stock,pgbouncer,mccdb:predictive' -> [Config]; SystemExit on a bad name."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    if len(set(names)) != len(names):
        raise SystemExit(f"a configuration given twice in {text!r}")
    try:
        return [parse(n, cpus) for n in names]
    except ValueError as e:
        raise SystemExit(str(e))


def start_server(cfg, db):
    """Restart the project cluster for cfg: without mccdb for stock and the
    pooler's configurations, else with it and cfg's schedule."""
    pg.set_preload(cfg.mccdb, db)
    if cfg.mccdb:
        pg.set_schedule(cfg.schedule, db)


def restore_server(db):
    """After the experiment: mccdb preloaded, schedule reset (off)."""
    pg.set_preload(True, db)
    pg.set_schedule("off", db)
    pg.reset_schedule(db)


def two_pool_name(one_pool, cpus=None):
    """The two-pool configuration beside a one-pool PgBouncer configuration:
    the same analytics pool, OLTP in its own pool of OLTP_POOL."""
    cpus = cpus or os.cpu_count() or 1
    return "pgbouncer2" if one_pool.pool == cpus else f"pgbouncer2-{one_pool.pool}-{OLTP_POOL}"


def with_two_pools(cfgs, cpus=None):
    """cfgs, with the two-pool PgBouncer beside the first one-pool PgBouncer
    configuration when no two-pool one is there: every comparison with the
    pooler shows both setups.  (cfgs, the name added or None)."""
    if any(c.oltp_pool is not None for c in cfgs):
        return list(cfgs), None
    for i, c in enumerate(cfgs):
        if c.pool is not None:
            name = two_pool_name(c, cpus)
            if any(x.name == name for x in cfgs):
                return list(cfgs), None
            return list(cfgs[:i + 1]) + [parse(name, cpus)] + list(cfgs[i + 1:]), name
    return list(cfgs), None


def database_name(db):
    """The database clients use: db, else PGDATABASE, else the user's name (libpq's default)."""
    import getpass
    return db or os.environ.get("PGDATABASE") or os.environ.get("PGUSER") or getpass.getuser()


def aliases(cfg, db):
    """A two-pool configuration's PgBouncer aliases, {alias: (database, pool_size)}."""
    if cfg.oltp_pool is None:
        return {}
    db = database_name(db)
    return {f"{db}_oltp": (db, cfg.oltp_pool), f"{db}_analytics": (db, cfg.pool)}


def dbname_for(cfg, db, cls):
    """The database name a client of workload class cls ('oltp' or
    'analytics') connects to under cfg: with two pools its class's alias,
    else db itself (None: the libpq environment's)."""
    if cls not in POOL_CLASSES:
        raise ValueError(f"workload class {cls!r}: one of {', '.join(POOL_CLASSES)}")
    if cfg.oltp_pool is None:
        return db
    return f"{database_name(db)}_{cls}"


@contextlib.contextmanager
def clients_of(cfg, pooler_port=POOLER_PORT, db=None, users=()):
    """Where cfg's clients connect, for the block: {} (the libpq
    environment, the server itself) or the psycopg keywords of a PgBouncer
    started for the block; as (keywords, libpq environment, pooler or None).
    A two-pool configuration's PgBouncer has an alias per workload class of
    database db (dbname_for() names the one a client uses); users are the
    roles besides the pooler's own that clients connect as."""
    if cfg.pool is None:
        yield {}, {}, None
        return
    pooler = PgBouncer(cfg.pool, pooler_port, name=f"bench-{pooler_port}", aliases=aliases(cfg, db),
                       users=users)
    with pooler:
        yield pooler.conninfo(), pooler.env(), pooler


def local_settings(parallel_workers=0, extra=()):
    """The per-query settings as SET LOCAL statements: what a client of a
    transaction pooler must send inside each transaction (a session SET would
    stay on whichever server connection ran it)."""
    base = [f"set local max_parallel_workers_per_gather = {int(parallel_workers)}", "set local jit = off"]
    return base + [re.sub(r"^set (?!local )", "set local ", s, flags=re.I) for s in extra]


def connect_client(db, target):
    """A client connection (autocommit) to the server or the pooler target
    names; no prepared statements, which transaction pooling cannot keep."""
    import psycopg
    kw = dict(target)
    if db:
        kw["dbname"] = db
    return psycopg.connect(autocommit=True, prepare_threshold=None, **kw)


def run_transaction(conn, settings, sql):
    """BEGIN; the SET LOCAL settings; sql (all rows fetched); COMMIT: the
    seconds from BEGIN to COMMIT's answer, which include a pooler's wait for
    a server connection."""
    import time
    t0 = time.perf_counter()
    conn.execute("begin")
    try:
        for s in settings:
            conn.execute(s)
        cur = conn.execute(sql)
        if cur.description is not None:
            cur.fetchall()
        conn.execute("commit")
    except BaseException:
        conn.rollback()
        raise
    return time.perf_counter() - t0
