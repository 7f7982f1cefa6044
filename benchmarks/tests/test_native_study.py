"""The native study's pure functions: hash table sizes, bootstrap intervals,
resolution, the probe slope, where a cost climbs (no server, no timing)."""
import math
import shutil
import signal
import statistics
import subprocess
import sys

import pytest

from mccdb_bench import llc_knee, native_study as ns
from mccdb_bench.harness import stats


# --- table size -> row count ------------------------------------------------

def test_hash_table_bytes_counts_tuples_and_a_power_of_two_of_buckets():
    assert ns.next_pow2(1) == 1 and ns.next_pow2(5) == 8 and ns.next_pow2(8) == 8
    with pytest.raises(ValueError):
        ns.next_pow2(0)
    assert ns.hash_table_bytes(1000) == 1000 * 40 + 1024 * 8
    assert ns.hash_table_bytes(1025) == 1025 * 40 + 2048 * 8


@pytest.mark.parametrize("mb", [0.25, 0.5, 1, 2, 4, 8, 16, 32])
def test_rows_for_is_the_most_rows_that_fit(mb):
    nbytes = mb * 1048576
    r = ns.rows_for(nbytes)
    assert ns.hash_table_bytes(r) <= nbytes < ns.hash_table_bytes(r + 1)
    assert r * 40 > nbytes * 0.6      # tuples, not the bucket array, fill most of it


def test_rows_for_grows_with_the_size_and_refuses_nothing():
    rows = [ns.rows_for(mb * 1048576) for mb in (0.25, 0.5, 1, 2, 4, 8, 16, 32)]
    assert rows == sorted(rows) and len(set(rows)) == len(rows)
    assert ns.rows_for(48) == 1
    with pytest.raises(ValueError):
        ns.rows_for(47)


def test_probe_rows_outnumber_every_build_twice_at_half():
    assert ns.probe_rows_for([10, 20]) == 2_000_000
    big = ns.rows_for(64 * 1048576)
    p = ns.probe_rows_for([100, big])
    assert p == 4 * big and p // 2 >= 2 * big


def test_scan_table_is_bigger_than_the_llc():
    assert ns.scan_rows_for(128) * 140 >= 128 * 1048576 * 0.99


def test_join_query_reads_the_tables_it_names():
    q = ns.join_query(5000, 2_000_000, 1_000_000)
    assert "native_study.build_5000" in q.sql and "native_study.probe_2000000" in q.sql
    assert "p.k % 5000" in q.sql and "p.id < 1000000" in q.sql
    assert "set enable_nestloop = off" in q.settings and "set enable_mergejoin = off" in q.settings
    assert "p.id < 2000000" in ns.join_query(5000, 2_000_000).sql


def test_size_bytes_reads_postgres_memory_settings():
    assert ns.size_bytes("8MB") == 8 << 20
    assert ns.size_bytes("8192kB") == 8 << 20
    assert ns.size_bytes("1GB") == 1 << 30
    assert ns.size_bytes("64") == 64 * 1024      # no unit: kB, as for work_mem
    assert ns.size_bytes(None) is None and ns.size_bytes("lots") is None


# --- confidence intervals and resolution -------------------------------------

def test_bootstrap_ci_of_constant_data_is_a_point():
    assert ns.bootstrap_ci([1.25] * 10) == (1.25, 1.25)


def test_bootstrap_ci_brackets_the_median_and_is_reproducible():
    xs = [0.9, 1.1, 1.0, 1.3, 0.95, 1.05, 1.2, 0.85, 1.0, 1.15]
    lo, hi = ns.bootstrap_ci(xs)
    assert lo <= stats.percentile(xs, 50) <= hi
    assert min(xs) <= lo < hi <= max(xs)
    assert ns.bootstrap_ci(xs) == (lo, hi)
    mean_ci = ns.bootstrap_ci(xs, stat=statistics.mean, resamples=20)
    assert ns.bootstrap_ci(xs, stat=statistics.mean, resamples=20, seed=1) != mean_ci  # the seed decides
    lo90, hi90 = ns.bootstrap_ci(xs, level=0.5)
    assert lo <= lo90 and hi90 <= hi and hi90 - lo90 < hi - lo
    with pytest.raises(ValueError):
        ns.bootstrap_ci([])
    with pytest.raises(ValueError):
        ns.bootstrap_ci(xs, level=1.0)


def test_bootstrap_ci_narrows_with_more_rounds_of_the_same_spread():
    few = [1.0, 1.2, 0.8, 1.1, 0.9]
    many = few * 8
    w_few = ns.bootstrap_ci(few)[1] - ns.bootstrap_ci(few)[0]
    w_many = ns.bootstrap_ci(many)[1] - ns.bootstrap_ci(many)[0]
    assert w_many < w_few


