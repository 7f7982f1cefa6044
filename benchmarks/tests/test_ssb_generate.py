"""Tests of the pure-Python parts of the SSB generator, the query files and
the generated test files. No server needed:

    .venv/bin/python -m pytest benchmarks/tests/test_ssb_generate.py
"""

import datetime as dt
import io
import re
from decimal import Decimal

import pytest

from mccdb_bench import make_plq
from mccdb_bench import make_ssb_query_tests as make_query_tests
from mccdb_bench import ssb_generate as g
from mccdb_bench.paths import PLQ_DIR
from mccdb_bench.paths import SSB_DIR as HERE

SSB_TABLES = {"lineorder", "part", "supplier", "customer", "date"}


# --------------------------------------------------------------- cardinalities

@pytest.mark.parametrize("sf, customer, supplier, part, orders", [
    ("0.001", 30, 2, 2000, 1500),
    ("0.01", 300, 20, 2000, 15000),
    ("0.1", 3000, 200, 20000, 150000),
    ("0.5", 15000, 1000, 100000, 750000),
    ("1", 30000, 2000, 200000, 1500000),
    ("2", 60000, 4000, 400000, 3000000),
    ("3", 90000, 6000, 400000, 4500000),
    ("4", 120000, 8000, 600000, 6000000),
    ("10", 300000, 20000, 800000, 15000000),
    ("1000", 30000000, 2000000, 2000000, 1500000000),
])
def test_cardinalities_follow_the_ssb_formulas(sf, customer, supplier, part, orders):
    c = g.cardinalities(g.parse_scale(sf))
    assert (c.customer, c.supplier, c.part, c.orders) == (customer, supplier, part, orders)
    assert c.date == 2556
    assert c.lineorder_expected == 4 * orders


def test_part_rows_below_sf1_scale_linearly_with_a_floor_of_2000():
    assert g.part_rows(Decimal("0.01")) == 2000
    assert g.part_rows(Decimal("0.005")) == 2000
    assert g.part_rows(Decimal("0.25")) == 50000


def test_part_rows_from_sf1_grow_with_floor_log2():
    # 200,000 x floor(1 + log2 SF): steps at powers of two.
    assert g.part_rows(Decimal("1.99")) == 200000
    assert g.part_rows(Decimal("2")) == 400000
    assert g.part_rows(Decimal("7.99")) == 600000
    assert g.part_rows(Decimal("8")) == 800000
    assert g.part_rows(Decimal("16")) == 1000000


def test_lineorder_tolerance_is_six_standard_deviations():
    c = g.cardinalities(Decimal("0.01"))          # 15,000 orders: sd = 2 * sqrt(15000)
    assert c.lineorder_tolerance == 1470
    assert g.cardinalities(Decimal("1")).lineorder_tolerance == 14697


def test_cardinalities_are_exact_decimals_not_floats():
    # 0.07 * 30000 is 2100.0000000000005 in floating point; exact here.
    assert g.cardinalities(g.parse_scale("0.07")).customer == 2100
    assert g.cardinalities(g.parse_scale("0.29")).orders == 435000


# --------------------------------------------------------------- argument parsing

@pytest.mark.parametrize("bad", ["0", "-1", "abc", "nan", "inf", "0.0009", "1001", ""])
def test_parse_scale_rejects_out_of_range_and_non_numbers(bad):
    with pytest.raises(g.argparse.ArgumentTypeError):
        g.parse_scale(bad)


def test_parse_scale_accepts_decimal_text_exactly():
    assert g.parse_scale("0.01") == Decimal("0.01")
    assert g.parse_scale("10") == Decimal(10)
    assert g.parse_scale(" 1.0 ") == Decimal(1)


def test_parse_args_load_defaults():
    a = g.parse_args(["--scale", "0.01"])
    assert a.scale == Decimal("0.01") and a.seed == 1 and not a.check
    assert a.jobs == 1 and a.foreign_keys and a.progress == "auto"
    assert a.chunk_orders == g.DEFAULT_CHUNK_ORDERS and a.part_rows is None


def test_part_rows_option_overrides_the_part_formula_only():
    a = g.parse_args(["--scale", "1", "--part-rows", "400000"])
    assert a.part_rows == 400000
    c = g.cardinalities(a.scale, a.part_rows)
    assert (c.part, c.customer, c.orders) == (400000, 30000, 1500000)


