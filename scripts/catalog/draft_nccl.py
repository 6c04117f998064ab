#!/usr/bin/env python3
"""draft_nccl.py: drafts triage rows for NCCL's WARN and aws-ofi-nccl's NCCL_OFI_WARN templates
(a helper for triage-nccl.tsv).

    scripts/catalog/draft_nccl.py list  NCCL_TREE... [--class out] [--all-areas] [--context 4]
    scripts/catalog/draft_nccl.py apply NCCL_TREE... --map MAP [--write]

`list` prints, for each WARN template of the trees in init, net, transport, bootstrap and proxy
(catalog.py's areas) whose triage is of the given classes (default: out and untriaged), its file
and line, hash, current triage and the source lines before the call (the condition that prints it),
to judge it by.

A tree is NCCL's or aws-ofi-nccl's by its layout (catalog.py's detect); all aws-ofi-nccl files are
in the `net` area.

`apply` reads MAP (scripts/catalog/nccl-draft.map for NCCL, ofi-draft.map for aws-ofi-nccl; not a
.tsv, which catalog.py would read as triage), one decision per line:

    file-glob<TAB>template-regex<TAB>class<TAB>id|-<TAB>note

and gives every template of the trees (in the five areas unless --all-areas, whose triage is of
the given classes, default out and untriaged) the first decision whose glob matches its file and whose
regex (Python, searched) matches its template; the rows of scripts/catalog/triage-nccl.tsv for
those templates (of the trees' source) are replaced (other rows are kept as they are, a values
column too). Without
--write it prints the rows that would change. The drafted rows are a draft: each one is read
against its source before it is committed, and a `rule` row still needs the rule in
nccl/src/warn_rules.rs or nccl/src/ofi_rules.rs (catalog.py reports a rule-miss otherwise).
"""

import argparse
import fnmatch
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("catalog", os.path.join(os.path.dirname(HERE), "catalog.py"))
catalog = importlib.util.module_from_spec(spec)
spec.loader.exec_module(catalog)
TSV = os.path.join(HERE, "triage-nccl.tsv")


def templates(tree):
    """[(rel, line, template, args)] of NCCL's WARN calls (aws-ofi-nccl's NCCL_OFI_WARN calls for
    an aws-ofi-nccl tree), one per distinct (file, template)."""
    out, seen = [], set()
    ofi = catalog.detect(tree) == "aws-ofi-nccl"
    dirs = [""] if ofi else ["src"] + [d for d in ("plugins", "ext-net") if os.path.isdir(os.path.join(tree, d))]
    call = "NCCL_OFI_WARN" if ofi else "WARN"
    for d in dirs:
        exts = (".cc", ".cu", ".h", ".c", ".cpp")
        for p in catalog.files(tree, exts, d):
            for line, _, t, args in catalog.c_calls(p, [call], lambda c: 0):
                rel = os.path.relpath(p, tree)
                if (rel, t) not in seen:
                    seen.add((rel, t))
                    out.append((rel, line, t, args))
    return out


def cmd_list(a, tri):
    want = set(a.cls.split(","))
    shown = set()
    for tree in a.trees:
        src_kind = catalog.detect(tree)
        for rel, line, t, args in templates(tree):
            h = catalog.key_hash(t)
            ar = catalog.area(src_kind, rel)
            if not a.all_areas and ar not in catalog.GOAL_AREAS:
                continue
            cls, fid, note, _ = tri.get((src_kind, rel, h), ("untriaged", "-", "", ()))
            if cls not in want or (rel, h) in shown:
                continue
            shown.add((rel, h))
            src = open(os.path.join(tree, rel), errors="replace").read().split("\n")
            ctx = [s.strip() for s in src[max(0, line - 1 - a.context):line - 1] if s.strip()]
            print("%s:%d\t%s\t%s\t%s\t%s" % (rel, line, h, ar, cls, fid))
            print("   T: %s" % t)
            for c in ctx:
                print("   | %s" % c[:160])


def cmd_apply(a):
    rules = []
    for n, ln in enumerate(open(a.map, encoding="utf-8"), 1):
        if not ln.strip() or ln.startswith("#"):
            continue
        cols = ln.rstrip("\n").split("\t")
        if len(cols) != 5 or cols[2] not in catalog.CLASSES:
            sys.exit("%s:%d: want glob<TAB>regex<TAB>class<TAB>id<TAB>note" % (a.map, n))
        rules.append((cols[0], re.compile(cols[1]), cols[2], cols[3], cols[4]))
    decided = {}
    tri = catalog.load_triage([catalog.TRIAGE_DIR])
    want = set(a.cls.split(","))
    for tree in a.trees:
        src_kind = catalog.detect(tree)
        for rel, _, t, _ in templates(tree):
            h = catalog.key_hash(t)
            if tri.get((src_kind, rel, h), ("untriaged",))[0] not in want:
                continue
            if not a.all_areas and catalog.area(src_kind, rel) not in catalog.GOAL_AREAS:
                continue
            for glob, rx, cls, fid, note in rules:
                if fnmatch.fnmatch(rel, glob) and rx.search(t):
                    decided[(src_kind, rel, catalog.key_hash(t))] = (cls, fid, note)
                    break
    lines = open(TSV, encoding="utf-8").read().split("\n")
    out, changed, done = [], 0, set()
    for ln in lines:
        cols = ln.split("\t")
        if len(cols) > 2 and (cols[0], cols[1], cols[2]) in decided:
            cls, fid, note = decided[(cols[0], cols[1], cols[2])]
            done.add((cols[0], cols[1], cols[2]))
            new = "\t".join([cols[0], cols[1], cols[2], cls, fid, note] + cols[6:])
            if new != ln:
                changed += 1
                if not a.write:
                    print("- " + ln + "\n+ " + new)
            out.append(new)
        else:
            out.append(ln)
    missing = sorted(set(decided) - done)
    for src_kind, rel, h in missing:
        print("not in the triage yet (add by hand): %s %s %s" % (src_kind, rel, h), file=sys.stderr)
    if a.write:
        open(TSV, "w", encoding="utf-8").write("\n".join(out))
    print("%d rows changed" % changed, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["list", "apply"])
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--class", dest="cls", default="out,untriaged")
    ap.add_argument("--all-areas", action="store_true")
    ap.add_argument("--context", type=int, default=4)
    ap.add_argument("--map")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    tri = catalog.load_triage([catalog.TRIAGE_DIR])
    if a.mode == "list":
        cmd_list(a, tri)
    else:
        if not a.map:
            sys.exit("apply needs --map")
        cmd_apply(a)


if __name__ == "__main__":
    main()
