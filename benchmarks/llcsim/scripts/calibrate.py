#!/usr/bin/env python3
"""Fit llcsim's timing to this machine (run.sh calibrate).

Input: one or more guest runs of the four mlp loops (tags 400-403: a random
pointer chase, independent random loads, a stream, hash-join probes), each
with one prefetch distance and a grid of timings (the plugin's grid_cpi x
grid_rob x grid_mshr, every point fed with the same accesses), and the
committed native ratios (calibration/native-mlp.json: how many times cheaper
a load of each loop is than a chase load).  Picks the point (prefetch
distance, CPI, ROB, MSHR) with the smallest worst relative error over the
three ratios (ties: the smallest sum of errors), writes the page
(docs/results/llcsim-calibration.md) and, when the runs are sound, the
profile run.sh uses with TIMING=calibrated (calibration/profile.env).  Exit status 1 when a check
fails (a guest run failed, a loop is missing, the grid disagrees with the
main timing, or the fit is off by more than --tolerance).

`calibrate.py bandwidth --memload calibration/native-memload.json --profile
calibration/profile.env [--page docs/results/llcsim-calibration.md]` fits the
memory-bandwidth term (BW_PEAK, BW_UMAX) on the native contention runs alone
and writes it into the profile and the page's section on it.

`calibrate.py tlb --native calibration/native-tlb.json --run SERIAL SIM RC SECS
[--run ...] [--print-fit | --profile calibration/profile.env --page
docs/results/llcsim-calibration.md]` fits the data TLBs' STLB hit and walk
cost (LAT_STLB, LAT_WALK) on native pointer chases on 4 KiB pages against
transparent huge pages (native/tlbload.py), from a guest run of the same
loops at LAT_STLB = LAT_WALK = 0 (the first --run), and checks the fit on a
guest run at the fitted values (the last).

`calibrate.py window --native calibration/native-window.json --run SERIAL SIM
RC SECS --page docs/results/llcsim-calibration.md` compares a guest run of
native/gaploop.py's loops (independent random loads K dependent adds apart,
every ROB of the grid evaluated beside the main timing) with their native
ratios to a chase, and writes the page's section on the window, with the
verdict (PASS when the main timing is within --tolerance at every K); exit 1
when the guest run is unsound (it failed, or a loop is missing), as
pg-validate, so that make bench goes on past a FAIL.

`calibrate.py dyn --native calibration/native-pgscan.json --run SERIAL SIM RC
SECS --profile calibration/profile.env --page docs/results/llcsim-calibration.md`
fits CPI_DYN, the base CPI of dynamically linked user code (PostgreSQL), on
a cached scan and aggregate against a chase (native/pgscan.py; the guest's
pg/pgscan with a grid of CPIs): the CPI at which the simulated scan / chase
is the native one, interpolated between grid points; writes it into the
profile and the page's section; exit 1 when the guest run is unsound or the
native ratio lies outside the grid."""
import argparse
import datetime
import json
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze  # noqa: E402  (beside this file)
from mccdb_bench.harness.report import write_page  # noqa: E402


def grid_points(config):
    """[(k, cpi, rob, mshr)] of the plugin's config line (gK=cpi:rob:mshr)."""
    out = []
    k = 0
    while f'g{k}' in config:
        cpi, rob, mshr = config[f'g{k}'].split(':')
        out.append((k, float(cpi), int(rob), int(mshr)))
        k += 1
    return out


def evaluate(run, native):
    """Every grid point of one guest run: its cycles per unit of each loop
    and its errors against the native ratios."""
    d = analyze.load(run.serial, run.sim)
    c = d['config']
    loops = {kind: analyze.metrics(d, tag) for tag, kind in analyze.MLP_LOOPS}
    loops = {k: m for k, m in loops.items() if m and m['units']}
    points = []
    for k, cpi, rob, mshr in grid_points(c):
        if len(loops) < 4:
            break
        per_unit = {kind: d['dumps'][tag][f'g{k}_u_cycles'] / loops[kind]['units']
                    for tag, kind in analyze.MLP_LOOPS}
        errs = analyze.calibration_errors(per_unit, native)
        points.append({'pf': int(c.get('pf', 0)), 'pf_xlat': int(c.get('pf_xlat', 0)), 'cpi': cpi, 'rob': rob,
                       'mshr': mshr, 'per_unit': per_unit, 'errs': errs,
                       'worst': max(abs(e[2]) for e in errs.values()),
                       'sum': sum(abs(e[2]) for e in errs.values())})
    return d, loops, points


BW_SECTION = '## Memory-bandwidth contention (the bandwidth term)'
BW_KEYS = ('BW_PEAK', 'BW_UMAX', 'PF_FILL')


def fit_bandwidth(ml, lat_mem=200.0):
    """The bandwidth term's two parameters from the native contention runs
    (calibration/native-memload.json, benchmarks/llcsim/native/memload.py).

    A modeled cycle is the native 256 MiB chase's load over lat_mem (the
    model charges lat_mem for it).  fill: the modeled cycles a line of the
    stream alone takes, the fastest a core fills lines from memory (PF_FILL:
    the prefetcher's fills are paced at it).  The chase beside the stream pays r times
    its alone latency: lat / (1 - u) says the stream's lines keep the memory
    u = 1 - 1/r busy, so the peak is the stream's lines per modeled cycle
    (alone: the chase takes little) over u.  umax: what two streams side by
    side move together over the peak (the memory saturated), at least the
    one stream's u, at most 0.95.  r <= 1: no contention seen, the term off."""
    ch = ml['chase']['262144']
    st = ml['stream']
    lat0, r = ch['alone_s']['median'], ch['ratio']['median']
    cycle_ns = lat0 / lat_mem
    one = st['alone_s']['median'] * cycle_ns           # lines per modeled cycle, one stream
    two = 2 * st['beside_s']['median'] * cycle_ns      # both, side by side
    out = {'cycle_ns': cycle_ns, 'ratio': r, 'lat0_ns': lat0, 'stream_lines_per_cycle': one,
           'two_streams_lines_per_cycle': two}
    if r <= 1:
        out.update(u_stream=0.0, peak=0.0, umax=0.0, fill=1 / one)
        return out
    u = 1 - 1 / r
    peak = one / u
    out.update(u_stream=u, peak=1000 * peak, umax=min(0.95, max(u, two / peak)), fill=1 / one)
    return out


