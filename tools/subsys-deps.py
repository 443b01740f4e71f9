#!/usr/bin/python3
"""subsys-deps.py - the dependencies between the subsystems of src/ and their cycles.

A subsystem is a folder src/SUB/ (src/aisd.c, the program's entry point, is
left out: it may use everything). Two graphs, each edge A -> B meaning "A
depends on B":

  include  a file of A includes a header that B owns: a local header
           (src/B/x.h, "../B/x.h") or include/aisd/x.h, whose owner is the
           subsystem that defines most of the functions it declares (a header
           of types and macros only has no owner and makes no edge);
  call     a file of A names a function defined (non-static) in B.

Comments and string literals are removed before the scan. Prints each
graph's edges between subsystems, its strongly connected components of more
than one subsystem, and its elementary cycles (each once, at most --most).
Reads only; exit status 0, except with --check: 1 when either graph has a
cyclic component other than those named by --allow (a comma-separated set
of subsystems, e.g. --allow s3,target; it must match the component
exactly, so a known cycle that grows fails too).

usage: tools/subsys-deps.py [--root DIR] [--most N] [--edges] [--check [--allow A,B]...]
"""
import argparse
import os
import re
import sys
from collections import defaultdict

FUNC_DEF = re.compile(r'^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])([a-z_]\w*)\s*\([^;{]*$|'
                      r'^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])([a-z_]\w*)\s*\([^;]*\)\s*\{', re.M)
FUNC_DECL = re.compile(r'(?:^|\n)[A-Za-z_][\w \t\*]*?[\s\*]\(?\*?([a-z_]\w*)\s*\(', re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
IDENT = re.compile(r'\b[a-z_]\w*\b')
KEYWORDS = {'if', 'for', 'while', 'switch', 'return', 'sizeof', 'do', 'else'}


def strip(text):
    """Removes comments and string and character literals (keeps #include lines)."""
    out = []
    for line in re.sub(r'/\*.*?\*/', ' ', text, flags=re.S).split('\n'):
        if re.match(r'\s*#\s*include', line):
            out.append(line)
            continue
        line = re.sub(r'//.*', '', line)
        line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
        line = re.sub(r"'(?:\\.|[^'\\])*'", "''", line)
        out.append(line)
    return '\n'.join(out)


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return strip(f.read())


def subsystems(root):
    src = os.path.join(root, 'src')
    subs = {}
    for sub in sorted(os.listdir(src)):
        d = os.path.join(src, sub)
        if os.path.isdir(d):
            subs[sub] = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(('.c', '.h'))]
    return subs


def definitions(subs):
    """Function name -> defining subsystem (non-static definitions in .c files)."""
    owner = {}
    for sub, files in subs.items():
        for f in files:
            if not f.endswith('.c'):
                continue
            for m in FUNC_DEF.finditer(read(f)):
                name = m.group(1) or m.group(2)
                if name not in KEYWORDS:
                    owner.setdefault(name, sub)
    return owner


def header_owner(path, owner):
    """The subsystem that defines most of the functions path declares, or None."""
    votes = defaultdict(int)
    for m in FUNC_DECL.finditer(read(path)):
        if m.group(1) in owner:
            votes[owner[m.group(1)]] += 1
    return max(sorted(votes), key=lambda s: votes[s]) if votes else None


def graphs(root):
    subs = subsystems(root)
    owner = definitions(subs)
    inc_dir = os.path.join(root, 'include', 'aisd')
    hdr = {}
    for h in os.listdir(inc_dir):
        hdr['aisd/' + h] = header_owner(os.path.join(inc_dir, h), owner)
    inc, call = defaultdict(set), defaultdict(set)
    for sub, files in subs.items():
        for f in files:
            text = read(f)
            for name in INCLUDE.findall(text):
                if name in hdr:
                    tgt = hdr[name]
                else:  # a local header: src/SUB/x.h or ../SUB/x.h
                    p = os.path.normpath(os.path.join(os.path.dirname(f), name))
                    tgt = os.path.basename(os.path.dirname(p)) if p.startswith(os.path.join(root, 'src')) else None
                if tgt and tgt != sub and tgt in subs:
                    inc[sub].add(tgt)
            for ident in set(IDENT.findall(text)):
                o = owner.get(ident)
                if o and o != sub:
                    call[sub].add(o)
    return sorted(subs), inc, call


def sccs(nodes, g):
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def cycles(nodes, g, most):
    """Elementary cycles, each listed once from its smallest node."""
    found = []
    for s in nodes:
        path, onpath = [s], {s}

        def dfs(v):
            for w in sorted(g[v]):
                if len(found) >= most:
                    return
                if w == s:
                    found.append(list(path))
                elif w > s and w not in onpath:
                    path.append(w)
                    onpath.add(w)
                    dfs(w)
                    onpath.discard(w)
                    path.pop()

        dfs(s)
    return found


def main():
    ap = argparse.ArgumentParser(description='dependency cycles between the subsystems of src/')
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('--most', type=int, default=100000)
    ap.add_argument('--edges', action='store_true', help='list every edge')
    ap.add_argument('--check', action='store_true', help='exit 1 on a cyclic component not allowed')
    ap.add_argument('--allow', action='append', default=[], metavar='A,B',
                    help='a cyclic component --check accepts (repeatable)')
    a = ap.parse_args()
    allowed = {tuple(sorted(x.split(','))) for x in a.allow}
    bad = []
    root = os.path.abspath(a.root)
    nodes, inc, call = graphs(root)
    for label, g in (('include', inc), ('call', call)):
        edges = sum(len(v) for v in g.values())
        cyc = cycles(nodes, g, a.most)
        comps = sccs(nodes, g)
        print(f'{label}: {edges} edges, {len(comps)} cyclic components, {len(cyc)} cycles')
        if a.edges:
            for s in nodes:
                if g[s]:
                    print(f'  {s} -> {" ".join(sorted(g[s]))}')
        for c in comps:
            print(f'  component: {" ".join(c)}')
        for c in cyc:
            print(f'  cycle: {" -> ".join(c + c[:1])}')
        bad += [f'{label}: {" ".join(c)}' for c in comps if tuple(c) not in allowed]
    if a.check and bad:
        for b in bad:
            print(f'subsys-deps: a dependency cycle not allowed: {b}', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
