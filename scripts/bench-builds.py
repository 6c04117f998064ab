#!/usr/bin/env python3
"""Two builds of launchguard side by side in one run: the launch overhead of each build's plugin
(`srun -n1 true` with no plugin, the old .so and the new .so listed) and the wall time of each
build's `launchguard check --json` (process start and the whole node check suite), interleaved in a
shuffled order each round so machine noise hits every case alike. Prints medians, 20%-trimmed means
and the ratios new/old and with/without.

Run as root on the one-node test cluster (scripts/cluster.sh up) with both builds made:
    git worktree add /tmp/lg-old REV
    (cd /tmp/lg-old && cargo build --release -p launchguard -p spank-launchguard)
    scripts/bench-builds.py --old /tmp/lg-old/target/release [--new target/release] [--runs 60]

Each directory must hold `launchguard` and `libspank_launchguard.so`. The plugstack drop-in is
restored as it was when the run ends.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import plugstack_dropin, trimmed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv):
    t0 = time.perf_counter_ns()
    r = subprocess.run(argv, cwd="/tmp", stdin=subprocess.DEVNULL, capture_output=True)
    return (time.perf_counter_ns() - t0) / 1e6, r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the old build's target/release directory")
    ap.add_argument("--new", default=os.path.join(ROOT, "target", "release"), help="the new build's (default: this checkout's)")
    ap.add_argument("--runs", type=int, default=60, help="rounds (default 60)")
    ap.add_argument("--args", default="mode=warn", help="plugstack arguments when listed")
    ap.add_argument("--dropin", default="/etc/slurm/plugstack.conf.d/zz-launchguard.conf")
    a = ap.parse_args()
    builds = {}
    for name, d in (("old", a.old), ("new", a.new)):
        lg, so = os.path.join(d, "launchguard"), os.path.join(d, "libspank_launchguard.so")
        for p in (lg, so):
            if not os.access(p, os.R_OK):
                sys.exit(f"bench-builds: {p} missing: build with cargo build --release -p launchguard -p spank-launchguard")
        builds[name] = (os.path.abspath(lg), os.path.abspath(so))

    with plugstack_dropin(a.dropin) as put:  # put back as it was at the end
        return bench(a, builds, lambda which: put(None if which is None else f"required {builds[which][1]} {a.args}\n"))


def bench(a, builds, listed) -> int:
    cases = [("srun", None), ("srun", "old"), ("srun", "new"), ("check", "old"), ("check", "new")]
    times = {c: [] for c in cases}
    for kind, which in cases:  # warm-up, and each case must work
        ms, r = run_case(kind, which, builds, listed)
        if kind == "srun" and r.returncode != 0:
            print(f"srun with plugin={which} failed: {r.stderr.decode(errors='replace')}", file=sys.stderr)
            return 1
        if kind == "check" and r.returncode not in (0, 1, 2):
            print(f"{builds[which][0]} check failed (rc {r.returncode}): {r.stderr.decode(errors='replace')}", file=sys.stderr)
            return 1
    for _ in range(a.runs):
        order = cases[:]
        random.shuffle(order)
        for c in order:
            ms, _ = run_case(*c, builds, listed)
            times[c].append(ms)
    print(f"bench-builds: {a.runs} interleaved rounds; old {a.old}, new {a.new}; plugstack args '{a.args}'")
    print(f"{'case':<34}{'median ms':>10}{'trim ms':>9}{'vs none':>9}{'new/old':>9}")
    base = trimmed(times[("srun", None)])
    for kind, which in cases:
        xs = times[(kind, which)]
        med, tr = statistics.median(xs), trimmed(xs)
        label = {"srun": f"srun -n1 true, plugin {which or 'none'}", "check": f"launchguard check --json ({which})"}[kind]
        vs = f"{tr / base:>9.3f}" if kind == "srun" else f"{'':>9}"
        ratio = f"{tr / trimmed(times[(kind, 'old')]):>9.3f}" if which == "new" else f"{'':>9}"
        print(f"{label:<34}{med:>10.2f}{tr:>9.2f}{vs}{ratio}")
    return 0


def run_case(kind, which, builds, listed):
    if kind == "srun":
        listed(which)
        return timed(["srun", "-n1", "true"])
    return timed([builds[which][0], "check", "--json"])


if __name__ == "__main__":
    sys.exit(main())
