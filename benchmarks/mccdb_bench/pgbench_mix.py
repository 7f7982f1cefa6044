"""The mixed stream again, driven by pgbench: stock vs each policy.

A standard tool confirms the throughput experiment: pgbench runs custom
scripts, one per query -- the hash-join and index-join plans of some PLQs
(forced as Figure 6 forces them) and the 13 SSB queries -- chosen at random
with equal weights, --clients clients, --per-client transactions each
(fixed work, `pgbench -t`), the same --random-seed in every configuration.
Each script is one transaction that sets its plan settings with SET LOCAL,
so a forced plan never leaks into the next script, and a transaction
pooler (the pgbouncer configurations) runs the whole script on one server
connection. Reported:
pgbench's own tps as queries per hour, and the median and 95th percentile
latency from its per-transaction log (`-l`).

Configurations, server restarts and the guard as in throughput.py.

    eval "$(scripts/pg-cluster.sh env demo)"
    .venv/bin/python -m mccdb_bench.pgbench_mix --db ssb --clients 6 --reps 3
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from .harness import pg, report, sqlfiles, stats
from .harness.cli import parser, run, say_fn, start_guard
from .harness.probes import scale_of
from . import configs
from .throughput import plot_rates, repeat_configs

PLANS = [(5, "hash"), (25, "hash"), (1, "index"), (12, "index")]


def scripts(tmp):
    """Write one pgbench script per query; [(name, path)]."""
    out = []
    items = [(f"PLQ_{n} {plan}", sqlfiles.force(plan), sqlfiles.plq(n)) for n, plan in PLANS]
    items += [(f"SSB {n}", [], sqlfiles.ssb(n)) for n in sqlfiles.ssb_names()]
    for k, (name, settings, sql) in enumerate(items):
        path = tmp / f"q{k:02d}.sql"
        # one line per command: pgbench ends a command at a ';' that ends a line
        body = (["BEGIN;"] + [f"{s};" for s in configs.local_settings(0, settings)]
                + [" ".join(sql.split()) + ";", "COMMIT;"])
        path.write_text(f"-- {name}\n" + "\n".join(body) + "\n")
        out.append((name, path))
    return out


def pgbench(files, clients, per_client, seed, db, plan, logdir, target_env=None):
    """Run pgbench once (against the pooler target_env names, if any); (tps, [latency s])."""
    for f in logdir.glob("pgbench_log*"):
        f.unlink()
    cmd = ["pgbench", "-n", "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)),
           "-t", str(per_client), f"--random-seed={seed}", "-l", f"--log-prefix={logdir}/pgbench_log"]
    for _, path in files:
        cmd += ["-f", f"{path}@1"]
    if db:
        cmd.append(db)
    env = {**os.environ, **(target_env or {})}
    if plan:
        env["PGOPTIONS"] = f"-c mccdb.plan_policy={plan}"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"pgbench failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    m = re.search(r"^tps = ([0-9.]+)", p.stdout, re.M)
    failed = re.search(r"number of failed transactions: (\d+)", p.stdout)
    if not m:
        raise RuntimeError(f"no tps in pgbench's output:\n{p.stdout}")
    if failed and int(failed.group(1)):
        raise RuntimeError(f"pgbench: {failed.group(1)} failed transactions:\n{p.stdout}")
    lat = []
    for f in logdir.glob("pgbench_log*"):
        for line in f.read_text().splitlines():
            lat.append(int(line.split()[2]) / 1e6)   # client, transaction, latency in us, ...
    if len(lat) != clients * per_client:
        raise RuntimeError(f"pgbench logged {len(lat)} transactions, expected {clients * per_client}")
    return float(m.group(1)), lat


def main(argv=None):
    ap = parser(__doc__)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--per-client", type=int, default=10, help="transactions (queries) per client")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--configs", default="stock,off,sls,mls,predictive",
                    help=f"comma-separated, from: {configs.KNOWN}")
    ap.add_argument("--pooler-port", type=int, default=configs.POOLER_PORT,
                    help="PgBouncer's port in the pgbouncer configurations")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="pgbench-mix")
    a = ap.parse_args(argv)
    if not shutil.which("pgbench"):
        raise SystemExit("pgbench is not on PATH (Debian: postgresql-client-15 ships it)")
    say = say_fn(a.quiet)
    srv = pg.server_info(a.db)
    res = report.Result(a.name, "Mixed stream under pgbench: stock vs mccdb policies", srv, scale_of(a.db), a.outdir)
    guard = res.guard = start_guard(a, say, own_load=max(a.clients, os.cpu_count() or 1))
    cfgs = configs.parse_list(a.configs)
    with tempfile.TemporaryDirectory(prefix="mccdb-pgbench-") as tmpname:
        tmp = pathlib.Path(tmpname)
        files = scripts(tmp)

        def one(cfg, target, env):
            db = configs.dbname_for(cfg, a.db, "analytics")     # a two-pool pooler: its analytics alias
            tps, lat = pgbench(files, a.clients, a.per_client, a.seed, db, cfg.plan_policy, tmp, env)
            say(f"  {cfg.name:>10}: tps {tps:.3f}, median {stats.summarize(lat).median:.2f} s")
            return {"qph": tps * 3600, "latencies": lat}

        per = repeat_configs(cfgs, a.reps, a.seed, guard, one, a.db, say, a.pooler_port)
    rows = [[name] + [stats.summarize(d.get(k, [])).fmt(digits) for k, digits in
                      (("qph", 0), ("qph_rel", 2), ("median", 2), ("p95", 2), ("p95_rel", 2))]
            for name, d in per.items()]
    res.add(f"`pgbench -n -c {a.clients} -t {a.per_client} --random-seed={a.seed} -l` with {len(files)} "
            "custom scripts of weight 1: " + ", ".join(n for n, _ in files) + ". Each configuration starts "
            "from a restarted server; configurations in a new random order in each of "
            f"{a.reps} repetitions; median (min-max); ratios over stock within a repetition. queries/hour "
            "is pgbench's tps (without connection time) x 3600. Each script is one transaction "
            "(BEGIN, SET LOCAL plan settings, the query, COMMIT).\n")
    res.add("Configurations: " + "; ".join(f"`{c.name}`: {c.describe()}" for c in cfgs) + ".\n")
    res.table(["configuration", "queries/hour", "vs stock", "median latency s", "p95 latency s", "p95 vs stock"], rows)
    plot_rates(res, per, a.reps, "queries per hour (pgbench tps x 3600)")
    return res, per


if __name__ == "__main__":
    sys.exit(run(main))
