#!/usr/bin/env python3
"""run.sh share's page: the LLC a stream leaves a resident chase, the
simulator against this machine, without PostgreSQL.

Native (calibration/native-share.json, native/memload.py --only chase
--placement): a pointer chase over 2-16 MiB alone and beside
stream_antagonist on the other vCPU, in alternating pairs, ratio = beside /
alone per pair; a chase "+K adds" is paced by K dependent adds after each
load (llc_knee.c's ADDS, the guest's k=K), so that its lines wait as long
between two loads as a slower loop's table's do; before and after each pair the ns a cache line takes from
one vCPU to the other and back.  The host places each vCPU on a core of its
choosing: a round trip under PINGPONG_SPLIT ns both times means the two
shared an L3 for the pair ("same-L3 pairs"; the others are counted, not
compared).  Guest (one run per variant, --run VARIANT SERIAL SIM RC SECS,
VARIANT = LLC_REPL/LLC_SIZE/LLC_WAYS/LAT_LLC): the same chases over 4 alone
(`llcsim run`) and beside the guest program's 256 MiB stream that writes
each line back (`llcsim pair`, stream/262144/0/thp/rw); cycles a load.
A native ns is 200 / (native-memload.json's 256 MiB chase alone) modeled
cycles (a miss to memory is 200 cycles).  A size agrees when the simulated
alone cycles are within ALONE_LIMIT of native's and the slowdown within
LIMIT of the same-L3 median or inside the same-L3 pairs' interquartile
range.  With --profile, the variant that agrees at most sizes (alone and
slowdown together; a tie goes to the smaller sum of |log(simulated /
native)| over the slowdowns) is written into calibration/profile.env as
LLC_REPL, LLC_SIZE, LLC_WAYS and LAT_LLC (run.sh's TIMING=calibrated).
Exit 1 only when a guest run is unsound (it failed, or a chase is missing).
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze  # noqa: E402  (beside this file)
import calibrate  # noqa: E402  (beside this file)
from mccdb_bench.harness.placement import SPLIT_NS as PINGPONG_SPLIT, one_l3  # noqa: E402
from mccdb_bench.llc_knee import chase_key  # noqa: E402
from mccdb_bench.harness.report import write_page  # noqa: E402

TAG0 = 800                                 # run.sh share: alone, victim, aggressor per size
LIMIT = 0.30
ALONE_LIMIT = 0.15
LAT_MEM = 200.0


def sim_kib(key):
    return chase_key(key)[0] // 4


def sizes(nat):
    """The native chases' names ('KIB', or 'KIB:ADDS' paced), by size, then pace."""
    return sorted(nat['chase'], key=chase_key)


def lap_ms(key, ns):
    """A native chase's lap at ns a load: how long until a line is loaded again."""
    return chase_key(key)[0] * 1024 // 64 * ns / 1e6


def label(key):
    """A chase's name for the table: MiB, and its adds a load when paced."""
    kib, adds = chase_key(key)
    return f'{kib / 1024:g}' + (f' +{adds} adds' if adds else '')


def quartiles(xs):
    """(q1, median, q3); a single value is all three."""
    if len(xs) < 2:
        return (xs[0],) * 3
    q1, q2, q3 = statistics.quantiles(xs, n=4, method='inclusive')
    return q1, q2, q3


def native_row(n):
    """One size's native pairs: alone median ns, same-L3 ratios, pairs across L3s."""
    pp = n.get('pingpong') or [[0.0, 0.0]] * len(n['alone'])
    same = [b / a for a, b, w in zip(n['alone'], n['beside'], pp) if one_l3(w)]
    return {'alone': statistics.median(n['alone']), 'same': same, 'q': quartiles(same) if same else None,
            'across': len(n['alone']) - len(same), 'pairs': len(n['alone'])}


def slowdowns(d, kibs):
    """native chase -> (alone cycles a load, beside, beside / alone) of a guest run."""
    out = {}
    for i, kib in enumerate(kibs):
        alone, beside = analyze.per_unit(d, TAG0 + 3 * i), analyze.per_unit(d, TAG0 + 3 * i + 1)
        out[kib] = (alone, beside, beside / alone if alone and beside else None)
    return out


