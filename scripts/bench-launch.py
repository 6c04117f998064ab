#!/usr/bin/env python3
"""Launch overhead of spank_launchguard.so: `srun -n1 true` and `srun -n2 true`, interleaved, with the
plugin listed (all checks on, warn mode) and without it. Prints medians and the ratio with/without.

Run as root on the test cluster (scripts/cluster.sh up; the plugin built):
    scripts/bench-launch.py [--runs 100] [--args 'mode=warn'] [--srun srun] [--dropin PATH]
Each round runs the four cases in a shuffled order, so drift and noise hit all of them alike.
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

PLUGIN = "/usr/local/lib/launchguard/spank_launchguard.so"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="runs per case (default 100)")
    ap.add_argument("--args", default="mode=warn", help="plugstack arguments when listed")
    ap.add_argument("--srun", default="srun", help="srun command (e.g. 'chroot /srv/trixie srun')")
    ap.add_argument("--dropin", default="/etc/slurm/plugstack.conf.d/zz-launchguard.conf")
    ap.add_argument("--plugin", default=PLUGIN, help="plugin path as seen by srun")
    ap.add_argument("--label", default="", help="label printed with the results")
    ap.add_argument("--cluster", choices=["host", "trixie"], help="shortcut: srun, drop-in and label of a scripts/cluster.sh cluster")
    a = ap.parse_args()
    if a.cluster == "trixie":
        a.srun = "chroot /srv/lg-trixie srun"
        a.dropin = "/srv/lg-trixie" + a.dropin
    if a.cluster and not a.label:
        a.label = subprocess.run(a.srun.split() + ["--version"], capture_output=True, text=True).stdout.strip()

    srun = a.srun.split()
    line = f"required {a.plugin} {a.args}\n"

    with plugstack_dropin(a.dropin) as put:  # put back as it was at the end
        return bench(a, srun, lambda on: put(line if on else None))


def bench(a, srun, listed) -> int:
    cases = [(on, n) for on in (False, True) for n in (1, 2)]
    times = {c: [] for c in cases}
    # warm-up
    for on, n in cases:
        listed(on)
        subprocess.run(srun + [f"-n{n}", "true"], check=True, cwd="/tmp")
    for _ in range(a.runs):
        order = cases[:]
        random.shuffle(order)
        for on, n in order:
            listed(on)
            t0 = time.perf_counter_ns()
            r = subprocess.run(srun + [f"-n{n}", "true"], cwd="/tmp", capture_output=True)
            dt = (time.perf_counter_ns() - t0) / 1e6
            if r.returncode != 0 or (on and b"launchguard" in r.stderr):
                print(f"unexpected result with plugin={on} -n{n}: rc={r.returncode} {r.stderr!r}", file=sys.stderr)
                return 1
            times[(on, n)].append(dt)
    label = f" [{a.label}]" if a.label else ""
    print(f"launch benchmark{label}: {a.runs} interleaved runs per case, plugstack args '{a.args}'")
    print("medians, and 20%-trimmed means (srun times here are bimodal, which makes medians jumpy)")
    print(f"{'case':<16}{'without':>10}{'with':>10}{'ratio':>8}{'trim w/o':>11}{'trim with':>11}{'ratio':>8}")
    for n in (1, 2):
        off, on = times[(False, n)], times[(True, n)]
        mo, mw = statistics.median(off), statistics.median(on)
        to, tw = trimmed(off), trimmed(on)
        print(f"{'srun -n' + str(n) + ' true':<16}{mo:>10.2f}{mw:>10.2f}{mw / mo:>8.3f}{to:>11.2f}{tw:>11.2f}{tw / to:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
