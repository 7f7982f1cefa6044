"""run.sh pg-map's page: where each mechanism pays (issue 28 item 3), from
the guest program pg/hjmap.  Called as `analyze.py pgmap`.

A measured query's modeled time is the user + kernel cycles of vCPU 0 (the
target's) between its begin and end.  A cell (hash table size, co-runner,
mechanism) is the co-run time over the stock server's alone time of the
same size and repetition, median (min-max) over the repetitions.  What a
mechanism wins back of a co-runner's cost at a size: (S_stock - S_mech) /
(S_stock - 1), S the median slowdowns, given where the stock slowdown is
at least COSTLY (below it there is nothing to win back worth a mechanism).

MLS is a choice of co-runner, not a mechanism a pair runs under: it gives
a hash join a weak plan (a seq scan, an index join) to run beside instead
of another hash join.  Its cells are the ones beside the weak co-runner,
and what it wins back is measured against the stock cost beside the same
hash join.
"""
from analyze import colours_check, guest_tap, machine, plt_mod, total
from mccdb_bench.harness.report import md_table, write_page
from mccdb_bench.harness.stats import summarize

COSTLY = 1.15           # issue 28's regime: conflicts cost 15% or more
MECHS = ('stock', 'colors', 'resctrl', 'placement')
CORUNNERS = ('stream', 'scan', 'hj', 'ij')
WEAK = ('scan', 'ij')     # the weak plans MLS pairs a hash join with
CORUNNER_NAMES = {'stream': 'C stream', 'scan': 'seq scan', 'hj': 'hash join (same size)',
                  'ij': 'index nested loop join'}


def runs(d):
    """rows -> (mech, corunner) -> rep -> cycles; and how many measured
    queries had no counters."""
    out, missing = {}, 0
    for r in d.get('pg', []):
        if 'mech' not in r:
            continue
        c = total(d, r['tag'], 'cycles')
        if c is None:
            missing += 1
            continue
        out.setdefault(int(r['rows']), {}).setdefault((r['mech'], r['corunner']), {})[int(r['rep'])] = c
    return out, missing


def slowdowns(cells):
    """(mech, corunner) -> Summary of the co-run over stock-alone ratios, by
    repetition (a repetition without its alone run is left out)."""
    alone = cells.get(('stock', 'alone'), {})
    out = {}
    for key, reps in cells.items():
        if key[1] == 'alone':
            continue
        ratios = [c / alone[rep] for rep, c in reps.items() if rep in alone]
        if ratios:
            out[key] = summarize(ratios)
    return out


def native_cells(args, rows):
    """rows -> the native study's co-run cells ({stream, scan, hj: {median, lo,
    hi, pairs}}) of the size scale x rows builds (within 1%), from its page
    (--native-study; {} without it); and the page's curve."""
    if not args.native_study:
        return {}, None
    from mccdb_bench.native_study import curve_from_page
    curve, scale = curve_from_page(args.native_study), float(args.scale)
    out = {}
    for r in rows:
        near = [s for s in curve['sizes'] if abs(s['build_rows'] / (scale * r) - 1) < 0.01]
        if near:
            out[r] = near[0]
    return out, curve


def fmt_native(cell):
    if cell is None:
        return '-'
    pairs = f', {cell["pairs"]} pairs in one L3' if cell['pairs'] else ', all pairs'
    return f'{cell["median"]:.2f}x ({cell["lo"]:.2f}-{cell["hi"]:.2f}{pairs})'


def won_back(stock, mech):
    """The share of the stock slowdown a mechanism wins back (None where the
    stock slowdown is under COSTLY)."""
    if stock is None or mech is None or stock.median < COSTLY:
        return None
    return (stock.median - mech.median) / (stock.median - 1)


def fmt_cell(s, key):
    """A cell of the page's tables: its slowdown, '-' where it was not run."""
    return s[key].fmt(2, 'x') if key in s else '-'


def fmt_won(w):
    """A share won back, '-' where there is nothing worth winning back."""
    return f'{100 * w:.0f}%' if w is not None else '-'


def mls_table(sizes, mechs, llc_mb):
    """MLS's rows: per size and weak co-runner, each mechanism's cell beside
    it and what it wins back of the stock cost beside the same hash join;
    [] where either is missing."""
    table = []
    for mb, s in sizes:
        same = s.get(('stock', 'hj'))
        for k in WEAK:
            if same is None or ('stock', k) not in s:
                continue
            cells = [fmt_cell(s, (m, k)) for m in mechs]
            wins = [won_back(same, s.get((m, k))) for m in mechs]
            table.append([f'{mb:.2f}', f'{mb / llc_mb:.2g}', CORUNNER_NAMES[k], same.fmt(2, 'x')] + cells
                         + [fmt_won(w) for w in wins])
    return table


