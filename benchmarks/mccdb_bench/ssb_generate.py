"""Star Schema Benchmark (SSB) data generator for PostgreSQL, mccdb's own.

Faithful to O'Neil, O'Neil, Chen, "Star Schema Benchmark", rev. 3 (2009) and
to the value rules of its reference generator (ssb-dbgen), generated inside the
server with ``INSERT ... SELECT ... FROM generate_series(...)``: every random
value is a hash (``hashint8extended``) of the row number, a per-column stream
number and the seed, so a load is deterministic for a given (scale, seed).

    .venv/bin/python -m mccdb_bench.ssb_generate --scale 0.01   # load + check
    .venv/bin/python -m mccdb_bench.ssb_generate --check        # check only

Connection: libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE) or --dsn.
See benchmarks/ssb/README.md for the data rules and the choices made.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

from .harness.cli import conninfo, database_option

GENERATOR_VERSION = "mccdb-ssbgen 1"

MIN_SCALE = Decimal("0.001")
MAX_SCALE = Decimal("1000")
MIN_PARTS = 2000  # floor of the part table below SF 0.01 (see README)
DEFAULT_SEED = 1
DEFAULT_CHUNK_ORDERS = 250_000

# ---------------------------------------------------------------------------
# Domains (SSB spec section 2 / TPC-H 4.2.2.13 and 4.2.3)
# ---------------------------------------------------------------------------
REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
# (nation, region index): the 25 TPC-H nations, five per region.
NATIONS = [
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1),
    ("EGYPT", 4), ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3),
    ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
    ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0),
    ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3),
    ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
    ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
]
MKT_SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
ORDER_PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
SHIP_MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
COLORS = (
    "almond antique aquamarine azure beige bisque black blanched blue blush "
    "brown burlywood burnished chartreuse chiffon chocolate coral cornflower "
    "cornsilk cream cyan dark deep dim dodger drab firebrick floral forest "
    "frosted gainsboro ghost goldenrod green grey honeydew hot indian ivory "
    "khaki lace lavender lawn lemon light lime linen magenta maroon medium "
    "metallic midnight mint misty moccasin navajo navy olive orange orchid "
    "pale papaya peach peru pink plum powder puff purple red rose rosy royal "
    "saddle salmon sandy seashell sienna sky slate smoke snow spring steel tan "
    "thistle tomato turquoise violet wheat white yellow"
).split()
TYPE_S1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE_S2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE_S3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
P_TYPES = [f"{a} {b} {c}" for a in TYPE_S1 for b in TYPE_S2 for c in TYPE_S3]
CONT_S1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONT_S2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
P_CONTAINERS = [f"{a} {b}" for a in CONT_S1 for b in CONT_S2]
# The 25 categories MFGR#11..MFGR#55 in lexicographic order; category index
# g in 0..24 is manufacturer g // 5 + 1, category digit g % 5 + 1.
CATEGORIES = [f"MFGR#{m}{c}" for m in range(1, 6) for c in range(1, 6)]

# Date table: 1992-01-01 and the following 2555 days (ssb-dbgen's 2556 rows;
# the last day is 1998-12-30, see README).
DATE_START = dt.date(1992, 1, 1)
DATE_ROWS = 2556
# Orders are placed in [start, start + 2405] (TPC-H: ENDDATE - 151 days);
# commit dates are 30..90 days later, so they stay inside the date table.
ORDERDATE_SPAN = 2406
COMMIT_MIN, COMMIT_MAX = 30, 90
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July",
               "August", "September", "October", "November", "December"]
WEEKDAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                 "Friday", "Saturday"]
# Selling seasons and holidays as in ssb-dbgen.
HOLIDAYS = {(12, 24), (1, 1), (2, 20), (4, 20), (5, 20), (7, 20), (8, 20),
            (9, 20), (10, 20), (11, 20)}

TABLES = ["date", "customer", "supplier", "part", "lineorder"]

# ---------------------------------------------------------------------------
# Scale factor and cardinalities
# ---------------------------------------------------------------------------


def parse_scale(text: str) -> Decimal:
    """Parse a scale factor exactly (as a decimal, no float rounding)."""
    try:
        sf = Decimal(str(text).strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"scale factor {text!r} is not a number")
    if not sf.is_finite() or sf < MIN_SCALE or sf > MAX_SCALE:
        raise argparse.ArgumentTypeError(
            f"scale factor {text!r} is out of range [{MIN_SCALE}, {MAX_SCALE}]")
    # Integral scales print as 10, not 1E+1; others keep their digits (0.01).
    return Decimal(int(sf)) if sf == sf.to_integral_value() else sf.normalize()


def _floor(x: Decimal) -> int:
    return int(x.to_integral_value(rounding=ROUND_FLOOR))


@dataclass(frozen=True)
class Cardinalities:
    scale: Decimal
    date: int
    customer: int
    supplier: int
    part: int
    orders: int

    @property
    def lineorder_expected(self) -> int:
        """Expected lineorder rows: 1..7 lines per order, mean 4."""
        return 4 * self.orders

    @property
    def lineorder_tolerance(self) -> int:
        """Six standard deviations of the line count (uniform 1..7 lines per
        order has variance 4, so the sum over N orders has sd 2*sqrt(N))."""
        return math.ceil(6 * 2 * math.sqrt(self.orders))

    def as_dict(self) -> dict:
        return {"date": self.date, "customer": self.customer,
                "supplier": self.supplier, "part": self.part,
                "orders": self.orders}


def part_rows(sf: Decimal) -> int:
    """SSB: 200,000 * floor(1 + log2 SF) for SF >= 1. Below SF 1 (not covered
    by the spec) 200,000 * SF, but at least MIN_PARTS."""
    if sf >= 1:
        return 200_000 * int(math.floor(1 + math.log2(sf)))
    return max(MIN_PARTS, _floor(200_000 * sf))


def cardinalities(sf: Decimal, part_override: int | None = None) -> Cardinalities:
    """Row counts for scale factor sf; part_override replaces the part
    formula (--part-rows, a deliberate departure from the spec)."""
    sf = Decimal(sf)
    return Cardinalities(
        scale=sf,
        date=DATE_ROWS,
        customer=_floor(30_000 * sf),
        supplier=_floor(2_000 * sf),
        part=part_override if part_override else part_rows(sf),
        orders=_floor(1_500_000 * sf),
    )


# ---------------------------------------------------------------------------
# The date dimension (computed here, loaded with COPY)
# ---------------------------------------------------------------------------


def selling_season(month: int) -> str:
    if month in (11, 12):
        return "Christmas"
    if month in (5, 6, 7, 8):
        return "Summer"
    if month in (1, 2, 3):
        return "Winter"
    if month == 4:
        return "Spring"
    return "Fall"  # September, October


def datekey(d: dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


def date_rows() -> list[tuple]:
    """The DATE table in column order of the DDL."""
    rows = []
    for i in range(DATE_ROWS):
        d = DATE_START + dt.timedelta(days=i)
        nxt = d + dt.timedelta(days=1)
        dow = (d.isoweekday() % 7) + 1           # Sunday = 1 .. Saturday = 7
        doy = d.timetuple().tm_yday
        month = MONTH_NAMES[d.month - 1]
        rows.append((
            datekey(d),
            f"{month} {d.day}, {d.year}",         # d_date
            WEEKDAY_NAMES[dow - 1],               # d_dayofweek
            month,                                # d_month
            d.year,                               # d_year
            d.year * 100 + d.month,               # d_yearmonthnum
            f"{month[:3]}{d.year}",               # d_yearmonth, e.g. Dec1997
            dow,                                  # d_daynuminweek
            d.day,                                # d_daynuminmonth
            doy,                                  # d_daynuminyear
            d.month,                              # d_monthnuminyear
            doy // 7 + 1,                         # d_weeknuminyear (ssb-dbgen)
            selling_season(d.month),              # d_sellingseason
            dow == 7,                             # d_lastdayinweekfl
            nxt.month != d.month,                 # d_lastdayinmonthfl
            (d.month, d.day) in HOLIDAYS,         # d_holidayfl
            2 <= dow <= 6,                        # d_weekdayfl
        ))
    return rows


# ---------------------------------------------------------------------------
# SQL
# ---------------------------------------------------------------------------

DDL = """
CREATE TABLE date (
    d_datekey          integer     NOT NULL,
    d_date             varchar(18) NOT NULL,
    d_dayofweek        varchar(9)  NOT NULL,
    d_month            varchar(9)  NOT NULL,
    d_year             integer     NOT NULL,
    d_yearmonthnum     integer     NOT NULL,
    d_yearmonth        varchar(7)  NOT NULL,
    d_daynuminweek     integer     NOT NULL,
    d_daynuminmonth    integer     NOT NULL,
    d_daynuminyear     integer     NOT NULL,
    d_monthnuminyear   integer     NOT NULL,
    d_weeknuminyear    integer     NOT NULL,
    d_sellingseason    varchar(12) NOT NULL,
    d_lastdayinweekfl  boolean     NOT NULL,
    d_lastdayinmonthfl boolean     NOT NULL,
    d_holidayfl        boolean     NOT NULL,
    d_weekdayfl        boolean     NOT NULL
);
CREATE TABLE customer (
    c_custkey          integer     NOT NULL,
    c_name             varchar(25) NOT NULL,
    c_address          varchar(25) NOT NULL,
    c_city             varchar(10) NOT NULL,
    c_nation           varchar(15) NOT NULL,
    c_region           varchar(12) NOT NULL,
    c_phone            varchar(15) NOT NULL,
    c_mktsegment       varchar(10) NOT NULL
);
CREATE TABLE supplier (
    s_suppkey          integer     NOT NULL,
    s_name             varchar(25) NOT NULL,
    s_address          varchar(25) NOT NULL,
    s_city             varchar(10) NOT NULL,
    s_nation           varchar(15) NOT NULL,
    s_region           varchar(12) NOT NULL,
    s_phone            varchar(15) NOT NULL
);
CREATE TABLE part (
    p_partkey          integer     NOT NULL,
    p_name             varchar(22) NOT NULL,
    p_mfgr             varchar(6)  NOT NULL,
    p_category         varchar(7)  NOT NULL,
    p_brand1           varchar(9)  NOT NULL,
    p_color            varchar(11) NOT NULL,
    p_type             varchar(25) NOT NULL,
    p_size             integer     NOT NULL,
    p_container        varchar(10) NOT NULL
);
CREATE TABLE lineorder (
    lo_orderkey        integer     NOT NULL,
    lo_linenumber      integer     NOT NULL,
    lo_custkey         integer     NOT NULL,
    lo_partkey         integer     NOT NULL,
    lo_suppkey         integer     NOT NULL,
    lo_orderdate       integer     NOT NULL,
    lo_orderpriority   varchar(15) NOT NULL,
    lo_shippriority    char(1)     NOT NULL,
    lo_quantity        integer     NOT NULL,
    lo_extendedprice   integer     NOT NULL,
    lo_ordtotalprice   integer     NOT NULL,
    lo_discount        integer     NOT NULL,
    lo_revenue         integer     NOT NULL,
    lo_supplycost      integer     NOT NULL,
    lo_tax             integer     NOT NULL,
    lo_commitdate      integer     NOT NULL,
    lo_shipmode        varchar(10) NOT NULL
);
CREATE TABLE ssb_load_info (
    scale              numeric     NOT NULL,
    seed               bigint      NOT NULL,
    generator          text        NOT NULL,
    cardinalities      jsonb       NOT NULL,
    part_rows_override integer,
    load_seconds       numeric,
    loaded_at          timestamptz NOT NULL DEFAULT now()
);
"""

# Index builds: independent of each other (may run concurrently).
INDEXES = [
    ("date", "CREATE UNIQUE INDEX date_pkey ON date (d_datekey)"),
    ("customer", "CREATE UNIQUE INDEX customer_pkey ON customer (c_custkey)"),
    ("supplier", "CREATE UNIQUE INDEX supplier_pkey ON supplier (s_suppkey)"),
    ("part", "CREATE UNIQUE INDEX part_pkey ON part (p_partkey)"),
    ("lineorder", "CREATE UNIQUE INDEX lineorder_pkey "
                  "ON lineorder (lo_orderkey, lo_linenumber)"),
    ("lineorder", "CREATE INDEX lineorder_lo_partkey_idx ON lineorder (lo_partkey)"),
    ("lineorder", "CREATE INDEX lineorder_lo_custkey_idx ON lineorder (lo_custkey)"),
    ("lineorder", "CREATE INDEX lineorder_lo_suppkey_idx ON lineorder (lo_suppkey)"),
    ("lineorder", "CREATE INDEX lineorder_lo_orderdate_idx ON lineorder (lo_orderdate)"),
]
INDEX_NAMES = [s.split()[3] if s.split()[1] == "UNIQUE" else s.split()[2]
               for _, s in INDEXES]

PRIMARY_KEYS = [
    "ALTER TABLE date ADD CONSTRAINT date_pkey PRIMARY KEY USING INDEX date_pkey",
    "ALTER TABLE customer ADD CONSTRAINT customer_pkey PRIMARY KEY USING INDEX customer_pkey",
    "ALTER TABLE supplier ADD CONSTRAINT supplier_pkey PRIMARY KEY USING INDEX supplier_pkey",
    "ALTER TABLE part ADD CONSTRAINT part_pkey PRIMARY KEY USING INDEX part_pkey",
    "ALTER TABLE lineorder ADD CONSTRAINT lineorder_pkey PRIMARY KEY USING INDEX lineorder_pkey",
]

FOREIGN_KEYS = [
    ("lineorder_lo_custkey_fkey", "lo_custkey", "customer", "c_custkey"),
    ("lineorder_lo_partkey_fkey", "lo_partkey", "part", "p_partkey"),
    ("lineorder_lo_suppkey_fkey", "lo_suppkey", "supplier", "s_suppkey"),
    ("lineorder_lo_orderdate_fkey", "lo_orderdate", "date", "d_datekey"),
    ("lineorder_lo_commitdate_fkey", "lo_commitdate", "date", "d_datekey"),
]

_MASK63 = 9223372036854775807
_UNITS25 = [u for u in range(1, 25) if u % 5]  # multipliers invertible mod 25


def _sql_text_array(values) -> str:
    return "ARRAY[" + ",".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _sql_int_array(values) -> str:
    return "ARRAY[" + ",".join(str(int(v)) for v in values) + "]::int[]"


class SqlBuilder:
    """Builds the INSERT ... SELECT statements for one (scale, seed).

    Random draws: ``rnd(key, stream, lo, hi)`` is uniform in [lo, hi], derived
    from hashint8extended(key, seed * 1000 + stream). Statements take the
    chunk bounds as the parameters %(lo)s and %(hi)s.
    """

    def __init__(self, card: Cardinalities, seed: int):
        self.card = card
        self.seed = int(seed)

    def rnd(self, key: str, stream: int, lo: int, hi: int) -> str:
        s = self.seed * 1000 + stream
        return (f"({lo} + ((hashint8extended(({key})::int8, {s}) "
                f"& {_MASK63}) %% {hi - lo + 1}))")

    def balanced25(self, key: str, stream: int) -> str:
        """A value in 0..24 such that each block of 25 consecutive keys
        (1..25, 26..50, ...) holds every value exactly once, in a per-block
        pseudo-random order (an affine permutation a*j + c mod 25)."""
        block = f"((({key}) - 1) / 25)"
        pos = f"((({key}) - 1) %% 25)"
        a = f"({_sql_int_array(_UNITS25)})[{self.rnd(block, stream, 0, 19)} + 1]"
        c = self.rnd(block, stream + 1, 0, 24)
        return f"((({a}) * {pos} + {c}) %% 25)"

    # -- dimension tables ----------------------------------------------------

    def _geo_columns(self, key: str, stream: int) -> tuple[str, str, str, str]:
        """city, nation, region, phone for a customer/supplier key."""
        n = self.balanced25(key, stream)
        nations = _sql_text_array([n_ for n_, _ in NATIONS])
        regions = _sql_text_array(REGIONS)
        region_of = _sql_int_array([r for _, r in NATIONS])
        nation = f"({nations})[{n} + 1]"
        city = (f"rpad(substr({nation}, 1, 9), 9, ' ') || "
                f"{self.rnd(key, stream + 2, 0, 9)}::text")
        region = f"({regions})[({region_of})[{n} + 1] + 1]"
        phone = (f"(10 + {n})::text || '-' || {self.rnd(key, stream + 3, 100, 999)}::text"
                 f" || '-' || {self.rnd(key, stream + 4, 100, 999)}::text"
                 f" || '-' || {self.rnd(key, stream + 5, 1000, 9999)}::text")
        return city, nation, region, phone

    def _address(self, key: str, stream: int) -> str:
        length = self.rnd(key, stream, 10, 25)
        return f"substr(md5(({key})::text || '/{self.seed}/{stream}'), 1, {length}::int)"

    def customer(self) -> str:
        k = "g.i"
        city, nation, region, phone = self._geo_columns(k, 10)
        seg = f"({_sql_text_array(MKT_SEGMENTS)})[{self.rnd(k, 20, 0, 4)} + 1]"
        return f"""INSERT INTO customer
