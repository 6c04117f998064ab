#!/usr/bin/env python3
"""Finds entries in `journalctl -o json` output (stdin) for scripts/test-node.sh.

    jfind.py [--all] KEY=VALUE|KEY~SUBSTRING …

Prints the first entry whose fields all match (every match with --all) as one line: its PRIORITY,
MESSAGE_ID, the LAUNCHGUARD_* fields and MESSAGE; exits 1 when none matches.
"""
import json
import sys


def main():
    args = sys.argv[1:]
    every = "--all" in args
    conds = []
    for a in args:
        if a == "--all":
            continue
        if "~" in a and ("=" not in a or a.index("~") < a.index("=")):
            k, v = a.split("~", 1)
            conds.append((k, v, True))
        else:
            k, v = a.split("=", 1)
            conds.append((k, v, False))
    found = 0
    for line in sys.stdin:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        ok = True
        for k, v, sub in conds:
            got = e.get(k)
            if not isinstance(got, str):
                ok = False
                break
            if (v not in got) if sub else (got != v):
                ok = False
                break
        if not ok:
            continue
        found += 1
        keys = ["PRIORITY", "MESSAGE_ID"] + sorted(k for k in e if k.startswith("LAUNCHGUARD_"))
        print(" ".join("%s=%s" % (k, e.get(k, "")) for k in keys) + " MESSAGE=%s" % e.get("MESSAGE", ""))
        if not every:
            break
    sys.exit(0 if found else 1)


main()
