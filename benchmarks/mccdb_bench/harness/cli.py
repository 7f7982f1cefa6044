"""The command line every benchmark command shares.

One parent parser: the database is chosen with --db (default: the libpq
environment, PGDATABASE), every report goes to --outdir (default
docs/results) as NAME.md and NAME*.png, --quiet silences the progress lines,
and --no-guard skips the quiet-machine guard (tests only: a page written
without it says so in its header).
"""
import argparse
import sys

from . import quiet


def database_option():
    """--db alone: the loaders' share of the common options."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--db", default=None, help="database (default: PGDATABASE)")
    return p


def conninfo(dsn, db):
    """A libpq connection string: dsn, with dbname=db when --db was given."""
    if not db:
        return dsn
    from psycopg.conninfo import make_conninfo
    return make_conninfo(dsn, dbname=db)


def common_options():
    p = argparse.ArgumentParser(add_help=False, parents=[database_option()])
    g = p.add_argument_group("common options")
    g.add_argument("--outdir", default=None, help="where the .md and .png go (default docs/results)")
    g.add_argument("--quiet", action="store_true", help="no progress lines")
    g.add_argument("--no-guard", action="store_true",
                   help="skip the quiet-machine guard (tests; never for results)")
    return p


def parser(doc):
    """An experiment's parser: the first line of doc as description, the rest as epilog."""
    return argparse.ArgumentParser(description=doc.splitlines()[0], epilog=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   parents=[common_options()])


def say_fn(quiet_flag):
    def say(msg):
        if not quiet_flag:
            print(msg, flush=True)
    return say


def start_guard(args, say, own_load=None):
    """The experiment's guard, started (waits for a quiet machine), or an
    Unguarded stand-in under --no-guard."""
    g = quiet.Unguarded() if args.no_guard else quiet.Guard(say, own_load=own_load)
    g.start()
    return g


def run(main, argv=None, replot=None):
    """An experiment's __main__: run main(argv), which returns its
    report.Result (or a tuple led by it), print the page and write it.
    `--replot PAGE` instead calls replot(PAGE), which redraws the page's
    figure from its own tables without measuring (experiments that have one)."""
    args = sys.argv[1:] if argv is None else argv
    if replot is not None and len(args) == 2 and args[0] == "--replot":
        print(f"wrote {replot(args[1])}")
        return 0
    out = main(argv)
    res = out[0] if isinstance(out, tuple) else out
    print(res.text())
    print(f"wrote {res.write()}")
    return 0