SELECT g.i, 'Customer#' || lpad(g.i::text, 9, '0'), {self._address(k, 19)},
       {city}, {nation}, {region}, {phone}, {seg}
FROM generate_series(%(lo)s::int8, %(hi)s::int8) AS g(i)"""

    def supplier(self) -> str:
        k = "g.i"
        city, nation, region, phone = self._geo_columns(k, 30)
        return f"""INSERT INTO supplier
SELECT g.i, 'Supplier#' || lpad(g.i::text, 9, '0'), {self._address(k, 39)},
       {city}, {nation}, {region}, {phone}
FROM generate_series(%(lo)s::int8, %(hi)s::int8) AS g(i)"""

    def part(self) -> str:
        k = "g.i"
        g = self.balanced25(k, 40)                       # category index 0..24
        mfgr = f"'MFGR#' || ({g} / 5 + 1)::text"
        category = f"{mfgr} || ({g} %% 5 + 1)::text"
        brand = f"{category} || lpad({self.rnd(k, 42, 1, 40)}::text, 2, '0')"
        colors = _sql_text_array(COLORS)
        ncol = len(COLORS)
        c1 = self.rnd(k, 43, 0, ncol - 1)
        # Three distinct colours: the colour itself and two name words.
        c2 = f"(({c1}) + {self.rnd(k, 44, 1, 46)}) %% {ncol}"
        c3 = f"(({c1}) + {self.rnd(k, 45, 47, ncol - 1)}) %% {ncol}"
        name = f"({colors})[{c2} + 1] || ' ' || ({colors})[{c3} + 1]"
        color = f"({colors})[{c1} + 1]"
        ptype = f"({_sql_text_array(P_TYPES)})[{self.rnd(k, 46, 0, len(P_TYPES) - 1)} + 1]"
        size = self.rnd(k, 47, 1, 50)
        cont = f"({_sql_text_array(P_CONTAINERS)})[{self.rnd(k, 48, 0, len(P_CONTAINERS) - 1)} + 1]"
        return f"""INSERT INTO part
