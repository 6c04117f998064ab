#!/usr/bin/env bash
# A test node "as shipped": Debian 12 booted with systemd as PID 1 in a systemd-nspawn container, with
# Debian's munge, slurmctld and slurmd as systemd services (cluster `lgnode`, ports 8817/8818, beside
# the host's 6817/6818, the 24.11 chroot's 7817/7818 and multinode's 6917/6918; the container shares
# the host's network), and a non-root user `lgtest`. launchguard is NOT installed: that is what
# scripts/test-node.sh does, with the .deb and docs/install.md's own commands.
#
#   scripts/node.sh up          build the rootfs once (cached in /srv/lg-node), boot a fresh copy of it
#   scripts/node.sh rootfs      only build the cached rootfs (scripts/test.sh does it early, in the background)
#   scripts/node.sh down        `systemctl poweroff` inside, wait, drop the copy
#   scripts/node.sh shell [CMD…] a root shell (or CMD) inside: nsenter into the container's PID 1
#   scripts/node.sh pid         the container's PID 1 as the host sees it
#   scripts/node.sh reboot      `systemctl reboot` inside; waits until it is running again
#
# The rootfs (`debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm`, then
# munge, slurmd, slurmctld, slurm-client with apt inside) is built once and never booted itself:
# every `up` boots an overlayfs over it (writable layer in /run/lg-node/upper), so a run starts
# from the same node and `down` forgets it. Delete /srv/lg-node to rebuild. Boot:
# `systemd-nspawn -D ROOT -b --register=no --keep-unit` (this machine has no systemd as PID 1, so
# nspawn must not talk to machined or create a scope). Needs root; installs debootstrap and
# systemd-container with apt-get when missing.
set -euo pipefail
. "$(dirname "$0")/lib/slurm-conf.sh"
. "$(dirname "$0")/lib/apt.sh"
. "$(dirname "$0")/lib/pidfile.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${LG_NODE_ROOTFS:-/srv/lg-node}
RUN=/run/lg-node
NAME=lgnode
CLUSTER=lgnode
PORTS=(8817 8818)
MARK="# written by launchguard scripts/node.sh"

