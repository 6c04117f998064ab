#!/usr/bin/env python3
"""Side-by-side wall time of launchguard's node check suite and LBNL NHC running the equivalent checks.

  scripts/bench-node-checks.py [--runs N] [--nhc-dir DIR]

NHC is not packaged for Debian: extract its source (github.com/mej/nhc, any 1.4.x) into --nhc-dir
(default /tmp/nhc, which must contain `nhc` and `scripts/`). NHC gets the checks the issue lists:
munge key stat, munged and slurmd running, hostname -> IPv4, memory, a slurm.conf file test and a
munge round trip. launchguard runs its whole suite (30 checks, a superset: also the pmix plugin
scan, enroot, plugstack with ELF checks of each .so, NCCL env files, devices) three ways:
  - `launchguard check` (a process start + the suite, what HealthCheckProgram costs),
  - the suite alone inside that process (its own duration_ms, what every agent cycle costs),
  - `--only` the NHC-equivalent families (munge, hostname, slurm_conf).
The runs are interleaved so machine noise hits both sides alike; medians and p90 are printed with
the ratio NHC / launchguard.
"""
import argparse
import json
import os
import pwd
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LG = os.path.join(ROOT, "target", "release", "launchguard")

NHC_CONF = """\
* || export MARK_OFFLINE=0
* || check_file_test -r -f /etc/munge/munge.key
* || check_file_stat -u {munge_uid} -m 0400 /etc/munge/munge.key
* || check_ps_service -u munge munged
* || check_ps_service -u root slurmd
* || check_cmd_output -t 5 -m '/^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+ /' getent ahostsv4 {host}
* || check_hw_physmem 1GB 4TB
* || check_file_test -r -f /etc/slurm/slurm.conf
* || check_cmd_status -t 5 -r 0 /bin/bash -c 'munge -n | unmunge'
"""


def timed(argv, env=None, capture=True):
    # NHC's check_cmd_* leave a timer child holding stdout/stderr open until it expires: reading NHC
    # through pipes would time that, not NHC (slurmd gives HealthCheckProgram /dev/null).
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    t = time.perf_counter()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)
    return (time.perf_counter() - t) * 1e3, p


def summary(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[int(len(xs) * 0.9) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--nhc-dir", default="/tmp/nhc")
    a = ap.parse_args()
    nhc = os.path.join(a.nhc_dir, "nhc")
    if not os.access(nhc, os.X_OK):
        sys.exit(f"bench: no NHC at {nhc}: extract LBNL NHC's source there (see --help)")
    if not os.access(LG, os.X_OK):
        sys.exit(f"bench: build first: cargo build --release -p launchguard ({LG})")
    host = open("/proc/sys/kernel/hostname").read().strip()
    d = tempfile.mkdtemp(prefix="lg-bench-nhc-")
    conf = os.path.join(d, "nhc.conf")
    with open(conf, "w") as f:
        f.write(NHC_CONF.format(host=host, munge_uid=pwd.getpwnam("munge").pw_uid))
    env = dict(os.environ)
    # NHC resets INCDIR/HELPERDIR from the environment; trailing NAME=value arguments are eval'ed.
    nhc_argv = [nhc, "-D", d, "-c", conf, "-l", os.path.join(d, "nhc.log"), "-t", "30",
                f"INCDIR={a.nhc_dir}/scripts", f"HELPERDIR={a.nhc_dir}/helpers", "MARK_OFFLINE=0",
                f"RESULTFILE={d}/nhc.status"]
    _, p = timed(nhc_argv[:1] + ["-v"] + nhc_argv[1:], env, capture=False)
    log = open(os.path.join(d, "nhc.log")).read()
    if p.returncode != 0 or "command not found" in log or "No such file" in log or log.count("Running check:") < 9:
        sys.exit(f"bench: NHC's checks did not all run and pass here, fix that first (log {d}/nhc.log):\n{log}")
    # An empty launchguard config: the defaults (a config path must name a regular file).
    lg_conf = os.path.join(d, "launchguard.toml")
    open(lg_conf, "w").close()
    # One run first: the answers launchguard keeps between runs (/run/launchguard/cache: slurmd -V,
    # scontrol's PlugStackConfig, the pmix plugin's directories) are stored, as on any node after
    # its first check; NHC gets the same warm-up.
    timed([LG, "check", "--json", "--config", lg_conf])
    timed(nhc_argv, env, capture=False)
    sides = {"nhc": [], "lg_cli": [], "lg_suite": [], "lg_equiv_cli": []}
    for _ in range(a.runs):
        t, p = timed(nhc_argv, env, capture=False)
        assert p.returncode == 0, "NHC failed during the runs"
        sides["nhc"].append(t)
        t, p = timed([LG, "check", "--json", "--config", lg_conf])
        sides["lg_cli"].append(t)
        sides["lg_suite"].append(json.loads(p.stdout)["duration_ms"])
        t, p = timed([LG, "check", "--json", "--config", lg_conf, "--only", "node.munge", "--only", "node.hostname", "--only", "node.slurm_conf"])
        sides["lg_equiv_cli"].append(t)
    n_med, n_p90 = summary(sides["nhc"])
    load = open("/proc/loadavg").read().split()[0]
    print(f"{a.runs} interleaved runs on {host} ({os.cpu_count()} CPUs, load average {load})")
    print(f"{'what':<58} {'median ms':>10} {'p90 ms':>8} {'NHC/this':>9}")
    rows = [
        ("LBNL NHC, the issue's 8 equivalent checks", "nhc"),
        ("launchguard check, all 30 checks (process start included)", "lg_cli"),
        ("launchguard check --only munge,hostname,slurm_conf", "lg_equiv_cli"),
        ("launchguard suite inside the process (agent cycle)", "lg_suite"),
    ]
    for label, k in rows:
        med, p90 = summary(sides[k])
        print(f"{label:<58} {med:>10.2f} {p90:>8.2f} {n_med / med:>8.1f}x")
    med = summary(sides["lg_cli"])[0]
    print(f"launchguard check median wall {med:.2f} ms: {'<=' if med <= 5 else '>'} 5 ms (issue 33's target)")


if __name__ == "__main__":
    main()
