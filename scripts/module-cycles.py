#!/usr/bin/env python3
"""Reports import cycles between the modules of each crate in the workspace.

A module is one source file (`foo.rs` or `foo/mod.rs`). An edge A -> B exists when A names B in a
path: `use crate::b::…`, `crate::b::…` in code, or `super::…` / `self::…`, braces in `use` expanded.
Edges between a module and one of its own ancestors or descendants are containment (a parent lists
its children with `mod`, a child uses its parent's types) and are not counted. Every other edge is
lifted to the two sibling modules under the modules' nearest common ancestor: `crate::a::x` using
`crate::b::y` counts as `a -> b`. A cycle is a strongly connected set of such siblings, e.g.
`json -> parse -> json`. Inline `#[cfg(test)] mod tests { … }` blocks are skipped.

Usage: scripts/module-cycles.py [CRATE_DIR ...]   (default: every crate with a src/ directory)
Exit status: 0 when no crate has a cycle, 1 otherwise (each cycle is printed).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_files(src):
    """{module path tuple: file} for every .rs file under src (lib.rs/main.rs are the root)."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            elif rel[0] == "bin":
                continue
            else:
                key = tuple(rel)
            # A crate with both lib.rs and main.rs: keep lib.rs as the root.
            if key == () and key in mods and rel == ["main"]:
                continue
            mods[key] = full
    return mods


def strip(text):
    """Drops comments, string/char literals and inline test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r(#*)".*?"\1', '""', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text, flags=re.S)
    text = re.sub(r"'(\\.|[^'\\])'", "' '", text)
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    depth, j = 0, i
    for j in range(i, len(tree)):
        if tree[j] == "{":
            depth += 1
        elif tree[j] == "}":
            depth -= 1
            if depth == 0:
                break
    prefix, inner, rest = tree[:i], tree[i + 1 : j], tree[j + 1 :]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p:
            out.extend(expand(prefix + p + rest))
    return out


def paths(text):
    """Every path that starts at crate/super/self, from `use` trees and from code."""
    found = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        found.extend(expand(m.group(1)))
    code = re.sub(r"\buse\s+[^;]+;", "", text)
    found.extend(re.findall(r"\b(?:crate|super|self)(?:::\w+)+", code))
    return [p for p in found if re.match(r"(crate|super|self)::", p)]


def resolve(path, here, mods):
    segs = [s.split(" as ")[0] for s in path.split("::")]
    segs = [re.sub(r"\bas\b.*", "", s) for s in segs]
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    else:
        base = here
        rest = segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    best = base
    for k in range(1, len(rest) + 1):
        cand = base + tuple(rest[:k])
        if cand in mods:
            best = cand
    return best


def lift(a, b):
    """The sibling pair under a and b's nearest common ancestor, or None for containment."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    if n == len(a) or n == len(b):
        return None
    return a[: n + 1], b[: n + 1]


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(crate):
    src = os.path.join(crate, "src")
    mods = module_files(src)
    graph, why = {}, {}
    for mod, f in mods.items():
        with open(f, encoding="utf-8") as fh:
            text = strip(fh.read())
        for p in paths(text):
            target = resolve(p, mod, mods)
            pair = lift(mod, target)
            if pair:
                graph.setdefault(pair[0], set()).add(pair[1])
                why.setdefault(pair, "%s uses %s" % (os.path.relpath(f, ROOT), re.sub(r"::self$", "", p)))
    cycles = sccs(graph)
    for comp in cycles:
        names = ["crate::" + "::".join(c) for c in comp]
        print("%s: import cycle between %s" % (os.path.relpath(crate, ROOT), ", ".join(names)))
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    print("    %s" % why[(a, b)])
    return not cycles


def main():
    crates = sys.argv[1:] or sorted(
        os.path.join(ROOT, d)
        for d in os.listdir(ROOT)
        if os.path.isdir(os.path.join(ROOT, d, "src"))
    )
    ok = all([check(os.path.abspath(c)) for c in crates])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
