"""run.sh share's page on the host (benchmarks/llcsim/scripts/share.py), fed
with a native-share.json, a native-memload.json and guest logs of known
numbers: each size's simulated alone latency and slowdown per variant
against the native same-L3 pairs, the agreement rules and the exit status
of an unsound run."""
import json
import pathlib
import subprocess
import sys

import pytest

from mccdb_bench.llc_knee import chase_key

SHARE = pathlib.Path(__file__).resolve().parents[1] / "llcsim" / "scripts" / "share.py"
KIBS = [2048, 4096]


def native(tmp_path):
    """Two sizes of three pairs each, 10 ns alone; at 4 MiB the third pair's vCPUs were in different L3s."""
    pairs = {2048: ([10.0] * 3, [13.0, 14.0, 15.0], [[90, 100], [95, 110], [100, 120]]),
             4096: ([10.0] * 3, [40.0, 50.0, 10.0], [[90, 100], [95, 110], [100, 350]])}
    p = tmp_path / "share.json"
    p.write_text(json.dumps({"machine": "m", "date": "today", "command": "memload", "pairs": 3, "guard": "- guard",
                             "chase": {str(k): {"alone": a, "beside": b, "pingpong": w}
                                       for k, (a, b, w) in pairs.items()}}))
    return p


def memload(tmp_path):
    """The 256 MiB chase alone at 100 ns: a native ns is 2 modeled cycles."""
    p = tmp_path / "memload.json"
    p.write_text(json.dumps({"chase": {"262144": {"alone_s": {"median": 100.0}}}}))
    return p


def guest(tmp_path, variant, slow, alone=20.0, rc=0, drop=None, config="llc_repl=lru"):
    """slow: native KiB -> simulated beside / alone; `alone` cycles a load."""
    name = variant.replace("/", "-")
    ser, sim = tmp_path / f"share-{name}.serial.log", tmp_path / f"share-{name}.sim.log"
    sl, rl = [f"config llc=3145728/24 l2=262144/8 repl=lru {config} lat_llc=18 cpi=0.4 rob=224 mshr=14"], []
    for i, k in enumerate(KIBS):
        for tag, cyc in ((800 + 3 * i, alone), (801 + 3 * i, alone * slow[k])):
            if tag == drop:
                continue
            rl.append(f"LLCSIM-RUN tag={tag} role=x spec=chase units=1000 cpu=0 sink=1")
            sl.append(f"dump seq=1 tag={tag} vcpu=0 u_insns=1 u_cycles={cyc * 1000:.0f} acc_by_vcpu=1")
    ser.write_text("\n".join(rl) + "\n")
    sim.write_text("\n".join(sl) + "\n")
    return ["--run", variant, str(ser), str(sim), str(rc), "60"]