def bandwidth_lines(ml, fit):
    """The calibration page's section on the bandwidth term."""
    def cell(x, f='{:.4g}'):
        s = x['median'] if isinstance(x, dict) else x
        return f.format(s) + (f' ({f.format(x["min"])}-{f.format(x["max"])})' if isinstance(x, dict) else '')
    L = [BW_SECTION, '',
         'The timing above charges a miss to memory lat_mem (200 cycles) whatever the other vCPU does. '
         'Natively a stream on the other vCPU slows a DRAM-bound chase (below), so with the term on '
         '(`bw_peak=`, plugin/bandwidth.h) a miss to memory costs lat_mem / (1 - min(u, umax)), u = the '
         'lines both vCPUs moved through the memory interface (demand LLC misses and prefetch fills that '
         'missed the LLC, in a window of 16 slots of a sync quantum, 10,000 modeled cycles, shared by the '
         'vCPUs; until 2026-11-26 slots of 1,000 cycles, which saw 5 of 16 slots of a vCPU lagging by '
         'the quantum) over a peak. '
         'Written-back dirty lines are not counted (the cache model keeps no dirty bits): the peak is in '
         'lines filled, fitted on a stream that writes back every line it reads. Two parameters, fitted '
         'on the native contention runs only (`calibrate.py bandwidth`; nothing of the PostgreSQL curve), '
         'and beside them the rate at which one core takes lines from memory (`PF_FILL`, since '
         '2026-11-26 22:10: the stream alone):', '',
         f'- Native: {ml["machine"]}; {ml["date"]}, {ml["pairs"]} alternating pairs each (alone, beside), '
         f'{ml["guard"].lstrip("- ")}',
         f'- Command: `{ml["command"]}`; raw runs in `benchmarks/llcsim/calibration/native-memload.json`.', '',
         '| loop | alone, median (min-max) | beside the co-runner | beside / alone per pair |',
         '| --- | --- | --- | --- |']
    for kib, x in sorted(ml['chase'].items(), key=lambda kv: int(kv[0])):
        L.append(f'| chase {int(kib) // 1024} MiB, ns per load, beside stream_antagonist | {cell(x["alone_s"])} | '
                 f'{cell(x["beside_s"])} | {cell(x["ratio"], "{:.2f}")}x |')
    L.append(f'| stream, lines per ns, beside stream_antagonist | {cell(ml["stream"]["alone_s"])} | '
             f'{cell(ml["stream"]["beside_s"])} | {cell(ml["stream"]["ratio"], "{:.2f}")}x |')
    for k, what in (('smt_alu', 'dependent ALU loop, ns per iteration, beside the same'),
                    ('smt_l2chase', 'chase 256 KiB (L2), ns per load, beside the same')):
        if k in ml:
            x = ml[k]
            L.append(f'| {what} | {cell(x["alone_s"])} | {cell(x["beside_s"])} | {cell(x["ratio"], "{:.2f}")}x |')
    L += ['', '| parameter | fitted | from |', '| --- | --- | --- |',
          f'| `BW_PEAK` | {fit["peak"]:.1f} lines per 1000 cycles | the stream\'s {fit["stream_lines_per_cycle"]:.3f} '
          f'lines per modeled cycle (1 cycle = the 256 MiB chase\'s {fit["lat0_ns"]:.1f} ns / 200) over '
          f'u = 1 - 1/{fit["ratio"]:.2f} = {fit["u_stream"]:.3f} (the chase beside it) |',
          f'| `BW_UMAX` | {fit["umax"]:.3f} | two streams together move {fit["two_streams_lines_per_cycle"]:.3f} lines '
          f'per cycle: over the peak, at least the one stream\'s u, at most 0.95 |',
          f'| `PF_FILL` | {fit["fill"]:.2f} cycles a line | the stream alone, {fit["stream_lines_per_cycle"]:.3f} lines per '
          f'modeled cycle: a vCPU\'s prefetch fills from memory arrive at most that fast (plugin/access.h; '
          f'without it the guest\'s stream, bound only by its instructions, moved 0.412 lines a cycle) |', '',
          'Written to `benchmarks/llcsim/calibration/profile.env` (`TIMING=calibrated`); `TIMING=legacy` and '
          'an unset `BW_PEAK` leave the term off. The fit reproduces the 256 MiB chase beside the stream by '
          'construction; the smaller chases beside it are what the LLC sharing must explain, not this term.', '']
    return L


def set_profile(path, values, comment=None):
    """Set KEY=value lines of profile.env (added at the end when missing),
    and the comment line that starts as `comment` does up to its colon."""
    with open(path) as f:
        lines = f.read().splitlines()
    if comment:
        head = comment.split(':')[0]
        lines = [ln for ln in lines if not ln.startswith(head)]
        at = next((i for i, ln in enumerate(lines) if ln.startswith(tuple(values))), len(lines))
        lines.insert(at, comment)
    for k, v in values.items():
        new = f'{k}={v}'
        i = next((i for i, ln in enumerate(lines) if ln.startswith(k + '=')), None)
        if i is None:
            lines.append(new)
        else:
            lines[i] = new
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def section(text, title):
    """The section `title` of a page (up to the next section or comment), '' if none."""
    start = text.find(title)
    if start < 0:
        return ''
    end = min([i for i in (text.find('\n## ', start + 1), text.find('\n<!-- ', start + 1)) if i >= 0]
              or [len(text)])
    return text[start:end + 1]