def heat(sizes, mechs, corunners, llc_mb, out):
    """The map as heat maps: the stock slowdown, then what each mechanism
    wins back, size by co-runner; the figure's markdown line."""
    plt = plt_mod()
    fig, axes = plt.subplots(1, len(mechs), figsize=(3.2 * len(mechs), 3.2), squeeze=False)
    for ax, mech in zip(axes[0], mechs):
        grid, text = [], []
        for mb, s in sizes:
            row, trow = [], []
            for k in corunners:
                st, m = s.get(('stock', k)), s.get((mech, k))
                if mech == 'stock':
                    v = st.median - 1 if st else float('nan')
                    trow.append(f'{st.median:.2f}x' if st else '-')
                else:
                    w = won_back(st, m)
                    v = w if w is not None else float('nan')
                    trow.append(fmt_won(w))
                row.append(v)
            grid.append(row)
            text.append(trow)
        im = ax.imshow(grid, cmap='viridis' if mech == 'stock' else 'RdYlGn', aspect='auto',
                       vmin=0 if mech == 'stock' else -0.5, vmax=None if mech == 'stock' else 1)
        for i, trow in enumerate(text):
            for j, t in enumerate(trow):
                ax.text(j, i, t, ha='center', va='center', fontsize=7, color='black')
        ax.set_xticks(range(len(corunners)), [k for k in corunners], fontsize=7)
        ax.set_yticks(range(len(sizes)), [f'{mb / llc_mb:.2g}' for mb, _ in sizes], fontsize=7)
        ax.set_ylabel('hash table / LLC', fontsize=8)
        ax.set_title('stock slowdown' if mech == 'stock' else f'{mech}: won back', fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    png = out[:-3] + '.png'
    fig.savefig(png, dpi=110)
    return f'![The map: stock slowdown and what each mechanism wins back]({png.rsplit("/", 1)[-1]})'


def pgmap(args, d):
    from mccdb_bench.native_study import hash_table_bytes
    by_rows, missing = runs(d)
    oks, nots = guest_tap(d)
    mechs = [m for m in MECHS if any(k[0] == m for c in by_rows.values() for k in c)]
    corunners = [k for k in CORUNNERS if any(c[1] == k for v in by_rows.values() for c in v)]
    llc_mb = args.llc_kib / 1024
    rows = sorted(by_rows)
    sizes = [(hash_table_bytes(r) / 1048576, slowdowns(by_rows[r])) for r in rows]
    checks = [(args.boot_rc == 0, f'guest run passed boot-test (exit {args.boot_rc})'),
              (nots == 0 and oks > 0, f'guest program: {oks} ok, {nots} not ok (tables, plans, counts)'),
              (missing == 0, f'every measured query has its counters ({missing} without)'),
              (all(('stock', 'alone') in by_rows[r] for r in by_rows), 'every size has its stock alone runs'),
              colours_check(d)]
    L = ['# llcsim: where each mechanism pays (the map)', '',
         'Generated by `benchmarks/llcsim/scripts/analyze.py pgmap` (`run.sh pg-map`), issue 28 item 3: the '
         'native study\'s target ([native-study](native-study.md), PostgreSQL\'s single-batch hash join of '
         'probe_P against build_R) in the simulated guest with the calibrated timing '
         '([llcsim-pg-validation](llcsim-pg-validation.md)), alone and beside a co-runner on another vCPU, '
         'under each mechanism: **stock** (no mccdb, the co-runner in the target\'s LLC domain), **colors** '
         '(mccdb\'s page colouring of the hash table and the co-runner by their locality), **resctrl** '
         '(mccdb\'s way masks), **placement** (the co-runner in the other LLC domain, what mccdb\'s gate does '
         'on a machine of two). A cell: the co-run time over the stock alone time of the same repetition, '
         f'median (min-max). Won back: (S_stock - S_mech) / (S_stock - 1), where the stock slowdown is '
         f'{COSTLY:.2f}x or more.', '',
         machine(args, d),
         '## Checks', '']
    L += [f'- {"PASS" if ok else "FAIL"}: {what}' for ok, what in checks]
    native, curve = native_cells(args, rows)
    ncol = ['native stock (table x {:g})'.format(float(args.scale))] if curve else []
    wcol = [f'{m} wins back' for m in mechs if m != 'stock']
    head = ['hash table MB', '/ LLC', 'co-runner'] + mechs + ncol + wcol
    table = []
    for r, (mb, s) in zip(rows, sizes):
        for k in corunners:
            cells = [fmt_cell(s, (m, k)) for m in mechs]
            if curve:
                cells.append(fmt_native(native[r]['beside'].get(k) if r in native else None))
            wins = [won_back(s.get(('stock', k)), s.get((m, k))) for m in mechs if m != 'stock']
            table.append([f'{mb:.2f}', f'{mb / llc_mb:.2g}', CORUNNER_NAMES[k]] + cells
                         + [fmt_won(w) for w in wins])
    L += ['', f'## Slowdowns (LLC {llc_mb:g} MiB a domain)', '', md_table(head, table).rstrip('\n')]
    mls = mls_table(sizes, mechs, llc_mb)
    if mls:
        names = ['MLS' if m == 'stock' else f'MLS + {m}' for m in mechs]
        L += ['', '## MLS: a weak partner instead of the same hash join', '',
              'MLS gives a hash join a weak plan to run beside, not another hash join: its cells are the ones '
              'beside the weak co-runner under each mechanism, and what it wins back is measured against the '
              'stock slowdown beside the same hash join, where that is '
              f'{COSTLY:.2f}x or more.', '',
              md_table(['hash table MB', '/ LLC', 'weak partner', 'stock beside the same hash join'] + names
                       + [f'{n} wins back' for n in names], mls).rstrip('\n')]
    if curve:
        L += ['', f'Native stock: the native study ([native-study](native-study.md), {curve["date"]}, '
              f'{curve["rounds"]} pairs a size, `{curve["command"]}`; {curve["machine"]}) at {float(args.scale):g}x '
              'the table (its LLC share is the simulated LLC times that), the co-runner there in the target\'s '
              'L3 (pairs whose vCPUs shared one; "all pairs" where too few did); no index join co-runner there. '
              'A cell: median (95% interval).']
    L += ['', heat(sizes, mechs, corunners, llc_mb, args.out)]
    write_page(args.out, '\n'.join(L) + '\n')
    for ok, what in checks:
        print(f'{"ok" if ok else "not ok"} - {what}')
    return 0 if all(ok for ok, _ in checks) else 1
