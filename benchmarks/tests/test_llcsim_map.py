"""The map's page (analyze.py pgmap, issue 28 item 3) from serial and plugin
logs in the formats pg/hjmap and the plugin print, with known cycles."""
import pathlib
import subprocess
import sys

LLCSIM = pathlib.Path(__file__).resolve().parents[1] / "llcsim"
ANALYZE = LLCSIM / "scripts" / "analyze.py"
sys.path.insert(0, str(LLCSIM / "scripts"))
import pgmap  # noqa: E402


def write_map_logs(tmp, cells, reps=2, drop_tag=None, extra=(), llc_colors=32):
    """cells: (rows, mech, corunner) -> slowdown over stock alone (10M
    cycles a query), each repetition the same; stock alone added per size.
    Returns analyze.py pgmap's process and the page."""
    ser = ["=== PCTEST cmdline: page_colors=32", "=== PCTEST cpus: 4", "ok 1 - server (stock)"]
    sim = [f"config colors={llc_colors} line=64 cpi=0.4 rob=224 mshr=14 pf=16 pf_xlat=16 llc=2097152/16"]
    sizes = sorted({r for r, _, _ in cells})
    tag = 1
    for rep in range(1, reps + 1):
        for rows in sizes:
            for key, slow in [((rows, "stock", "alone"), 1.0)] + [(k, v) for k, v in cells.items() if k[0] == rows]:
                _, mech, co = key
                ser.append(f"LLCSIM-PG tag={tag} rep={rep} rows={rows} mech={mech} corunner={co}")
                if tag != drop_tag:
                    sim.append(f"dump seq={tag} tag={tag} vcpu=0 u_insns=1 u_acc=1 u_l1m=1 u_l2m=1 u_llcm=1 "
                               f"u_seqm=0 u_cycles={int(10_000_000 * slow) - 1000} k_insns=0 k_acc=0 k_l1m=0 "
                               f"k_l2m=0 k_llcm=0 k_seqm=0 k_cycles=1000 acc_by_vcpu=1/0/0/0")
                tag += 1
    (tmp / "m.serial.log").write_text("\n".join(ser) + "\n")
    (tmp / "m.sim.log").write_text("\n".join(sim) + "\n")
    out = tmp / "llcsim-map.md"
    p = subprocess.run([sys.executable, str(ANALYZE), "pgmap", "--serial", str(tmp / "m.serial.log"),
                        "--sim", str(tmp / "m.sim.log"), "--boot-rc", "0", "--secs", "1", "--out", str(out),
                        "--llc-kib", "2048", "--smp", "4", "--llc-domains", "2", "--cmd", "test", *extra],
                       capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def test_won_back_is_the_share_of_the_stock_slowdown():
    class S:
        def __init__(self, m):
            self.median = m
    assert pgmap.won_back(S(1.5), S(1.2)) == (1.5 - 1.2) / 0.5
    assert pgmap.won_back(S(1.5), S(1.6)) < 0               # a mechanism that makes it worse
    assert pgmap.won_back(S(1.10), S(1.0)) is None           # under 15%: nothing worth winning back
    assert pgmap.won_back(None, S(1.0)) is None


def test_map_page_gives_slowdowns_and_what_each_mechanism_wins_back(tmp_path):
    # 9830 rows: a 0.50 MB hash table (0.25 of a 2 MiB LLC); 78643: 4.00 MB (2)
    cells = {(9830, "stock", "scan"): 1.05, (9830, "colors", "scan"): 1.04,
             (78643, "stock", "scan"): 1.60, (78643, "colors", "scan"): 1.20,
             (78643, "resctrl", "scan"): 1.45, (78643, "placement", "scan"): 1.00,
             (78643, "stock", "hj"): 1.30, (78643, "colors", "hj"): 1.36}
    p, page = write_map_logs(tmp_path, cells)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| 4.00 | 2 | seq scan | 1.60x (1.60-1.60) | 1.20x (1.20-1.20) | 1.45x (1.45-1.45) | " \
           "1.00x (1.00-1.00) | 67% | 25% | 100% |" in page
    # a co-runner whose stock cost is under 15%: nothing to win back
    assert "| 0.50 | 0.25 | seq scan | 1.05x (1.05-1.05) | 1.04x (1.04-1.04) | - | - | - | - | - |" in page
    # colouring that makes it worse is shown as such
    assert "| 4.00 | 2 | hash join (same size) | 1.30x (1.30-1.30) | 1.36x (1.36-1.36) | - | - | -20% | - | - |" \
        in page
    assert (tmp_path / "llcsim-map.png").exists()
    assert "- PASS: every measured query has its counters (0 without)" in page


def test_map_page_sets_mls_against_the_same_hash_join(tmp_path):
    """MLS pairs the hash join with a weak plan instead of another hash join: its rows are the cells beside
    the scan and the index join, won back against the stock cost beside the same hash join; none at a size
    whose same-size pair costs under 15%, and no section without a hash join co-runner."""
    cells = {(78643, "stock", "hj"): 1.50, (78643, "colors", "hj"): 1.60,
             (78643, "stock", "scan"): 1.10, (78643, "colors", "scan"): 1.05, (78643, "stock", "ij"): 1.20,
             (9830, "stock", "hj"): 1.10, (9830, "stock", "scan"): 1.02}
    p, page = write_map_logs(tmp_path, cells)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "## MLS: a weak partner instead of the same hash join" in page
    assert "| hash table MB | / LLC | weak partner | stock beside the same hash join | MLS | MLS + colors | " \
           "MLS wins back | MLS + colors wins back |" in page
    assert "| 4.00 | 2 | seq scan | 1.50x (1.50-1.50) | 1.10x (1.10-1.10) | 1.05x (1.05-1.05) | 80% | 90% |" in page
    assert "| 4.00 | 2 | index nested loop join | 1.50x (1.50-1.50) | 1.20x (1.20-1.20) | - | 60% | - |" in page
    assert "| 0.50 | 0.25 | seq scan | 1.10x (1.10-1.10) | 1.02x (1.02-1.02) | - | - | - |" in page
    p, page = write_map_logs(tmp_path, {(9830, "stock", "scan"): 1.05})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "MLS" not in page


def test_map_a_missing_query_fails(tmp_path):
    p, page = write_map_logs(tmp_path, {(9830, "stock", "scan"): 1.05}, drop_tag=2)
    assert p.returncode == 1
    assert "not ok - every measured query has its counters (1 without)" in p.stdout


def test_map_kernel_colours_other_than_the_llcs_fail(tmp_path):
    """A guest kernel with 32 colours over an LLC of 16 (LLC_SIZE=1M before
    run.sh derived page_colors from it) folds colours c and c + 16 onto one
    slice of sets: its colour cells do not partition the cache."""
    p, page = write_map_logs(tmp_path, {(9830, "stock", "scan"): 1.05}, llc_colors=16)
    assert p.returncode == 1
    assert "not ok - the guest kernel's page colours are the LLC's (page_colors=32, the LLC 16)" in p.stdout
    p, page = write_map_logs(tmp_path, {(9830, "stock", "scan"): 1.05})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "- PASS: the guest kernel's page colours are the LLC's (page_colors=32, the LLC 32)" in page


def test_map_page_sets_the_native_study_beside_each_stock_cell(tmp_path):
    """With --native-study, each row has the native study's cell of its co-runner at scale x the table
    (matched by build rows): the pairs in one L3, or all pairs where too few shared one; none for the
    index join, which the native study does not run."""
    from test_llcsim_calibration import STUDY_PAGE
    study = tmp_path / "study.md"
    study.write_text(STUDY_PAGE)
    # 1229 and 2458 build rows: a quarter of the study's 4,915 and 9,830
    cells = {(1229, "stock", "scan"): 1.05, (1229, "stock", "hj"): 1.20,
             (2458, "stock", "stream"): 1.30, (2458, "stock", "ij"): 1.10}
    p, page = write_map_logs(tmp_path, cells, extra=("--native-study", str(study), "--scale", "4"))
    assert p.returncode == 0, p.stdout + p.stderr
    # whole rows: each co-runner has a row at every size, and the two sizes' native hash join cells are alike;
    # with only stock run there is no "wins back" column, not even an empty one
    assert "\n| hash table MB | / LLC | co-runner | stock | native stock (table x 4) |\n| --- | --- | --- | --- | --- |\n" \
        in page
    assert "\n| 0.06 | 0.031 | seq scan | 1.05x (1.05-1.05) | 1.00x (0.98-1.02, 9 pairs in one L3) |\n" in page
    assert "| 0.06 | 0.031 | hash join (same size) | 1.20x (1.20-1.20) | 1.00x (0.98-1.02, 10 pairs in one L3) |" \
        in page
    assert "| 0.13 | 0.063 | C stream | 1.30x (1.30-1.30) | 1.14x (1.02-1.21, all pairs) |" in page
    assert "| 0.13 | 0.063 | index nested loop join | 1.10x (1.10-1.10) | - |" in page
    assert "Native stock: the native study" in page and "--rounds 16" in page
