"""The kernel measurement pages read the guest's serial log: made-up logs
with known numbers, in the shape the selftests print."""
import pytest

from mccdb_bench import kernel_faults, kernel_latency, kernel_pressure
from mccdb_bench.harness import guest

LOG = """\
[    1.0] Linux version 6.1.192+
=== PCTEST BEGIN 6.1.192+
=== PCTEST RUN color_bench 
TAP version 13
# bench nr_colors 16
# bench fault_pages_per_s_uncoloured 138111
# bench fault_pages_per_s_all_colours 137299
# bench ratio_all_colours_vs_uncoloured 0.994
# bench migrate_us_per_page 0.275
ok 1 - timed with a real clocksource
=== PCTEST RESULT color_bench rc=0 PASS 3s\r
=== PCTEST RUN color_pressure 
# pressure: warm-up without a colour policy elsewhere: compaction made 66 huge-page blocks (195 before, 261 after); then 32 of 32 huge pages faulted
# pressure: round 1 try 1 compaction: compact_migrate_scanned +946 compact_free_scanned +9342 compact_isolated +464 pgmigrate_success +208 pgmigrate_fail +1
# pressure: round 1 try 1 without a colour policy elsewhere: compaction made 0 huge-page blocks (195 before, 195 after); then 32 of 32 huge pages faulted
# pressure: round 1 try 2 without a colour policy elsewhere: compaction made 95 huge-page blocks (195 before, 290 after); then 32 of 32 huge pages faulted
# pressure: round 2 try 1 with a colour policy elsewhere: compaction made 113 huge-page blocks (131 before, 244 after); then 30 of 32 huge pages faulted
ok 1 - compaction makes huge-page blocks
# pressure: 31744 pages parked while the coloured process ran
# pressure: order-10 free blocks 209 before, 233 after the coloured process exited; 0 pages parked after it
not ok 2 - parked pages go back
=== PCTEST RESULT color_pressure rc=1 FAIL 12s
=== PCTEST RUN color_fragment 
# MemFree 250000 pages; filled 175000, freed every other one: 87500 holes, 695 of colour 3; then 40 huge pages took the large free blocks; MemFree now 1000
ok 1 - at least 320 free frames of colour 3 (695)
# child: 16 pages of colour 3
# child: 32 pages of colour 3
not ok 2 - a child bound to colour 3 gets 256 pages of it while 695 are free (status 0x7: SIGBUS)
=== PCTEST RUN color_reclaim 
"""


def test_parse_splits_programs_and_results():
    progs = guest.parse(LOG)
    assert list(progs) == ["color_bench", "color_pressure", "color_fragment", "color_reclaim"]
    assert progs["color_bench"].result == "PASS (rc 0)"
    assert progs["color_pressure"].result == "FAIL (rc 1)"
    # color_fragment has no RESULT line: the next RUN ends it
    assert progs["color_fragment"].result.startswith("no RESULT line")
    assert progs["color_pressure"].tap() == "1 of 2 ok; not ok: parked pages go back"
    assert not any(x.startswith("=== ") for p in progs.values() for x in p.lines)


def test_release_of_the_guest():
    assert guest.release(LOG) == "6.1.192+"
    assert guest.release("[    0.1] no init\n") == ""
    boots = [guest.Boot(0, "a", {}, guest.release(LOG)), guest.Boot(1, "b", {}, ""),
             guest.Boot(0, "c", {}, "6.12.118+")]
    assert guest.release_line(boots) == "Guest kernel release (uname -r in the guest): 6.1.192+, 6.12.118+\n"
    assert "not in the logs" in guest.release_line(boots[1:2])


def test_bench_values():
    v = kernel_faults.bench_values(guest.parse(LOG)["color_bench"])
    assert v == {"nr_colors": 16, "fault_pages_per_s_uncoloured": 138111, "fault_pages_per_s_all_colours": 137299,
                 "ratio_all_colours_vs_uncoloured": 0.994, "migrate_us_per_page": 0.275}


def test_pressure_cells():
    progs = guest.parse(LOG)
    assert kernel_pressure.pressure_row(progs["color_pressure"]) == [
        "95 (290) at try 2; with: 113 (244)", "30 of 32, 32 of 32", "31,744 / 0", "209 / 233"]
    assert kernel_pressure.fragment_cell(progs["color_fragment"]) == (
        "**SIGBUS** after 32+ of 256 pages (695 free frames of the colour)")
    assert kernel_pressure.reclaim_cell(None) == "**did not run**"
    assert kernel_pressure.reclaim_cell(progs["color_reclaim"]) == "0 of 0 ok"


LATENCY_LOG = """\
=== PCTEST RUN color_latency 
TAP version 13
1..5
ok 1 - the irqs-off latency tracer is on
# bench uncoloured_irqsoff_us 212
# where uncoloured: task color_latency-80 (uid:0 nice:0 policy:0 rt_prio:0); started at: _raw_spin_lock_irq; ended at _raw_spin_unlock_irq; stack (none)
# bench uncoloured_pages 2048
# bench uncoloured_fault_p50_us 31.5
# bench exhaust_irqsoff_us 5120
# where exhaust: task color_latency-81; started at _raw_spin_lock_irqsave; ended at _raw_spin_unlock_irqrestore; stack take_free_page_color < color_take_free
# bench exhaust_sigbus_fault_us 91000.5
=== PCTEST RESULT color_latency rc=0 PASS 40s
"""


def test_latency_values_and_where():
    v, where = kernel_latency.program_values(guest.parse(LATENCY_LOG)["color_latency"])
    assert v == {"uncoloured_irqsoff_us": 212, "uncoloured_pages": 2048, "uncoloured_fault_p50_us": 31.5,
                 "exhaust_irqsoff_us": 5120, "exhaust_sigbus_fault_us": 91000.5}
    assert where["exhaust"].endswith("stack take_free_page_color < color_take_free")
    assert set(where) == {"uncoloured", "exhaust"}


def test_latency_cells_and_colour_counts():
    assert kernel_latency.cell([], 1) == "-"
    assert kernel_latency.cell([5.0], 1) == "5.0"
    assert kernel_latency.cell([3, 1, 2], 0) == "2 (1-3)"
    assert kernel_latency.parse_colors("16,256") == [16, 256]
    for bad in ("", "12", "0", "16,x"):
        with pytest.raises(ValueError):
            kernel_latency.parse_colors(bad)