def test_ci_summary_prints_median_and_interval():
    s = ns.ci_summary([1.0, 1.0, 1.0, None])
    assert (s.median, s.lo, s.hi, s.n) == (1.0, 1.0, 1.0, 3)
    assert ns.ci_summary([]).n == 0 and ns.ci_summary([]).fmt() == "n/a"
    s = ns.ci_summary([1.0, 2.0, 3.0])
    assert s.median == 2.0 and s.fmt() == f"2.00 ({s.lo:.2f}-{s.hi:.2f})"


def test_resolution_is_zero_without_drift_and_grows_with_it():
    assert ns.drift_ratios([[1.0, 2.0, 1.0], [4.0, 2.0]]) == [2.0, 0.5, 0.5]
    assert ns.resolution([[0.5] * 10, [0.7] * 10]) == 0.0
    calm = [[1.00, 1.01, 0.99, 1.00, 1.02, 0.99, 1.01, 1.00, 0.98, 1.01]]
    rough = [[1.0, 1.4, 0.8, 1.2, 0.7, 1.3, 0.9, 1.5, 0.8, 1.1]]
    assert 0 < ns.resolution(calm) < 0.05 < ns.resolution(rough)
    assert ns.resolution([[1.0], [2.0]]) is None


def test_resolved_needs_the_interval_beyond_the_resolution():
    S = stats.Summary
    assert ns.resolved(S(1.20, 1.10, 1.30, 10), 0.05)
    assert not ns.resolved(S(1.20, 1.04, 1.30, 10), 0.05)      # inside 1 + resolution
    assert not ns.resolved(S(1.02, 0.98, 1.06, 10), 0.0)       # interval holds 1
    assert ns.resolved(S(0.80, 0.75, 0.90, 10), 0.05)          # faster counts too
    assert not ns.resolved(S(1.5, 1.4, 1.6, 10), None)
    assert not ns.resolved(stats.summarize([]), 0.0)


# --- the probe's time ----------------------------------------------------------

def test_per_probe_is_the_slope_over_the_probe_count():
    # 1 s over 2M probes, 0.6 s over the first 1M: 400 ns per probe
    assert ns.per_probe_ns([1.0, 1.1], [0.6, 0.6], 1_000_000) == pytest.approx([400.0, 500.0])
    with pytest.raises(ValueError):
        ns.per_probe_ns([1.0], [0.5, 0.5], 10)


def test_first_above_finds_where_the_intervals_part():
    S = stats.Summary
    sums = [S(50, 48, 52, 5), S(51, 49, 53, 5), S(60, 55, 65, 5), S(90, 80, 100, 5)]
    assert ns.first_above([1, 2, 4, 8], sums) == 4
    assert ns.first_above([1, 2], sums[:2]) is None
    assert ns.first_above([1, 2, 4, 8], sums, base=S(70, 66, 75, 5)) == 8


def test_verdict_names_resolved_sizes_and_the_climb():
    S = stats.Summary
    one = S(1.0, 0.99, 1.01, 10)
    rows = [{"size": 1, "res": 0.02, "stream": one, "scan": one, "hash join": one},
            {"size": 16, "res": 0.02, "stream": S(1.5, 1.4, 1.6, 10), "scan": one, "hash join": one,
             "res cpu": 0.01, "stream cpu": S(1.3, 1.2, 1.4, 10), "scan cpu": one}]
    decomp = [{"size": 1, "probe": S(50, 48, 52, 5), "probe_s": S(51, 49, 53, 5), "chase": 10.0},
              {"size": 16, "probe": S(90, 80, 100, 5), "probe_s": S(150, 140, 160, 5), "chase": 90.0}]
    text = ns.verdict([1, 16], rows, decomp)
    assert "Beside the stream: resolved at 16 MB (1.50x)" in text
    assert "Beside the scan: no size resolved; largest median 1.00x at 1 MB; in CPU time no size resolved." in text
    assert "in CPU time resolved at 16 MB (1.30x)" in text
    assert "Beside the hash join: no size resolved; largest median 1.00x at 1 MB." in text
    assert "climbs above the smallest table's interval from 16 MB" in text
    assert "+-2.0% to +-2.0%" in text
    assert "+40.0 ns over the smallest table" in text and "0.50 extra miss latencies per probe" in text


# --- the programs ---------------------------------------------------------------

