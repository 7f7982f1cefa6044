"""run.sh pg-compare's page: placement, page colouring and way partitioning
(resctrl) on the same PostgreSQL workload, four vCPUs as two LLC domains
(the guest program pg/compare).  Called as `analyze.py pgcompare`.

A phase's per-vCPU counters give each pinned query's modeled time (user +
kernel cycles of its vCPU between the phase's begin and end); a query's
slowdown is that over its alone time of the same repetition; a batch is
the phase's longest vCPU.  Linux's default placement is not one
arrangement: four queries on four vCPUs put the two hash joins in one
domain in 1 of 3 arrangements, and a streaming scan beside the hash join's
vCPU in 1 of 3; its rows are those expectations of the measured
arrangements, within each repetition.
"""
import os

from analyze import colours_check, guest_tap, machine, plt_mod, total
from mccdb_bench.harness.report import write_page
from mccdb_bench.harness.stats import summarize

MIX = ('mix-together', 'mix-apart')
SCAN = ('scan-same', 'scan-other')


def phases(d):
    """rep -> policy -> {'cpu': {query: cycles}, 'llcm': {query: misses},
    'batch': cycles}; and the count of phases without counters."""
    out, missing = {}, 0
    for r in d.get('pg', []):
        if 'policy' not in r:
            continue
        cyc = {c: total(d, r[f'tag{c}'], 'cycles') for c in range(4)}
        if any(v is None for v in cyc.values()):
            missing += 1
            continue
        rep, pol = int(r['rep']), r['policy']
        if pol == 'alone':      # one query per phase, on vCPU 0
            q = r['cpu0']
            a = out.setdefault(rep, {}).setdefault('alone', {'cpu': {}, 'llcm': {}, 'batch': 0})
            a['cpu'][q] = cyc[0]
            a['llcm'][q] = total(d, r['tag0'], 'llcm')
            continue
        p = out.setdefault(rep, {}).setdefault(pol, {'cpu': {}, 'llcm': {}, 'batch': 0})
        used = [c for c in range(4) if r[f'cpu{c}'] != '-'] or list(range(4))
        p['batch'] = max(cyc[c] for c in used)
        for c in used:
            if r[f'cpu{c}'] != '-':
                p['cpu'][r[f'cpu{c}']] = cyc[c]
                p['llcm'][r[f'cpu{c}']] = total(d, r[f'tag{c}'], 'llcm')
    return out, missing


def mix_metrics(run, alone, hashes, indexes):
    """(hash-join slowdown, index-join slowdown, batch / longest alone) of a
    four-query phase, or None."""
    try:
        h = sum(run['cpu'][q] / alone['cpu'][q] for q in hashes) / len(hashes)
        i = sum(run['cpu'][q] / alone['cpu'][q] for q in indexes) / len(indexes)
        b = run['batch'] / max(alone['cpu'][q] for q in hashes + indexes)
    except (KeyError, ZeroDivisionError, TypeError):
        return None
    return h, i, b


def scan_metrics(run, alone, hj):
    """(hash-join slowdown, scan slowdown) of a hash join beside the scan."""
    try:
        return run['cpu'][hj] / alone['cpu'][hj], run['cpu']['scan'] / alone['cpu']['scan']
    except (KeyError, ZeroDivisionError, TypeError):
        return None


def expect(a, b, pa):
    """The expectation of metric tuples a (probability pa) and b."""
    if a is None or b is None:
        return None
    return tuple(pa * x + (1 - pa) * y for x, y in zip(a, b))


