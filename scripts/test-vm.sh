#!/usr/bin/env bash
# The cgroup v2 node test, as root: launchguard's .deb for Slurm 24.11 on a real virtual machine with
# its own kernel (scripts/vm.sh: Debian 13, kernel 6.12, systemd as PID 1, /sys/fs/cgroup = cgroup2fs,
# CgroupPlugin=cgroup/v2 with ConstrainDevices=yes (Slurm's eBPF device filter) and ConstrainCores=yes,
# two fake GPUs as Gres=gpu:2 and a fake verbs device as Gres=nic:1, HealthCheckProgram=
# /usr/sbin/launchguard-health every 5 s), installed the way docs/install.md says, and checked there:
#
#   1. install: apt install of the .deb, the plugstack link, systemctl enable --now (the agent under
#      systemd), launchguard status
#   2. `launchguard check` on the real kernel's /proc and /sys: the agent's verdicts and facts under its
#      unit's sandbox equal a plain root run's; the node's cgroup v2 facts are read, not guessed
#   3. devices behind the eBPF filter: in a user's `srun --gres=gpu:1` step the task can open the GPU
#      it was given and gets EPERM on the other, and the step's GPU check agrees (silence); a device
#      the step needs but the filter hides is reported with the same EPERM the task gets; a step whose
#      allocated GPU the filter hides is told so
#   4. CPUs bound to -c: a GPU step without -c is told "1 CPU per task" and its task's nproc is 1;
#      with -c 2 nproc is 2 and nothing is said; `sbatch -c 2` + plain srun gets 2 on 24.11 (silence)
#   5. HealthCheckProgram: munge key 0644 drains the node with `launchguard: …`, the fix resumes it;
#      also on a node an admin drained and resumed before (24.11 leaves the old Reason on it)
#   6. /run/enroot: without it the first launch repairs it (the admin's slurmd.log line; the user sees
#      nothing); with the package's tmpfiles line it is there after a real reboot of the VM (1777 root),
#      the first launch needs no repair, and the agent is back (enabled)
#
# LG_VM_RELEASE=sid runs the same checks on the Debian sid VM (Slurm 26.05; scripts/vm.sh) with the
# 26.05 .deb. LG_VM_DEB=FILE uses a .deb built before (scripts/test.sh passes the 24.11 one); otherwise
# it is built with scripts/package.sh against the headers of the release's chroot (/srv/lg-trixie,
# /srv/lg-sid). Prints
# `PASS:`/`FAIL:` lines and one `test result:` line in cargo's format (scripts/test.sh counts it);
# exits 1 on any failure. The VM is powered off at the end (LG_VM_KEEP=1 leaves it up for a look).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. "$ROOT/scripts/lib/install-doc.sh"
[ "$(id -u)" = 0 ] || { echo "test-vm: run as root" >&2; exit 2; }
WORK=$(mktemp -d /tmp/launchguard-test-vm.XXXXXX)
NODE=gpunode1
INTERVAL=5 # HealthCheckInterval, scripts/vm.sh
PASS=0
FAIL=0
T_START=$SECONDS