def replace_section(text, lines, title=BW_SECTION):
    """The page with its section `title` replaced by `lines` (or put
    before the hand-written analysis, or at the end)."""
    block = '\n'.join(lines).rstrip('\n') + '\n\n'
    start = text.find(title)
    if start >= 0:
        end = min([i for i in (text.find('\n## ', start + 1), text.find('\n<!-- ', start + 1)) if i >= 0]
                  or [len(text)])
        return text[:start] + block + text[end + 1:]
    at = text.find('<!-- analysis')
    at = len(text) if at < 0 else at
    return text[:at] + block + text[at:]


def bandwidth_main(argv):
    ap = argparse.ArgumentParser(prog='calibrate.py bandwidth',
                                 description='fit the bandwidth term on the native contention runs')
    ap.add_argument('--memload', required=True, help='calibration/native-memload.json')
    ap.add_argument('--profile', required=True, help='calibration/profile.env (BW_PEAK, BW_UMAX set)')
    ap.add_argument('--page', help='docs/results/llcsim-calibration.md: its bandwidth section replaced')
    a = ap.parse_args(argv)
    with open(a.memload) as f:
        ml = json.load(f)
    fit = fit_bandwidth(ml)
    set_profile(a.profile, {'BW_PEAK': f'{fit["peak"]:.1f}', 'BW_UMAX': f'{fit["umax"]:.3f}',
                            'PF_FILL': f'{fit["fill"]:.2f}'},
                f'# BW_PEAK, BW_UMAX, PF_FILL: `run.sh calibrate-bw` (calibrate.py bandwidth) on the native contention runs '
                f'of {ml["date"]} (calibration/native-memload.json)')
    if a.page:
        with open(a.page) as f:
            text = f.read()
        with open(a.page, 'w') as f:
            f.write(replace_section(text, bandwidth_lines(ml, fit)))
    print(f'bandwidth: BW_PEAK={fit["peak"]:.1f} BW_UMAX={fit["umax"]:.3f} PF_FILL={fit["fill"]:.2f} (u of one stream {fit["u_stream"]:.3f}, '
          f'chase beside it {fit["ratio"]:.2f}x)')
    return 0


TLB_SECTION = '## Data TLBs (the page walk)'
TLB_KEYS = ('DTLB', 'DTLB_WAYS', 'STLB', 'STLB_WAYS', 'LAT_STLB', 'LAT_WALK')


def tlb_loops(d, nt):
    """Per native loop: the simulated THP and 4 KiB runs' user-mode cycles,
    STLB hits and walks per unit (None when a run is missing)."""
    out = {}
    for lp in nt['loops']:
        pair = {}
        for i, pg in enumerate(('thp', '4k')):
            x, run = d['dumps'].get(lp['tag'] + i), d['runs'].get(lp['tag'] + i, {})
            units = int(run.get('units', 0) or 0)
            if not x or not units:
                pair = None
                break
            pair[pg] = {'cycles': x['u_cycles'] / units, 'stlb': x.get('u_stlb', 0) / units,
                        'walk': x.get('u_walk', 0) / units, 'walkm': x.get('u_walkm', 0) / units,
                        'walkh': x.get('u_walkh', 0) / units, 'units': units}
        out[lp['name']] = pair
    return out


def tlb_predict(pair, s, w):
    """4 KiB / THP cycles of a chase at LAT_STLB s, LAT_WALK w, from a run at
    0, 0: a chase's loads wait for each other, so each STLB hit adds s and
    each walk s + w to its time."""
    c = {pg: pair[pg]['cycles'] + pair[pg]['stlb'] * s + pair[pg]['walk'] * (s + w) for pg in pair}
    return c['4k'] / c['thp']


def fit_tlb(sim0, nt):
    """(LAT_STLB, LAT_WALK, worst error) over the chases, on a grid of half
    cycles (STLB hit 0-40) and cycles (walk 0-400)."""
    chases = [(lp['ratio']['median'], sim0[lp['name']]) for lp in nt['loops']
              if lp['name'].startswith('chase') and sim0.get(lp['name'])]
    best = None
    for s2 in range(0, 81):
        for w in range(0, 401):
            worst = max(abs(tlb_predict(p, s2 / 2, w) / r - 1) for r, p in chases)
            if best is None or worst < best[2] - 1e-12:
                best = (s2 / 2, float(w), worst)
    return best


