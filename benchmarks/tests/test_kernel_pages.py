"""The kernel measurement pages read the guest's serial log: made-up logs
with known numbers, in the shape the selftests print."""
from mccdb_bench import kernel_faults, kernel_pressure
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