def test_parse_args_check_needs_no_scale_and_keeps_seed_unset():
    a = g.parse_args(["--check"])
    assert a.check and a.scale is None and a.seed is None


def test_parse_args_all_options():
    a = g.parse_args(["-s", "2", "--seed", "42", "--dsn", "host=/tmp port=5",
                      "-j", "2", "--chunk-orders", "1000", "--no-foreign-keys",
                      "--progress", "lines"])
    assert (a.scale, a.seed, a.dsn, a.jobs, a.chunk_orders) == \
        (Decimal(2), 42, "host=/tmp port=5", 2, 1000)
    assert not a.foreign_keys and a.progress == "lines"


def test_parse_args_db_sets_the_database_of_the_connection_string():
    a = g.parse_args(["--check", "--db", "plq", "--dsn", "host=/tmp port=5"])
    assert "dbname=plq" in a.dsn and "host=/tmp" in a.dsn
    assert g.parse_args(["--check", "--dsn", "port=5"]).dsn == "port=5"


def test_parse_args_check_takes_the_part_rows_the_load_must_have_used():
    a = g.parse_args(["--check", "--part-rows", "5000"])
    assert a.check and a.part_rows == 5000


@pytest.mark.parametrize("argv", [
    [],                                   # load without --scale
    ["--scale", "0"],
    ["--scale", "1", "--jobs", "0"],
    ["--scale", "1", "--seed", "-3"],
    ["--scale", "1", "--seed", "x"],
    ["--scale", "1", "--progress", "fancy"],
    ["--scale", "1", "--chunk-orders", "0"],
    ["--scale", "1", "--part-rows", "999"],     # below 1000: categories lose their 4%
])
def test_parse_args_rejects_bad_command_lines(argv, capsys):
    with pytest.raises(SystemExit) as e:
        g.parse_args(argv)
    assert e.value.code == 2
    assert "error" in capsys.readouterr().err


# --------------------------------------------------------------- domains

def test_25_nations_five_per_region():
    assert len(g.NATIONS) == 25 and len({n for n, _ in g.NATIONS}) == 25
    assert sorted(r for _, r in g.NATIONS) == sorted(list(range(5)) * 5)
    assert dict(g.NATIONS)["UNITED STATES"] == g.REGIONS.index("AMERICA")
    assert dict(g.NATIONS)["UNITED KINGDOM"] == g.REGIONS.index("EUROPE")


def test_part_domains_have_spec_cardinalities():
    assert len(g.CATEGORIES) == 25 and g.CATEGORIES == sorted(g.CATEGORIES)
    assert g.CATEGORIES[0] == "MFGR#11" and g.CATEGORIES[-1] == "MFGR#55"
    assert len(set(g.COLORS)) == len(g.COLORS) == 92
    assert len(set(g.P_TYPES)) == 150
    assert len(set(g.P_CONTAINERS)) == 40
    assert all(len(t) <= 25 for t in g.P_TYPES) and all(len(c) <= 10 for c in g.P_CONTAINERS)


def test_balanced_draw_multipliers_are_invertible_mod_25():
    # a * j + c mod 25 is a permutation of 0..24 only for a coprime to 25.
    assert len(g._UNITS25) == 20
    for a in g._UNITS25:
        assert sorted((a * j + 7) % 25 for j in range(25)) == list(range(25))


def test_order_priorities_and_ship_modes():
    assert len(g.ORDER_PRIORITIES) == 5 and max(map(len, g.ORDER_PRIORITIES)) <= 15
    assert len(g.SHIP_MODES) == 7 and max(map(len, g.SHIP_MODES)) <= 10
    assert len(g.MKT_SEGMENTS) == 5


# --------------------------------------------------------------- date table

def test_date_table_has_2556_consecutive_days_from_1992_01_01():
    rows = g.date_rows()
    assert len(rows) == 2556
    keys = [r[0] for r in rows]
    assert keys[0] == 19920101 and keys[-1] == 19981230
    days = [dt.datetime.strptime(str(k), "%Y%m%d").date() for k in keys]
    assert all((b - a).days == 1 for a, b in zip(days, days[1:]))