def tlb_main(argv):
    ap = argparse.ArgumentParser(prog='calibrate.py tlb', description='fit the data TLBs\' walk')
    ap.add_argument('--native', required=True, help='calibration/native-tlb.json')
    ap.add_argument('--run', nargs=4, action='append', required=True, metavar=('SERIAL', 'SIM', 'RC', 'SECS'),
                    help='guest runs of the loops: the first at LAT_STLB = LAT_WALK = 0, the last the check')
    ap.add_argument('--print-fit', action='store_true', help='print "LAT_STLB LAT_WALK" and stop')
    ap.add_argument('--profile')
    ap.add_argument('--page')
    ap.add_argument('--tolerance', type=float, default=0.15)
    ap.add_argument('--cmd', default='benchmarks/llcsim/run.sh calibrate-tlb')
    a = ap.parse_args(argv)
    with open(a.native) as f:
        nt = json.load(f)
    runs = []
    for serial, sim, rc, secs in a.run:
        d = analyze.load(serial, sim)
        runs.append((SimpleNamespace(serial=serial, sim=sim, boot_rc=int(rc), secs=secs, smp='2', mem='1024',
                                     cmd=a.cmd), d, tlb_loops(d, nt)))
    c0 = runs[0][1]['config']
    fit = fit_tlb(runs[0][2], nt)
    if a.print_fit:
        print(f'{fit[0]:g} {fit[1]:g}')
        return 0 if float(c0.get('lat_stlb', -1)) == 0 and float(c0.get('lat_walk', -1)) == 0 else 1
    checks = []

    def check(ok, what):
        checks.append((bool(ok), what))

    for run, d, loops in runs:
        c = d['config']
        name = os.path.basename(run.serial)
        check(run.boot_rc == 0, f'{name}: guest run passed boot-test (exit {run.boot_rc})')
        got = sum(1 for p in loops.values() if p)
        check(got == len(nt['loops']), f'{name}: {got} of {len(nt["loops"])} loops measured on both page sizes')
        check(c.get('dtlb', '0').split('/')[0] != '0', f'{name}: the TLB model on (dtlb={c.get("dtlb")}, '
              f'stlb={c.get("stlb")}, lat_stlb={c.get("lat_stlb")}, lat_walk={c.get("lat_walk")})')
        for lname, p in loops.items():
            if p:       # L1 DTLB misses (STLB hits and walks) per unit
                m = {pg: p[pg]['stlb'] + p[pg]['walk'] for pg in p}
                check(m['thp'] <= 0.01 * m['4k'] and m['4k'] > 0.3,
                      f'{name}: {lname}: the guest gave the THP run huge pages ({m["thp"]:.4f} L1 DTLB misses per '
                      f'unit, on 4 KiB pages {m["4k"]:.3f})')
    c0ok = float(c0.get('lat_stlb', -1)) == 0 and float(c0.get('lat_walk', -1)) == 0
    check(c0ok, 'the first run at lat_stlb = lat_walk = 0 (the fit\'s base)')
    last, dl = runs[-1][2], runs[-1][1]['config']
    at_fit = abs(float(dl.get('lat_stlb', -1)) - fit[0]) < 1e-6 and abs(float(dl.get('lat_walk', -1)) - fit[1]) < 1e-6
    check(len(runs) > 1 and at_fit, f'the check run at the fit (lat_stlb {dl.get("lat_stlb")}, lat_walk '
          f'{dl.get("lat_walk")})')
    rows = []
    for lp in nt['loops']:
        p0, pl = runs[0][2].get(lp['name']), last.get(lp['name'])
        if not p0 or not pl:
            continue
        sim_r = pl['4k']['cycles'] / pl['thp']['cycles']
        pred = tlb_predict(p0, fit[0], fit[1])
        err = sim_r / lp['ratio']['median'] - 1
        rows.append((lp, pl, sim_r, pred, err))
        check(abs(err) <= a.tolerance, f'{lp["name"]}: 4 KiB / THP simulated {sim_r:.3f}x against native '
              f'{lp["ratio"]["median"]:.3f}x ({100 * err:+.1f}%, limit {100 * a.tolerance:.0f}%)'
              + ('' if lp['name'].startswith('chase') else ', not fitted'))
        if lp['name'].startswith('chase'):
            check(abs(sim_r / pred - 1) < 0.01, f'{lp["name"]}: the check run gives what the fit predicted '
                  f'({sim_r:.4f}x, predicted {pred:.4f}x)')

    def cell(x, f='{:.4g}'):
        return f.format(x['median']) + f' ({f.format(x["min"])}-{f.format(x["max"])})'
    run0, d0 = runs[-1][0], runs[-1][1]
    L = [TLB_SECTION, '',
         'The timing above translates for free. With the TLB model on (`dtlb=`, plugin/tlb.h; run.sh '
         '`DTLB`..`LAT_WALK`) every access looks up an L1 DTLB, then an L2 DTLB (STLB), per vCPU, 4 KiB and '
         '2 MiB pages (the plugin cannot read the guest\'s page tables: an access whose virtual and physical '
         'addresses agree in their low 21 bits is taken to be on a 2 MiB page); an STLB hit adds `LAT_STLB` '
         'cycles to the access, a miss walks: `LAT_STLB` + `LAT_WALK` + the load of the leaf entry (PTE, '
         'or PMD entry of a 2 MiB page) at a synthetic physical address derived from the virtual one, '
         'through the L2, the LLC and memory (the bandwidth term included), so that walks compete for the '
         'caches; the upper levels are taken to hit the page-walk cache. The translation\'s time joins '
         'the access\'s latency in the overlap model (the load issues when its translation is done). '
         'Geometry: this machine\'s AMD EPYC (family 0x19 model 0x11, Zen 4; CPUID 0x80000005/6: L1 DTLB 72 '
         'entries fully associative, L2 DTLB 3072 entries) over 4, as the caches are (native LLC share 8 MB, '
         'L2 1 MiB; simulated 2 MiB, 256 KiB): '
         f'L1 DTLB {c0.get("dtlb", "?").replace("/0", " entries, fully associative").replace("/", " entries, ")}, '
         f'STLB {c0.get("stlb", "?").replace("/", " entries, ")} ways. The two latencies are fitted on '
         'native loops that differ only in their pages (nothing of the PostgreSQL curve): `llcsim time '
         'SPEC/thp` against `SPEC/4k` (native/tlbload.py), a pointer chase of 512 KiB (in the L2) and 4 MiB '
         '(in the L3), within the STLB and beyond the L1 DTLB (pin `LAT_STLB`), of 32 and 128 MiB (beyond '
         'the STLB: most loads walk, pin `LAT_WALK`), and random loads of 128 MiB (walks that overlap: a '
         'check, not fitted); simulated at a quarter of the size. A chase is additive in the model, so one guest run '
         'at 0, 0 gives its cycles at any latencies (calibrate.py tlb); a second run at the fit checks it.', '',
         f'- Native: {nt["machine"]}, THP `{nt["thp"]}`; {nt["date"]}, {nt["pairs"]} alternating pairs '
         f'(THP, 4 KiB) per loop, {nt["guard"].lstrip("- ")}',
         f'- Command: `{nt["command"]}`; raw runs in `benchmarks/llcsim/calibration/native-tlb.json`.',
         f'- Simulated: `{a.cmd}`: guest runs ' + ', '.join(
             f'`{os.path.basename(r.serial)}` ({r.secs} s, exit {r.boot_rc}, lat_stlb '
             f'{d["config"].get("lat_stlb")}, lat_walk {d["config"].get("lat_walk")})' for r, d, _ in runs)
         + '; timing otherwise the calibrated profile (' + ', '.join(
             f'{k} {d0["config"].get(k.lower(), "?")}' for k in ('CPI', 'ROB', 'MSHR', 'PF', 'BW_PEAK')) + ').',
         '', '| loop (native; simulated) | THP ns per unit | 4 KiB ns per unit | native 4 KiB / THP, median '
         '(min-max) | simulated at the fit | error | simulated walks per unit (4 KiB; leaf from memory) |',
         '| --- | --- | --- | --- | --- | --- | --- |']
    for lp, pl, sim_r, pred, err in rows:
        L.append(f'| {lp["name"]} (`{lp["spec"]}`; `{lp["sim_spec"]}`) | {cell(lp["thp_s"])} | {cell(lp["4k_s"])} | '
                 f'{cell(lp["ratio"], "{:.3f}")}x | {sim_r:.3f}x | {100 * err:+.1f}% | {pl["4k"]["walk"]:.3f}; '
                 f'{pl["4k"]["walkm"]:.3f} |')
    L += ['', '| parameter | fitted | meaning |', '| --- | --- | --- |',
          f'| `LAT_STLB` | {fit[0]:g} | cycles an L1 DTLB miss that hits the STLB adds to an access |',
          f'| `LAT_WALK` | {fit[1]:g} | cycles of a walk beyond its STLB lookup and its leaf load |', '',
          f'Worst error of the fitted chases: {100 * fit[2]:.1f}%. Written to '
          '`benchmarks/llcsim/calibration/profile.env` (`TIMING=calibrated`); `TIMING=legacy` and `DTLB=0` '
          'leave the TLBs out (translation free, as before).', '']
    L += [f'- {"PASS" if ok else "FAIL"}: {what}' for ok, what in checks]
    L.append('')
    ok = all(ok for ok, _ in checks)
    if a.profile:
        set_profile(a.profile, {'DTLB': c0.get('dtlb', '0').split('/')[0], 'DTLB_WAYS': c0.get('dtlb', '0/0').split('/')[1],
                                'STLB': c0.get('stlb', '0').split('/')[0], 'STLB_WAYS': c0.get('stlb', '0/0').split('/')[1],
                                'LAT_STLB': f'{fit[0]:g}', 'LAT_WALK': f'{fit[1]:g}'},
                    f'# DTLB..LAT_WALK: `run.sh calibrate-tlb` (calibrate.py tlb) on the native 4 KiB / THP runs of '
                    f'{nt["date"]} (calibration/native-tlb.json); the geometry is the machine\'s over 4')
    if a.page:
        with open(a.page) as f:
            text = f.read()
        with open(a.page, 'w') as f:
            f.write(replace_section(text, L, TLB_SECTION))
    for ok_, what in checks:
        print(f'{"ok" if ok_ else "not ok"} - {what}')
    print(f'tlb: LAT_STLB={fit[0]:g} LAT_WALK={fit[1]:g} (worst chase error {100 * fit[2]:.1f}%)')
    return 0 if ok else 1


