"""run.sh share's page on the host (benchmarks/llcsim/scripts/share.py), fed
with a native-memload.json and guest logs of known numbers: each size's
simulated slowdown per replacement policy against the native one, the
agreement rule (30% of the median or inside the native range) and the exit
status of an unsound run."""
import json
import pathlib
import subprocess
import sys

SHARE = pathlib.Path(__file__).resolve().parents[1] / "llcsim" / "scripts" / "share.py"
KIBS = [2048, 4096, 8192, 262144]


def native(tmp_path):
    ratio = {2048: (1.35, 1.11, 1.56), 4096: (2.06, 0.97, 6.39), 8192: (3.21, 1.22, 11.87), 262144: (1.89, 1.88, 1.95)}
    p = tmp_path / "memload.json"
    p.write_text(json.dumps({"machine": "m", "date": "today", "command": "memload", "pairs": 5, "guard": "- guard",
                             "chase": {str(k): {"alone_s": {"median": 10.0}, "ratio": dict(zip(("median", "min", "max"), r))}
                                       for k, r in ratio.items()}}))
    return p


def guest(tmp_path, repl, slow, rc=0, drop=None):
    """slow: native KiB -> simulated beside / alone; alone 100 cycles a load."""
    ser, sim = tmp_path / f"share-{repl}.serial.log", tmp_path / f"share-{repl}.sim.log"
    sl, rl = ["config llc=2097152/16 l2=262144/8 cpi=0.4 rob=224 mshr=14"], []
    for i, k in enumerate(KIBS):
        for tag, cyc in ((800 + 3 * i, 100.0), (801 + 3 * i, 100.0 * slow[k])):
            if tag == drop:
                continue
            rl.append(f"LLCSIM-RUN tag={tag} role=x spec=chase units=1000 cpu=0 sink=1")
            sl.append(f"dump seq=1 tag={tag} vcpu=0 u_insns=1 u_cycles={cyc * 1000:.0f} acc_by_vcpu=1")
    ser.write_text("\n".join(rl) + "\n")
    sim.write_text("\n".join(sl) + "\n")
    return ["--run", repl, str(ser), str(sim), str(rc), "60"]


def run(tmp_path, *runs):
    out = tmp_path / "page.md"
    p = subprocess.run([sys.executable, str(SHARE), "--native", str(native(tmp_path)), *[x for r in runs for x in r],
                        "--out", str(out)], capture_output=True, text=True)
    return p, out.read_text() if out.exists() else ""


def test_each_size_against_the_native_median_or_range(tmp_path):
    lru = guest(tmp_path, "lru", {2048: 5.0, 4096: 5.0, 8192: 5.0, 262144: 1.9})
    rnd = guest(tmp_path, "random", {2048: 1.4, 4096: 2.0, 8192: 3.0, 262144: 1.2})
    p, page = run(tmp_path, lru, rnd)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| 2 | 512 | 10.0 | 1.35x (1.11-1.56) | 100.0 | 5.00x | off | 100.0 | 1.40x | agrees |" in page
    assert "| 4 | 1024 | 10.0 | 2.06x (0.97-6.39) | 100.0 | 5.00x | agrees | 100.0 | 2.00x | agrees |" in page
    assert "| 256 | 65536 | 10.0 | 1.89x (1.88-1.95) | 100.0 | 1.90x | agrees | 100.0 | 1.20x | off |" in page
    assert "Agreement: lru 3 of 4; random 3 of 4" in page


def test_an_unsound_run_fails(tmp_path):
    ok = {k: 1.5 for k in KIBS}
    for kw in ({"rc": 1}, {"drop": 804}):
        p, page = run(tmp_path, guest(tmp_path, "lru", ok, **kw))
        assert p.returncode == 1, kw


def test_the_guest_list_is_the_one_the_page_reads():
    """share.py --sim-list: per size the chase alone and beside the rw stream, under the tags slowdowns() reads."""
    out = subprocess.run([sys.executable, str(SHARE), "--sim-list", "20"], capture_output=True, text=True, check=True)
    items = out.stdout.split()
    assert items[:2] == ["llcsim:run:chase/512/20/thp:800",
                         "llcsim:pair:chase/512/20/thp:stream/262144/0/thp/rw:801:802"]
    assert items[-1] == "llcsim:pair:chase/65536/1/thp:stream/262144/0/thp/rw:810:811"
    assert len(items) == 2 * len(KIBS)
