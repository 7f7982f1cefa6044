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
main timing, or the fit is off by more than --tolerance)."""
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


def main():
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
    write_page(args.out, '\n'.join(L) + '\n')
    ok = all(ok for ok, _ in checks)
    if best and args.profile and runs_ok:     # the best fit, even one off by more than the tolerance
        now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
        with open(args.profile, 'w') as f:
            f.write(f'# llcsim TIMING=calibrated: fitted by `{args.cmd}` on {now}\n'
                    f'# (docs/results/llcsim-calibration.md; worst error {100 * best["worst"]:.1f}% against\n'
                    f'# calibration/native-mlp.json).  run.sh takes each value unless the variable is set.\n'
                    f'CPI={best["cpi"]:g}\nROB={best["rob"]}\nMSHR={best["mshr"]}\nPF={best["pf"]}\n'
                    f'PF_XLAT={best["pf_xlat"]}\nLAT_SEQ=200\n')
    for ok_, what in checks:
        print(f'{"ok" if ok_ else "not ok"} - {what}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