def native_and_run(argv, name, description, native_file, *extra):
    """The command line of a check of one guest run against a native JSON
    (--native, --run, --page, --cmd and `extra` (flag, kwargs)): the
    arguments, the native JSON, the guest run (analyze.load)."""
    ap = argparse.ArgumentParser(prog=f'calibrate.py {name}', description=description)
    ap.add_argument('--native', required=True, help=f'calibration/{native_file}')
    ap.add_argument('--run', nargs=4, required=True, metavar=('SERIAL', 'SIM', 'RC', 'SECS'))
    ap.add_argument('--page', required=True)
    ap.add_argument('--cmd', default=f'benchmarks/llcsim/run.sh {name}')
    for flag, kw in extra:
        ap.add_argument(flag, **kw)
    a = ap.parse_args(argv)
    with open(a.native) as f:
        native = json.load(f)
    return a, native, analyze.load(a.run[0], a.run[1])


def guards(native, serial):
    """The page's lines on the quiet-machine guard of the native runs and
    of the guest run."""
    return ['- Native: ' + native.get('guard', '?').lstrip('- '), '- Guest run: ' +
            '; '.join(ln.lstrip('- ').rstrip('.') for ln in analyze.guard_lines(SimpleNamespace(serial=serial)).splitlines())]


WIN_SECTION = '## The window (independent misses K instructions apart)'


