"""What each part of mccdb costs an OLTP statement, found by subtraction (issue 49).

pgbench against the project cluster of the libpq environment, restarted
for every run in one of these configurations (--configs):

  stock              mccdb not in shared_preload_libraries
  all-off            mccdb preloaded, every feature off: mccdb.schedule off,
                     placement off, partition off, track none,
                     learn_table_sizes off, explain off, plan_policy off,
                     counters off, and compute_query_id off (mccdb computes
                     query ids for the statements it can learn from; off
                     here, so that their cost is one of the features); what
                     is left is the hooks themselves
  queryid, track-top, track-all, learn, explain, plan-sls, plan-mls,
  counters, placement, partition, gate-shortest, gate-predictive
                     all-off with that one feature on (FEATURES below); the
                     gate's every pgbench statement is below
                     mccdb.schedule_min_cost (the page checks it), so it
                     measures the gate's bypass
  defaults           mccdb preloaded, every setting at its default
  stock-queryid      stock with compute_query_id = on (only when named): what
                     a server that computes query ids anyway (pg_stat_statements)
                     pays without mccdb
  defaults-no-queryid  the defaults with compute_query_id = off (only when
                     named): what a DBA saves an OLTP role with ALTER ROLE
  defaults-queryid-on  the defaults with compute_query_id = on (only when
                     named): mccdb on a server that computes every query id
                     anyway, to set against stock-queryid
  defaults-shortest  the same with mccdb.schedule = shortest

Every cell (pgbench script x -M protocol x clients) of every repetition runs
each configuration once, in a new seeded random order: restart (postmaster
settings by ALTER SYSTEM, preload by scripts/pg-cluster.sh preload), a
warm-up of --warmup seconds with the cell's own pgbench command, the
quiet-machine guard (which records the load before each run), then
--seconds of the measured run.  Per run: tps; the server's CPU time per
transaction (utime + stime of the postmaster and every process it forked,
the exited backends' through the postmaster's cutime/cstime, from
/proc/PID/stat: harness.procstat), which waiting for a CPU does not
inflate; p50/p99 latency from pgbench's per-transaction log (--log-sampling
of the transactions); pgbench's own CPU time.  synchronous_commit = off in
every session, so that the rate is bound by the CPUs, not by the disk.

The page: per cell and configuration the median tps, the ratio to stock
of the same round (median with its 95% bootstrap interval, geometric mean
with the paired t interval), CPU per transaction and its ratio, p99 and
its ratio; then what each feature adds in microseconds of server CPU per
transaction and per statement (the paired difference to all-off; all-off's
to stock is the hooks' floor); the raw runs in NAME-runs.csv beside it.

--db (default pgbench) is created and loaded with pgbench -i -s --scale
when it is not there at that scale.  The command needs a project cluster on
this host (it restarts it and reads /proc), and leaves it with mccdb
preloaded and the settings it changed reset.  Smoke run (seconds per
configuration, --no-guard: not a result):

    eval "$(scripts/pg-cluster.sh env NAME)"
    .venv/bin/python -m mccdb_bench.oltp_cost --no-guard --outdir /tmp/x --scale 1 \\
        --scripts select-only --modes prepared --clients 1 --seconds 2 --warmup 1 --reps 1

make bench-oltp runs it as benchmarks/run_all.sh names it.
"""
import csv
import math
import os
import pathlib
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .harness import paired, pg, procstat, quiet, report, stats
from .harness.cli import parser, run, say_fn, start_guard

# pgbench's built-in scripts: (pgbench -b name, statements the executor
# runs per transaction, statements the client sends including BEGIN/END)
SCRIPTS = {"select-only": ("select-only", 1, 1),
           "simple-update": ("simple-update", 3, 5),
           "tpcb-like": ("tpcb-like", 5, 7)}
MODES = ("simple", "prepared")

