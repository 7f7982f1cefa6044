"""llcsim's analysis on the host: Table 2 over repetitions
(benchmarks/llcsim/scripts/analyze.py) and the native timing of the loops
the miss-overlap model is compared with (mccdb_bench.llcsim_native).

The Table 2 guest run takes ten minutes under QEMU TCG, so this feeds the analysis a
serial log and a plugin log in the formats the guest program and the plugin
print, with known cycle counts, and checks the per-repetition ratios and
their median (min-max)."""
import pathlib
import subprocess
import sys

ANALYZE = pathlib.Path(__file__).resolve().parents[1] / "llcsim" / "scripts" / "analyze.py"
ML = "hash/26453/400000/c=0-31"
WL = "hash/264534/400000"


def dump(tag, cycles, units_acc=1000):
    return (f"dump seq={tag} tag={tag} vcpu=0 u_insns=100 u_acc={units_acc} u_l1m=500 u_l2m=400 "
            f"u_llcm=100 u_seqm=0 u_cycles={cycles} k_insns=0 k_acc=0 k_l1m=0 k_l2m=0 k_llcm=0 "
            f"k_seqm=0 k_cycles=0 acc_by_vcpu={units_acc}/0")


def write_logs(tmp, victim_slowdowns):
    """One repetition per entry of victim_slowdowns (ML_HJ time over alone
    in every co-run of that repetition); the co-runners run at 2x alone."""
    ser, sim = ["=== PCTEST cmdline: page_colors=32", "=== PCTEST cpus: 2"], ["config colors=32 line=64"]
    for r, slow in enumerate(victim_slowdowns):
        tag = 300 + 40 * r
        alone = [(ML, 1000), (ML + "/pc=0-3/pref", 1000), ("stream/32768/800000", 800),
                 ("stream/32768/800000/c=0-3/pref", 800), (WL, 3000), (WL + "/c=0-3/pref", 3000)]
        for spec, cycles in alone:
            ser.append(f"=== PCTEST RUN llcsim run {spec} {tag}")
            ser.append(f"LLCSIM-RUN tag={tag} role=alone spec={spec} units=100 cpu=0 sink=1")
            sim.append(dump(tag, cycles * 1000))
            tag += 1
        for k in (32, 16, 8, 4):
            c = "all" if k == 32 else f"0-{k - 1}"
            for co, co_cycles in ((f"stream/32768/0/c={c}/pref", 800), (f"hash/264534/0/c={c}/pref", 3000)):
                ser.append(f"=== PCTEST RUN llcsim pair {ML}/pc={c}/pref {co} {tag} {tag + 1}")
                ser.append(f"LLCSIM-RUN tag={tag + 1} role=aggressor spec={co} units=50 cpu=1 sink=1")
                ser.append(f"LLCSIM-RUN tag={tag} role=victim spec={ML}/pc={c}/pref units=100 cpu=0 sink=1")
                sim.append(dump(tag, int(1000 * 1000 * slow)))
                sim.append(dump(tag + 1, co_cycles * 1000))   # 50 units in the time of 100 alone: 2x
                tag += 2
    (tmp / "t.serial.log").write_text("\n".join(ser) + "\n")
    (tmp / "t.sim.log").write_text("\n".join(sim) + "\n")