SELECT g.i, {name}, {mfgr}, {category}, {brand}, {color}, {ptype}, {size}, {cont}
FROM generate_series(%(lo)s::int8, %(hi)s::int8) AS g(i)"""

    # -- the fact table ------------------------------------------------------

    def order_lines(self, order: str = "g.o") -> str:
        """Number of lines of an order, uniform 1..7."""
        return self.rnd(order, 50, 1, 7)

    def lineorder(self) -> str:
        card = self.card
        o = "g.o"
        k = "(g.o * 8 + l.ln)"             # one key per (order, line)
        # Order-level values (lines of an order share them).
        ncust = card.customer - card.customer // 3  # keys not divisible by 3
        j = self.rnd(o, 51, 0, max(ncust, 1) - 1)
        custkey = f"((({j}) / 2) * 3 + ({j}) %% 2 + 1)"
        odate = self.rnd(o, 52, 0, ORDERDATE_SPAN - 1)
        prio = f"({_sql_text_array(ORDER_PRIORITIES)})[{self.rnd(o, 53, 0, 4)} + 1]"
        # Line-level values.
        partkey = self.rnd(k, 60, 1, card.part)
        suppkey = self.rnd(k, 61, 1, card.supplier)
        qty = self.rnd(k, 62, 1, 50)
        disc = self.rnd(k, 63, 0, 10)
        tax = self.rnd(k, 64, 0, 8)
        cdate = f"{odate} + {self.rnd(k, 65, COMMIT_MIN, COMMIT_MAX)}"
        mode = f"({_sql_text_array(SHIP_MODES)})[{self.rnd(k, 66, 0, len(SHIP_MODES) - 1)} + 1]"
        # Money in cents, integer arithmetic as in ssb-dbgen.
        rprice = f"(90000 + ({partkey} / 10) %% 20001 + 100 * ({partkey} %% 1000))"
        eprice = f"({rprice} * {qty})"
        revenue = f"({eprice} * (100 - {disc}) / 100)"
        total = f"sum({revenue} * (100 + {tax}) / 100) OVER (PARTITION BY g.o)"
        supplycost = f"(6 * {rprice} / 10)"
        dk = _sql_int_array(datekey(DATE_START + dt.timedelta(days=i))
                            for i in range(DATE_ROWS))
        return f"""INSERT INTO lineorder