# settings restarts apply (ALTER SYSTEM): postmaster ones and mccdb.schedule
SERVER_KEYS = ("mccdb.schedule", "mccdb.placement", "mccdb.partition")
# every feature off: server part and per-session part (PGOPTIONS)
OFF_SERVER = {"mccdb.schedule": "off", "mccdb.placement": "off", "mccdb.partition": "off"}
# (the ring's threshold at 0: track-top and track-all then record every
# statement, what the ring itself costs; at the defaults pgbench's are below it)
OFF_SESSION = {"mccdb.track": "none", "mccdb.track_min_cost": "0", "mccdb.learn_table_sizes": "off",
               "mccdb.explain": "off", "mccdb.plan_policy": "off", "mccdb.counters": "off",
               "compute_query_id": "off"}
# every session, every configuration (stock too)
COMMON_SESSION = {"synchronous_commit": "off"}

# feature: (what, the one setting that differs from all-off)
FEATURES = {
    "queryid": ("the query ids mccdb computes (compute_query_id = auto: for statements it can learn from)",
                {"compute_query_id": "auto"}),
    "track-top": ("the recent-queries ring for every client statement", {"mccdb.track": "top"}),
    "track-all": ("the recent-queries ring for every statement at every level", {"mccdb.track": "all"}),
    "learn": ("learned hash table sizes", {"mccdb.learn_table_sizes": "on"}),
    "explain": ("the locality estimate in EXPLAIN (pgbench runs no EXPLAIN)", {"mccdb.explain": "on"}),
    "plan-sls": ("the planner's plan choice, sls", {"mccdb.plan_policy": "sls"}),
    "plan-mls": ("the planner's plan choice, mls", {"mccdb.plan_policy": "mls"}),
    "counters": ("hardware counters per statement", {"mccdb.counters": "on"}),
    "placement": ("placement in an LLC domain (postmaster setting)", {"mccdb.placement": "on"}),
    "partition": ("cache partitioning, auto (postmaster setting)", {"mccdb.partition": "auto"}),
    "gate-shortest": ("the gate, shortest, every statement below schedule_min_cost",
                      {"mccdb.schedule": "shortest"}),
    "gate-predictive": ("the gate, predictive, every statement below schedule_min_cost",
                        {"mccdb.schedule": "predictive"}),
}
DEFAULT_CONFIGS = ["stock", "all-off", *FEATURES, "defaults", "defaults-shortest"]
EXTRA_CONFIGS = ["stock-queryid", "defaults-no-queryid", "defaults-queryid-on"]      # named only when asked for


@dataclass(frozen=True)
class Config:
    name: str
    what: str
    preload: bool
    server: dict = field(default_factory=dict)      # SERVER_KEYS; a missing key is reset to its default
    session: dict = field(default_factory=dict)     # PGOPTIONS -c k=v

    def pgoptions(self):
        opts = {**COMMON_SESSION, **self.session}
        return " ".join(f"-c {k}={v}" for k, v in opts.items())

    def settings_text(self):
        parts = [f"{k} = {v}" for k, v in {**self.server, **self.session}.items()]
        return ", ".join(parts) if parts else "(defaults)"


def config(name):
    """The Config a name means; ValueError for an unknown one."""
    if name == "stock":
        return Config(name, "mccdb not in shared_preload_libraries", False)
    if name == "stock-queryid":
        return Config(name, "mccdb not loaded, compute_query_id = on: the query id alone, as a server with "
                      "pg_stat_statements computes it", False, session={"compute_query_id": "on"})
    if name == "defaults-no-queryid":
        return Config(name, "mccdb preloaded at its defaults, compute_query_id = off (as ALTER ROLE ... SET "
                      "would have it for an OLTP role)", True, session={"compute_query_id": "off"})
    if name == "defaults-queryid-on":
        return Config(name, "mccdb preloaded at its defaults, compute_query_id = on (as on a server with "
                      "pg_stat_statements)", True, session={"compute_query_id": "on"})
    if name == "all-off":
        return Config(name, "mccdb preloaded, every feature off", True, dict(OFF_SERVER), dict(OFF_SESSION))
    if name in FEATURES:
        what, on = FEATURES[name]
        server = {**OFF_SERVER, **{k: v for k, v in on.items() if k in SERVER_KEYS}}
        session = {**OFF_SESSION, **{k: v for k, v in on.items() if k not in SERVER_KEYS}}
        return Config(name, f"all-off + {what}", True, server, session)
    if name == "defaults":
        return Config(name, "mccdb preloaded, every setting at its default", True)
    if name == "defaults-shortest":
        return Config(name, "mccdb preloaded at its defaults, mccdb.schedule = shortest", True,
                      {"mccdb.schedule": "shortest"})
    raise ValueError(f"unknown configuration {name!r}; known: {', '.join(DEFAULT_CONFIGS + EXTRA_CONFIGS)}")


