#!/usr/bin/env bash
# The sweep on a real two-kernel cluster, as root: two VMs (scripts/vm.sh with LG_VM_NODES=2: Debian 13,
# Slurm 24.11, cgroup v2, each its own kernel and systemd as PID 1) joined by one private virtual link
# (QEMU's socket network backend, UDP on the host's loopback): gpunode1 runs slurmctld and slurmd,
# gpunode2 slurmd. launchguard's .deb for Slurm 24.11 is installed on both with apt, then from gpunode1
# (the login node here):
#
#   1. `launchguard sweep --json` on the healthy cluster: both nodes answer in one srun step over the
#      link, exit 0, no node named
#   2. gpunode2 given a munge key of its own (munged restarted there, as after a botched key rollout):
#      the sweep names gpunode2, and only it, with cluster.munge_auth (its slurmd rejects the cluster's
#      credentials) and the key fix; gpunode1 is not named
#
# It prints what it costs: boot of both VMs, the install, each sweep, the host memory of the two QEMUs
# (VmRSS) and the whole run. LG_VM_DEB=FILE uses a .deb built before (as scripts/test-vm.sh does);
# otherwise it is built with scripts/package.sh against the 24.11 headers of the trixie chroot. Prints
# `PASS:`/`FAIL:` lines and one `test result:` line in cargo's format; exits 1 on any failure. The VMs
# are powered off at the end (LG_VM_KEEP=1 leaves them up). Not in scripts/test.sh by default (it
# costs minutes of emulated boot and install; docs/development.md has the figures): LG_VM2=1 there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ "$(id -u)" = 0 ] || { echo "test-vm2: run as root" >&2; exit 2; }
export LG_VM_NODES=2
WORK=$(mktemp -d /tmp/launchguard-test-vm2.XXXXXX)
PASS=0
FAIL=0
T_START=$SECONDS
# Each sweep's deadline: an emulated node on a busy host answers slowly (slurm.conf has MessageTimeout=60).
SWEEP_TIMEOUT=${LG_VM2_SWEEP_TIMEOUT:-240}
# How long vm.sh waits for one command's result: apt's install of the .deb in an emulated guest took
# 5-10 min here while the host ran other builds at a load of 20-28 (the default is 300 s).
export LG_VM_RUN_TIMEOUT=${LG_VM_RUN_TIMEOUT:-1800}