def sim_list(passes, kibs):
    """run.sh share's guest list: per size the chase alone (TAG0 + 3i) and
    beside the stream (victim TAG0 + 3i + 1, aggressor + 2)."""
    out = []
    for i, key in enumerate(kibs):
        adds = chase_key(key)[1]
        tag, chase = TAG0 + 3 * i, f'chase/{sim_kib(key)}/{passes}/thp' + (f'/k={adds}' if adds else '')
        out += [f'llcsim:run:{chase}:{tag}', f'llcsim:pair:{chase}:stream/262144/0/thp/rw:{tag + 1}:{tag + 2}']
    return ' '.join(out)


def agrees(alone, ratio, nrow, cycle_ns):
    """(alone agrees, slowdown agrees) of one simulated size."""
    a_ok = alone is not None and abs(alone * cycle_ns / nrow['alone'] - 1) <= ALONE_LIMIT
    q = nrow['q']
    r_ok = ratio is not None and q is not None and (abs(ratio / q[1] - 1) <= LIMIT or q[0] <= ratio <= q[2])
    return a_ok, r_ok


def best_variant(runs, rows, cycle_ns):
    """The variant that agrees at most sizes, ties to the smaller log error."""
    def score(run):
        v, _, _, _, sl = run
        oks = [agrees(sl[k][0], sl[k][2], rows[k], cycle_ns) for k in rows]
        err = sum(abs(math.log(sl[k][2] / rows[k]['q'][1])) for k in rows if sl[k][2] and rows[k]['q'])
        return (-sum(a + b for a, b in oks), err)
    return min(runs, key=score)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sim-list', type=int, metavar='PASSES', help='print the guest list (chase passes) and exit')
    ap.add_argument('--native', required=True, help='calibration/native-share.json')
    ap.add_argument('--memload', help='calibration/native-memload.json (the ns a modeled cycle is)')
    ap.add_argument('--run', nargs=5, action='append', metavar=('VARIANT', 'SERIAL', 'SIM', 'RC', 'SECS'))
    ap.add_argument('--out')
    ap.add_argument('--profile', help='calibration/profile.env: the best variant written into it')
    ap.add_argument('--cmd', default='benchmarks/llcsim/run.sh share')
    a = ap.parse_args(argv)
    with open(a.native) as f:
        nat = json.load(f)
    kibs = sizes(nat)
    if a.sim_list:
        print(sim_list(a.sim_list, kibs))
        return 0
    if not (a.memload and a.run and a.out):
        ap.error('--memload, --run and --out are required (or --sim-list)')
    with open(a.memload) as f:
        cycle_ns = json.load(f)['chase']['262144']['alone_s']['median'] / LAT_MEM
    runs = []
    for variant, serial, sim, rc, secs in a.run:
        d = analyze.load(serial, sim)
        runs.append((variant, d, int(rc), secs, slowdowns(d, kibs)))
    sound = all(rc == 0 and all(s[2] for s in sl.values()) for _, _, rc, _, sl in runs)
    c = runs[0][1]['config']
    rows = {kib: native_row(nat['chase'][kib]) for kib in kibs}
    across = sum(r['across'] for r in rows.values())
    L = ['# llcsim: the LLC a stream leaves a resident chase (the cache model alone, against native)', '',
         'Generated by `benchmarks/llcsim/scripts/share.py` (`run.sh share`). ' + __doc__.split('\n\n')[1]
         .replace('\n', ' '), '',
         '## Machine and configuration', '',
         f'- Native: {nat.get("machine", "?")}, {nat.get("date", "?")}, `{nat.get("command", "?")}`; '
         f'{across} of {sum(r["pairs"] for r in rows.values())} pairs had a round trip of '
         f'{PINGPONG_SPLIT:.0f} ns or more (vCPUs in different L3s) and are left out of the ratios.',
         f'- {nat.get("guard", "").lstrip("- ")}',
         f'- A native ns is {1 / cycle_ns:.3f} modeled cycles (native-memload.json: the 256 MiB chase alone '
         f'{cycle_ns * LAT_MEM:.1f} ns = {LAT_MEM:.0f} cycles).',
         f'- Guest: L2 {int(c.get("l2", "0/0").split("/")[0]) >> 10} KiB, the calibrated timing (cpi {c.get("cpi")}, '
         f'rob {c.get("rob")}, mshr {c.get("mshr")}, pf {c.get("pf")}, pf_fill {c.get("pf_fill", "0")}, bw_peak {c.get("bw_peak")}, dtlb '
         f'{c.get("dtlb")}, lat_l2 {c.get("lat_l2")}); LLC size, ways, replacement and lat_llc per variant; '
         'chases and the stream on THP; the stream increments a word of each line of 256 MiB (natively '
         'stream_antagonist does so over 1 GiB).',
         *[f'- Guest run `{v}` (LLC {int(d["config"].get("llc", "0/0").split("/")[0]) >> 10} KiB '
           f'{d["config"].get("llc", "0/0").split("/")[1]}-way, {d["config"].get("llc_repl")}'
           f'{", prefetch fills near " + d["config"]["llc_pf_near"] if float(d["config"].get("llc_pf_near", 0)) else ""}'
           f'{", a set aged every " + d["config"]["llc_decay"] + " fills" if int(d["config"].get("llc_decay", 0)) else ""}'
           f', lat_llc {d["config"].get("lat_llc")}): {secs} s, boot-test exit {rc}; '
           + '; '.join(ln.lstrip('- ').rstrip('.') for ln in
                       analyze.guard_lines(argparse.Namespace(serial=serial)).splitlines())
           for (v, d, rc, secs, _), (_, serial, *_rest) in zip(runs, a.run)],
         f'- Command: `{a.cmd}`', '',
         '## Alone and beside the stream', '',
         'Native: ns a load alone (median of all pairs) and in modeled cycles; the lap (lines x ns a load: the '
         'time between two loads of a line, which the stream fills the LLC during); beside / alone over the same-L3 '
         'pairs, median (interquartile range, pairs). Simulated, per variant: cycles a load alone, beside / alone, '
         f'and whether each agrees (alone within {100 * ALONE_LIMIT:.0f}%; slowdown within {100 * LIMIT:.0f}% of '
         'the same-L3 median or inside its interquartile range).', '']
    hdr = ('| native MiB | simulated KiB | native alone ns (cycles) | native lap alone, ms |'
           ' native beside / alone, same L3 |')
    hdr += ''.join(f' `{v}` alone | `{v}` beside / alone |' for v, *_ in runs)
    L += [hdr, '|' + ' --- |' * (5 + 2 * len(runs))]
    agree = {v: [0, 0] for v, *_ in runs}
    for kib in kibs:
        n = rows[kib]
        q = n['q']
        row = (f'| {label(kib)} | {sim_kib(kib)} | {n["alone"]:.1f} ({n["alone"] / cycle_ns:.1f}) | '
               f'{lap_ms(kib, n["alone"]):.2f} | '
               + (f'{q[1]:.2f}x ({q[0]:.2f}-{q[2]:.2f}, {len(n["same"])}) |' if q else 'no same-L3 pair |'))
        for v, _, _, _, sl in runs:
            alone, _, ratio = sl[kib]
            a_ok, r_ok = agrees(alone, ratio, n, cycle_ns)
            agree[v][0] += a_ok
            agree[v][1] += r_ok
            row += (f' {alone:.1f} {"ok" if a_ok else "off"} | {ratio:.2f}x {"ok" if r_ok else "off"} |'
                    if ratio else ' - | missing |')
        L.append(row)
    L += ['', 'Agreement (alone, slowdown): ' + '; '.join(f'`{v}` {k[0]} and {k[1]} of {len(kibs)}'
                                                           for v, k in agree.items()) +
          ('' if sound else ' (**a guest run is unsound**)'), '']
    if sound:
        best = best_variant(runs, rows, cycle_ns)
        L += [f'Best variant (most sizes agreeing, then the smallest log error of the slowdowns): `{best}`'
              + (' (written into calibration/profile.env).' if a.profile else '.'), '']
        if a.profile:
            repl, llc, ways, lat = best.split('/')
            calibrate.set_profile(a.profile, {'LLC_REPL': repl, 'LLC_SIZE': llc, 'LLC_WAYS': ways, 'LAT_LLC': lat},
                                  comment=f'# LLC_REPL..LAT_LLC: `{a.cmd}` (share.py, the best of its variants) on '
                                          f'the native chases of {nat.get("date", "?")} (calibration/native-share.json)')
    write_page(a.out, '\n'.join(L) + '\n')
    print('\n'.join(L))
    return 0 if sound else 1


if __name__ == '__main__':
    sys.exit(main())