SELECT g.o, l.ln, {custkey}, {partkey}, {suppkey}, ({dk})[{odate} + 1], {prio}, '0',
       {qty}, {eprice}, {total}, {disc}, {revenue}, {supplycost}, {tax},
       ({dk})[{cdate} + 1], {mode}
FROM generate_series(%(lo)s::int8, %(hi)s::int8) AS g(o)
CROSS JOIN LATERAL generate_series(1, ({self.order_lines(o)})::int) AS l(ln)"""

    def expected_lineorder_rows(self) -> str:
        """SQL computing the exact number of lineorder rows of this load."""
        return (f"SELECT coalesce(sum({self.order_lines('g.o')}), 0)::bigint "
                f"FROM generate_series(1::int8, {self.card.orders}::int8) AS g(o)")


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


class Progress:
    """tqdm bar on a terminal, plain lines otherwise, nothing when quiet."""

    def __init__(self, mode: str, stream=sys.stderr):
        if mode == "auto":
            mode = "bar" if stream.isatty() else "lines"
        if mode == "bar":
            try:
                import tqdm  # noqa: F401
            except ImportError:
                mode = "lines"
        self.mode = mode
        self.stream = stream
        self.t0 = time.monotonic()

    def say(self, msg: str) -> None:
        if self.mode != "none":
            print(f"[ssb {time.monotonic() - self.t0:7.1f}s] {msg}",
                  file=self.stream, flush=True)

    def table(self, name: str, total: int, unit: str):
        return _TableProgress(self, name, total, unit)


class _TableProgress:
    def __init__(self, p: Progress, name: str, total: int, unit: str):
        self.p, self.name, self.total, self.unit = p, name, total, unit
        self.done = 0
        self.rows = 0
        self.t0 = time.monotonic()
        self.bar = None
        if p.mode == "bar":
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit=unit, unit_scale=True,
                            desc=f"{name:9s}", file=p.stream, leave=True)

    def update(self, n: int, rows: int) -> None:
        self.done += n
        self.rows += rows
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix(rows=f"{self.rows:,}", refresh=False)
        elif self.p.mode == "lines":
            el = time.monotonic() - self.t0
            pct = 100.0 * self.done / self.total if self.total else 100.0
            rate = self.rows / el if el > 0 else 0.0
            self.p.say(f"{self.name}: {self.done:,}/{self.total:,} {self.unit} "
                       f"({pct:5.1f}%), {self.rows:,} rows, {rate:,.0f} rows/s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------------
# Load and check
# ---------------------------------------------------------------------------

SESSION_SETTINGS = [
    "SET jit = off",                      # JIT compile time exceeds its gain here
    "SET work_mem = '256MB'",             # per-chunk window sort stays in memory
    "SET maintenance_work_mem = '1GB'",   # index builds
    "SET synchronous_commit = off",
    "SET client_min_messages = warning",
]


def connect(dsn: str):
    import psycopg
    conn = psycopg.connect(dsn)
    for s in SESSION_SETTINGS:
        conn.execute(s)
    conn.commit()
    return conn


def _chunks(total: int, size: int):
    lo = 1
    while lo <= total:
        hi = min(total, lo + size - 1)
        yield lo, hi
        lo = hi + 1


def _insert_chunked(conn, prog: Progress, name: str, sql: str, total: int,
                    chunk: int, unit: str) -> int:
    tp = prog.table(name, total, unit)
    rows = 0
    try:
        for lo, hi in _chunks(total, chunk):
            cur = conn.execute(sql, {"lo": lo, "hi": hi})
            conn.commit()
            rows += cur.rowcount
            tp.update(hi - lo + 1, cur.rowcount)
    finally:
        tp.close()
    return rows


def _run_parallel(dsn: str, statements: list[str], jobs: int, prog: Progress,
                  what: str) -> None:
    """Run independent statements on `jobs` connections."""
    def run(stmt: str) -> float:
        t = time.monotonic()
        with connect(dsn) as c:
            c.execute(stmt)
            c.commit()
        return time.monotonic() - t

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for stmt, secs in zip(statements, ex.map(run, statements)):
            short = " ".join(stmt.split()[:6])
            prog.say(f"{what}: {short} ... {secs:.1f} s")


def load(dsn: str, sf: Decimal, seed: int, jobs: int = 1, part_override: int | None = None,
         chunk_orders: int = DEFAULT_CHUNK_ORDERS, foreign_keys: bool = True,
         progress: str = "auto") -> float:
    prog = Progress(progress)
    card = cardinalities(sf, part_override)
    b = SqlBuilder(card, seed)
    t0 = time.monotonic()
    prog.say(f"SSB scale {sf}, seed {seed}: customer {card.customer:,}, "
             f"supplier {card.supplier:,}, part {card.part:,}, "
             f"orders {card.orders:,} (lineorder ~{card.lineorder_expected:,}), "
             f"date {card.date:,}")
    with connect(dsn) as conn:
        conn.execute("DROP TABLE IF EXISTS lineorder, part, supplier, customer, "
                     "date, ssb_load_info CASCADE")
        conn.execute(DDL)
        conn.commit()

        with conn.cursor() as cur:
            with cur.copy("COPY date FROM STDIN") as cp:
                for row in date_rows():
                    cp.write_row(row)
        conn.commit()
        prog.say(f"date: {DATE_ROWS:,} rows")

        dim_chunk = 200_000
        _insert_chunked(conn, prog, "customer", b.customer(), card.customer,
                        dim_chunk, "rows")
        _insert_chunked(conn, prog, "supplier", b.supplier(), card.supplier,
                        dim_chunk, "rows")
        _insert_chunked(conn, prog, "part", b.part(), card.part, dim_chunk, "rows")

    lo_sql = b.lineorder()
    chunks = list(_chunks(card.orders, chunk_orders))
    tp = prog.table("lineorder", card.orders, "orders")
    try:
        if jobs <= 1:
            with connect(dsn) as conn:
                for lo, hi in chunks:
                    cur = conn.execute(lo_sql, {"lo": lo, "hi": hi})
                    conn.commit()
                    tp.update(hi - lo + 1, cur.rowcount)
        else:
            import threading
            lock = threading.Lock()
            it = iter(chunks)

            def worker():
                with connect(dsn) as conn:
                    while True:
                        with lock:
                            nxt = next(it, None)
                        if nxt is None:
                            return
                        lo, hi = nxt
                        cur = conn.execute(lo_sql, {"lo": lo, "hi": hi})
                        conn.commit()
                        with lock:
                            tp.update(hi - lo + 1, cur.rowcount)

            with ThreadPoolExecutor(max_workers=jobs) as ex:
                for f in [ex.submit(worker) for _ in range(jobs)]:
                    f.result()
    finally:
        tp.close()

    prog.say("building primary keys and indexes")
    # Big lineorder indexes first so that the pool stays busy.
    order = sorted(INDEXES, key=lambda t: t[0] != "lineorder")
    _run_parallel(dsn, [s for _, s in order], jobs, prog, "index")
    with connect(dsn) as conn:
        for s in PRIMARY_KEYS:
            conn.execute(s)
        conn.commit()
        if foreign_keys:
            for name, col, ref, refcol in FOREIGN_KEYS:
                t = time.monotonic()
                conn.execute(f"ALTER TABLE lineorder ADD CONSTRAINT {name} "
                             f"FOREIGN KEY ({col}) REFERENCES {ref} ({refcol})")
                conn.commit()
                prog.say(f"foreign key {name}: {time.monotonic() - t:.1f} s")
    prog.say("VACUUM ANALYZE")
    vac = [f"VACUUM (ANALYZE) {t}" for t in reversed(TABLES)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        def run(stmt):
            import psycopg
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET maintenance_work_mem = '1GB'")
                c.execute(stmt)
        list(ex.map(run, vac))
    secs = time.monotonic() - t0
    with connect(dsn) as conn:
        from psycopg.types.json import Jsonb
        conn.execute("INSERT INTO ssb_load_info (scale, seed, generator, "
                     "cardinalities, part_rows_override, load_seconds) "
                     "VALUES (%s, %s, %s, %s, %s, %s)",
                     (sf, seed, GENERATOR_VERSION, Jsonb(card.as_dict()),
                      part_override, round(secs, 1)))
        conn.commit()
    prog.say(f"loaded in {secs:.1f} s")
    return secs


def check(dsn: str, sf: Decimal | None = None, seed: int | None = None,
          out=sys.stdout, part_rows: int | None = None) -> list[str]:
    """Compare row counts with the SSB formulas (and, when part_rows is
    given, the part table's override with it). Returns the problems found
    (empty list when all is well) and prints one line per table."""
    problems: list[str] = []
    with connect(dsn) as conn:
        missing = [t for t in TABLES + ["ssb_load_info"]
                   if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is None]
        if missing:
            return [f"missing table(s): {', '.join(missing)} (load with --scale first)"]
        info = conn.execute("SELECT scale, seed, part_rows_override FROM ssb_load_info "
                            "ORDER BY loaded_at DESC LIMIT 1").fetchone()
        if info is None:
            return ["ssb_load_info is empty: the last load did not finish"]
        loaded_sf, loaded_seed, part_override = Decimal(info[0]), int(info[1]), info[2]
        if sf is not None and Decimal(sf) != loaded_sf:
            problems.append(f"database holds scale {loaded_sf}, not {sf}")
        if seed is not None and int(seed) != loaded_seed:
            problems.append(f"database was loaded with seed {loaded_seed}, not {seed}")
        if part_rows is not None and part_override != part_rows:
            problems.append(f"database was loaded with part rows {part_override or 'by the formula'}, "
                            f"not {part_rows}")
        sf = loaded_sf if sf is None else Decimal(sf)
        card = cardinalities(sf, part_override)
        b = SqlBuilder(card, loaded_seed)
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ["date", "customer", "supplier", "part"]}
        lo_rows, orders = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE lo_linenumber = 1) "
            "FROM lineorder").fetchone()
        exact = conn.execute(b.expected_lineorder_rows(), {}).fetchone()[0]

    def line(name, got, want, ok, note=""):
        print(f"{'ok  ' if ok else 'FAIL'} {name:10s} {got:>12,} rows, "
              f"expected {want}{note}", file=out)
        if not ok:
            problems.append(f"{name}: {got:,} rows, expected {want}")

    line("date", counts["date"], f"{card.date:,}", counts["date"] == card.date)
    line("customer", counts["customer"], f"{card.customer:,} (30,000 x SF)",
         counts["customer"] == card.customer)
    line("supplier", counts["supplier"], f"{card.supplier:,} (2,000 x SF)",
         counts["supplier"] == card.supplier)
    part_rule = ("--part-rows override" if part_override
                 else "200,000 x floor(1 + log2 SF)" if sf >= 1
                 else f"max({MIN_PARTS:,}, 200,000 x SF)")
    line("part", counts["part"], f"{card.part:,} ({part_rule})",
         counts["part"] == card.part)
    line("orders", orders, f"{card.orders:,} (1,500,000 x SF)",
         orders == card.orders, " [lineorder rows with lo_linenumber = 1]")
    tol = card.lineorder_tolerance
    in_band = abs(lo_rows - card.lineorder_expected) <= tol
    line("lineorder", lo_rows,
         f"{exact:,} (this seed), ~{card.lineorder_expected:,} +- {tol:,} (6,000,000 x SF)",
         lo_rows == exact and in_band)
    return problems


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return v


def _part_rows(text: str) -> int:
    v = _positive_int(text)
    if v < 1000:
        raise argparse.ArgumentTypeError(
            f"--part-rows {v} is too small (at least 1000, so that each of the "
            f"25 categories keeps 4% of the parts)")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed {text!r} is not an integer")
    if not 0 <= v < 2**40:
        raise argparse.ArgumentTypeError(f"seed {text!r} must be in [0, 2^40)")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mccdb_bench.ssb_generate", parents=[database_option()],
        description="Generate and load Star Schema Benchmark data into "
                    "PostgreSQL (server-side, deterministic per scale and seed), "
                    "then check the row counts.")
    p.add_argument("--scale", "-s", type=parse_scale,
                   help=f"scale factor SF in [{MIN_SCALE}, {MAX_SCALE}], e.g. 0.01, 1, 10")
    p.add_argument("--seed", type=_seed, default=None,
                   help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument("--dsn", default=os.environ.get("SSB_DSN", ""),
                   help="libpq connection string (default: PGHOST/PGPORT/... "
                        "environment)")
    p.add_argument("--check", action="store_true",
                   help="only check the loaded database's row counts against the "
                        "formulas (scale and seed default to those of the load)")
    p.add_argument("--jobs", "-j", type=_positive_int, default=1,
                   help="connections used in parallel for lineorder chunks and "
                        "index builds (default 1: the physical row order is then "
                        "deterministic as well)")
    p.add_argument("--chunk-orders", type=_positive_int,
                   default=DEFAULT_CHUNK_ORDERS,
                   help=f"orders per lineorder INSERT (default {DEFAULT_CHUNK_ORDERS:,})")
    p.add_argument("--part-rows", type=_part_rows, default=None,
                   help="number of part rows instead of the SSB formula (to size "
                        "the PLQ hash tables independently of SF; not spec); with "
                        "--check: the database must have been loaded with it")
    p.add_argument("--no-foreign-keys", dest="foreign_keys", action="store_false",
                   help="do not declare the lineorder foreign keys")
    p.add_argument("--progress", choices=["auto", "bar", "lines", "none"],
                   default="auto",
                   help="progress display (auto: a bar on a terminal, lines otherwise)")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    args.dsn = conninfo(args.dsn, args.db)
    if not args.check and args.scale is None:
        p.error("--scale is required to load (or use --check)")
    if not args.check and args.seed is None:
        args.seed = DEFAULT_SEED
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    import psycopg
    try:
        if not args.check:
            load(args.dsn, args.scale, args.seed, jobs=args.jobs,
                 part_override=args.part_rows,
                 chunk_orders=args.chunk_orders, foreign_keys=args.foreign_keys,
                 progress=args.progress)
        problems = check(args.dsn, args.scale, args.seed, part_rows=args.part_rows)
    except psycopg.OperationalError as e:
        print(f"ssb_generate: cannot connect: {e}".rstrip(), file=sys.stderr)
        return 2
    except psycopg.Error as e:
        print(f"ssb_generate: database error: {e}".rstrip(), file=sys.stderr)
        return 1
    if problems:
        print("ssb_generate: CHECK FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print("ssb_generate: check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
