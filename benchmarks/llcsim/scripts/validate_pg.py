"""run.sh pg-validate's page: the calibrated timing against the native
study's curve, without refitting (the guest program pg/hjstream).  Called
as `analyze.py pgvalidate`.

A measured query's modeled time is the user + kernel cycles of vCPU 0 (the
server's) between its begin and end; a size's co-run slowdown is the
beside-stream time over the alone time of the same repetition (the pair),
median (min-max) over the repetitions.  Against the native median and its
95% bootstrap interval (read from the native study's page,
docs/results/native-study.md, by native_study.curve_from_page): a size
passes when the simulated median is within 30% (relative) of the native
one or inside its interval (issue 28 item 2).
"""
from analyze import guest_tap, machine, total
from mccdb_bench.harness.report import write_page
from mccdb_bench.harness.stats import summarize
from mccdb_bench.native_study import curve_from_page, rows_for

LIMIT = 0.30
STREAM_TAG = 2000       # pg/hjstream: vCPU 1 beside the query counts under its tag + this


def stream_rate(d, tag):
    """Lines a modeled cycle that vCPU 1 (the stream, hjstream, psql) took
    from memory (prefetch fills and demand misses) while the query of `tag`
    ran beside it; None without its dump."""
    t = int(tag) + STREAM_TAG
    lines, cyc = total(d, t, 'pfm'), total(d, t, 'cycles')
    return (lines + total(d, t, 'llcm')) / cyc if lines is not None and cyc else None


def pairs(d, field='cycles'):
    """rows -> rep -> {'alone': count, 'stream': count} of a dump field (user
    + kernel; default the modeled cycles); phases without a dump counted."""
    out, missing = {}, 0
    for r in d.get('pg', []):
        if 'phase' not in r:
            continue
        x = d['dumps'].get(int(r['tag']))
        if x is None or f'u_{field}' not in x:
            missing += 1
            continue
        out.setdefault(int(r['rows']), {}).setdefault(int(r['rep']), {})[r['phase']] = total(d, r['tag'], field)
    return out, missing


def decomposition(d, rows):
    """Table lines: per size, the LLC misses alone and beside the stream and
    the cycles the bandwidth term added beside it (the dumps' bwlat: extra
    latency of the misses to memory, before their overlap), medians over the
    repetitions; [] when the dumps have no bwlat (the term was off)."""
    cyc, _ = pairs(d)
    llcm, _ = pairs(d, 'llcm')
    bw, missing = pairs(d, 'bwlat')
    if missing or not bw:
        return []
    L = ['', '## Where the co-run time goes', '',
         'Medians over the repetitions. LLC misses: the server vCPU\'s (user + kernel) in the measured query. '
         'Contention latency: what the bandwidth term added to its misses to memory beside the stream, as a '
         'share of the co-run query\'s cycles (an upper bound of its cost: overlapped misses hide part of it). '
         'The stream\'s lines: what vCPU 1 (the stream, with this script and psql) took from memory a modeled '
         'cycle while the query ran (prefetch fills and demand misses; the native stream alone 0.323, '
         'calibration/native-memload.json; - when the run did not count it).', '',
         '| native table MB | LLC misses alone | LLC misses beside the stream | beside / alone | '
         'contention latency beside, share of the co-run cycles | the same alone | '
         'the stream\'s lines from memory a cycle |',
         '| --- | --- | --- | --- | --- | --- | --- |']
    rate = {}
    for r in d.get('pg', []):
        x = stream_rate(d, r['tag']) if r.get('phase') == 'stream' else None
        if x is not None:
            rate.setdefault(int(r['rows']), []).append(x)

    def med(xs):
        return summarize(xs).median if xs else float('nan')
    for r, mb in sorted(rows.items()):
        reps = [rep for rep, p in llcm.get(r, {}).items() if 'alone' in p and 'stream' in p]
        if not reps:
            continue
        la, ls = med([llcm[r][k]['alone'] for k in reps]), med([llcm[r][k]['stream'] for k in reps])
        share = {ph: med([bw[r][k][ph] / cyc[r][k][ph] for k in reps if ph in bw[r].get(k, {})])
                 for ph in ('stream', 'alone')}
        L.append(f'| {mb:g} | {la:.4g} | {ls:.4g} | {ls / la:.2f}x | {100 * share["stream"]:.1f}% | '
                 f'{100 * share["alone"]:.1f}% | ' + (f'{med(rate[r]):.3f} |' if r in rate else '- |'))
    return L + translation(d, rows)


def translation(d, rows):
    """Table lines: per size, the page walks of the server's vCPU alone and
    beside the stream, per LLC miss, and the translation latency (the dumps'
    xlat: STLB hits and walks, before their overlap) as a share of the
    query's cycles; [] when the TLB model was off."""
    cyc, _ = pairs(d)
    llcm, _ = pairs(d, 'llcm')
    walk, missing = pairs(d, 'walk')
    xlat, _ = pairs(d, 'xlat')
    if missing or not walk or not any(p.get('alone') for reps in walk.values() for p in reps.values()):
        return []
    L = ['', 'Translation (the TLB model): page walks of the server\'s vCPU (user + kernel) and the latency '
         'the STLB hits and walks added to its accesses, as a share of the query\'s cycles (an upper bound '
         'of their cost: overlapped, part of it is hidden).', '',
         '| native table MB | walks alone | walks per LLC miss alone | walks beside the stream | '
         'translation latency alone, share of the cycles | the same beside |',
         '| --- | --- | --- | --- | --- | --- |']

    def med(xs):
        return summarize(xs).median if xs else float('nan')
    for r, mb in sorted(rows.items()):
        reps = [rep for rep, p in walk.get(r, {}).items() if 'alone' in p and 'stream' in p]
        if not reps:
            continue
        wa, ws = med([walk[r][k]['alone'] for k in reps]), med([walk[r][k]['stream'] for k in reps])
        per = med([walk[r][k]['alone'] / llcm[r][k]['alone'] for k in reps if llcm[r][k]['alone']])
        share = {ph: med([xlat[r][k][ph] / cyc[r][k][ph] for k in reps]) for ph in ('alone', 'stream')}
        L.append(f'| {mb:g} | {wa:.4g} | {per:.2f} | {ws:.4g} | {100 * share["alone"]:.1f}% | '
                 f'{100 * share["stream"]:.1f}% |')
    return L