def window_main(argv):
    a, nw, d = native_and_run(argv, 'window', 'the window against native gap loops', 'native-window.json',
                              ('--tolerance', {'type': float, 'default': 0.15}))
    serial, _, rc, secs = a.run
    c = d['config']
    pts = grid_points(c)
    ks, ct, gt = nw['ks'], nw['sim']['chase_tag'], nw['sim']['gap_tag']

    def per_unit(tag, field):
        return analyze.per_unit(d, tag, field)

    main = {k: per_unit(gt + i, 'u_cycles') for i, k in enumerate(ks)}
    chase = per_unit(ct, 'u_cycles')
    grid = [(p, per_unit(ct, f'g{p[0]}_u_cycles'),
             {k: per_unit(gt + i, f'g{p[0]}_u_cycles') for i, k in enumerate(ks)}) for p in pts]
    ok = int(rc) == 0 and chase and all(main.values())
    L = [WIN_SECTION, '',
         f'How much of a miss the instructions after it hide: independent random loads with K serially '
         f'dependent adds after each (`native/gaploop.py`, the guest program\'s `gap/KIB/LOADS/k=K`), as '
         f'cheaper than a chase load natively ({nw["specs"]["chase"]}, {nw["rounds"]} rounds behind the guard, '
         f'{nw["date"]}) and simulated ({nw["sim"]["kib"] >> 10} MiB, {nw["sim"]["loads"]} loads; guest run '
         f'{secs} s, boot-test exit {rc}, `{a.cmd}`). The mlp loops (at most ~20 instructions a miss) never '
         f'fill the window; here one iteration does from K of about the window on.', '',
         f'Main timing: cpi {c.get("cpi")}, rob {c.get("rob")}, mshr {c.get("mshr")}; the other columns are '
         f'the grid\'s windows on the same accesses (errors: simulated / native - 1).', '']
    hdr = '| K | native ns a load (min-max) | native chase / loop | simulated (main) | error |'
    cols = [(p, ch, g) for p, ch, g in grid if ch and all(g.values())]
    hdr += ''.join(f' rob {p[2]} (cpi {p[1]:g}, mshr {p[3]}) |' for p, _, _ in cols)
    L += [hdr, '|' + ' --- |' * (5 + len(cols))]
    worst = 0.0
    for i, k in enumerate(ks):
        n, r = nw['ns_per_load'][f'k{k}'], nw['ratio'][f'k{k}']
        s_r = chase / main[k] if ok else float('nan')
        err = s_r / r['median'] - 1
        worst = max(worst, abs(err)) if ok else worst
        row = (f'| {k} | {n["median"]:.1f} ({n["min"]:.1f}-{n["max"]:.1f}) | {r["median"]:.2f}x | {s_r:.2f}x | '
               f'{100 * err:+.1f}% |')
        row += ''.join(f' {100 * (ch / g[k] / r["median"] - 1):+.1f}% |' for _, ch, g in cols)
        L.append(row)
    L += ['', *guards(nw, serial), '', f'Native chase: {nw["ns_per_load"]["chase"]["median"]:.1f} ns a load; simulated '
          f'{chase or float("nan"):.1f} cycles. Worst error of the main timing: {100 * worst:.1f}% '
          f'(limit {100 * a.tolerance:.0f}%: {"PASS" if ok and worst <= a.tolerance else "FAIL"}).', '']
    with open(a.page) as f:
        text = f.read()
    with open(a.page, 'w') as f:
        f.write(replace_section(text, L, WIN_SECTION))
    print('\n'.join(L))
    return 0 if ok else 1


DYN_SECTION = "## PostgreSQL's base CPI (cpi_dyn)"
DYN_KEYS = ('CPI_DYN',)


def dyn_fit(cpis, ratios, target):
    """The CPI at which the simulated ratio (increasing with the CPI) is
    `target`, linear between the grid's points; None outside them."""
    pts = sorted(zip(cpis, ratios))
    for (c0, r0), (c1, r1) in zip(pts, pts[1:]):
        if r0 <= target <= r1 and r1 > r0:
            return c0 + (c1 - c0) * (target - r0) / (r1 - r0)
    return None


