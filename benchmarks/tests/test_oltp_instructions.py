"""The instruction-count benchmark's pure parts (issue 49), no server:
callgrind_annotate's lines, the per-transaction difference of two
connections, where the added instructions are, the command line; and one
real callgrind profile of a small program, read the way the benchmark reads
a backend's."""
import shutil
import subprocess

import pytest

from mccdb_bench import oltp_cost, oltp_instructions as oi

ANNOTATED = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
364,754,094 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
102,727,600 (28.16%)  /src/pg_extension/plan_choice.c:mccdb_planner [/lib/postgresql/15/lib/mccdb.so]
  7,076,961 ( 1.94%)  ???:JumbleQuery [/lib/postgresql/15/bin/postgres]
    150,000 ( 0.04%)  ???:0x00000000005d00f0'2 [/lib/postgresql/15/bin/postgres]
        900 ( 0.00%)  ???:mccdb_helper [/lib/postgresql/15/lib/mccdb.so]
     .           mccdb_planner(Query *parse, const char *query_string, int cursorOptions,
102,727,600 (28.16%)  => /src/pg_extension/plan_choice.c:mccdb_planner (3,000x)
"""


def test_parse_annotate_reads_function_lines_only():
    got = oi.parse_annotate(ANNOTATED)
    assert got == {
        ("/src/pg_extension/plan_choice.c", "mccdb_planner", "/lib/postgresql/15/lib/mccdb.so"): 102727600,
        ("???", "JumbleQuery", "/lib/postgresql/15/bin/postgres"): 7076961,
        ("???", "0x00000000005d00f0'2", "/lib/postgresql/15/bin/postgres"): 150000,
        ("???", "mccdb_helper", "/lib/postgresql/15/lib/mccdb.so"): 900,
    }


def test_per_tx_is_the_difference_over_the_transactions_between():
    assert oi.per_tx({"a": 1300, "b": 50}, {"a": 300, "c": 20}, 1000) == {"a": 1.0, "b": 0.05, "c": -0.02}


def test_breakdown_groups_mccdb_by_file_and_takes_jumble_inclusive():
    so = "/x/lib/mccdb.so"
    self_diff = {("/s/server_cost.c", "settings_are_servers", so): 262.0,
                 ("/s/server_cost.c", "server_cost_planner", so): 42.0,
                 ("/s/mccdb.c", "mccdb_ExecutorStart", so): 84.0,
                 ("???", "stripped", so): 5.0,
                 ("???", "palloc", "/x/bin/postgres"): 57.0}
    incl_diff = {("???", "JumbleQuery", "/x/bin/postgres"): 2359.0,
                 ("/s/mccdb.c", "mccdb_ExecutorStart", so): 8089.0}
    modules, jumble = oi.breakdown(self_diff, incl_diff)
    assert modules == {"server_cost.c": 304.0, "mccdb.c": 84.0, "mccdb.so": 5.0}
    assert jumble == 2359.0


def test_summary_ir(tmp_path):
    p = tmp_path / "cg.1"
    p.write_text("version: 1\ncmd: postgres\nevents: Ir\nsummary: 143752009\ntotals: 143752009\n")
    assert oi.summary_ir(p) == 143752009
    q = tmp_path / "cg.2"
    q.write_text("version: 1\n")
    assert oi.summary_ir(q) == 0


def test_summary_events_with_the_cache_simulation(tmp_path):
    p = tmp_path / "cg.3"
    p.write_text("events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
                 "summary: 121179644 22610639 47751272 1179943 906977 1849098 11469 88251 1648320\n")
    got = oi.summary_events(p)
    assert got["Ir"] == 121179644 and got["D1mr"] == 906977 and got["DLmw"] == 1648320
    assert oi.summary_ir(p) == 121179644
    assert set(oi.CACHE_EVENTS) <= set(got)


def test_stock_queryid_is_stock_with_the_query_id_on():
    c = oltp_cost.config("stock-queryid")
    assert not c.preload and c.server == {} and c.session == {"compute_query_id": "on"}
    assert "stock-queryid" not in oltp_cost.DEFAULT_CONFIGS
    with pytest.raises(ValueError, match="stock-queryid"):
        oltp_cost.config("no-such")


@pytest.mark.parametrize("argv, message", [
    (["--transactions", "1300,300"], "--transactions"),
    (["--transactions", "300"], "--transactions"),
    (["--configs", "defaults"], "stock"),
    (["--scripts", "nope"], "--scripts"),
])
def test_bad_arguments_are_refused_before_anything_runs(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        oi.main(argv)
    assert message in str(e.value) + capsys.readouterr().err


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_a_real_profile_counts_a_loop_per_iteration(tmp_path):
    """callgrind on a C program whose loop runs N1 and N2 times: the
    difference per iteration is the loop body's instructions, the same for
    both pairs of counts, and the function is found by name."""
    src = tmp_path / "loop.c"
    src.write_text("#include <stdlib.h>\n"
                   "__attribute__((noinline)) long body(long i) { return i * 3 + (i >> 2); }\n"
                   "int main(int c, char **v) { long s = 0, n = atol(v[1]);\n"
                   "  for (long i = 0; i < n; i++) s += body(i); return (int)(s & 1); }\n")
    exe = tmp_path / "loop"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    profiles = {}
    for n in (1000, 3000, 5000):
        out = tmp_path / f"cg.{n}"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), str(n)],
                       check=True, capture_output=True)
        profiles[n] = out
    a = (oi.summary_ir(profiles[3000]) - oi.summary_ir(profiles[1000])) / 2000
    b = (oi.summary_ir(profiles[5000]) - oi.summary_ir(profiles[3000])) / 2000
    assert a == b and a > 0
    incl = oi.per_tx(oi.annotate(profiles[3000], True), oi.annotate(profiles[1000], True), 2000)
    body = [v for (_f, fn, _o), v in incl.items() if fn == "body"]
    assert body and 0 < body[0] < a