def run(tmp_path, *runs):
    """runs: --run argument lists, then any further arguments."""
    out = tmp_path / "page.md"
    args = [x for r in runs for x in (r if isinstance(r, list) else [r])]
    p = subprocess.run([sys.executable, str(SHARE), "--native", str(native(tmp_path)), "--memload", str(memload(tmp_path)),
                        *args, "--out", str(out)], capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def test_each_size_against_the_same_l3_pairs(tmp_path):
    """Ratios over the same-L3 pairs only (4 MiB: 4.0x and 5.0x, not the pair across L3s);
    alone within 15% of native (10 ns = 20 cycles); slowdown within 30% of the median or inside the IQR;
    the lap is the lines times the ns a load (2 MiB: 32,768 x 10 ns)."""
    good = guest(tmp_path, "lru/3M/24/18", {2048: 1.4, 4096: 4.5}, alone=21.0)
    bad = guest(tmp_path, "lru/2M/16/40", {2048: 5.0, 4096: 4.5}, alone=40.0)
    p, page = run(tmp_path, good, bad)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| 2 | 512 | 10.0 (20.0) | 0.33 | 1.40x (1.35-1.45, 3) | 21.0 ok | 1.40x ok | 40.0 off | 5.00x off |" in page
    assert "| 4 | 1024 | 10.0 (20.0) | 0.66 | 4.50x (4.25-4.75, 2) | 21.0 ok | 4.50x ok | 40.0 off | 4.50x ok |" in page
    assert "1 of 6 pairs had a round trip of 200 ns or more" in page
    assert "Agreement (alone, slowdown): `lru/3M/24/18` 2 and 2 of 2; `lru/2M/16/40` 0 and 1 of 2" in page


def test_the_best_variant_goes_into_the_profile(tmp_path):
    """--profile: the variant agreeing at most sizes is written as LLC_REPL..LAT_LLC, other lines kept."""
    prof = tmp_path / "profile.env"
    prof.write_text("CPI=0.4\nLLC_SIZE=2M\n")
    good = guest(tmp_path, "srrip/3M/12/19", {2048: 1.4, 4096: 4.5}, alone=21.0)
    bad = guest(tmp_path, "lru/2M/16/40", {2048: 5.0, 4096: 4.5}, alone=40.0)
    p, page = run(tmp_path, bad, good, "--profile", str(prof))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Best variant (most sizes agreeing, then the smallest log error of the slowdowns): `srrip/3M/12/19`" in page
    lines = prof.read_text().splitlines()
    assert lines[0] == "CPI=0.4"
    assert [ln for ln in lines if not ln.startswith(("#", "CPI"))] == \
        ["LLC_SIZE=3M", "LLC_REPL=srrip", "LLC_WAYS=12", "LAT_LLC=19"]
    assert any(ln.startswith("# LLC_REPL..LAT_LLC: ") for ln in lines)


def test_an_unsound_run_fails(tmp_path):
    ok = {k: 1.5 for k in KIBS}
    for kw in ({"rc": 1}, {"drop": 804}):
        p, page = run(tmp_path, guest(tmp_path, "lru/2M/16/40", ok, **kw))
        assert p.returncode == 1, kw


def test_the_guest_list_is_the_one_the_page_reads(tmp_path):
    """share.py --sim-list: per native size (over 4) the chase alone and beside the rw stream, under the tags
    slowdowns() reads."""
    out = subprocess.run([sys.executable, str(SHARE), "--native", str(native(tmp_path)), "--sim-list", "20"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["llcsim:run:chase/512/20/thp:800",
                                  "llcsim:pair:chase/512/20/thp:stream/262144/0/thp/rw:801:802",
                                  "llcsim:run:chase/1024/20/thp:803",
                                  "llcsim:pair:chase/1024/20/thp:stream/262144/0/thp/rw:804:805"]


@pytest.mark.parametrize("variant,config,label", [
    # pacman:F, bimodal prefetch insertion
    ("pacman:0.5/3M/24/18", "llc_pf_near=0.5", "pacman, prefetch fills near 0.5, lat_llc 18"),
    # pacman:F:D, a set's lines aged every D fills besides
    ("pacman:0.02:12/2M/16/19", "llc_pf_near=0.02 llc_decay=12",
     "pacman, prefetch fills near 0.02, a set aged every 12 fills, lat_llc 18"),
])
def test_pacman_settings_in_variant_and_profile(tmp_path, variant, config, label):
    """llc_repl=pacman:F[:D]: the page says what the plugin ran with, and the profile takes the variant's
    LLC_REPL whole."""
    prof = tmp_path / "profile.env"
    prof.write_text("CPI=0.4\n")
    good = guest(tmp_path, variant, {2048: 1.4, 4096: 4.5}, alone=21.0, config="llc_repl=pacman " + config)
    p, page = run(tmp_path, good, "--profile", str(prof))
    assert p.returncode == 0, p.stderr
    assert label in page
    assert f"LLC_REPL={variant.split('/')[0]}\n" in prof.read_text()


def test_a_paced_chase_in_the_list_and_the_table(tmp_path):
    """A native chase 'KIB:ADDS' (llc_knee's paced chase) comes after the plain chase of its size, runs in the
    guest with k=ADDS, and its row says the adds; the analysis reads it under the tags the list gave it."""
    nat = json.loads(native(tmp_path).read_text())
    nat["chase"]["2048:128"] = nat["chase"].pop("4096")
    p = tmp_path / "paced.json"
    p.write_text(json.dumps(nat))
    out = subprocess.run([sys.executable, str(SHARE), "--native", str(p), "--sim-list", "20"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["llcsim:run:chase/512/20/thp:800",
                                  "llcsim:pair:chase/512/20/thp:stream/262144/0/thp/rw:801:802",
                                  "llcsim:run:chase/512/20/thp/k=128:803",
                                  "llcsim:pair:chase/512/20/thp/k=128:stream/262144/0/thp/rw:804:805"]
    g = guest(tmp_path, "lru/3M/24/18", {2048: 1.4, 4096: 4.5})
    page_out = tmp_path / "page.md"
    r = subprocess.run([sys.executable, str(SHARE), "--native", str(p), "--memload", str(memload(tmp_path)),
                        *g, "--out", str(page_out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in page_out.read_text().splitlines() if ln.startswith("| 2 +128 adds |"))
    assert "| 512 |" in row and "4.50x ok" in row
    assert chase_key("2048:128") == (2048, 128) and chase_key("3072") == (3072, 0)
    with pytest.raises(ValueError):
        chase_key("2048:100")       # adds come in blocks of 64