def dyn_main(argv):
    a, nat, d = native_and_run(argv, 'cpi-dyn', "PostgreSQL's base CPI against a native scan", 'native-pgscan.json',
                               ('--profile', {'required': True}))
    serial, _, rc, secs = a.run
    c, sm = d['config'], nat['sim']
    pts = grid_points(c)
    rows = sm['rows']
    scans = [d['dumps'].get(sm['scan_tag'] + i) for i in range(sm['reps'])]
    run = d['runs'].get(sm['chase_tag'], {})
    chase_x, units = d['dumps'].get(sm['chase_tag']), int(run.get('units', 0) or 0)
    ok = int(rc) == 0 and all(scans) and chase_x and units and pts
    target = nat['ratio']['median']
    L = [DYN_SECTION, '',
         "The base CPI of PostgreSQL's code (the plugin's `cpi_dyn`: user code of dynamically linked programs; "
         "the guest's static loop programs keep `cpi`). A base CPI is a property of the code: the gap loop's "
         "dependent adds run one instruction a cycle natively, which is what CPI fits. Fitted here on a cached "
         f"sequential scan and aggregate, not on the validation's hash join: `{nat['query']}` natively "
         f"({nat['rows']:,} rows, CPU ns a row of the backend pinned to CPU 0, {nat['rounds']} rounds behind the "
         f"guard, {nat['date']}) against a pointer chase ({nat['chase_spec']}), and in the guest over "
         f"{rows:,} rows ({sm['reps']} repetitions) against a chase over {sm['chase_kib'] >> 10} MiB on THP "
         f"(guest run {secs} s, boot-test exit {rc}, `{a.cmd}`). Every grid point runs every instruction at "
         "its CPI; the fit is the CPI at which the simulated scan / chase is the native one.", '']
    fit = None
    if ok:
        chase = chase_x['u_cycles'] / units
        insns = sorted(x['u_insns'] / rows for x in scans)[len(scans) // 2]
        dyn = sorted(x.get('u_dyn', 0) / max(x['u_insns'], 1) for x in scans)[len(scans) // 2]
        per = [(p[1], sorted(x[f'g{p[0]}_u_cycles'] / rows for x in scans)[len(scans) // 2]) for p in pts]
        fit = dyn_fit([cp for cp, _ in per], [cy / chase for _, cy in per], target)
        L += [f'Native: {nat["scan_ns_per_row"]["median"]:.2f} ns a row (min {nat["scan_ns_per_row"]["min"]:.2f}, '
              f'max {nat["scan_ns_per_row"]["max"]:.2f}), chase {nat["chase_ns"]["median"]:.1f} ns a load: '
              f'scan / chase {target:.4f} (min {nat["ratio"]["min"]:.4f}, max {nat["ratio"]["max"]:.4f}).', '',
              f'Simulated: {insns:,.0f} user instructions a row ({100 * dyn:.1f}% of them dynamically linked '
              f'code), chase {chase:.1f} cycles a load (main timing, cpi {c.get("cpi")}).', '',
              '| CPI | cycles a row | scan / chase | against native |', '| --- | --- | --- | --- |']
        L += [f'| {cp:g} | {cy:.1f} | {cy / chase:.4f} | {100 * (cy / chase / target - 1):+.1f}% |' for cp, cy in per]
        L += ['', f'Fit: CPI_DYN {fit:.3f}' if fit is not None else
              '**No fit: the native ratio lies outside the grid (widen CAL_CPI_DYN).**', '']
    else:
        L += ['**The guest run is unsound (a failed boot, a missing scan or chase dump, or no grid).**', '']
    L += [*guards(nat, serial), '']
    if fit is not None:
        set_profile(a.profile, {'CPI_DYN': f'{fit:.3f}'},
                    comment=f'# CPI_DYN: `{a.cmd}` (calibrate.py dyn) on the native scan of {nat["date"]} '
                            '(calibration/native-pgscan.json)')
    with open(a.page) as f:
        text = f.read()
    with open(a.page, 'w') as f:
        f.write(replace_section(text, L, DYN_SECTION))
    print('\n'.join(L))
    return 0 if ok and fit is not None else 1


# calibrate.py's own profile lines (the others' stay when it rewrites the profile)
OWN_KEYS = ('CPI', 'ROB', 'MSHR', 'PF', 'PF_XLAT', 'LAT_SEQ')
OWN_HEADER = ('# llcsim TIMING=calibrated:', '# (docs/results/llcsim-calibration.md;', '# calibration/native-mlp.json)')


def main():
    if sys.argv[1:2] == ['dyn']:
        return dyn_main(sys.argv[2:])
    if sys.argv[1:2] == ['window']:
        return window_main(sys.argv[2:])
    if sys.argv[1:2] == ['bandwidth']:
        return bandwidth_main(sys.argv[2:])
    if sys.argv[1:2] == ['tlb']:
        return tlb_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--run', nargs=4, action='append', required=True, metavar=('SERIAL', 'SIM', 'RC', 'SECS'),
                    help='a guest run: serial log, plugin log, boot-test exit, wall seconds')
    ap.add_argument('--native', required=True, help='calibration/native-mlp.json')
    ap.add_argument('--profile', help='write the fitted timing here (run.sh TIMING=calibrated)')
    ap.add_argument('--out', required=True)
    ap.add_argument('--llc-kib', type=int, default=2048)
    ap.add_argument('--tolerance', type=float, default=0.15)
    ap.add_argument('--cmd', default='benchmarks/llcsim/run.sh calibrate')
    args = ap.parse_args()
    with open(args.native) as f:
        native = json.load(f)

    checks = []

    def check(ok, what):
        checks.append((bool(ok), what))

    runs, points = [], []
    for serial, sim, rc, secs in args.run:
        run = SimpleNamespace(serial=serial, sim=sim, boot_rc=int(rc), secs=secs, smp='2', mem='1024',
                              cmd=args.cmd)
        d, loops, pts = evaluate(run, native)
        c = d['config']
        pf = c.get('pf', '?')
        check(run.boot_rc == 0, f'pf={pf}: guest run passed boot-test (exit {run.boot_rc})')
        check(len(loops) == 4, f'pf={pf}: {len(loops)} of 4 loops measured')
        check(pts, f'pf={pf}: {len(pts)} grid timings evaluated')
        # the main timing is a grid point: both must count the same cycles
        main_pt = next((p for p in pts if (p['cpi'], p['rob'], p['mshr']) ==
                        (float(c.get('cpi', 0)), int(c.get('rob', 0)), int(c.get('mshr', 0)))), None)
        if main_pt and len(loops) == 4:
            dev = max(abs(main_pt['per_unit'][k] * loops[k]['units'] / loops[k]['cycles'] - 1) for k in loops)
            # the grid's timings start each region without the misses in flight (< mshr x lat_mem)
            check(dev < 1e-3, f'pf={pf}: the grid point of the main timing (cpi {c.get("cpi")}, rob {c.get("rob")}, '
                  f'mshr {c.get("mshr")}) counts the cycles the main timing counts (largest deviation {dev:.1e})')
        else:
            check(False, f'pf={pf}: the main timing is a point of the grid')
        if len(loops) == 4:
            st, ch = loops['stream'], loops['chase']
            cov = 1 - st['l2m'] / max(st['l1m'], 1)
            check(int(c.get('pf', 0)) == 0 or cov >= 0.95,
                  f'pf={pf}: the prefetcher covers the stream ({cov:.3f} of its L1 misses hit the L2)')
            check(ch['pf'] <= 0.01 * ch['l1m'] and loops['rand']['pf'] <= 0.01 * loops['rand']['l1m'],
                  f'pf={pf}: it does not cover the chase or the random loads ({ch["pf"]} and '
                  f'{loops["rand"]["pf"]} lines prefetched for {ch["l1m"]} and {loops["rand"]["l1m"]} L1 misses)')
        runs.append((run, d, loops, pts))
        points += pts
    runs_ok = all(ok for ok, _ in checks)
    best = min(points, key=lambda p: (p['worst'], p['sum'])) if points else None
    if best:
        check(best['worst'] <= args.tolerance,
              f'fit: every loop within {100 * args.tolerance:.0f}% of native at the best point (worst '
              f'{100 * best["worst"]:.1f}%)')

    # the page
    run0, d0 = runs[0][0], runs[0][1]
    run0.cmd = args.cmd
    L = ['# llcsim: the timing model fitted to this machine (calibration)', '',
         'Generated by `benchmarks/llcsim/scripts/calibrate.py` (`run.sh calibrate`). The simulator turns '
         'counted accesses into modeled cycles; this page fits the few free parameters of that timing to '
         'this machine: the cycles an instruction costs when it does not miss the L1 (`cpi`), the '
         'instruction window within which misses overlap (`rob`), the misses that can be outstanding at '
         'once (`mshr`) and the distance of the stride prefetcher (`pf`, lines). The latencies stay '
         'physical (L2 12, LLC 40, memory 200 cycles). Targets: how many times cheaper a load of each '
         'loop is than a dependent pointer-chase load, natively (the committed ratios of '
         '[llcsim-mlp](llcsim-mlp.md), `benchmarks/llcsim/calibration/native-mlp.json`). One guest run '
         'per prefetch distance runs the four loops (over 32x the LLC, 1M loads each); the plugin feeds '
         'the same accesses to every timing of the grid at once (`grid_cpi`, `grid_rob`, `grid_mshr`: '
         'the caches do not depend on time), so the whole grid costs one run. The best point is the one '
         'with the smallest worst error.', '',
         analyze.machine(run0, d0)]
    for run, d, _, _ in runs[1:]:
        L.append(f'- Also: guest run `{os.path.basename(run.serial)}` (pf={d["config"].get("pf")}), '
                 f'{run.secs} s wall, boot-test exit {run.boot_rc}; its guard: '
                 + analyze.guard_lines(run).replace('\n', ' ').lstrip('- '))
    L += [
          f'- Grid per run: cpi {sorted({p["cpi"] for p in points})}, rob {sorted({p["rob"] for p in points})}, '
          f'mshr {sorted({p["mshr"] for p in points})}; prefetch distances {sorted({p["pf"] for p in points})} '
          f'(a run each); {len(points)} timings in all.', '',
          '## Native targets', '',
          f'- {native["machine"]}; {native["date"]}, {native["rounds"]} rounds; {native["guard"]}.',
          f'- Command: `{native["command"]}`',
          f'- Source: {native["source"]}.', '',
          '| loop | native ns per load, median (min-max) | chase / loop, median (min-max) |',
          '| --- | --- | --- |']
    for kind in ('chase', 'rand', 'stream', 'hash'):
        n = native['ns_per_load'][kind]
        r = native['ratio'].get(kind)
        L.append(f'| {kind} (`{native["specs"][kind]}`) | {n["median"]:.2f} ({n["min"]:.2f}-{n["max"]:.2f}) | '
                 + (f'{r["median"]:.2f}x ({r["min"]:.2f}-{r["max"]:.2f}) |' if r else '1.00x |'))
    L += ['', '## Checks', '']
    L += [f'- {"PASS" if ok else "FAIL"}: {what}' for ok, what in checks]
    if best:
        L += ['', '## The fit', '',
              '| parameter | fitted | meaning |', '| --- | --- | --- |',
              f'| `CPI` | {best["cpi"]:g} | cycles per instruction that does not miss the L1 |',
              f'| `ROB` | {best["rob"]} | instructions within which misses overlap |',
              f'| `MSHR` | {best["mshr"]} | misses outstanding at once |',
              f'| `PF` | {best["pf"]} | prefetch distance, lines (stride prefetcher, L2 and LLC) |',
              f'| `PF_XLAT` | {best["pf_xlat"]} | 2^N pages the prefetcher knows the frames of |',
              '| `LAT_SEQ` | 200 | the next-line discount off (= lat_mem): the prefetcher covers streams |',
              '', f'Written to `benchmarks/llcsim/calibration/profile.env`; `run.sh` takes it with '
              f'`TIMING=calibrated` (the default of `run.sh mlp`).', '',
              '| loop | native (median, min-max) | simulated at the fit | error | within 15% |',
              '| --- | --- | --- | --- | --- |']
        for kind, (s_r, n_r, err) in best['errs'].items():
            r = native['ratio'][kind]
            L.append(f'| {kind} | {n_r:.2f}x ({r["min"]:.2f}-{r["max"]:.2f}) | {s_r:.2f}x | {100 * err:+.1f}% | '
                     f'{"PASS" if abs(err) <= args.tolerance else "FAIL"} |')
        L += ['', f'Modeled cycles per unit at the fit: ' + ', '.join(
            f'{k} {v:.2f}' for k, v in best['per_unit'].items()) + '.', '',
            '## The grid', '', 'Every timing evaluated, best first (errors: simulated / native - 1).', '',
            '| pf | cpi | rob | mshr | rand | stream | hash | worst |', '| --- | --- | --- | --- | --- | --- | --- | --- |']
        for p in sorted(points, key=lambda p: (p['worst'], p['sum'])):
            e = p['errs']
            L.append(f'| {p["pf"]} | {p["cpi"]:g} | {p["rob"]} | {p["mshr"]} | {100 * e["rand"][2]:+.1f}% | '
                     f'{100 * e["stream"][2]:+.1f}% | {100 * e["hash"][2]:+.1f}% | {100 * p["worst"]:.1f}% |')
    memload = os.path.join(os.path.dirname(args.native), 'native-memload.json')
    if os.path.exists(memload):     # the bandwidth term's section, as calibrate.py bandwidth writes it
        with open(memload) as f:
            ml = json.load(f)
        L += [''] + bandwidth_lines(ml, fit_bandwidth(ml))
    if os.path.exists(args.out):    # calibrate.py tlb's section stays (its guest runs are not committed)
        with open(args.out) as f:
            text = f.read()
        for kept in (section(text, TLB_SECTION), section(text, WIN_SECTION)):
            if kept:    # calibrate.py tlb's and window's sections stay (their guest runs are not committed)
                L += [''] + kept.rstrip('\n').split('\n')
    write_page(args.out, '\n'.join(L) + '\n')
    ok = all(ok for ok, _ in checks)
    if best and args.profile and runs_ok:     # the best fit, even one off by more than the tolerance
        kept = []
        if os.path.exists(args.profile):      # every other fit's values (bandwidth, tlb, dyn, share) stay, in their order
            with open(args.profile) as f:
                kept = [ln for ln in f if not ln.startswith(tuple(k + '=' for k in OWN_KEYS) + OWN_HEADER)]
        now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
        with open(args.profile, 'w') as f:
            f.write(f'# llcsim TIMING=calibrated: fitted by `{args.cmd}` on {now}\n'
                    f'# (docs/results/llcsim-calibration.md; worst error {100 * best["worst"]:.1f}% against\n'
                    f'# calibration/native-mlp.json).  run.sh takes each value unless the variable is set.\n'
                    f'CPI={best["cpi"]:g}\nROB={best["rob"]}\nMSHR={best["mshr"]}\nPF={best["pf"]}\n'
                    f'PF_XLAT={best["pf_xlat"]}\nLAT_SEQ=200\n' + ''.join(kept))
    for ok_, what in checks:
        print(f'{"ok" if ok_ else "not ok"} - {what}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