def parse_configs(text):
    names = [c.strip() for c in text.split(",") if c.strip()]
    if len(set(names)) != len(names):
        raise SystemExit(f"a configuration given twice in {text!r}")
    if "stock" not in names:
        raise SystemExit("--configs: stock is what every ratio is taken over; list it")
    try:
        return [config(n) for n in names]
    except ValueError as e:
        raise SystemExit(str(e))


def int_list(text):
    return [int(x) for x in text.split(",") if x.strip()]


def names_list(text, known, what):
    got = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in got if x not in known]
    if bad or not got:
        raise SystemExit(f"{what}: {', '.join(bad) or 'none given'}; known: {', '.join(known)}")
    return got


# --- one run ---------------------------------------------------------------------

def pgbench_command(script, mode, clients, seconds, db, log_prefix=None, sampling=None, cpus=None):
    cpus = cpus or os.cpu_count() or 1
    cmd = ["pgbench", "-n", "-b", SCRIPTS[script][0], "-M", mode, "-c", str(clients),
           "-j", str(max(1, min(clients, cpus))), "-T", str(int(seconds))]
    if log_prefix is not None:
        cmd += ["-l", f"--log-prefix={log_prefix}"]
        if sampling is not None and sampling < 1:
            cmd.append(f"--sampling-rate={sampling:g}")
    return cmd + [db]


def parse_pgbench(out):
    """{'tps', 'transactions', 'failed'} from pgbench's summary."""
    tps = re.search(r"^tps = ([0-9.]+)", out, re.M)
    n = re.search(r"^number of transactions actually processed: (\d+)", out, re.M)
    failed = re.search(r"^number of failed transactions: (\d+)", out, re.M)
    if tps is None or n is None:
        raise RuntimeError(f"no tps in pgbench's output:\n{out[-2000:]}")
    return {"tps": float(tps.group(1)), "transactions": int(n.group(1)),
            "failed": int(failed.group(1)) if failed else 0}


def log_latencies_us(lines):
    """Latencies (us) from pgbench's per-transaction log lines:
    'client transaction latency_us script epoch_s epoch_us [lag]'; a
    skipped transaction (latency 'skipped') is left out."""
    out = []
    for line in lines:
        f = line.split()
        if len(f) >= 3 and f[2].isdigit():
            out.append(int(f[2]))
    return out