def test_native_study_parses_its_command_line():
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.native_study", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--rounds" in r.stdout and "--quick" in r.stdout


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_stream_antagonist_runs_until_killed(tmp_path):
    exe = llc_knee.build(tmp_path, ns.STREAM_SOURCE)
    assert exe.name == "stream_antagonist"
    p = subprocess.Popen([str(exe), "8"], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert p.poll() is None           # still streaming
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL
    assert subprocess.run([str(exe), "0"], capture_output=True).returncode == 2


def test_misses_per_probe_is_probe_extra_over_chase_extra():
    assert ns.misses_per_probe(150.0, 100.0) == 1.5
    with pytest.raises(ValueError):
        ns.misses_per_probe(10.0, 0.0)


def test_cpu_or_wall_takes_cpu_times_only_when_every_run_has_one():
    full, half = [(1.0, 0.9), (1.1, 1.0)], [(0.6, 0.5), (0.7, 0.6)]
    assert ns.cpu_or_wall(full, half) == ([[0.9, 1.0], [0.5, 0.6]], "CPU")
    assert ns.cpu_or_wall(full, [(0.6, None), (0.7, 0.6)]) == ([[1.0, 1.1], [0.6, 0.7]], "wall")


# --- placement: pairs with both vCPUs in one L3 ---------------------------------

def test_one_l3_needs_every_reading_under_the_split():
    from mccdb_bench.harness import placement
    assert placement.one_l3([90.0, 140.0])
    assert not placement.one_l3([90.0, 350.0]) and not placement.one_l3([350.0, 90.0])
    assert not placement.one_l3([placement.SPLIT_NS])


def test_one_l3_cell_takes_only_the_one_l3_pairs():
    alone, co = [1.0, 1.0, 1.0, 1.0, 1.0], [2.0, 1.0, 3.0, 2.5, 1.1]
    where = [[100, 120], [350, 340], [90, 95], [110, 400], [80, 85]]
    s, n = ns.one_l3_cell(co, alone, where)
    assert n == 3 and s.median == 2.0 and s.n == 3          # pairs 0, 2, 4: 2.0, 3.0, 1.1
    s, n = ns.one_l3_cell(co[:2], alone[:2], where[:2])
    assert s is None and n == 1                               # under MIN_ONE_L3


def test_verdict_gives_the_one_l3_cells():
    S = stats.Summary
    one = S(1.0, 0.99, 1.01, 10)
    rows = [{"size": 1, "res": 0.02, "stream": one, "scan": one, "hash join": one,
             "stream one L3": S(1.3, 1.2, 1.4, 7), "stream one L3 n": 7},
            {"size": 16, "res": 0.02, "stream": one, "scan": one, "hash join": one,
             "stream one L3": None, "stream one L3 n": 2}]
    decomp = [{"size": 1, "probe": S(50, 48, 52, 5), "probe_s": S(51, 49, 53, 5), "chase": 10.0},
              {"size": 16, "probe": S(50, 48, 52, 5), "probe_s": S(51, 49, 53, 5), "chase": 10.0}]
    text = ns.verdict([1, 16], rows, decomp)
    assert "With both vCPUs in one L3 (9 pairs): resolved at 1 MB (1.30x); largest median 1.30x at 1 MB." in text


# --- what a cell can detect (issue 52) ------------------------------------------

def test_log_se_reads_the_interval_as_normal_on_the_log_scale():
    assert ns.log_se(1.0, 1.0) == 0
    assert ns.log_se(0.9, 1.1) == pytest.approx(math.log(1.1 / 0.9) / 3.919928, rel=1e-6)
    with pytest.raises(ValueError):
        ns.log_se(1.2, 1.1)


def test_detectable_is_the_ratio_resolved_80_percent_of_the_time():
    lo, hi, res = 0.95, 1.20, 0.05
    r80 = ns.detectable(lo, hi, res)
    se = ns.log_se(lo, hi)
    assert r80 == pytest.approx(math.exp(math.log(1.05) + (1.959964 + 0.841621) * se))
    assert ns.power_at(r80, lo, hi, res) == pytest.approx(0.80, abs=1e-6)
    # a wider interval needs a larger effect; more power needs a larger effect
    assert ns.detectable(0.90, 1.30, res) > r80 and ns.detectable(lo, hi, res, power=0.9) > r80
    # a true ratio at 1 + res is resolved only 2.5% of the time
    assert ns.power_at(1.05, lo, hi, res) == pytest.approx(0.025, abs=1e-3)


def test_a_wide_cell_resolves_a_true_15_percent_seldom():
    # the Xeon's 4 MB cell beside the same hash join: 1.21 (0.88-1.43), +-3.9%
    assert ns.power_at(1.15, 0.88, 1.43, 0.039) < 0.2
    assert ns.detectable(0.88, 1.43, 0.039) > 1.4


def test_excludes_needs_the_interval_below_1_15():
    assert ns.excludes(1.14) and not ns.excludes(1.15) and not ns.excludes(1.43)


def test_resolved_at_bonferroni_is_stricter():
    # the Xeon's 16 MB cell beside the same hash join: 1.11 (1.05-1.23), +-4.8%
    assert ns.resolved_at(1.05, 1.23, 0.048, 0.05) == ns.resolved(stats.Summary(1.11, 1.05, 1.23, 16), 0.048)
    assert not ns.resolved_at(1.05, 1.23, 0.048, 0.05 / ns.CELLS)
    assert ns.resolved_at(1.30, 1.70, 0.048, 0.05 / ns.CELLS)


def test_median_ci_coverage_of_three_pairs_is_75_percent():
    assert ns.median_ci_coverage(3) == 0.75
    assert ns.median_ci_coverage(5) == pytest.approx(30 / 32)
    # the exact odd-n answer agrees with bootstrap_ci itself
    assert ns.median_ci_coverage(4, trials=150, resamples=300) < 0.95


PAGE = """# Native study

Per cell 16 pairs (alone, then co-run).

| hash table MB | actual MB | build rows | / C | alone s | resolution | beside stream | beside seq scan | beside hash join |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| 4 | 3.70 | 78,643 | 0.5 | 0.630 (0.583-0.672) | +-3.9% | 1.07 (0.80-1.21) | 1.04 (0.95-1.10) | 1.21 (0.88-1.43) |
| 16 | 14.80 | 314,572 | 2 | 1.389 (1.183-1.475) | +-4.8% | **1.50 (1.30-1.70)** | 1.04 (0.99-1.12) | **1.11 (1.05-1.23)** |

### Pairs with both vCPUs in one L3

| hash table MB | pairs in one L3 (stream/scan/hash join) | resolution | beside stream, one L3 | beside seq scan, one L3 | beside hash join, one L3 |
| --- | --- | --- | --- | --- | --- |
| 4 | 8/3/2 of 16 | +-3.9% | 1.06 (0.80-1.21) | 1.08 (0.88-1.10) | - |
| 16 | 5/2/7 of 16 | +-4.8% | 1.02 (0.89-1.26) | - | **1.26 (1.10-1.34)** |

<!-- analysis: by hand -->
words
<!-- /analysis -->
"""


def test_page_cells_reads_both_tables():
    cells = ns.page_cells(PAGE)
    assert len(cells) == 6 + 4
    c = next(c for c in cells if c["size"] == 4 and c["kind"] == "hash join" and not c["one_l3"])
    assert (c["n"], c["med"], c["lo"], c["hi"], c["res"], c["bold"]) == (16, 1.21, 0.88, 1.43, 0.039, False)
    c = next(c for c in cells if c["size"] == 16 and c["kind"] == "hash join" and c["one_l3"])
    assert (c["n"], c["bold"]) == (7, True)


def test_power_section_says_what_is_not_excluded_and_what_survives_bonferroni():
    text = ns.power_section(PAGE, coverage=lambda n: 0.75 if n == 3 else 0.9)
    assert text.startswith(ns.POWER_BEGIN) and text.rstrip().endswith(ns.POWER_END)
    row4 = next(ln for ln in text.splitlines() if ln.startswith("| 4 |"))
    assert row4.endswith(f"| {ns.detectable(0.88, 1.43, 0.039):.2f}x; "
                         f"{100 * ns.power_at(1.15, 0.88, 1.43, 0.039):.0f}%; no |")
    assert "over all pairs: 80% power at" in text and "2 of 4 cells exclude 1.15x" in text
    assert "not excluded** beside the hash join at 4, 16 MB" in text
    assert "75% of the time at 3 pairs" in text
    assert ("1 of its 3 bold cells remains resolved: 16 MB beside the stream; "
            "not: 16 MB beside the hash join, 16 MB beside the hash join (one L3).") in text
    assert "cannot exclude a 15% cost in 2 of 4 cells over all pairs (tables of 4-16 MB)" in text


def test_write_power_puts_the_section_before_the_analysis_and_replaces_it(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(PAGE)
    ns.write_power(page)
    once = page.read_text()
    assert once.index(ns.POWER_BEGIN) < once.index("<!-- analysis")
    ns.write_power(page)
    assert page.read_text() == once and once.count(ns.POWER_BEGIN) == 1