def verdict(sim, nat):
    """(error, passes) of a simulated median slowdown against a native
    {'median', 'lo', 'hi'}."""
    err = sim / nat['median'] - 1
    return err, abs(err) <= LIMIT or nat['lo'] <= sim <= nat['hi']


def pgvalidate(args, d):
    native = curve_from_page(args.native_study)
    by_mb = {s['mb']: s for s in native['sizes']}
    sizes = [float(x) for x in args.sizes.split(',')]
    scale = float(args.scale)
    rows = {rows_for(int(mb * 1048576 / scale)): mb for mb in sizes}
    got, missing = pairs(d)
    oks, nots = guest_tap(d)
    checks = [(args.boot_rc == 0, f'guest run passed boot-test (exit {args.boot_rc})'),
              (nots == 0 and oks > 0, f'guest program: {oks} ok, {nots} not ok (tables, plan, counts)'),
              (missing == 0, f'every measured query has its counters ({missing} without)'),
              (set(got) == set(rows), f'{len(got)} of {len(rows)} sizes measured'),
              (all(len(p) == 2 for reps in got.values() for p in reps.values()),
               'every repetition has its alone and its beside-stream query')]
    L = ['# llcsim: the calibrated timing on the native study\'s curve (validation)', '',
         'Generated by `benchmarks/llcsim/scripts/analyze.py pgvalidate` (`run.sh pg-validate`). The '
         'native study\'s target ([native-study](native-study.md)): PostgreSQL\'s single-batch hash join '
         'of probe_P against build_R, alone and beside a C stream on the other vCPU (`stream_antagonist`, '
         'reading and writing every line of its buffer), in pairs (alone, then beside the stream), run in '
         'the simulated guest with the calibrated timing ([llcsim-calibration](llcsim-calibration.md)), '
         'nothing refitted. Table sizes and the LLC are the native ones over '
         f'{scale:g} (native effective LLC share {native["effective_llc_mb"]:g} MB). A size passes when the '
         f'simulated median slowdown is within {100 * LIMIT:.0f}% (relative) of the native median or inside '
         'its 95% interval.', '',
         machine(args, d),
         '## Checks', '']
    L += [f'- {"PASS" if ok else "FAIL"}: {what}' for ok, what in checks]
    L += ['', '## Simulated against native', '',
          f'Native: {native["date"]}, {native["rounds"]} pairs a size, `{native["command"]}` '
          f'({native["machine"]}); '
          + ('the pairs whose co-run had both vCPUs in one L3 (the simulated LLC is one, shared; their count '
             'per size in the native column), a size with too few of them over all pairs ("all")'
             if native['placement'] == 'one L3' else 'over all pairs (placement not measured: some co-ran '
             'in two L3s, docs/machine.md)')
          + '. Simulated: modeled cycles (user + kernel) of the server\'s vCPU, '
          'the co-run over the alone query of the same repetition.', '',
          '| native table MB | simulated table MB | build rows | alone cycles (median) | simulated slowdown, '
          'median (min-max) | native slowdown, median (95% interval) | error | verdict |',
          '| --- | --- | --- | --- | --- | --- | --- | --- |']
    passed = 0
    for r, mb in sorted(rows.items()):
        reps = got.get(r, {})
        ratios = [p['stream'] / p['alone'] for p in reps.values() if 'alone' in p and 'stream' in p]
        nat = by_mb.get(mb, {}).get('stream')
        if not ratios or not nat:
            L.append(f'| {mb:g} | {mb / scale:g} | {r} | - | - | - | - | not measured |')
            continue
        s = summarize(ratios)
        alone = summarize([p['alone'] for p in reps.values() if 'alone' in p])
        err, ok = verdict(s.median, nat)
        passed += ok
        npairs = by_mb[mb].get('pairs')
        which = '' if native['placement'] != 'one L3' else f', {npairs} pairs' if npairs else ', all'
        L.append(f'| {mb:g} | {mb / scale:g} | {r} | {alone.median:.4g} | {s.fmt(2, "x")} | '
                 f'{nat["median"]:.2f}x ({nat["lo"]:.2f}-{nat["hi"]:.2f}{which}) | {100 * err:+.0f}% | '
                 f'{"PASS" if ok else "FAIL"} |')
    L += ['', f'Validation: {passed} of {len(rows)} sizes pass.']
    L += decomposition(d, rows)
    write_page(args.out, '\n'.join(L) + '\n')
    for ok, what in checks:
        print(f'{"ok" if ok else "not ok"} - {what}')
    print(f'# validation: {passed} of {len(rows)} sizes within {100 * LIMIT:.0f}% of native or inside its interval')
    return 0 if all(ok for ok, _ in checks) else 1