def analyze(tmp):
    out = tmp / "llcsim-table2.md"
    p = subprocess.run([sys.executable, str(ANALYZE), "table2", "--serial", str(tmp / "t.serial.log"),
                        "--sim", str(tmp / "t.sim.log"), "--boot-rc", "0", "--secs", "1",
                        "--llc-kib", "2048", "--out", str(out), "--cmd", "test"],
                       capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def corun_rows(page):
    return [ln for ln in page.splitlines() if ln.startswith("| stream |") or ln.startswith("| WL_HJ |")]


def test_three_repetitions_give_median_and_range(tmp_path):
    write_logs(tmp_path, [1.2, 1.4, 1.3])
    p, page = analyze(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok - table2: 24 co-runs in 3 repetitions" in p.stdout
    rows = corun_rows(page)
    assert len(rows) == 8
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == "3"                       # runs
        assert cells[5] == "1.30x (1.20-1.40)"       # ML_HJ vs alone
        assert cells[9] == "2.00x (2.00-2.00)"       # co-runner vs alone
    assert (tmp_path / "llcsim-table2.png").stat().st_size > 0


def test_one_repetition_prints_the_value_alone(tmp_path):
    write_logs(tmp_path, [1.25])
    p, page = analyze(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [c.strip() for c in corun_rows(page)[0].strip("|").split("|")][5] == "1.25x"


def test_a_missing_co_run_fails_the_analysis(tmp_path):
    write_logs(tmp_path, [1.2, 1.4])
    sim = tmp_path / "t.sim.log"
    lines = sim.read_text().splitlines()
    sim.write_text("\n".join(ln for ln in lines if " tag=350 " not in ln) + "\n")
    p, _ = analyze(tmp_path)
    assert p.returncode == 1
    assert "not ok - table2: 15 co-runs in 2 repetitions" in p.stdout


def test_native_timing_of_the_three_loops(tmp_path):
    """python -m mccdb_bench.llcsim_native runs the guest program natively and
    records one time per loop and round (tiny sizes; no guard: a test)."""
    import json
    guest = ANALYZE.parents[1] / "guest"
    subprocess.run(["make", "-s", "-C", str(guest)], check=True)
    out = tmp_path / "native.json"
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.llcsim_native", "--no-guard", "--quiet",
                        "--kib", "1024", "--loads", "1000", "--reps", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert set(data["ns_per_load"]) == {"chase", "rand", "stream", "hash"}
    assert all(len(v) == 2 and all(x > 0 for x in v) for v in data["ns_per_load"].values())
    assert data["specs"]["rand"] == "rand/1024/1000"
    assert "No quiet-machine guard" in data["guard"]


def test_native_timing_refuses_bad_sizes(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mccdb_bench.llcsim_native", "--no-guard", "--kib", "10",
                        "--out", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--kib >= 1024" in r.stderr


def pg_dump(tag, cycles, vcpu=0):
    return (f"dump seq={tag} tag={tag} vcpu={vcpu} u_insns=100 u_acc=1000 u_l1m=500 u_l2m=400 "
            f"u_llcm={cycles // 1000} u_seqm=0 u_cycles={cycles} k_insns=0 k_acc=0 k_l1m=0 k_l2m=0 "
            f"k_llcm=0 k_seqm=0 k_cycles=0 acc_by_vcpu=1000/0")


def analyze_pg(tmp, mode, ser, sim):
    (tmp / "p.serial.log").write_text("\n".join(["=== PCTEST cmdline: page_colors=32"] + ser) + "\nok 1 - x\n")
    (tmp / "p.sim.log").write_text("\n".join(["config colors=32 line=64"] + sim) + "\n")
    out = tmp / f"{mode}.md"
    p = subprocess.run([sys.executable, str(ANALYZE), mode, "--serial", str(tmp / "p.serial.log"),
                        "--sim", str(tmp / "p.sim.log"), "--boot-rc", "0", "--secs", "1",
                        "--out", str(out), "--cmd", "test"], capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def cells(page, first):
    row = next(ln for ln in page.splitlines() if ln.startswith(f"| {first} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_figure2_ratios_are_taken_within_a_repetition(tmp_path):
    # q01 on 32 and 4 colours in 3 repetitions; repetition r runs 10 r %
    # slower throughout, and 4 colours cost 1.5x, 1.6x, 1.7x of 32
    ser, sim, tag = [], [], 1
    for r, slow in ((1, 1.5), (2, 1.6), (3, 1.7)):
        for k, f in ((32, 1.0), (4, slow)):
            ser.append(f"LLCSIM-PG tag={tag} rep={r} query=q01 colors={k} rows=4")
            sim.append(pg_dump(tag, int(1e6 * (1 + r / 10) * f)))
            tag += 1
    p, page = analyze_pg(tmp_path, "pgfig2", ser, sim)
    assert p.returncode == 0, p.stdout + p.stderr
    row = next(ln for ln in page.splitlines() if ln.startswith("| q01 | 4 |"))
    assert " 1.60 (1.50-1.70) " in row, row
    assert "3 repetition(s)" in page
    assert "No quiet-machine guard record" in page, "no guard file beside this serial log"


def test_figure6_batches_over_repetitions(tmp_path):
    # per repetition: alone 1 Mcycles each; default batch 4 M; sls 3 M; mls
    # and mls-part 2.5 M, 2.7 M and 2.9 M over the three repetitions
    ser, sim, tag = ["LLCSIM-PG partition: on"], [], 1

    def phase(rep, policy, n, c0, c1, cyc0, cyc1):
        nonlocal tag
        queries = ",".join(f"{q}@" for q in ("hash-25", "hash-20", "index-12", "index-8")) if c0 == "-" else "x"
        ser.append(f"LLCSIM-PG rep={rep} policy={policy} phase={n} tag0={tag} tag1={tag + 1} cpu0={c0} cpu1={c1} "
                   f"queries={queries}")
        sim.extend([pg_dump(tag, cyc0), pg_dump(tag + 1, cyc1, 1)])
        tag += 2
    for rep, mls in ((1, 2.5), (2, 2.7), (3, 2.9)):
        for q in ("hash-25", "hash-20", "index-12", "index-8"):
            phase(rep, "alone", 1, q, "-", 10**6, 0)
        phase(rep, "default", 1, "-", "-", 4 * 10**6, 3 * 10**6)
        phase(rep, "sls", 1, "hash-25", "hash-20", 15 * 10**5, 10**6)
        phase(rep, "sls", 2, "index-12", "index-8", 15 * 10**5, 10**6)
        for pol in ("mls", "mls-part"):
            phase(rep, pol, 1, "hash-25", "index-12", int(mls / 2 * 10**6), 10**6)
            phase(rep, pol, 2, "hash-20", "index-8", int(mls / 2 * 10**6), 10**6)
    p, page = analyze_pg(tmp_path, "pgfig6", ser, sim)
    assert p.returncode == 0, p.stdout + p.stderr
    # limits: default max(4 x 1 M / 2, 1 M) = 2 M; pinned pairs 1 M per phase = 2 M
    assert cells(page, "default")[1:] == ["4.0 (4.0-4.0)", "1.000 (1.000-1.000)", "2.000 (2.000-2.000)"]
    assert cells(page, "sls")[1:] == ["3.0 (3.0-3.0)", "0.750 (0.750-0.750)", "1.500 (1.500-1.500)"]
    assert cells(page, "mls")[1:] == ["2.7 (2.5-2.9)", "0.675 (0.625-0.725)", "1.350 (1.250-1.450)"]
    assert cells(page, "hash-25")[3] == "1.500 (1.500-1.500)", "sls slowdown of hash-25"
    assert cells(page, "hash-25")[5] == "1.350 (1.250-1.450)", "mls slowdown of hash-25"
    assert (tmp_path / "pgfig6.png").stat().st_size > 0


def domain_logs(tmp, other_domain_mr):
    """run.sh domains' tags with known LLC miss rates (misses per 1000 LLC
    accesses); other_domain_mr is the victim's beside the far stream."""
    mr = {500: 0.01, 501: 0.60, 502: 0.99, 503: other_domain_mr, 504: 0.99, 511: 0.97,
          512: 0.01, 513: 0.03, 514: 0.99, 515: 0.55, 516: 0.99, 517: 0.02, 520: 0.02, 521: 0.99, 522: 0.50, 523: 0.99}
    cpu = {502: 1, 504: 2, 514: 1, 516: 1, 521: 1, 523: 1}
    ser, sim = ["=== PCTEST cmdline: page_colors=32", "=== PCTEST cpus: 4",
                "=== PCTEST cache: index3 L3 Unified 16384K 16-way line 64 shared_cpus 0-1"], [
        "config colors=32 line=64 llc_domains=2 vcpus=4"]
    for tag, rate in mr.items():
        ser.append(f"LLCSIM-RUN tag={tag} role=x spec=chase/768/40 units=100 cpu={cpu.get(tag, 0)} sink=1")
        sim.append(f"dump seq={tag} tag={tag} vcpu=0 u_insns=100 u_acc=5000 u_l1m=2000 u_l2m=1000 "
                   f"u_llcm={int(rate * 1000)} u_seqm=0 u_cycles=1000 k_insns=0 k_acc=0 k_l1m=0 k_l2m=0 "
                   f"k_llcm=0 k_seqm=0 k_cycles=0 acc_by_vcpu=5000/0/0/0")
    (tmp / "t.serial.log").write_text("\n".join(ser) + "\n")
    (tmp / "t.sim.log").write_text("\n".join(sim) + "\n")
    out = tmp / "llcsim-domains.md"
    p = subprocess.run([sys.executable, str(ANALYZE), "domains", "--serial", str(tmp / "t.serial.log"),
                        "--sim", str(tmp / "t.sim.log"), "--boot-rc", "0", "--secs", "1", "--smp", "4",
                        "--llc-domains", "2", "--llc-kib", "2048", "--out", str(out), "--cmd", "test"],
                       capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def test_domains_known_answers_pass(tmp_path):
    p, page = domain_logs(tmp_path, 0.02)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "not ok" not in p.stdout
    assert "ok - stream in the other domain: victim LLC miss rate 0.020" in p.stdout
    assert "in each of 2 domains" in page
    assert (tmp_path / "llcsim-domains.png").stat().st_size > 0


def test_domains_disjoint_masks_compared_with_shared_ones(tmp_path):
    p, page = domain_logs(tmp_path, 0.02)
    assert "ok - ways 0-7 beside a stream in ways 8-15: victim misses 0.030, at least 20 points below the " \
        "stream in ways 0-7 (0.550; alone in ways 0-7: 0.020)" in p.stdout
    assert "| ways 0-7 alone (vCPU 0) |" in page


def test_domains_a_far_stream_that_hurts_fails(tmp_path):
    p, _ = domain_logs(tmp_path, 0.40)
    assert p.returncode == 1
    assert "not ok - stream in the other domain: victim LLC miss rate 0.400" in p.stdout


def test_compare_expected_default_placement_and_the_mechanisms(tmp_path):
    # alone: 1 M each; hash joins in one domain 2.0x, apart 1.2x (index
    # joins 1.5x / 1.1x); colours and resctrl halve the extra; the scan
    # costs the hash join 1.6x in its domain, 1.0x in the other
    ser, sim, tag = ["LLCSIM-PG partition colors: page colours: x", "LLCSIM-PG partition resctrl: resctrl: y",
                     "LLCSIM-PG domains: 0 0-1 2;1 2-3 2;",
                     "LLCSIM-GATE rep=1 101 0 strong 0-1 3"], [], 1
    M = 10**6

    def phase(rep, policy, placed):
        nonlocal tag
        cpus = " ".join(f"cpu{c}={placed[c][0] if c in placed else '-'}" for c in range(4))
        ser.append(f"LLCSIM-PG rep={rep} policy={policy} phase=1 " +
                   " ".join(f"tag{c}={tag + c}" for c in range(4)) + f" {cpus} queries=x")
        sim.extend(pg_dump(tag + c, int(placed[c][1] * M) if c in placed else 1000, c) for c in range(4))
        tag += 4
    for rep in (1, 2, 3):
        for q in ("hash-25", "hash-20", "index-12", "index-8", "scan"):
            phase(rep, "alone", {0: (q, 1.0)})
        for mech, k in (("stock", 1.0), ("colors", 0.5), ("resctrl", 0.5)):
            phase(rep, f"{mech}-mix-together", {0: ("hash-25", 1 + k), 1: ("hash-20", 1 + k),
                                                2: ("index-12", 1 + 0.5 * k), 3: ("index-8", 1 + 0.5 * k)})
            phase(rep, f"{mech}-mix-apart", {0: ("hash-25", 1 + 0.2 * k), 1: ("index-12", 1 + 0.1 * k),
                                             2: ("hash-20", 1 + 0.2 * k), 3: ("index-8", 1 + 0.1 * k)})
            phase(rep, f"{mech}-scan-same", {0: ("hash-25", 1 + 0.6 * k), 1: ("scan", 1.1)})
        phase(rep, "stock-scan-other", {0: ("hash-25", 1.0), 2: ("scan", 1.0)})
        phase(rep, "gate", {c: ("-", 1.3) for c in range(4)})
    p, page = analyze_pg(tmp_path, "pgcompare", ser, sim)
    assert p.returncode == 0, p.stdout + p.stderr
    row = "Linux default placement (expected: hash joins together in 1 of 3)"
    # 1/3 x 2.0 + 2/3 x 1.2; 1/3 x 1.5 + 2/3 x 1.1; batch 1/3 x 2.0 + 2/3 x 1.2
    assert cells(page, row)[1:] == ["1.467 (1.467-1.467)", "1.233 (1.233-1.233)", "1.467 (1.467-1.467)"]
    assert cells(page, "domain placement (mccdb: a hash join in each domain)")[1] == "1.200 (1.200-1.200)"
    assert cells(page, "placement + page colouring")[1:3] == ["1.100 (1.100-1.100)", "1.050 (1.050-1.050)"]
    scan_row = "Linux default placement (expected: the scan in the hash join's domain in 1 of 3)"
    scans = page.split("## hash-25 beside a streaming scan", 1)[1]
    assert cells(scans, scan_row)[1] == "1.200 (1.200-1.200)"          # 1/3 x 1.6 + 2/3 x 1.0
    assert cells(scans, "page colouring, Linux placement (expected)")[1] == "1.100 (1.100-1.100)"
    assert "batch / longest alone 1.300 (1.300-1.300)" in page
    assert "`rep=1 101 0 strong 0-1 3`" in page
    assert (tmp_path / "pgcompare.png").stat().st_size > 0