def test_orders_and_commit_dates_fit_in_the_date_table():
    assert g.ORDERDATE_SPAN - 1 + g.COMMIT_MAX < g.DATE_ROWS
    last_order = g.DATE_START + dt.timedelta(days=g.ORDERDATE_SPAN - 1)
    assert last_order == dt.date(1998, 8, 2)


def test_date_columns_match_the_spec_examples():
    by_key = {r[0]: r for r in g.date_rows()}
    r = by_key[19971222]
    (key, d_date, dow, month, year, ymn, ym, dnw, dnm, dny, mny, wny, season,
     lastw, lastm, hol, weekday) = r
    assert d_date == "December 22, 1997" and dow == "Monday" and month == "December"
    assert (year, ymn, ym) == (1997, 199712, "Dec1997")
    assert (dnw, dnm, dny, mny) == (2, 22, 356, 12)
    assert wny == 356 // 7 + 1 and season == "Christmas"
    assert (lastw, lastm, hol, weekday) == (False, False, False, True)
    assert by_key[19920101][2] == "Wednesday" and by_key[19920101][15] is True  # New Year
    assert by_key[19960229][14] is True                                        # leap day is last
    assert by_key[19940205][2] == "Saturday" and by_key[19940205][13] is True


def test_q13_week_6_of_1994_has_seven_days():
    rows = [r for r in g.date_rows() if r[4] == 1994 and r[11] == 6]
    assert [r[0] for r in rows] == list(range(19940204, 19940211))


def test_every_year_month_has_its_yearmonth_label():
    labels = {r[6] for r in g.date_rows()}
    assert len(labels) == 84 and "Dec1997" in labels and "Jan1992" in labels


# --------------------------------------------------------------- SQL builder

def test_sql_builder_uses_chunk_parameters_and_seed_streams():
    b = g.SqlBuilder(g.cardinalities(Decimal("0.01")), seed=7)
    for sql in (b.customer(), b.supplier(), b.part(), b.lineorder()):
        assert "%(lo)s" in sql and "%(hi)s" in sql
        # psycopg placeholders: every literal % is doubled.
        assert re.search(r"(?<!%)%(?![%(])", sql) is None
    assert "hashint8extended" in b.lineorder() and ", 7060)" in b.lineorder()
    other = g.SqlBuilder(g.cardinalities(Decimal("0.01")), seed=8)
    assert other.lineorder() != b.lineorder()


def test_sql_builder_lineorder_bounds_depend_on_cardinalities():
    c = g.cardinalities(Decimal("1"))
    sql = g.SqlBuilder(c, seed=1).lineorder()
    assert f"%% {c.part})" in sql and f"%% {c.supplier})" in sql


def test_index_names_cover_the_paper_index_join():
    assert "lineorder_lo_partkey_idx" in g.INDEX_NAMES
    assert {"lineorder_pkey", "part_pkey", "customer_pkey", "supplier_pkey",
            "date_pkey"} <= set(g.INDEX_NAMES)


# --------------------------------------------------------------- progress display

def test_progress_lines_mode_prints_one_line_per_chunk():
    out = io.StringIO()
    p = g.Progress("lines", stream=out)
    t = p.table("lineorder", 300, "orders")
    t.update(100, 400)
    t.update(200, 800)
    t.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "lineorder: 100/300 orders" in lines[0] and "33.3%" in lines[0]
    assert "300/300 orders" in lines[1] and "1,200 rows" in lines[1]


def test_progress_none_mode_is_silent_and_auto_falls_back_to_lines():
    out = io.StringIO()
    g.Progress("none", stream=out).say("hello")
    assert out.getvalue() == ""
    assert g.Progress("auto", stream=io.StringIO()).mode == "lines"


def test_chunks_cover_the_range_exactly_once():
    assert list(g._chunks(10, 4)) == [(1, 4), (5, 8), (9, 10)]
    assert list(g._chunks(0, 4)) == []


# --------------------------------------------------------------- query files

def _tables_of(sql: str) -> set:
    body = re.sub(r"--[^\n]*", "", sql).lower()
    m = re.search(r"\bfrom\b(.*?)\bwhere\b", body, re.S)
    return {t.strip() for t in m.group(1).split(",")}