def pgcompare(args, d):
    runs, missing = phases(d)
    reps = sorted(r for r in runs if 'alone' in runs[r])
    queries = sorted({q for r in reps for q in runs[r]['alone']['cpu']})
    hashes = [q for q in queries if q.startswith('hash-')]
    indexes = [q for q in queries if q.startswith('index-')]
    # the hash join of the scan phases (the guest's first hash PLQ)
    hj = next((q for r in reps for pol, run in runs[r].items() if pol.endswith(SCAN)
               for q in run['cpu'] if q != 'scan'), None)

    def mix(rep, mech, arrangement):
        return mix_metrics(runs[rep].get(f'{mech}-{arrangement}', {}), runs[rep]['alone'], hashes, indexes)

    def scan(rep, mech, arrangement):
        # without partitioning, a mechanism's scan in the other domain is the stock run
        pol = f'{mech}-{arrangement}' if f'{mech}-{arrangement}' in runs[rep] else f'stock-{arrangement}'
        return scan_metrics(runs[rep].get(pol, {}), runs[rep]['alone'], hj)

    # (row label, per-repetition metrics function)
    mix_rows = [
        ('Linux default placement (expected: hash joins together in 1 of 3)',
         lambda r: expect(mix(r, 'stock', 'mix-together'), mix(r, 'stock', 'mix-apart'), 1 / 3)),
        ('- hash joins in one domain (Linux\'s worst arrangement)', lambda r: mix(r, 'stock', 'mix-together')),
        ('domain placement (mccdb: a hash join in each domain)', lambda r: mix(r, 'stock', 'mix-apart')),
        ('page colouring, Linux placement (expected)',
         lambda r: expect(mix(r, 'colors', 'mix-together'), mix(r, 'colors', 'mix-apart'), 1 / 3)),
        ('way partitioning (resctrl), Linux placement (expected)',
         lambda r: expect(mix(r, 'resctrl', 'mix-together'), mix(r, 'resctrl', 'mix-apart'), 1 / 3)),
        ('placement + page colouring', lambda r: mix(r, 'colors', 'mix-apart')),
        ('placement + way partitioning', lambda r: mix(r, 'resctrl', 'mix-apart')),
    ]
    scan_rows = [
        ('Linux default placement (expected: the scan in the hash join\'s domain in 1 of 3)',
         lambda r: expect(scan(r, 'stock', 'scan-same'), scan(r, 'stock', 'scan-other'), 1 / 3)),
        ('- the scan in the hash join\'s domain', lambda r: scan(r, 'stock', 'scan-same')),
        ('domain placement (the scan in the other domain; either partitioning adds nothing)',
         lambda r: scan(r, 'stock', 'scan-other')),
        ('page colouring, Linux placement (expected)',
         lambda r: expect(scan(r, 'colors', 'scan-same'), scan(r, 'colors', 'scan-other'), 1 / 3)),
        ('- page colouring, the scan in the hash join\'s domain', lambda r: scan(r, 'colors', 'scan-same')),
        ('way partitioning (resctrl), Linux placement (expected)',
         lambda r: expect(scan(r, 'resctrl', 'scan-same'), scan(r, 'resctrl', 'scan-other'), 1 / 3)),
        ('- way partitioning, the scan in the hash join\'s domain', lambda r: scan(r, 'resctrl', 'scan-same')),
    ]

    def metric(fn, k):
        """Metric k of a row over the repetitions that have it."""
        return summarize(m[k] for m in (fn(r) for r in reps) if m)

    def cells(fn, k):
        return metric(fn, k).fmt(3)

    part = {k: next((ln.split(f'partition {k}: ', 1)[1] for ln in d['serial']
                     if f'LLCSIM-PG partition {k}:' in ln), '?') for k in ('colors', 'resctrl')}
    domains = next((ln.split('domains: ', 1)[1] for ln in d['serial'] if 'LLCSIM-PG domains:' in ln), '?')
    gate = [ln.split('LLCSIM-GATE ', 1)[1] for ln in d['serial'] if ln.startswith('LLCSIM-GATE ')]
    llc_size = next((ln.split('mccdb.llc_size: ', 1)[1].strip() for ln in d['serial']
                     if 'LLCSIM-PG mccdb.llc_size:' in ln), None)
    classes = (f'mccdb classifies with `mccdb.llc_size = {llc_size}`, the LLC of one domain. ' if llc_size else
               'mccdb classifies with the L3 size the guest\'s sysfs reports (QEMU\'s, not the plugin\'s). ')
    L = ['# Placement, page colouring and way partitioning on the same PostgreSQL workload (simulated)', '',
         'Four vCPUs as two LLC domains of two (vCPUs 0-1 and 2-3, each with its own simulated LLC; the guest '
         'boots as two sockets, so its sysfs, and mccdb\'s topology, show the same two domains). PostgreSQL 15 '
         'in the page-colouring guest, SSB SF 0.1, under the llcsim plugin. The Figure 6 mix: two hash-join '
         f'PLQs ({", ".join(hashes)}) and two index-join PLQs ({", ".join(indexes)}), all four at once, each '
         'pinned to its own vCPU; Table 2\'s case: the hash join '
         f'{hj} beside a streaming scan of lineorder. Mechanisms: none (a server without mccdb), page '
         f'colouring (mccdb, `mccdb.partition = auto`: "{part["colors"]}"), way partitioning through '
         f'resctrl (mccdb, `mccdb.partition = resctrl` on the guest agent\'s tree, whose group masks are the '
         f'plugin\'s per-vCPU way masks: "{part["resctrl"]}"), each in the arrangements Linux may choose and '
         'in the one domain placement chooses. ' + classes +
         'Caches are flushed before each phase; a query\'s time is its '
         'vCPU\'s modeled cycles (user + kernel) in the phase, its slowdown that over its time alone on '
         'vCPU 0 of the stock server in the same repetition; a batch lasts as long as its longest vCPU. '
         f'{len(reps)} repetition(s), the arrangements in an order of their own in each; median (min-max) '
         'over the repetitions.', '',
         'Simulated: every number on this page is modeled cycles of the cache simulator '
         '([llcsim-domains](llcsim-domains.md) checks its two-domain and way-mask models), not time on '
         'hardware with several LLCs or CAT, which this machine does not have.', '',
         machine(args, d), '## The Figure 6 mix', '',
         '| configuration | hash-join slowdown | index-join slowdown | batch / longest alone |',
         '|---|---|---|---|']
    for label, fn in mix_rows:
        L.append(f'| {label} | {cells(fn, 0)} | {cells(fn, 1)} | {cells(fn, 2)} |')
    L += ['', f'## {hj} beside a streaming scan', '',
          '| configuration | hash-join slowdown | scan slowdown |', '|---|---|---|']
    for label, fn in scan_rows:
        L.append(f'| {label} | {cells(fn, 0)} | {cells(fn, 1)} |')
    gb = [runs[r]['gate']['batch'] / max(runs[r]['alone']['cpu'][q] for q in hashes + indexes)
          for r in reps if 'gate' in runs[r]]
    L += ['', '## mccdb\'s gate placing the four itself', '',
          f'A server with mccdb preloaded, `mccdb.placement = on`, MLS, two slots per domain; `mccdb_llc_domains`: '
          f'{domains}. The four queries unpinned: the gate binds each backend to its domain\'s CPUs and Linux '
          'moves it between those two, so only the batch is measured: '
          f'batch / longest alone {summarize(gb).fmt(3)}. Each running backend as the guest saw it '
          '(pid, domain, locality, the domain\'s CPUs, its CPU mask in hex):', '']
    L += [f'- `{g}`' for g in gate] or ['- none recorded']
    L += ['', '## Alone', '', '| query | modeled Mcycles alone | LLC misses alone |', '|---|---|---|']
    for q in queries:
        L.append(f'| {q} | {summarize(runs[r]["alone"]["cpu"].get(q, 0) / 1e6 for r in reps).fmt(1)} | '
                 f'{summarize(runs[r]["alone"]["llcm"].get(q) for r in reps).fmt(0)} |')

    plt = plt_mod()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={'width_ratios': [3, 2]})

    def bars(ax, rows, keys, names):
        w = 0.8 / len(keys)
        for i, (k, name) in enumerate(zip(keys, names)):
            sms = [metric(fn, k) for _, fn in rows]
            ax.bar([j + i * w for j in range(len(rows))], [s.median for s in sms], w, label=name,
                   yerr=[[s.median - s.lo for s in sms], [s.hi - s.median for s in sms]], capsize=3)
        ax.set_xticks([j + 0.4 - w / 2 for j in range(len(rows))])
        ax.set_xticklabels([str(j + 1) for j in range(len(rows))])
        ax.axhline(1.0, color='grey', lw=0.5)
        ax.set_ylabel('modeled time / alone')
        ax.legend(fontsize=8, loc='upper right')
    bars(ax1, mix_rows, (0, 1, 2), ('hash joins', 'index joins', 'batch / longest alone'))
    ax1.set_xlabel('configuration (rows of the first table, in order)')
    ax1.set_title('Figure 6 mix, 4 vCPUs in 2 LLC domains')
    bars(ax2, scan_rows, (0, 1), ('hash join', 'scan'))
    ax2.set_xlabel('configuration (rows of the second table, in order)')
    ax2.set_title(f'{hj} beside a scan')
    for ax in (ax1, ax2):
        top = ax.get_ylim()[1]
        ax.set_ylim(0, top * 1.25)     # room for the legend above the bars
    fig.suptitle(f'Simulated: placement, colouring, resctrl (median, min-max of {len(reps)})')
    fig.tight_layout()
    png = args.out.replace('.md', '.png')
    fig.savefig(png, dpi=110)
    L += ['', f'![comparison]({os.path.basename(png)})', '']
    n_ok, n_bad = guest_tap(d)
    colours_ok, colours = colours_check(d)
    ok = args.boot_rc == 0 and not missing and reps and not n_bad and colours_ok
    L += [f'Guest TAP: {n_ok} ok, {n_bad} not ok (every phase ended without error; every query returned in '
          'every configuration the rows it returned alone; the gate saw two domains, put the hash joins in '
          'different ones and bound each backend to its domain\'s CPUs); phases without counters: '
          f'{missing}; {"" if colours_ok else "not: "}{colours}.', '']
    write_page(args.out, '\n'.join(L) + '\n')
    print(f'{"ok" if ok else "not ok"} - pg-compare: {len(reps)} repetition(s), {n_bad} guest failures, '
          f'boot-test exit {args.boot_rc}')
    return 0 if ok else 1