ok() { PASS=$((PASS + 1)); printf 'test-vm2: PASS: %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'test-vm2: FAIL: %s\n' "$*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
say() { printf 'test-vm2:   | %s\n' "$@"; }
stage() { printf 'test-vm2: == %s (%d s)\n' "$*" $((SECONDS - T_START)) >&2; }
# V K SCRIPT: runs SCRIPT as root on gpunodeK (bash), prints its output, returns its status.
V() { LG_VM_NODE=$1 scripts/vm.sh run <<<"$2"; }
# rss: the host memory (VmRSS) of each QEMU, in MB.
# (the pids from `scripts/vm.sh status`: its /run directory follows LG_VM_CACHE)
rss() {
  local p out=
  for p in $(scripts/vm.sh status 2>/dev/null | sed -n 's/^gpunode[12] up: QEMU pid \([0-9]*\),.*/\1/p'); do
    out+="$(awk '/^VmRSS:/ { printf "%d MB ", $2 / 1024 }' "/proc/$p/status" 2>/dev/null)"
  done
  echo "${out% }"
}
finish() {
  local status=ok
  [ "$FAIL" = 0 ] || status=FAILED
  echo "test result: $status. $PASS passed; $FAIL failed; (scripts/test-vm2.sh, $((SECONDS - T_START)) s)"
  [ "$FAIL" = 0 ]
}
cleanup() {
  set +e
  [ "${LG_VM_KEEP:-0}" = 1 ] || scripts/vm.sh down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

stage "0. the package and two VMs"
if [ -n "${LG_VM_DEB:-}" ]; then
  DEB=$LG_VM_DEB
else
  [ -f /srv/lg-trixie/usr/include/slurm/slurm_version.h ] || LG_CLUSTER=trixie scripts/cluster.sh prepare
  SLURM_INCLUDE_DIR=/srv/lg-trixie/usr/include LG_PACKAGE_FORMATS=deb scripts/package.sh >"$WORK/package.log" 2>&1 || { cat "$WORK/package.log"; exit 1; }
  DEB=$(ls target/packages/launchguard_*-1+slurm24.11_amd64.deb)
fi
scripts/vm.sh down >/dev/null 2>&1 || true
t0=$SECONDS
scripts/vm.sh up
boot_s=$((SECONDS - t0))
say "both VMs booted and their slurmd idle in $boot_s s; QEMU host memory (VmRSS): $(rss)"
for k in 1 2; do
  say "gpunode$k: $(V $k 'echo "$(uname -r), $(srun --version), $(stat -fc %T /sys/fs/cgroup), boot_id $(cut -c1-8 /proc/sys/kernel/random/boot_id), link $(ip -br -4 addr | grep 10.79 | tr -s " ")"')"
done
check "two kernels: each VM has its own boot_id and its own address on the link" \
  bash -c "[ \"\$(LG_VM_NODE=1 scripts/vm.sh run <<<'cat /proc/sys/kernel/random/boot_id')\" != \"\$(LG_VM_NODE=2 scripts/vm.sh run <<<'cat /proc/sys/kernel/random/boot_id')\" ]"
V 1 'sinfo -N -h -o "%N %T"' >"$WORK/sinfo.out"
say "sinfo on gpunode1: $(tr '\n' ';' <"$WORK/sinfo.out")"
check "Slurm over the link: slurmctld on gpunode1 sees both slurmd idle" \
  bash -c "grep -qx 'gpunode1 idle' '$WORK/sinfo.out' && grep -qx 'gpunode2 idle' '$WORK/sinfo.out'"

stage "1. install on both"
t0=$SECONDS
for k in 1 2; do LG_VM_NODE=$k scripts/vm.sh put "$DEB"; done
# (side by side: each VM has its own emulated CPUs)
for k in 1 2; do
  V $k "cd /root && cp /mnt/host/files/$(basename "$DEB") . && t=\$SECONDS; apt-get install -y -qq ./$(basename "$DEB") >apt.log 2>&1; echo rc=\$?; echo \"(\$((SECONDS - t)) s in the guest)\"; launchguard --version" >"$WORK/install$k.out" 2>&1 &
done
wait
install_s=$((SECONDS - t0))
say "apt install of $(basename "$DEB") on both: $install_s s; $(tr '\n' ' ' <"$WORK/install1.out")/ $(tr '\n' ' ' <"$WORK/install2.out")"
check "the .deb installs on both nodes" bash -c "grep -qx rc=0 '$WORK/install1.out' && grep -qx rc=0 '$WORK/install2.out'"
# What the checks ask of a fresh Debian node, done as an admin would on both: the key 0400 (Debian's
# postinst leaves 0600: node.munge.key_mode), the plugstack line (node.plugstack.order). This cluster
# offers Slurm's mpi_pmix.so without libpmix (Debian's slurmd does not pull it) and runs no MPI job,
# so node.pmix.loads is turned off in launchguard.toml rather than libpmix added to the image.
for k in 1 2; do
  V $k 'chmod 0400 /etc/munge/munge.key && systemctl restart munge &&
    ln -sf /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf /etc/slurm/plugstack.conf.d/ &&
    cp /etc/launchguard/launchguard.toml /root/launchguard.toml.orig &&
    { echo "disabled = [\"node.pmix.loads\"]"; cat /root/launchguard.toml.orig; } >/etc/launchguard/launchguard.toml && echo rc=0' >"$WORK/admin$k.out" 2>&1 &
done
wait
check "the admin's steps (munge key 0400, the plugstack link, node.pmix.loads off) on both" \
  bash -c "grep -qx rc=0 '$WORK/admin1.out' && grep -qx rc=0 '$WORK/admin2.out'"

# sweep NAME: `launchguard sweep --json` on gpunode1; the report in NAME.json, its exit code in NAME.rc,
# its seconds in NAME.s, and one line per node (NODE RESULT FINDING-IDS…) plus the cluster findings in
# NAME.sum (the nodes it names: a finding of their own other than cluster.node_unjudged, or in a
# cluster-wide finding).
sweep() {
  local n=$1 t0=$SECONDS
  set +e
  V 1 "launchguard sweep --json --timeout $SWEEP_TIMEOUT >/root/$n.json 2>/root/$n.err; echo \$? >/root/$n.rc; cat /root/$n.json" >"$WORK/$n.json" 2>/dev/null
  set -e
  echo $((SECONDS - t0)) >"$WORK/$n.s"
  V 1 "cat /root/$n.rc" >"$WORK/$n.rc" 2>/dev/null || echo 99 >"$WORK/$n.rc"
  V 1 "cat /root/$n.err" >"$WORK/$n.err" 2>/dev/null || true
  python3 - "$WORK/$n.json" >"$WORK/$n.sum" <<'EOF' || echo "unreadable report" >"$WORK/$n.sum"
import json, sys
r = json.load(open(sys.argv[1]))
named = set()
for n in r["nodes"]:
    ids = [f["id"] for f in n["findings"]]
    print("node %s %s %s" % (n["node"], n["result"], " ".join(ids) or "-"))
    if ids and ids != ["cluster.node_unjudged"]:
        named.add(n["node"])
    for f in n["findings"]:
        print("line %s: %s" % (n["node"], f["line"]))
for f in r["cluster_findings"]:
    named.update(f["nodes"])
    print("line cluster: %s" % f["line"])
print("named %s" % (" ".join(sorted(named)) or "-"))
print("steps %s" % r.get("steps"))
EOF
}
rc_of() { cat "$WORK/$1.rc"; }

stage "2. sweep, healthy"
sweep healthy
say "launchguard sweep --json (exit $(rc_of healthy), $(cat "$WORK/healthy.s") s):" "$(cat "$WORK/healthy.sum")"
check "healthy: both nodes answer, exit 0, no node named" \
  bash -c "[ $(rc_of healthy) = 0 ] && grep -qx 'node gpunode1 report -' '$WORK/healthy.sum' && grep -qx 'node gpunode2 report -' '$WORK/healthy.sum' && grep -qx 'named -' '$WORK/healthy.sum'"

stage "3. a munge key of its own on gpunode2"
V 2 'dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none && chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key && systemctl restart munge && sha256sum /etc/munge/munge.key | cut -c1-12'
say "munge key sha256 now: gpunode1 $(V 1 'sha256sum /etc/munge/munge.key | cut -c1-12'), gpunode2 $(V 2 'sha256sum /etc/munge/munge.key | cut -c1-12'); sinfo: $(V 1 'sinfo -N -h -o "%N %T"' | tr '\n' ';')"
sweep munge
say "launchguard sweep --json (exit $(rc_of munge), $(cat "$WORK/munge.s") s):" "$(cat "$WORK/munge.sum")"
check "munge key mismatch: gpunode2, and only it, is named, with cluster.munge_auth (exit 2)" \
  bash -c "[ $(rc_of munge) = 2 ] && grep -qx 'named gpunode2' '$WORK/munge.sum' && grep -q '^node gpunode2 [a-z_]* .*cluster.munge_auth' '$WORK/munge.sum'"
check "...its line gives the cause and the key fix" \
  bash -c "grep -q '^line gpunode2: launchguard: cluster.munge_auth: .*munge.*gpunode2' '$WORK/munge.sum' && grep '^line gpunode2: launchguard: cluster.munge_auth' '$WORK/munge.sum' | grep -q '/etc/munge/munge.key'"
check "...and gpunode1 answered clean or is said to be unjudged, never named" \
  bash -c "grep -qE '^node gpunode1 (report -|[a-z_]+ cluster.node_unjudged)$' '$WORK/munge.sum'"

say "cost: boot of both VMs $boot_s s, install $install_s s, healthy sweep $(cat "$WORK/healthy.s") s, munge sweep $(cat "$WORK/munge.s") s; QEMU host memory (VmRSS) now: $(rss); guest memory used: $(V 1 "free -m | awk '/^Mem:/ { print \$3 \" MB\" }'") / $(V 2 "free -m | awk '/^Mem:/ { print \$3 \" MB\" }'"); host load average: $(cut -d' ' -f1-3 /proc/loadavg)"
finish
