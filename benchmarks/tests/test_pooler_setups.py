"""PgBouncer set up as a DBA would for a mixed server (issue 50): a pool per
workload class (OLTP and analytics as database aliases with their own
pool_size) beside the one pool for everyone, and the ad-hoc mix no pooler
can split.  No server: the generated configuration, the configuration
names, where each class's clients connect."""
import os
import pwd

import pytest

from mccdb_bench import configs, workload
from mccdb_bench.harness import pgbouncer


@pytest.fixture(autouse=True)
def cluster_user_is_the_caller(monkeypatch):
    """As root the pooler's files are given to the cluster's user, which a
    machine make test has not yet set up lacks: here that is the caller."""
    monkeypatch.setenv("MCCDB_CLUSTER_USER", pwd.getpwuid(os.geteuid()).pw_name)


def ini(tmp_path, **kw):
    return pgbouncer.config_text(server_host="/run/pg", server_port=5, listen_port=6, socket_dir=tmp_path,
                                 auth_file=tmp_path / "u", logfile=tmp_path / "l", pidfile=tmp_path / "p", **kw)


def section(text, name):
    """The lines of one [section] of an ini text."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("["):
            cur = line.strip("[]")
        elif cur == name and line.strip() and not line.startswith(";"):
            out.append(line)
    return out


def test_two_aliases_with_their_own_pool_sizes(tmp_path):
    text = ini(tmp_path, pool_size=2, aliases={"ssb_oltp": ("ssb", 8), "ssb_analytics": ("ssb", 2)})
    dbs = section(text, "databases")
    assert dbs == ["ssb_oltp = host=/run/pg port=5 dbname=ssb pool_size=8",
                   "ssb_analytics = host=/run/pg port=5 dbname=ssb pool_size=2",
                   "* = host=/run/pg port=5"]       # the fallback last, for every other name
    settings = section(text, "pgbouncer")
    assert "default_pool_size = 2" in settings and "pool_mode = transaction" in settings
    assert "reserve_pool_size = 0" in settings and "query_wait_timeout = 0" in settings


def test_without_aliases_the_configuration_is_one_pool_as_before(tmp_path):
    text = ini(tmp_path, pool_size=3)
    assert section(text, "databases") == ["* = host=/run/pg port=5"]
    assert "default_pool_size = 3" in section(text, "pgbouncer")


@pytest.mark.parametrize("aliases", [{"ssb-oltp": ("ssb", 8)}, {"": ("ssb", 8)}, {"a b": ("ssb", 1)},
                                     {"ssb_oltp": ("ssb", 0)}])
def test_bad_aliases_are_refused(tmp_path, aliases):
    with pytest.raises(ValueError):
        ini(tmp_path, pool_size=2, aliases=aliases)


def test_the_pooler_writes_its_aliases_and_records_them(tmp_path):
    b = pgbouncer.PgBouncer(2, 6432, name="t", server_host="/run/pg", server_port=5, root=tmp_path,
                            aliases={"ssb_oltp": ("ssb", 8), "ssb_analytics": ("ssb", 2)})
    b.write_files()
    text = b.ini.read_text()
    assert "ssb_oltp = host=/run/pg port=5 dbname=ssb pool_size=8" in text
    assert "ssb_analytics = host=/run/pg port=5 dbname=ssb pool_size=2" in text
    s = b.settings()
    assert s["default_pool_size"] == 2
    assert s["pool ssb_oltp"] == "ssb, pool_size 8" and s["pool ssb_analytics"] == "ssb, pool_size 2"
    one = pgbouncer.PgBouncer(2, 6432, name="u", server_host="/run/pg", server_port=5, root=tmp_path)
    assert not any(k.startswith("pool ") for k in one.settings())


def test_the_auth_file_names_every_role_clients_connect_as(tmp_path):
    b = pgbouncer.PgBouncer(2, 6432, name="t", server_host="/run/pg", server_port=5, root=tmp_path,
                            users=["wl_reports", "wl_batch", "postgres"])
    b.write_files()
    assert (b.dir / "userlist.txt").read_text() == '"postgres" ""\n"wl_reports" ""\n"wl_batch" ""\n'


def test_two_pool_configuration_names():
    two = configs.parse("pgbouncer2", cpus=2)
    assert (two.pool, two.oltp_pool) == (2, configs.OLTP_POOL) and not two.mccdb
    assert "analytics pool_size 2, OLTP pool_size 8" in two.describe()
    c = configs.parse("pgbouncer2-3-12")
    assert (c.pool, c.oltp_pool) == (3, 12)
    assert configs.parse("pgbouncer-4").oltp_pool is None
    for bad in ("pgbouncer2-0-8", "pgbouncer2-2-0", "pgbouncer2-2", "pgbouncer3"):
        with pytest.raises(ValueError):
            configs.parse(bad)
    assert "pgbouncer2-A-O" in configs.KNOWN


def test_each_class_connects_to_its_own_alias():
    two = configs.parse("pgbouncer2-2-8")
    assert configs.aliases(two, "ssb") == {"ssb_oltp": ("ssb", 8), "ssb_analytics": ("ssb", 2)}
    assert configs.dbname_for(two, "ssb", "oltp") == "ssb_oltp"
    assert configs.dbname_for(two, "ssb", "analytics") == "ssb_analytics"
    one = configs.parse("pgbouncer-2")
    assert configs.aliases(one, "ssb") == {} and configs.dbname_for(one, "ssb", "oltp") == "ssb"
    assert configs.dbname_for(configs.parse("stock"), None, "analytics") is None   # the libpq environment's
    with pytest.raises(ValueError):
        configs.dbname_for(two, "ssb", "tpcb")


def test_the_alias_of_the_libpq_environments_database(monkeypatch):
    monkeypatch.setenv("PGDATABASE", "ssb8")
    two = configs.parse("pgbouncer2-2-8")
    assert configs.dbname_for(two, None, "oltp") == "ssb8_oltp"
    assert configs.aliases(two, None) == {"ssb8_oltp": ("ssb8", 8), "ssb8_analytics": ("ssb8", 2)}


def test_clients_of_starts_the_pooler_with_the_aliases(monkeypatch):
    started = []

    class Fake:
        def __init__(self, pool, port, name=None, aliases=None, users=()):
            started.append((pool, port, aliases))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def conninfo(self):
            return {"host": "/x", "port": 1}

        def env(self):
            return {"PGHOST": "/x"}
    monkeypatch.setattr(configs, "PgBouncer", Fake)
    with configs.clients_of(configs.parse("pgbouncer2-2-8"), 7000, "ssb") as (target, env, pooler):
        assert target == {"host": "/x", "port": 1} and isinstance(pooler, Fake)
    with configs.clients_of(configs.parse("pgbouncer-2"), 7000, "ssb"):
        pass
    with configs.clients_of(configs.parse("stock"), 7000, "ssb") as (target, env, pooler):
        assert (target, env, pooler) == ({}, {}, None)
    assert started == [(2, 7000, {"ssb_oltp": ("ssb", 8), "ssb_analytics": ("ssb", 2)}), (2, 7000, {})]


def test_the_two_pool_setup_is_added_beside_the_one_pool_one():
    cfgs, added = configs.with_two_pools(configs.parse_list("stock,pgbouncer,off", cpus=2), cpus=2)
    assert [c.name for c in cfgs] == ["stock", "pgbouncer", "pgbouncer2", "off"] and added == "pgbouncer2"
    cfgs, added = configs.with_two_pools(configs.parse_list("stock,pgbouncer-4", cpus=2), cpus=2)
    assert [c.name for c in cfgs] == ["stock", "pgbouncer-4", f"pgbouncer2-4-{configs.OLTP_POOL}"]
    assert cfgs[-1].pool == 4 and cfgs[-1].oltp_pool == configs.OLTP_POOL
    for text in ("stock,pgbouncer,pgbouncer2-2-4", "stock,off,mccdb:shortest"):
        cfgs, added = configs.with_two_pools(configs.parse_list(text, cpus=2), cpus=2)
        assert [c.name for c in cfgs] == text.split(",") and added is None
    names = workload.DEFAULT_CONFIGS.split(",")
    assert "pgbouncer" in names and "pgbouncer2" in names


def test_the_adhoc_mix_puts_short_and_long_analytics_in_one_stream():
    (ls, long_), (ss, short) = workload.mix("adhoc")
    assert (ls, ss) == (0.5, 0.5)
    assert {i.cls for i in long_} == {"long"} and {i.cls for i in short} == {"short"}
    assert [i.name for i in long_] == [i.name for i in workload.mix("long")[0][1]]
    assert "adhoc" in workload.MIX_NAMES and "adhoc" in workload.OLTP_MIXES and "bimodal" in workload.OLTP_MIXES
    seq = workload.sequence(workload.mix("adhoc"), 1, 2000)
    assert abs(sum(i.cls == "long" for i in seq) / len(seq) - 0.5) < 0.04
    # one client's sequence holds both: no role, database or connection tells them apart
    assert {i.cls for i in workload.sequence(workload.mix("adhoc"), 1000, 10)} == {"short", "long"}


def test_ratios_over_the_two_pool_pooler():
    got = {"stock": {"tpcb": {"qph": 100.0, "p95": 4.0, "p99": 5.0, "mean": 2.0}},
           "pgbouncer": {"tpcb": {"qph": 50.0, "p95": 2.0, "p99": 3.0, "mean": 4.0}},
           "pgbouncer2": {"tpcb": {"qph": 100.0, "p95": 1.0, "p99": 2.0, "mean": 1.0}},
           "mccdb:shortest": {"tpcb": {"qph": 100.0, "p95": 0.5, "p99": 1.0, "mean": 0.5}}}
    workload.add_ratios(got, "pgbouncer2")
    m = got["mccdb:shortest"]["tpcb"]
    assert m["p99/two pools"] == 0.5 and m["mean/two pools"] == 0.5 and m["qph/two pools"] == 1.0
    assert m["p95/two pools"] == 0.5 and m["qph/pgbouncer"] == 2.0
    assert workload.two_pool_config(configs.parse_list("stock,pgbouncer,pgbouncer2-2-8")) == "pgbouncer2-2-8"
    assert workload.one_pool_config(configs.parse_list("stock,pgbouncer-4,pgbouncer,pgbouncer2")) == "pgbouncer"
    assert workload.one_pool_config(configs.parse_list("stock,pgbouncer2,pgbouncer-4")) == "pgbouncer-4"
    got = {"stock": {"short": {"qph": 10.0, "p95": 1.0, "p99": 1.0, "mean": 1.0}},
           "pgbouncer-4": {"short": {"qph": 5.0, "p95": 1.0, "p99": 1.0, "mean": 2.0}}}
    workload.add_ratios(got, None, "pgbouncer-4")
    assert got["stock"]["short"]["qph/pgbouncer"] == 2.0 and "qph/two pools" not in got["stock"]["short"]


def test_the_page_says_where_each_class_went():
    class A:
        mix, db = "adhoc", "ssb"
    cfgs = configs.parse_list("stock,pgbouncer-2,pgbouncer2-2-8")
    text = workload.pooler_text(A, cfgs, "pgbouncer2-2-8")
    assert "`ssb_oltp` (pool_size 8)" in text and "`ssb_analytics` (pool_size 2)" in text
    assert "one pool of 2 for every client" in text and "no pooler can put them in separate pools" in text
    assert "added beside the one-pool setup" in text
    A.mix = "long"
    assert "has no OLTP" in workload.pooler_text(A, cfgs, None)
    assert workload.pooler_text(A, configs.parse_list("stock,off"), None) == ""


def test_workload_accepts_the_adhoc_mix_and_the_flag():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.workload", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ})
    assert r.returncode == 0 and "adhoc" in r.stdout and "--one-pool-only" in r.stdout
