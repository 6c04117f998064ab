#!/usr/bin/env bash
# A one-node Slurm test cluster on this machine, on loopback, for launchguard's demo and tests.
#
#   scripts/cluster.sh up       install what is missing (apt), write the config, start munged, slurmctld, slurmd
#   scripts/cluster.sh down     stop slurmd and slurmctld, remove launchguard's plugstack line
#   scripts/cluster.sh status   show the daemons and the node
#   scripts/cluster.sh install-plugin [args…]   copy the built plugin into place and list it in plugstack
#
# Follows ../shared/design/local-cluster.md (parts A–D): cgroup v1 with ConstrainDevices=yes and two harmless
# fake GPU device nodes (/dev/fakegpu0-1, major 195, no driver) listed in gres.conf as Gres=gpu:2, a fake
# /dev/infiniband/uverbs0, and a non-root user `lgtest`. Must run as root. Never kills daemons by name:
# only through their pid files. Re-running `up` rewrites the config and restarts the daemons.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONF_DIR=/etc/slurm
MARK="# written by launchguard scripts/cluster.sh"
PLUGIN_DIR=/usr/local/lib/launchguard
PLUGIN_SO=$PLUGIN_DIR/spank_launchguard.so
DROPIN=$CONF_DIR/plugstack.conf.d/50-launchguard.conf
TEST_USER=lgtest
NODE=$(hostname -s)

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts slurmctld/slurmd)"

install_packages() {
  local need=()
  for cmd_pkg in slurmctld:slurmctld slurmd:slurmd srun:slurm-client munged:munge clang:clang; do
    command -v "${cmd_pkg%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${cmd_pkg%%:*}" ] || need+=("${cmd_pkg#*:}")
  done
  [ -f /usr/include/slurm/spank.h ] || need+=(libslurm-dev)
  ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {
  local f=$1 i
  if pid_alive "$f"; then
    kill "$(cat "$f")" 2>/dev/null || true
    for i in $(seq 50); do pid_alive "$f" || break; sleep 0.1; done
  fi
  rm -f "$f"
}

start_munge() {
  if [ ! -s /etc/munge/munge.key ]; then
    log "creating /etc/munge/munge.key"
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
  fi
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge && chown munge:munge /run/munge
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged --force
    sleep 0.5
    munge -n | unmunge >/dev/null || die "munged does not answer"
  fi
}

make_devices() {
  [ -e /dev/fakegpu0 ] || mknod /dev/fakegpu0 c 195 0
  [ -e /dev/fakegpu1 ] || mknod /dev/fakegpu1 c 195 1
  mkdir -p /dev/infiniband
  [ -e /dev/infiniband/uverbs0 ] || mknod /dev/infiniband/uverbs0 c 231 192
  chmod 666 /dev/fakegpu0 /dev/fakegpu1 /dev/infiniband/uverbs0
}

write_config() {
  local cpus mem
  cpus=$(nproc --all)
  mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 / 2 ))
  mkdir -p /var/spool/slurmd /var/spool/slurmctld $CONF_DIR/plugstack.conf.d
  if [ -f $CONF_DIR/slurm.conf ] && ! grep -qF "$MARK" $CONF_DIR/slurm.conf; then
    log "keeping the existing slurm.conf as slurm.conf.pre-launchguard"
    cp -a $CONF_DIR/slurm.conf $CONF_DIR/slurm.conf.pre-launchguard
  fi
  grep -qE "^127\.0\.0\.1[[:space:]].*\b$NODE\b" /etc/hosts || echo "127.0.0.1 $NODE" >> /etc/hosts
  cat > $CONF_DIR/slurm.conf <<CONF
$MARK
ClusterName=lgtest
SlurmctldHost=$NODE(127.0.0.1)
AuthType=auth/munge
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
MpiDefault=none
ReturnToService=2
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdLogFile=/var/log/slurmd.log
SlurmdDebug=info
PlugStackConfig=$CONF_DIR/plugstack.conf
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  cat > $CONF_DIR/cgroup.conf <<CONF
$MARK
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainDevices=yes
ConstrainCores=no
ConstrainRAMSpace=no
CONF
  printf '%s\nNodeName=%s Name=gpu File=/dev/fakegpu[0-1]\n' "$MARK" "$NODE" > $CONF_DIR/gres.conf
  echo "include $CONF_DIR/plugstack.conf.d/*.conf" > $CONF_DIR/plugstack.conf
}

wait_idle() {
  local i
  for i in $(seq 100); do
    if sinfo -h -n "$NODE" -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then return 0; fi
    if sinfo -h -n "$NODE" -o '%T' 2>/dev/null | grep -qE 'drain|down'; then
      scontrol update nodename="$NODE" state=resume 2>/dev/null || true
    fi
    sleep 0.2
  done
  sinfo -N -l >&2 || true
  die "node $NODE did not become idle (see /var/log/slurmd.log, /var/log/slurmctld.log)"
}

start_slurm() {
  stop_pidfile /run/slurmd.pid
  stop_pidfile /run/slurmctld.pid
  # Leftover cgroups of killed steps keep device rules around; remove empty ones.
  for d in /sys/fs/cgroup/devices/slurm /sys/fs/cgroup/freezer/slurm /sys/fs/cgroup/devices/slurm_$NODE /sys/fs/cgroup/freezer/slurm_$NODE; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  log "starting slurmctld and slurmd"
  slurmctld
  for _ in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.1; done
  slurmd
  wait_idle
}

add_user() {
  id -u $TEST_USER >/dev/null 2>&1 || useradd -m -s /bin/bash $TEST_USER
}

# install-plugin [plugstack args…]: copies target/release/libspank_launchguard.so into $PLUGIN_DIR
# atomically (a running srun never sees a half-written file) and writes the plugstack drop-in.
install_plugin() {
  local so=${LG_PLUGIN_SO:-$ROOT/target/release/libspank_launchguard.so}
  [ -f "$so" ] || die "$so not built: run 'cargo build --release -p spank-launchguard' first"
  mkdir -p $PLUGIN_DIR
  cp "$so" $PLUGIN_SO.tmp && chmod 755 $PLUGIN_SO.tmp && mv -f $PLUGIN_SO.tmp $PLUGIN_SO
  echo "required $PLUGIN_SO $*" > $DROPIN.tmp && mv -f $DROPIN.tmp $DROPIN
  log "plugstack: $(cat $DROPIN)"
}

case "${1:-}" in
  up)
    install_packages
    start_munge
    make_devices
    add_user
    write_config
    start_slurm
    log "cluster up: node $NODE ($(sinfo -h -o '%G' -n "$NODE")), user $TEST_USER"
    ;;
  down)
    rm -f $DROPIN
    stop_pidfile /run/slurmd.pid
    stop_pidfile /run/slurmctld.pid
    log "slurmd and slurmctld stopped (munged left running)"
    ;;
  status)
    for f in /run/slurmctld.pid /run/slurmd.pid; do
      if pid_alive $f; then echo "$f: running ($(cat $f))"; else echo "$f: not running"; fi
    done
    sinfo -N -o '%N %T %G' 2>/dev/null || true
    cat $DROPIN 2>/dev/null || echo "no launchguard plugstack line"
    ;;
  install-plugin)
    shift; install_plugin "$@"
    ;;
  remove-plugin)
    rm -f $DROPIN
    ;;
  *)
    echo "usage: $0 up|down|status|install-plugin [args…]|remove-plugin" >&2; exit 2 ;;
esac