def test_thirteen_ssb_query_files_exist():
    files = sorted(p.name for p in (HERE / "queries").glob("*.sql"))
    assert files == [f"q{q}.sql" for q in make_query_tests.SSB_QUERIES]


@pytest.mark.parametrize("q", make_query_tests.SSB_QUERIES)
def test_ssb_query_uses_only_ssb_tables_with_date_unquoted(q):
    sql = (HERE / "queries" / f"q{q}.sql").read_text()
    tables = _tables_of(sql)
    assert tables <= SSB_TABLES and "lineorder" in tables
    assert '"date"' not in sql
    assert sql.rstrip().endswith(";") and make_query_tests.query_body(HERE / "queries" / f"q{q}.sql")


def test_ssb_query_constants_are_the_spec_ones():
    text = {q: (HERE / "queries" / f"q{q}.sql").read_text() for q in make_query_tests.SSB_QUERIES}
    assert "d_year = 1993" in text["1.1"] and "lo_quantity < 25" in text["1.1"]
    assert "d_yearmonthnum = 199401" in text["1.2"]
    assert "d_weeknuminyear = 6" in text["1.3"]
    assert "p_category = 'MFGR#12'" in text["2.1"]
    assert "between 'MFGR#2221' and 'MFGR#2228'" in text["2.2"]
    assert "p_brand1 = 'MFGR#2239'" in text["2.3"] and "'EUROPE'" in text["2.3"]
    assert "'UNITED STATES'" in text["3.2"]
    assert "'UNITED KI1'" in text["3.3"] and "'UNITED KI5'" in text["3.3"]
    assert "d_yearmonth = 'Dec1997'" in text["3.4"]
    assert "p_category = 'MFGR#14'" in text["4.3"]


# --------------------------------------------------------------- PLQ files

@pytest.mark.parametrize("n", range(1, 26))
def test_plq_file_has_n_disjuncts_on_the_first_n_categories(n):
    sql = (PLQ_DIR / f"plq_{n:02d}.sql").read_text()
    cats = re.findall(r"p_category = '(MFGR#\d\d)'", sql)
    assert cats == g.CATEGORIES[:n]
    assert _tables_of(sql) == {"part", "lineorder"}
    assert "select sum(lo_revenue)" in sql and "p_partkey = lo_partkey" in sql


def test_plq_generator_rejects_n_outside_1_to_25():
    for bad in (0, 26):
        with pytest.raises(ValueError):
            make_plq.plq_sql(bad)


def test_plq_files_are_up_to_date_with_their_generator():
    assert make_plq.main(["--check"]) == 0
    assert sorted(PLQ_DIR.glob("plq_*.sql")) == [PLQ_DIR / f"plq_{n:02d}.sql" for n in range(1, 26)]


def test_plan_forcing_files_set_the_documented_gucs():
    s = {m: dict(make_query_tests.force_settings(m)) for m in ("hash", "index", "bitmap")}
    assert s["hash"] == {"enable_nestloop": "off", "enable_mergejoin": "off"}
    assert s["index"] == {k: "off" for k in ("enable_hashjoin", "enable_mergejoin",
                                              "enable_memoize", "enable_bitmapscan",
                                              "enable_material")}
    assert s["bitmap"] == {k: "off" for k in ("enable_hashjoin", "enable_mergejoin",
                                               "enable_memoize", "enable_indexscan",
                                               "enable_material")}


def test_generated_pgtap_query_test_is_up_to_date():
    assert make_query_tests.main(["--check"]) == 0


def test_pgtap_plan_counts_match_the_number_of_tests():
    for name in ("ssb_data.sql", "ssb_queries.sql"):
        text = (HERE / "test" / name).read_text()
        planned = int(re.search(r"SELECT plan\((\d+)\);", text).group(1))
        # Every test is one top-level "SELECT <pgtap function>(" (or "SELECT
        # CASE ... skip()") statement.
        ran = len(re.findall(r"^SELECT (?!plan\()(\w+\(|CASE )", text, re.M))
        assert planned == ran, name


# --------------------------------------------------------------- command line exit codes

def test_main_exits_2_with_a_message_when_the_server_is_unreachable(capsys):
    rc = g.main(["--check", "--dsn", "host=/nonexistent-mccdb-socket-dir port=1 connect_timeout=2"])
    assert rc == 2
    assert "cannot connect" in capsys.readouterr().err