log() { printf 'node: %s\n' "$*" >&2; }
die() { printf 'node: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, systemd-nspawn, nsenter)"


# The cached rootfs: built in $CACHE.tmp and renamed when complete, so an interrupted build is redone.
build_rootfs() {
  [ -x "$CACHE/usr/sbin/slurmd" ] && [ -e "$CACHE/.lg-node-complete" ] && return 0
  local need=()
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v systemd-nspawn >/dev/null || need+=(systemd-container)
  [ ${#need[@]} = 0 ] || { log "installing ${need[*]} (apt-get)"; apt_install "${need[@]}"; }
  local T=$CACHE.tmp mirror
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  rm -rf "$T"
  log "debootstrap bookworm into $T (${mirror:-http://deb.debian.org/debian}; log $T.log; a few minutes)"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$T" \
    "${mirror:-http://deb.debian.org/debian}" >"$T.log" 2>&1 || die "debootstrap failed: see $T.log"
  # apt inside sees the same archive as the host (bookworm, -updates, -security).
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$T/etc/apt/sources.list.d/"
    rm -f "$T/etc/apt/sources.list"
  fi
  cp /etc/resolv.conf "$T/etc/resolv.conf" 2>/dev/null || true
  # No daemon starts inside the chroot while packages install.
  printf '#!/bin/sh\nexit 101\n' >"$T/usr/sbin/policy-rc.d"
  chmod 755 "$T/usr/sbin/policy-rc.d"
  log "installing munge slurmd slurmctld slurm-client in the rootfs"
  chroot "$T" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      munge slurmd slurmctld slurm-client procps iproute2 >/dev/null' >>"$T.log" 2>&1 ||
    die "apt-get in the rootfs failed: see $T.log"
  rm -f "$T/usr/sbin/policy-rc.d"
  chroot "$T" bash -c 'id lgtest >/dev/null 2>&1 || useradd -m -u 1500 -s /bin/bash lgtest'
  # The package's munge.key is made by munge's postinst; make sure there is one (munge:munge 0400).
  [ -s "$T/etc/munge/munge.key" ] || { dd if=/dev/urandom of="$T/etc/munge/munge.key" bs=1 count=128 status=none; }
  chroot "$T" bash -c 'chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key'
  echo "$NAME" >"$T/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$NAME" >"$T/etc/hosts"
  # apt caches are not needed in the node.
  chroot "$T" apt-get clean
  touch "$T/.lg-node-complete"
  rm -rf "$CACHE"
  mv "$T" "$CACHE"
  rm -f "$T.log"
}

# The node's Slurm: one node, its own cluster name and ports; slurmd runs `launchguard health` (through /usr/sbin/launchguard-health) as
# HealthCheckProgram every LG_NODE_HEALTH_INTERVAL seconds (default 5) once launchguard is installed.
write_slurm_conf() {
  local R=$1 cpus mem
  cpus=$(nproc --all)
  mem=$(($(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 / 4))
  mkdir -p "$R/etc/slurm/plugstack.conf.d"
  cat >"$R/etc/slurm/slurm.conf" <<CONF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$NAME(127.0.0.1)
SlurmctldPort=${PORTS[0]}
SlurmdPort=${PORTS[1]}
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
$(slurm_conf_daemons)
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
HealthCheckProgram=${LG_NODE_HEALTH_PROGRAM:-/usr/sbin/launchguard-health}
HealthCheckInterval=${LG_NODE_HEALTH_INTERVAL:-5}
HealthCheckNodeState=ANY
PlugStackConfig=/etc/slurm/plugstack.conf
NodeName=$NAME NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  echo "include /etc/slurm/plugstack.conf.d/*.conf" >"$R/etc/slurm/plugstack.conf"
  mkdir -p "$R/var/spool/slurmd" "$R/var/spool/slurmctld" "$R/var/log/slurm"
}

nspawn_pid() { pidfile_pid "$RUN/nspawn.pid"; }

# The container's PID 1: the child of systemd-nspawn whose pid in its own namespace is 1.
leader() {
  local np p
  np=$(nspawn_pid) || return 1
  for p in $(cat /proc/"$np"/task/*/children 2>/dev/null); do
    if awk '/^NSpid:/ { exit !($NF == 1) }' "/proc/$p/status" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

inside() {
  local p
  p=$(leader) || die "the node is not up (scripts/node.sh up)"
  nsenter -t "$p" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 "$@"
}

# Waits until systemd inside says running (or degraded: then lists the failed units and fails).
wait_running() {
  local i s=""
  for i in $(seq 300); do
    if leader >/dev/null; then
      s=$(inside systemctl is-system-running 2>/dev/null || true)
      case "$s" in
        running) return 0 ;;
        degraded)
          inside systemctl --failed --no-legend >&2 || true
          return 1 ;;
      esac
    fi
    nspawn_pid >/dev/null || { tail -n 20 "$RUN/nspawn.log" >&2; die "systemd-nspawn exited"; }
    sleep 0.2
  done
  die "the node's systemd did not reach running in 60 s (is-system-running: ${s:-no answer})"
}

wait_slurm() {
  local i
  for i in $(seq 150); do
    if inside sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)$'; then return 0; fi
    sleep 0.2
  done
  inside sinfo >&2 || true
  die "node $NAME did not become idle in 30 s"
}

boot() {
  setsid systemd-nspawn -D "$RUN/root" -b --register=no --keep-unit --machine="$NAME" \
    --console=passive >>"$RUN/nspawn.log" 2>&1 </dev/null &
  echo $! >"$RUN/nspawn.pid"
}

up() {
  build_rootfs
  if nspawn_pid >/dev/null; then log "already up (PID 1 = $(leader))"; return 0; fi
  local p
  for p in "${PORTS[@]}"; do
    ! ss -ltnH "sport = :$p" | grep -q . || die "port $p is in use on this machine (another node up?)"
  done
  mkdir -p "$RUN"
  mountpoint -q "$RUN/root" && umount "$RUN/root"
  rm -rf "$RUN/upper" "$RUN/work"
  mkdir -p "$RUN/upper" "$RUN/work" "$RUN/root"
  mount -t overlay overlay -o "lowerdir=$CACHE,upperdir=$RUN/upper,workdir=$RUN/work" "$RUN/root"
  write_slurm_conf "$RUN/root"
  log "booting $CACHE (overlay $RUN/root; console log $RUN/nspawn.log)"
  local t0=$SECONDS
  boot
  wait_running || die "the node booted degraded"
  inside systemctl is-active --quiet munge slurmctld slurmd ||
    die "munge, slurmctld and slurmd are not all active: $(inside systemctl is-active munge slurmctld slurmd | tr '\n' ' ')"
  wait_slurm
  log "up in $((SECONDS - t0)) s: PID 1 = $(leader), cluster $CLUSTER on ports ${PORTS[*]}, $(inside srun --version)"
}

down() {
  local np i
  if np=$(nspawn_pid); then
    inside systemctl poweroff >/dev/null 2>&1 || true
    for i in $(seq 150); do kill -0 "$np" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$np" 2>/dev/null; then
      log "systemd-nspawn still running after 30 s: SIGTERM to $np"
      kill "$np" 2>/dev/null || true
      for i in $(seq 50); do kill -0 "$np" 2>/dev/null || break; sleep 0.2; done
    fi
  fi
  rm -f "$RUN/nspawn.pid"
  if mountpoint -q "$RUN/root"; then umount "$RUN/root" || umount -l "$RUN/root"; fi
  rm -rf "$RUN/upper" "$RUN/work"
  log "down"
}

# `systemctl reboot` inside: systemd-nspawn exits (status 133, as machined's units expect) and is
# started again on the same overlay, as a node's firmware would boot it again.
reboot() {
  local np i
  np=$(nspawn_pid) || die "the node is not up"
  inside systemctl reboot >/dev/null 2>&1 || true
  for i in $(seq 150); do kill -0 "$np" 2>/dev/null || break; sleep 0.2; done
  ! kill -0 "$np" 2>/dev/null || die "systemd-nspawn did not exit after systemctl reboot"
  local t0=$SECONDS
  boot
  wait_running || die "the node came back degraded"
  wait_slurm
  log "rebooted in $((SECONDS - t0)) s: PID 1 = $(leader)"
}

case "${1:-}" in
  up) up ;;
  rootfs) build_rootfs; log "rootfs ready in $CACHE" ;;
  down) down ;;
  pid) leader ;;
  reboot) reboot ;;
  shell)
    shift
    if [ $# = 0 ]; then inside bash -l; else inside "$@"; fi ;;
  *) echo "usage: scripts/node.sh up|rootfs|down|shell [CMD…]|pid|reboot" >&2; exit 2 ;;
esac