ok() { PASS=$((PASS + 1)); printf 'test-vm: PASS: %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'test-vm: FAIL: %s\n' "$*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
say() { printf 'test-vm:   | %s\n' "$@"; }
stage() { printf 'test-vm: == %s (%d s)\n' "$*" $((SECONDS - T_START)) >&2; }
# V SCRIPT: runs SCRIPT as root in the VM (bash), prints its output, returns its status.
V() { scripts/vm.sh run <<<"$1"; }
# U SCRIPT: the same as the VM's user lgtest (uid 1500), in its home.
U() { scripts/vm.sh run <<<"cd /home/lgtest && runuser -u lgtest -- bash -c $(printf '%q' "$1")"; }
finish() {
  local status=ok
  [ "$FAIL" = 0 ] || status=FAILED
  echo "test result: $status. $PASS passed; $FAIL failed; (scripts/test-vm.sh, $((SECONDS - T_START)) s)"
  [ "$FAIL" = 0 ]
}
cleanup() {
  set +e
  [ "${LG_VM_KEEP:-0}" = 1 ] || scripts/vm.sh down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# readme_run NAME REGEX [SED]: runs that docs/install.md line in the VM (in /root, where the .deb is),
# with SED applied (the release in the package's file name); output in $WORK/NAME.out, status in NAME.rc.
readme_run() {
  local n=$1 line
  line=$(readme_cmd "$2") || { bad "docs/install.md has the line for: $2"; echo 99 >"$WORK/$n.rc"; return 0; }
  [ -z "${3:-}" ] || line=$(sed "$3" <<<"$line")
  set +e
  V "$line" >"$WORK/$n.out" 2>&1
  echo $? >"$WORK/$n.rc"
  set -e
  printf 'test-vm: # %s  → rc=%s\n' "$line" "$(cat "$WORK/$n.rc")"
  tail -n "${SHOW:-3}" "$WORK/$n.out" | sed 's/^/test-vm:   | /'
}
rc() { cat "$WORK/$1.rc"; }
# srun_as_user NAME ARGS…: `srun ARGS` as lgtest; stdout in NAME.out, stderr in NAME.err, status NAME.rc.
srun_as_user() {
  local n=$1
  shift
  set +e
  U "timeout 120 srun $* 2>$n.err; echo \"rc=\$?\"; echo '--- stderr'; cat $n.err" >"$WORK/$n.all" 2>&1
  set -e
  sed -n '/^rc=[0-9]*$/q;p' "$WORK/$n.all" >"$WORK/$n.out"
  sed -n 's/^rc=\([0-9]*\)$/\1/p' "$WORK/$n.all" | tail -n 1 >"$WORK/$n.rc"
  sed '1,/^--- stderr$/d' "$WORK/$n.all" >"$WORK/$n.err"
}
# findings NAME: launchguard's lines in a step's stderr
findings() { grep '^launchguard: ' "$WORK/$1.err" || true; }
show_node() { V "scontrol show node $NODE" | grep -E 'State=|Reason=' | sed 's/^ *//' | tr '\n' ' '; }
wait_node() { # wait_node SECONDS REGEX: seconds until `scontrol show node` matches REGEX, or -1
  local limit=$1 re=$2 t0=$SECONDS
  while [ $((SECONDS - t0)) -le "$limit" ]; do
    if V "scontrol show node $NODE" | grep -Eq "$re"; then echo $((SECONDS - t0)); return 0; fi
    sleep 0.5
  done
  echo -1
}
repairs() { V "grep -c 'repaired .*/run/enroot' /var/log/slurm/slurmd.log || true"; }

stage "0. the package and the VM"
if [ -n "${LG_VM_DEB:-}" ]; then
  DEB=$LG_VM_DEB
else
  # (the release's headers: its chroot's libslurm-dev, as for `LG_CLUSTER=trixie cluster.sh build-plugin`)
  C=${LG_VM_RELEASE:-trixie}
  [ -f /srv/lg-$C/usr/include/slurm/slurm_version.h ] || LG_CLUSTER=$C scripts/cluster.sh prepare
  SLURM_INCLUDE_DIR=/srv/lg-$C/usr/include LG_PACKAGE_FORMATS=deb scripts/package.sh >"$WORK/package.log" 2>&1 || { cat "$WORK/package.log"; exit 1; }
  DEB=$(ls target/packages/launchguard_*-1+slurm"$(sed -n 's/.*launchguard \S* for Slurm \([0-9.]*\) .*/\1/p' "$WORK/package.log" | head -n 1)"_amd64.deb)
fi
REL=$(sed -n 's/.*+slurm\([0-9.]*\)_amd64\.deb$/\1/p' <<<"$DEB")
[ -n "$REL" ] || { echo "test-vm: $DEB is not named like scripts/package.sh names a .deb (launchguard_VERSION-REV+slurmXX.YY_amd64.deb)" >&2; exit 2; }
scripts/vm.sh down >/dev/null 2>&1 || true
scripts/vm.sh up
scripts/vm.sh put "$DEB"
V "cp /mnt/host/files/$(basename "$DEB") /root/"
say "$(V 'echo "$(uname -r); $(systemctl --version | head -n 1) as PID $(ps -o comm= -p 1 | sed s/^/1=/); $(srun --version); /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup); controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"') ; deb: $(basename "$DEB")"
check "the VM runs its own kernel with systemd as PID 1 and the unified cgroup v2 hierarchy" \
  bash -c "V() { scripts/vm.sh run <<<\"\$1\"; }; [ \"\$(V 'ps -o comm= -p 1')\" = systemd ] && [ \"\$(V 'stat -fc %T /sys/fs/cgroup')\" = cgroup2fs ] && [ \"\$(V 'uname -r')\" != \"\$(uname -r)\" ]"

stage "1. install as docs/install.md says"
readme_run install 'apt install \./launchguard_[^ ]*-1\+slurm[0-9.]*_amd64\.deb' "s/+slurm[0-9.]*_amd64/+slurm${REL}_amd64/"
check "docs/install.md: apt install of the $REL .deb succeeds (offline: its dependencies are Slurm's own)" [ "$(rc install)" = 0 ]
readme_run link '^ln -s /usr/share/launchguard/plugstack.conf.d/'
check "docs/install.md: the plugstack link is made" bash -c "[ $(rc link) = 0 ] && scripts/vm.sh run test -L /etc/slurm/plugstack.conf.d/zz-launchguard.conf"
readme_run enable '^systemctl enable --now launchguard-agent'
check "docs/install.md: systemctl enable --now: rc 0, the agent enabled and active under systemd" \
  bash -c "[ $(rc enable) = 0 ] && [ \"\$(scripts/vm.sh run systemctl is-enabled launchguard-agent)\" = enabled ] && [ \"\$(scripts/vm.sh run systemctl is-active launchguard-agent)\" = active ]"
SHOW=4 readme_run lg-status '^launchguard status$'
check "docs/install.md: launchguard status answers with the agent's last run" \
  bash -c "case $(rc lg-status) in 0|1|2) ;; *) exit 1 ;; esac; grep -q '^agent ' '$WORK/lg-status.out'"

stage "2. launchguard check on the VM's kernel"
set +e
V 'launchguard check --json' >"$WORK/root.json"
check_rc=$?
V 'launchguard status --json' >"$WORK/status.json"
V 'launchguard check' >"$WORK/check.txt"
set -e
sed 's/^/test-vm:   | /' "$WORK/check.txt" | head -n 60
python3 - "$WORK/root.json" "$WORK/status.json" "$check_rc" >"$WORK/check.out" <<'EOF' && check_ok=0 || check_ok=$?
import json, sys
root = json.load(open(sys.argv[1]))
agent = json.load(open(sys.argv[2]))["last_check"]
def view(r):
    return {**{c["id"]: c["status"] for c in r["checks"]}, **r.get("facts", {})}
a, b = view(root), view(agent)
diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
st = {}
for c in root["checks"]:
    st.setdefault(c["status"], []).append(c["id"])
print("exit %s; %d checks: %s; differences between the agent (systemd unit, sandbox) and plain root: %s"
      % (sys.argv[3], len(root["checks"]), "; ".join("%s: %s" % (k, " ".join(sorted(v))) for k, v in sorted(st.items())), diff or "none"))
ids = {c["id"]: c for c in root["checks"]}
need_ok = ["node.devices.constrain"]
bad = [i for i in need_ok if ids.get(i, {}).get("status") != "ok"]
if bad:
    print("not ok on this node (cgroup.conf has ConstrainDevices=yes, gres.conf lists the GPUs): %s" % bad)
# Nothing may be left unknown for want of a file a real kernel has (/proc, /sys).
unknown = [c["id"] + ": " + c["message"] for c in root["checks"] if c["status"] == "unknown"]
if unknown:
    print("unknown: %s" % unknown)
sys.exit(1 if diff or bad or unknown or len(root["checks"]) < 20 else 0)
EOF
say "$(cat "$WORK/check.out")"
check "launchguard check on a real kernel: nothing unknown, node.devices.constrain ok, and the agent under systemd gives root's verdicts and facts" [ "$check_ok" = 0 ]

stage "3. devices behind the eBPF filter"
# shellcheck disable=SC2016
srun_as_user gpu1 -c 1 --gres=gpu:1 bash -c "'echo SLURM_STEP_GPUS=\$SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES; for d in /dev/fakegpu0 /dev/fakegpu1 /dev/infiniband/uverbs0; do cat \$d 2>&1 | sed \"s/^cat: //\"; done'"
say "srun -c 1 --gres=gpu:1 (rc $(rc gpu1)): $(tr '\n' ';' <"$WORK/gpu1.out")" "launchguard: $(findings gpu1 | tr '\n' ';')"
check "the task opens the GPU it was given (ENXIO: no driver, allowed) and gets EPERM on the other and on the unrequested verbs device" \
  bash -c "[ $(rc gpu1) = 0 ] && grep -q '^SLURM_STEP_GPUS=0 ' '$WORK/gpu1.out' && grep -qx '/dev/fakegpu0: No such device or address' '$WORK/gpu1.out' && grep -qx '/dev/fakegpu1: Operation not permitted' '$WORK/gpu1.out' && grep -qx '/dev/infiniband/uverbs0: Operation not permitted' '$WORK/gpu1.out'"
check "...and the step's GPU check agrees: one GPU given, one usable, nothing said" bash -c "[ -z \"\$(grep '^launchguard: ' '$WORK/gpu1.err')\" ]"
V 'srun -c 1 --gres=gpu:1 bpftool cgroup tree' >"$WORK/bpf.out" 2>&1 || true
say "bpftool cgroup tree in a step: $(grep -E 'cgroup_device|/' "$WORK/bpf.out" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
check "Slurm's eBPF device program is attached to the job's cgroup (bpftool cgroup tree)" grep -q 'cgroup_device' "$WORK/bpf.out"
# A device the site needs in every step but gres.conf hands out as GRES (nic): the eBPF filter hides
# it from steps that do not ask for it. The plugstack line is copied and edited, as docs/install.md says.
V 'rm /etc/slurm/plugstack.conf.d/zz-launchguard.conf && sed "s|mode=warn|mode=warn devices=/dev/infiniband/uverbs0|" /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf >/etc/slurm/plugstack.conf.d/zz-launchguard.conf'
srun_as_user nic0 -c 1 --gres=gpu:1 bash -c "'cat /dev/infiniband/uverbs0 2>&1 | sed \"s/^cat: //\"'"
srun_as_user nic1 -c 1 --gres=gpu:1,nic:1 bash -c "'cat /dev/infiniband/uverbs0 2>&1 | sed \"s/^cat: //\"'"
say "devices=/dev/infiniband/uverbs0, srun -c 1 --gres=gpu:1: task: $(cat "$WORK/nic0.out"); $(findings nic0)" \
  "srun -c 1 --gres=gpu:1,nic:1: task: $(cat "$WORK/nic1.out"); launchguard: $(findings nic1 | tr '\n' ';')"
check "a device the eBPF filter hides is reported with the same EPERM the task's open(2) gets" \
  bash -c "grep -qx '/dev/infiniband/uverbs0: Operation not permitted' '$WORK/nic0.out' && grep -qx \"launchguard: launch.devices: '/dev/infiniband/uverbs0' (required by the admin) is denied by the devices cgroup (EPERM) on $NODE; the site marks this device as required by its jobs; if gres.conf lists '/dev/infiniband/uverbs0' (File=), request that GRES (e.g. --gres=nic:1) or drop it from gres.conf; otherwise allow it in the site's device cgroup rules\" '$WORK/nic0.err'"
check "...and with the GRES asked for, the task opens it and nothing is said" \
  bash -c "grep -qx '/dev/infiniband/uverbs0: No such device or address' '$WORK/nic1.out' && [ -z \"\$(grep '^launchguard: ' '$WORK/nic1.err')\" ]"
V 'rm /etc/slurm/plugstack.conf.d/zz-launchguard.conf && ln -s /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf /etc/slurm/plugstack.conf.d/'
# A GPU the filter hides from the step it was given to: the node's two GPU files are one device
# (195:0; a device node made by hand with the wrong minor), which slurmd reads at its start. Slurm's
# program for a step given GPU 1 denies GPU 0's number first, which is also GPU 1's. GPU 0 is held
# by another job so that the step gets GPU 1.
V 'rm /dev/fakegpu1 && mknod -m 666 /dev/fakegpu1 c 195 0 && systemctl restart slurmd &&
   runuser -u lgtest -- sbatch -c 1 --gres=gpu:1 -o /dev/null --wrap "sleep 600" >/dev/null &&
   for i in $(seq 240); do [ -n "$(squeue -h -t R -u lgtest)" ] && break; sleep 0.5; done; squeue -h -t R -u lgtest' >"$WORK/holder.out" 2>&1 || true
# shellcheck disable=SC2016
srun_as_user hidden -c 1 --gres=gpu:1 bash -c "'echo SLURM_STEP_GPUS=\$SLURM_STEP_GPUS; for d in /dev/fakegpu0 /dev/fakegpu1; do cat \$d 2>&1 | sed \"s/^cat: //\"; done'"
V 'scancel -u lgtest; for i in $(seq 240); do [ -z "$(squeue -h -u lgtest)" ] && break; sleep 0.5; done
   rm /dev/fakegpu1 && mknod -m 666 /dev/fakegpu1 c 195 1 && systemctl restart slurmd' >/dev/null 2>&1 || true
say "/dev/fakegpu1 made as 195:0 (GPU 0's number), GPU 0 held by job $(awk '{ print $1 }' "$WORK/holder.out"): srun -c 1 --gres=gpu:1: task: $(tr '\n' ';' <"$WORK/hidden.out")" "$(findings hidden)"
check "a GPU the eBPF filter hides from its own step: the task gets EPERM on both files, and the step's GPU check says so" \
  bash -c "grep -qx 'SLURM_STEP_GPUS=1' '$WORK/hidden.out' && grep -qx '/dev/fakegpu1: Operation not permitted' '$WORK/hidden.out' && grep -qx '/dev/fakegpu0: Operation not permitted' '$WORK/hidden.out' && grep -qx \"launchguard: launch.devices: this task was given 1 GPU (SLURM_STEP_GPUS=1) but only 0 GPU device files are usable on $NODE: '/dev/fakegpu0' denied by the devices cgroup (EPERM), '/dev/fakegpu1' denied by the devices cgroup (EPERM); CUDA sees fewer GPUs than Slurm allocated, so the job fails or runs on fewer GPUs; check gres.conf (File= or AutoDetect) for this node: with ConstrainDevices=yes Slurm allows only the device files it maps to the allocated GPUs, then restart slurmd\" '$WORK/hidden.err'"

stage "4. CPUs bound to -c"
srun_as_user cpu1 --gres=gpu:1 bash -c "'nproc; grep Cpus_allowed_list /proc/self/status'"
srun_as_user cpu2 -c 2 --gres=gpu:1 bash -c "'nproc; grep Cpus_allowed_list /proc/self/status'"
say "srun --gres=gpu:1 (no -c): nproc $(head -n 1 "$WORK/cpu1.out"), $(sed -n 2p "$WORK/cpu1.out" | tr -s '\t ' ' '); $(findings cpu1)" \
  "srun -c 2 --gres=gpu:1: nproc $(head -n 1 "$WORK/cpu2.out"); launchguard: $(findings cpu2 | tr '\n' ';')"
check "a GPU step without -c: told it gets 1 CPU per task, and its task's nproc is 1 (ConstrainCores binds it)" \
  bash -c "[ $(rc cpu1) = 0 ] && [ \"\$(head -n 1 '$WORK/cpu1.out')\" = 1 ] && grep -q '^launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun has no -c/--cpus-per-task; ' '$WORK/cpu1.err'"
check "srun -c 2: nproc is 2 and nothing is said" \
  bash -c "[ $(rc cpu2) = 0 ] && [ \"\$(head -n 1 '$WORK/cpu2.out')\" = 2 ] && [ -z \"\$(grep '^launchguard: ' '$WORK/cpu2.err')\" ]"
# 24.11's srun reads SLURM_CPUS_PER_TASK from the allocation: a plain srun in `sbatch -c 2` gets 2.
U "sbatch --wait -c 2 --gres=gpu:1 -o sb.out --wrap 'srun nproc; srun --cpus-per-task=1 true' >/dev/null; cat sb.out" >"$WORK/sbatch.out" 2>&1 || true
say "sbatch -c 2 --gres=gpu:1 --wrap 'srun nproc; srun --cpus-per-task=1 true': $(tr '\n' ';' <"$WORK/sbatch.out")"
check "sbatch -c 2, then a plain srun: nproc 2 and no cpus_per_task line (24.11 reads SLURM_CPUS_PER_TASK)" \
  bash -c "[ \"\$(grep -vc '^launchguard: ' '$WORK/sbatch.out')\" -ge 1 ] && [ \"\$(grep -v '^launchguard: ' '$WORK/sbatch.out' | head -n 1)\" = 2 ] && ! grep -q 'this GPU step gets 1 CPU per task' '$WORK/sbatch.out'"

stage "5. HealthCheckProgram drains and resumes"
say "before: $(show_node)"
V 'chmod 0644 /etc/munge/munge.key'
drain_s=$(wait_node $((INTERVAL * 12)) 'Reason=launchguard: node.munge.key_mode')
say "after chmod 0644 /etc/munge/munge.key: $(show_node)(${drain_s} s)"
check "health: munge key 0644 drains the node with Reason=launchguard: node.munge.key_mode (HealthCheckInterval=$INTERVAL s)" \
  bash -c "[ $drain_s -ge 0 ] && scripts/vm.sh run scontrol show node $NODE | grep -q 'State=[A-Z+]*DRAIN'"
V 'chmod 0400 /etc/munge/munge.key'
resume_s=$(wait_node $((INTERVAL * 12)) 'State=IDLE ')
say "after chmod 0400: $(show_node)(${resume_s} s)"
check "health: the fix resumes the node" bash -c "[ $resume_s -ge 0 ] && ! scripts/vm.sh run scontrol show node $NODE | grep -q 'State=[A-Z+]*DRAIN'"
# Slurm 24.11 keeps a drain's Reason after `State=RESUME` (22.05 clears it): a node an admin drained
# by hand and resumed shows `State=IDLE … Reason=disk swap by hand`, a reason in effect for nothing.
V "scontrol update nodename=$NODE state=drain reason='disk swap by hand' && scontrol update nodename=$NODE state=resume"
say "drained by hand and resumed: $(show_node)"
V 'chmod 0644 /etc/munge/munge.key'
drain2_s=$(wait_node $((INTERVAL * 12)) 'Reason=launchguard: node.munge.key_mode')
say "then chmod 0644 /etc/munge/munge.key: $(show_node)(${drain2_s} s)"
check "health: a Reason left on a resumed node (Slurm 24.11 keeps it) does not keep a CRITICAL node in service" \
  bash -c "[ $drain2_s -ge 0 ] && scripts/vm.sh run scontrol show node $NODE | grep -q 'State=[A-Z+]*DRAIN'"
V 'chmod 0400 /etc/munge/munge.key'
resume2_s=$(wait_node $((INTERVAL * 12)) 'State=IDLE ')
check "health: ...and the fix resumes it again" bash -c "[ $resume2_s -ge 0 ]"

stage "6. /run/enroot after a real reboot"
# enroot is "used" on this node (its config names the per-user runtime path). For the control, the
# agent's node.enroot.run_dir is off (with /run/enroot missing it is CRITICAL, and the health check
# would drain the node before the launch that shows the repair).
V 'mkdir -p /etc/enroot && echo "ENROOT_RUNTIME_PATH /run/enroot/user-\$(id -u)" >/etc/enroot/enroot.conf &&
   cp /etc/launchguard/launchguard.toml /root/launchguard.toml.orig && { echo "disabled = [\"node.enroot.run_dir\"]"; cat /root/launchguard.toml.orig; } >/etc/launchguard/launchguard.toml && rm -rf /run/enroot'
n0=$(repairs)
srun_as_user enroot1 true
n1=$(repairs)
V 'cp /root/launchguard.toml.orig /etc/launchguard/launchguard.toml'
say "control, without the tmpfiles line: /run/enroot removed (as a reboot leaves it), one srun as lgtest: rc $(rc enroot1), stderr: '$(tr '\n' ';' <"$WORK/enroot1.err")', slurmd.log repair lines $n0 → $n1" \
  "$(V "grep 'repaired .*/run/enroot' /var/log/slurm/slurmd.log | tail -n 1")"
check "control: without /run/enroot the first launch repairs it (slurmd.log), says nothing to the user and runs" \
  bash -c "[ $(rc enroot1) = 0 ] && [ $n1 -gt $n0 ] && [ -z \"\$(grep '^launchguard: ' '$WORK/enroot1.err')\" ]"
readme_run tmpfiles '^ln -s /usr/share/launchguard/tmpfiles.d/enroot-runtime.conf'
check "docs/install.md: the enroot tmpfiles line runs" [ "$(rc tmpfiles)" = 0 ]
boot0=$(V 'cat /proc/sys/kernel/random/boot_id')
scripts/vm.sh reboot
boot1=$(V 'cat /proc/sys/kernel/random/boot_id')
modes=$(V 'stat -c "%n %a %U:%G" /run/launchguard /run/enroot; systemctl is-active launchguard-agent')
say "after a real reboot (boot_id ${boot0:0:8}… → ${boot1:0:8}…): $(tr '\n' ';' <<<"$modes")"
check "after a real reboot of the VM (a new boot_id): /run/enroot 1777 root:root, /run/launchguard 755 root:root, the agent active (enabled)" \
  bash -c "[ '$boot0' != '$boot1' ] && grep -qx '/run/enroot 1777 root:root' <<<'$modes' && grep -qx '/run/launchguard 755 root:root' <<<'$modes' && grep -qx active <<<'$modes'"
n2=$(repairs)
srun_as_user enroot2 true
n3=$(repairs)
say "first srun after the reboot: rc $(rc enroot2); slurmd.log repair lines $n2 → $n3"
check "the first launch after the reboot needs no repair of /run/enroot" bash -c "[ $(rc enroot2) = 0 ] && [ '$n2' = '$n3' ]"

finish
