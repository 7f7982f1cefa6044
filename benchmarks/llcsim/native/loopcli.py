"""The command line the guest program's native loop scripts share
(tlbload.py, gaploop.py): `--sim-list` prints the simulated loops'
initramfs list, otherwise the loops are timed natively behind the
quiet-machine guard into --out."""
import argparse
import time


def run(doc, binary, sim_list, argv, extra=()):
    """Parse argv ((flag, kwargs) of `extra` beside the shared options);
    with --sim-list print sim_list() and return (None, None); otherwise
    start the guard and return (args, (say, guard, load at start, start time))."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], epilog=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--binary", default=str(binary), help="the llcsim guest program (static)")
    ap.add_argument("--sim-list", action="store_true", help="print the simulated loops' initramfs list")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--no-guard", action="store_true", help="skip the quiet-machine guard (tests only)")
    for flag, kw in extra:
        ap.add_argument(flag, **kw)
    a = ap.parse_args(argv)
    if a.sim_list:
        print(sim_list())
        return None, None
    if not a.out:
        ap.error("--out is required")
    from mccdb_bench.harness import quiet
    from mccdb_bench.harness.cli import say_fn
    say = say_fn(a.quiet)
    guard = quiet.Unguarded() if a.no_guard else quiet.Guard(say, own_load=1)
    return a, (say, guard, guard.start(), time.time())