def read_log_latencies(prefix):
    lat = []
    for p in sorted(prefix.parent.glob(prefix.name + ".*")):
        with open(p) as f:
            lat += log_latencies_us(f)
    return lat


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(cmd, env, postmaster, logdir):
    """One measured pgbench run: its summary, the server's and pgbench's CPU
    seconds, latency percentiles (ms)."""
    for p in logdir.glob("run.*"):
        p.unlink()
    cpu = procstat.ServerCPU(postmaster).start()
    c0 = children_cpu()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1 = children_cpu()
    settled = cpu.settle()
    server_s = cpu.stop(settle=False)
    if r.returncode != 0:
        raise RuntimeError(f"pgbench failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    got = parse_pgbench(r.stdout)
    lat = read_log_latencies(logdir / "run")
    got.update(wall_s=wall, server_cpu_s=server_s, client_cpu_s=c1 - c0, settled=settled,
               logged=len(lat))
    got.update(run_metrics(got))
    if lat:
        got["p50_ms"] = stats.percentile(lat, 50) / 1000
        got["p99_ms"] = stats.percentile(lat, 99) / 1000
    return got


def run_metrics(got):
    """CPU per transaction (us) from a run's totals."""
    n = got["transactions"]
    if not n:
        return {"cpu_us_per_tx": float("nan"), "client_cpu_us_per_tx": float("nan")}
    return {"cpu_us_per_tx": got["server_cpu_s"] * 1e6 / n,
            "client_cpu_us_per_tx": got["client_cpu_s"] * 1e6 / n}


# --- the server ------------------------------------------------------------------

def is_preloaded(db):
    with pg.connect(db, base=False) as c:
        return c.execute("select count(*) from pg_settings where name = 'mccdb.schedule'").fetchone()[0] > 0


def apply_config(cfg, db, state):
    """Restart the cluster into cfg.  ALTER SYSTEM knows mccdb's settings
    only while mccdb is loaded, so a preloaded configuration after a stock
    one restarts twice.  state: {'preloaded': bool} of the running server."""
    if cfg.preload:
        if not state.get("preloaded"):
            pg.set_preload(True, db)
        with pg.connect(db, base=False) as c:
            for k in SERVER_KEYS:
                if k in cfg.server:
                    c.execute(f"alter system set {k} = '{cfg.server[k]}'")
                else:
                    c.execute(f"alter system reset {k}")
        pg.cluster_command("restart", dbname=db)
    else:
        pg.set_preload(False, db)
    state["preloaded"] = cfg.preload


def restore_server(db):
    """After the experiment: mccdb preloaded, the settings this command set reset."""
    pg.set_preload(True, db)
    with pg.connect(db, base=False) as c:
        for k in SERVER_KEYS:
            c.execute(f"alter system reset {k}")
    pg.cluster_command("restart", dbname=db)


def postmaster_pid(db):
    with pg.connect(db, base=False) as c:
        return procstat.postmaster_of(c.info.backend_pid)


def settings_as_run(cfg, db, keys):
    """SHOW of keys in a session with cfg's options, as pgbench's sessions have them."""
    import psycopg
    kw = {"autocommit": True, "options": cfg.pgoptions()}
    if db:
        kw["dbname"] = db
    with psycopg.connect(**kw) as c:
        have = {r[0] for r in c.execute("select name from pg_settings")}
        return {k: c.execute(f"show {k}").fetchone()[0] for k in keys if k in have}


def mccdb_gucs(db):
    with pg.connect(db, base=False) as c:
        return [r[0] for r in c.execute("select name from pg_settings where name like 'mccdb.%' order by 1")]


# pgbench's statements (TPC-B-like and simple-update and select-only), with literals
PGBENCH_STATEMENTS = [
    "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1",
    "SELECT abalance FROM pgbench_accounts WHERE aid = 1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1",
    "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, 1, CURRENT_TIMESTAMP)",
]


def statement_costs(db):
    """{statement: the plan's total cost}: the gate's bypass needs every one
    below mccdb.schedule_min_cost."""
    out = {}
    with pg.connect(db, base=False) as c:
        for s in PGBENCH_STATEMENTS:
            plan = c.execute("explain (format json) " + s).fetchone()[0]
            out[s] = float(plan[0]["Plan"]["Total Cost"])
    return out


def server_extras(db):
    """What the page records beyond pg.server_info: the gate's threshold, max_connections."""
    with pg.connect(db, base=False) as c:
        return {"schedule_min_cost": c.execute("show mccdb.schedule_min_cost").fetchone()[0],
                "max_connections": c.execute("show max_connections").fetchone()[0]}


def ensure_pgbench(db, scale, say):
    """Database db with pgbench's tables at scale (pgbench -i), unless there."""
    pg.ensure_database(db)
    with pg.connect(db, base=False) as c:
        have = c.execute("select to_regclass('pgbench_branches') is not null").fetchone()[0]
        if have and c.execute("select count(*) from pgbench_branches").fetchone()[0] == scale:
            return
    say(f"pgbench -i -s {scale} {db}")
    subprocess.run(["pgbench", "-i", "-q", "-s", str(scale), db], check=True, capture_output=True)
    with pg.connect(db, base=False) as c:
        c.execute("vacuum analyze")


# --- the experiment --------------------------------------------------------------

FIELDS = ["rep", "script", "mode", "clients", "config", "order", "tps", "transactions", "failed", "wall_s",
          "server_cpu_s", "cpu_us_per_tx", "client_cpu_s", "client_cpu_us_per_tx", "p50_ms", "p99_ms",
          "logged", "settled", "load_before", "guard_load_before", "busy_before", "load_after", "error"]


def cells(scripts, modes, clients):
    return [(s, m, c) for s in scripts for m in modes for c in clients]


def run_order(cfgs, seed, rep, cell_index):
    """The configurations of one cell of one repetition, in a seeded random order."""
    order = list(cfgs)
    random.Random(seed * 1_000_003 + rep * 1009 + cell_index).shuffle(order)
    return order


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                    help="comma-separated, stock among them (default: all)")
    ap.add_argument("--scripts", default=",".join(SCRIPTS), help="pgbench built-in scripts")
    ap.add_argument("--modes", default=",".join(MODES), help="pgbench -M protocols")
    ap.add_argument("--clients", default="1,4,16", help="pgbench -c values")
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s")
    ap.add_argument("--seconds", type=int, default=20, help="each measured run")
    ap.add_argument("--warmup", type=int, default=5, help="the warm-up before each run, s (0: none)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-sampling", type=float, default=0.1,
                    help="share of transactions in pgbench's per-transaction log (p50/p99)")
    ap.add_argument("--name", default="oltp-cost")
    a = ap.parse_args(argv)
    cfgs = parse_configs(a.configs)
    scripts = names_list(a.scripts, list(SCRIPTS), "--scripts")
    modes = names_list(a.modes, list(MODES), "--modes")
    clients = int_list(a.clients)
    if not clients or min(clients) < 1:
        raise SystemExit("--clients: positive numbers, e.g. 1,4,16")
    if not 0 < a.log_sampling <= 1:
        raise SystemExit("--log-sampling: in (0, 1]")
    db = a.db or "pgbench"
    say = say_fn(a.quiet)
    if not os.environ.get("PGHOST", "").startswith("/"):
        raise SystemExit('this restarts a project cluster: eval "$(scripts/pg-cluster.sh env NAME)" first')

    state = {"preloaded": is_preloaded("postgres")}
    if not state["preloaded"]:
        pg.set_preload(True, "postgres")
        state["preloaded"] = True
    ensure_pgbench(db, a.scale, say)
    gucs = mccdb_gucs(db)
    costs = statement_costs(db)
    srv = pg.server_info(db)
    srv.update(server_extras(db))
    res = report.Result(a.name, "OLTP cost of mccdb, feature by feature (pgbench, by subtraction)", srv,
                        f"pgbench scale {a.scale}", a.outdir)
    cpus = os.cpu_count() or 1
    # its own load: a backend per client and pgbench's threads
    guard = res.guard = start_guard(a, say, own_load=max(clients) + min(max(clients), cpus))
    runs = []
    recorded = {}
    the_cells = cells(scripts, modes, clients)
    try:
        with tempfile.TemporaryDirectory(prefix="mccdb-oltp-cost-") as tmpname:
            logdir = pathlib.Path(tmpname)
            for rep in range(a.reps):
                for ci, (script, mode, ncl) in enumerate(the_cells):
                    for k, cfg in enumerate(run_order(cfgs, a.seed, rep, ci)):
                        row = {"rep": rep + 1, "script": script, "mode": mode, "clients": ncl,
                               "config": cfg.name, "order": k + 1}
                        what = f"{script} -M {mode} -c {ncl}, {cfg.name} (repetition {rep + 1})"
                        try:
                            apply_config(cfg, db, state)
                            env = {**os.environ, "PGOPTIONS": cfg.pgoptions(), "PGDATABASE": db}
                            if cfg.name not in recorded:
                                keys = list(COMMON_SESSION) + ["compute_query_id"]
                                if cfg.preload:
                                    keys += [g for g in gucs if g in SERVER_KEYS or g in OFF_SESSION]
                                recorded[cfg.name] = settings_as_run(cfg, db, keys)
                            pm = postmaster_pid(db)
                            if a.warmup > 0:
                                before = procstat.children(pm)
                                subprocess.run(pgbench_command(script, mode, ncl, a.warmup, db, cpus=cpus),
                                               env=env, check=True, capture_output=True)
                                procstat.settle(pm, before, timeout=5)
                            row["load_before"] = report.loadavg()
                            with guard.measuring(what):
                                got = measure(pgbench_command(script, mode, ncl, a.seconds, db, logdir / "run",
                                                              a.log_sampling, cpus), env, pm, logdir)
                            row.update(got, load_after=report.loadavg())
                            if guard.checks:    # what the guard saw just before the run
                                row.update(guard_load_before=guard.checks[-1][1],
                                           busy_before=guard.checks[-1][2])
                            say(f"rep {rep + 1} {script} -M {mode} -c {ncl} {cfg.name:>17}: "
                                f"{got['tps']:.0f} tps, {got['cpu_us_per_tx']:.1f} us CPU/tx, "
                                f"p99 {got.get('p99_ms', float('nan')):.2f} ms")
                        except quiet.NotQuiet:      # the guard refuses a busy machine: no page
                            raise
                        except Exception as e:      # noqa: BLE001 -- one failed run must not end hours of runs
                            row["error"] = str(e).strip().splitlines()[-1][:300] if str(e).strip() else repr(e)
                            say(f"rep {rep + 1} {what}: FAILED: {row['error']}")
                            state["preloaded"] = None if not _up(db) else is_preloaded(db)
                        runs.append(row)
    finally:
        try:
            restore_server(db)
        except Exception as e:      # noqa: BLE001
            say(f"could not restore the server: {e}")
    write_page(res, a, cfgs, the_cells, runs, recorded, gucs, costs, srv)
    return res, runs


