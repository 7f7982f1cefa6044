#!/usr/bin/env python3
"""The extension's C files call one another one way: no circle (issue 48).

Reads the built objects (nm): file A calls file B when A's object refers
to a symbol B's object defines.  Every strongly connected group of more than
one file is a circle, printed with the calls that tie it; the exit status
is 1 when there is one.  Run after the extension is built:

    pg_extension/test/check_layers.py pg_extension
"""
import pathlib
import subprocess
import sys


def symbols(obj, *flags):
    out = subprocess.run(["nm", "--format=posix", *flags, str(obj)],
                         check=True, capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def calls(directory):
    """{file: {callee file: [symbols]}} over the objects of directory's C files."""
    objs = sorted(o for o in directory.glob("*.o") if (directory / (o.stem + ".c")).exists())
    if not objs:
        sys.exit(f"{directory}: no objects of its C files: build the extension first")
    owner = {}
    for o in objs:
        for s in symbols(o, "--defined-only", "--extern-only"):
            owner[s] = o.stem + ".c"
    graph = {}
    for o in objs:
        me = o.stem + ".c"
        for s in symbols(o, "--undefined-only"):
            callee = owner.get(s)
            if callee and callee != me:
                graph.setdefault(me, {}).setdefault(callee, []).append(s)
    return graph


def circles(graph):
    """Strongly connected groups of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    nodes = set(graph) | {w for ws in graph.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def main():
    directory = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    graph = calls(directory)
    found = circles(graph)
    for group in found:
        print(f"circle of {len(group)} files: {', '.join(group)}")
        for a in group:
            for b, syms in sorted(graph.get(a, {}).items()):
                if b in group:
                    print(f"  {a} -> {b}: {', '.join(sorted(syms)[:4])}")
    if not found:
        print(f"no circle among the {len({*graph, *(w for ws in graph.values() for w in ws)})} "
              "C files that call one another")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