def _up(db):
    try:
        with pg.connect(db, base=False) as c:
            c.execute("select 1")
        return True
    except Exception:       # noqa: BLE001
        return False


# --- the page --------------------------------------------------------------------

def values(runs, cell, cfg, key, reps):
    """[per repetition] key of cfg's run in cell (NaN where it failed)."""
    by_rep = {r["rep"]: r.get(key, float("nan")) for r in runs
              if (r["script"], r["mode"], r["clients"]) == cell and r["config"] == cfg and not r.get("error")}
    return [by_rep.get(k + 1, float("nan")) for k in range(reps)]


def nan_median(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")


def cell_rows(runs, cell, cfgs, reps):
    """The rows of one cell's table: per configuration, medians and ratios to stock."""
    base = {k: values(runs, cell, "stock", k, reps) for k in ("tps", "cpu_us_per_tx", "p99_ms")}
    rows = []
    for c in cfgs:
        v = {k: values(runs, cell, c.name, k, reps) for k in ("tps", "cpu_us_per_tx", "p99_ms")}
        n = sum(not math.isnan(x) for x in v["tps"])
        if c.name == "stock":
            rt = rc = rp = None
        else:
            rt, rc, rp = (paired.ratio(v[k], base[k]) for k in ("tps", "cpu_us_per_tx", "p99_ms"))
        rows.append([c.name, n, f"{nan_median(v['tps']):.0f}",
                     rt.fmt_median() if rt else "1", rt.fmt_mean() if rt else "1",
                     f"{nan_median(v['cpu_us_per_tx']):.1f}", rc.fmt_median() if rc else "1",
                     f"{nan_median(v['p99_ms']):.2f}", rp.fmt_median() if rp else "1"])
    return rows


def feature_rows(runs, cell, cfgs, reps):
    """Per configuration other than stock: its server CPU per transaction
    minus its reference's (all-off for a feature, stock for all-off and the
    defaults), paired by repetition, in us per transaction and per
    statement the executor runs."""
    script = cell[0]
    per_stmt = SCRIPTS[script][1]
    names = {c.name for c in cfgs}
    rows = []
    for c in cfgs:
        if c.name == "stock":
            continue
        ref = "all-off" if c.name in FEATURES and "all-off" in names else "stock"
        d = paired.difference(values(runs, cell, c.name, "cpu_us_per_tx", reps),
                              values(runs, cell, ref, "cpu_us_per_tx", reps))
        if d.n == 0:
            rows.append([c.name, ref, 0, "n/a", "n/a", "n/a"])
            continue
        rows.append([c.name, ref, d.n, d.fmt_median(2), d.fmt_mean(2),
                     paired.interval_text(d.median / per_stmt, d.boot_lo / per_stmt, d.boot_hi / per_stmt, 2, d.n)])
    return rows


# issue 49's targets for mccdb at its defaults and with schedule = shortest
TARGET_CONFIGS = ("defaults", "defaults-shortest")
TPS_TARGET, WIDTH_TARGET, P99_TARGET = 0.98, 0.02, 1.05


def tps_verdict(r):
    """'met' when the median tps ratio is at least 0.98 and its bootstrap
    interval is at most +-2% wide; 'missed' when the whole interval is
    below 0.98; else 'not resolved' (too few or too noisy pairs)."""
    if r.n < 2:
        return "not resolved"
    if r.boot_hi < TPS_TARGET:
        return "missed"
    if r.median >= TPS_TARGET and r.boot_width <= WIDTH_TARGET:
        return "met"
    return "not resolved"


def p99_verdict(r):
    """'met' when the whole bootstrap interval of the median p99 ratio is at
    most 1.05, 'missed' when all of it is above, else 'not resolved'."""
    if r.n < 2:
        return "not resolved"
    if r.boot_hi <= P99_TARGET:
        return "met"
    if r.boot_lo > P99_TARGET:
        return "missed"
    return "not resolved"


def target_rows(runs, cells_, cfgs, reps):
    """Per target configuration and cell: the tps and p99 ratios to stock
    with their bootstrap intervals and the verdicts."""
    rows = []
    for c in cfgs:
        if c.name not in TARGET_CONFIGS:
            continue
        for cell in cells_:
            rt = paired.ratio(values(runs, cell, c.name, "tps", reps), values(runs, cell, "stock", "tps", reps))
            rp = paired.ratio(values(runs, cell, c.name, "p99_ms", reps), values(runs, cell, "stock", "p99_ms", reps))
            rows.append([c.name, f"{cell[0]} -M {cell[1]} -c {cell[2]}", rt.fmt_median(),
                         f"+-{100 * rt.boot_width:.1f}%" if rt.n > 1 else "n/a", tps_verdict(rt),
                         rp.fmt_median(), p99_verdict(rp)])
    return rows


def load1(text):
    """The 1-minute figure of a '/proc/loadavg'-style 'a b c', or NaN."""
    try:
        return float(str(text).split()[0])
    except (ValueError, IndexError):
        return float("nan")


def write_runs_csv(path, runs):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def write_page(res, a, cfgs, the_cells, runs, recorded, gucs, costs, srv):
    res.add("What each part of mccdb costs a short OLTP statement, by subtraction: pgbench's built-in "
            "scripts against one cluster restarted for every run into each configuration, configurations "
            "in a new seeded random order in every cell of every repetition, ratios and differences "
            "paired within a repetition. Server CPU per transaction: utime + stime of the postmaster and "
            "every process it forked (the exited backends' through the postmaster's cutime/cstime), "
            "/proc/PID/stat, over the measured run, divided by the transactions pgbench counted; "
            "waiting for a CPU does not count in it. `synchronous_commit = off` in every session.\n")
    res.add(f"pgbench `-n -b SCRIPT -M MODE -c CLIENTS -j min(CLIENTS, {os.cpu_count()}) -T {a.seconds}` "
            f"after a warm-up of {a.warmup} s with the same command; p50/p99 from the per-transaction log "
            f"(`-l --sampling-rate={a.log_sampling:g}`); {a.reps} repetitions, seed {a.seed}. "
            f"Per-cell tables: the median of the repetitions; `/ stock` the paired ratio to stock of the "
            f"same repetition: median (95% bootstrap interval of the median) and geometric mean (95% paired "
            f"t interval on the logs). CPU/tx includes the server's background processes (checkpointer, "
            f"WAL writer, autovacuum) and each run's connection start and exit.\n")
    worst = max(costs.values()) if costs else float("nan")
    res.add(f"The gate's bypass: `mccdb.schedule_min_cost = {srv.get('schedule_min_cost', '?')}`; pgbench's "
            f"statements cost at most {worst:.2f} in the plans of this database ("
            + "; ".join(f"`{s.split(' WHERE')[0][:40]}` {v:.2f}" for s, v in costs.items()) + ").\n")
    res.table(["configuration", "what", "set", "as the sessions had it"],
              [[c.name, c.what, c.settings_text(),
                ", ".join(f"{k} = {v}" for k, v in recorded.get(c.name, {}).items())] for c in cfgs])
    varied = set(SERVER_KEYS) | set(OFF_SESSION)
    fixed = [g for g in gucs if g not in varied]
    res.add("mccdb's settings in this server (pg_settings): " + ", ".join(f"`{g}`" for g in gucs)
            + ". Not varied by any configuration (each at its default): "
            + (", ".join(f"`{g}`" for g in fixed) or "none") + ".\n")
    failed = [r for r in runs if r.get("error")]
    if failed:
        res.add(f"**{len(failed)} of {len(runs)} runs failed** and are left out of their pairs: "
                + "; ".join(f"{r['script']} -M {r['mode']} -c {r['clients']} {r['config']} rep {r['rep']}: "
                            f"{r['error']}" for r in failed[:10]) + "\n")
    unsettled = sum(1 for r in runs if r.get("settled") is False)
    if unsettled:
        res.add(f"In {unsettled} runs a client backend had not exited 5 s after pgbench did; its CPU time "
                "until then is in the run's.\n")
    targets = target_rows(runs, the_cells, cfgs, a.reps)
    if targets:
        res.add("## Against issue 49's targets\n")
        res.add(f"mccdb at its defaults and with `mccdb.schedule = shortest`: tps at least {TPS_TARGET}x stock "
                f"(median of the paired ratios) with the 95% bootstrap interval of that median at most "
                f"+-{100 * WIDTH_TARGET:.0f}% wide, and p99 latency at most {P99_TARGET}x stock. `met`: the "
                f"median reaches it and the interval is that narrow (p99: the whole interval is at most "
                f"{P99_TARGET}); `missed`: the whole interval is on the wrong side; else `not resolved`.\n")
        res.table(["configuration", "cell", "tps / stock (bootstrap)", "interval", "tps target",
                   "p99 / stock (bootstrap)", "p99 target"], targets)
    res.add("## Throughput, CPU per transaction and p99 against stock\n")
    for cell in the_cells:
        res.add(f"**{cell[0]}, -M {cell[1]}, {cell[2]} client{'s' if cell[2] != 1 else ''}**\n")
        res.table(["configuration", "runs", "median tps", "tps / stock: median (bootstrap)",
                   "tps / stock: geo. mean (paired t)", "server CPU us/tx", "CPU/tx / stock",
                   "p99 ms", "p99 / stock"], cell_rows(runs, cell, cfgs, a.reps))
    res.add("## What each feature adds, in server CPU\n")
    res.add("The paired difference of server CPU per transaction to the reference of the same repetition "
            "(all-off for a single feature; stock for all-off, the hooks' floor, and for the defaults): "
            "median (95% bootstrap interval), mean (95% t interval), and the median per statement the "
            "executor runs (select-only 1, simple-update 3, tpcb-like 5; BEGIN and END not counted).\n")
    for cell in the_cells:
        res.add(f"**{cell[0]}, -M {cell[1]}, {cell[2]} client{'s' if cell[2] != 1 else ''}**\n")
        res.table(["configuration", "over", "pairs", "us/tx: median (bootstrap)", "us/tx: mean (t)",
                   "us per statement"], feature_rows(runs, cell, cfgs, a.reps))
    res.add("## The machine's load before each run\n")
    res.add("The 1-minute load average just before each run's quiet-machine check, per configuration over "
            "all its runs: median (min-max). The benchmark's own sessions make part of it.\n")
    res.table(["configuration", "runs", "1-minute load before"],
              [[c.name, len(v), stats.summarize(v).fmt(2)] for c in cfgs
               for v in [[load1(r.get("load_before")) for r in runs if r["config"] == c.name]]])
    res.outdir.mkdir(parents=True, exist_ok=True)
    csv_path = res.outdir / f"{res.name}-runs.csv"
    write_runs_csv(csv_path, runs)
    res.add(f"Every run (tps, CPU, latency, the load before and after it, its place in the order): "
            f"[{csv_path.name}]({csv_path.name}).\n")


if __name__ == "__main__":
    sys.exit(run(main))
