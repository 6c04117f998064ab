#!/usr/bin/env bash
# A one-node Slurm test cluster on this machine, on loopback, for launchguard's demo and tests.
#
#   scripts/cluster.sh up       install what is missing (apt), write the config, start munged, slurmctld, slurmd
#   scripts/cluster.sh prepare  only install what is missing (apt; the chroot and Slurm inside it); starts nothing
#   scripts/cluster.sh down     stop slurmd and slurmctld, remove launchguard's plugstack line
#   scripts/cluster.sh status   show the daemons and the node
#   scripts/cluster.sh build-plugin             build spank_launchguard.so against this cluster's headers
#   scripts/cluster.sh install-plugin [args…]   copy the built plugin into place and list it in plugstack
#   scripts/cluster.sh install-bin    put the built launchguard binary on PATH (/usr/local/bin)
#   scripts/cluster.sh agent-up       (host) install-bin, then run `launchguard agent` without systemd
#   scripts/cluster.sh agent-down     (host) stop that agent (`down` stops it too)
#
# LG_CLUSTER selects the cluster:
#   host    (default) the machine's own Slurm (Debian 12: 22.05), ports 6817/6818
#   trixie  Slurm 24.11 from Debian 13 in a debootstrap chroot at /srv/lg-trixie (created on first `up`,
#           reused after), ports 7817/7818, its own munged and key; proctrack/linuxproc and task/none
#           (the fake GPUs are listed in gres.conf but not constrained).
#   arm64   Slurm 22.05 of Debian 12 for arm64 (aarch64, as on Grace nodes) in a debootstrap chroot at
#           /srv/lg-arm64, run by qemu-user through binfmt_misc (qemu-user-static; created on first
#           `up`, reused after), ports 8917/8918, cluster lgarm64, otherwise like trixie. The plugin
#           is cross-built for aarch64-unknown-linux-gnu (gcc-aarch64-linux-gnu links it).
#
# cgroup v1 with ConstrainDevices=yes and two harmless
# fake GPU device nodes (/dev/fakegpu0-1, major 195, no driver) listed in gres.conf as Gres=gpu:2, a fake
# /dev/infiniband/uverbs0, and a non-root user `lgtest`. Must run as root. Never kills daemons by name:
# only through their pid files. Re-running `up` rewrites the config and restarts the daemons.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
. "$(dirname "$0")/lib/slurm-conf.sh"
. "$(dirname "$0")/lib/pidfile.sh"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${LG_CLUSTER:-host}
case "$TARGET" in
  host)   R="";              CLUSTER=lgtest;     PORTS="";                               BUILD_DIR=$ROOT/target ;;
  trixie) R=/srv/lg-trixie;  CLUSTER=lgtest2411; PORTS=$'SlurmctldPort=7817\nSlurmdPort=7818'; BUILD_DIR=$ROOT/target/slurm-24.11 ;;
  sid)    R=/srv/lg-sid;     CLUSTER=lgtest2605; PORTS=$'SlurmctldPort=7917\nSlurmdPort=7918'; BUILD_DIR=$ROOT/target/slurm-26.05 ;;
  arm64)  R=/srv/lg-arm64;   CLUSTER=lgarm64;    PORTS=$'SlurmctldPort=8917\nSlurmdPort=8918'; BUILD_DIR=$ROOT/target ;;
  *) echo "cluster: LG_CLUSTER must be host, trixie, sid or arm64, not '$TARGET'" >&2; exit 2 ;;
esac
# The chroot's Debian release and architecture, and the Rust target the plugin is built for.
SUITE=trixie; ARCH=""; RUST_TARGET=""
[ "$TARGET" != sid ] || SUITE=sid
[ "$TARGET" != arm64 ] || { SUITE=bookworm; ARCH=arm64; RUST_TARGET=aarch64-unknown-linux-gnu; }
CONF_DIR=/etc/slurm
MARK="# written by launchguard scripts/cluster.sh"
PLUGIN_DIR=/usr/local/lib/launchguard
PLUGIN_SO=$PLUGIN_DIR/spank_launchguard.so
# The package's name for the line (it sorts after Pyxis's pyxis.conf); OLD_DROPIN is the name this
# script wrote before, removed wherever the line is written or removed so no node lists launchguard twice.
DROPIN=$CONF_DIR/plugstack.conf.d/zz-launchguard.conf
OLD_DROPIN=$CONF_DIR/plugstack.conf.d/50-launchguard.conf
TEST_USER=lgtest
NODE=$(hostname -s)

log() { printf 'cluster[%s]: %s\n' "$TARGET" "$*" >&2; }
die() { printf 'cluster[%s]: error: %s\n' "$TARGET" "$*" >&2; exit 1; }
# Runs a command on the cluster's side: directly for host, inside the chroot for trixie.
on() { if [ -n "$R" ]; then chroot "$R" "$@"; else "$@"; fi; }

# Starts a daemon (through `on`) without the descriptors above stderr that this script inherited: a
# caller's `flock LOCK scripts/cluster.sh up` lock would otherwise be held by munged (which keeps
# them) for its whole life, and every later `flock LOCK …` would wait forever.
start_daemon() {
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    on "$@"
  )
}

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts slurmctld/slurmd)"

install_packages() {
  local need=()
  for cmd_pkg in slurmctld:slurmctld slurmd:slurmd srun:slurm-client munged:munge clang:clang; do
    command -v "${cmd_pkg%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${cmd_pkg%%:*}" ] || need+=("${cmd_pkg#*:}")
  done
  [ -f /usr/include/slurm/spank.h ] || need+=(libslurm-dev)
  # The PMIx library Slurm's mpi/pmix plugin loads (node.pmix tests hide it in a mount namespace).
  [ -n "$R" ] || [ -e /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so ] || need+=(libpmix-dev)
  ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} (apt-get)"
    apt_install "${need[@]}"
  fi
}

# arm64: qemu-user registered with binfmt_misc (with the F flag, so binaries in the chroot run without
# a qemu inside it), the cross linker and libc headers, and the Rust target.
cross_tools() {
  [ -n "$ARCH" ] || return 0
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  local need=()
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || need+=(qemu-user-static binfmt-support)
  command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
  [ -f /usr/aarch64-linux-gnu/include/stdio.h ] || need+=(libc6-dev-arm64-cross)
  if [ ${#need[@]} -gt 0 ]; then log "installing ${need[*]} (apt-get)"; apt_install "${need[@]}"; fi
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 ||
    die "qemu-aarch64 is not registered in /proc/sys/fs/binfmt_misc"
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$RUST_TARGET"; then
    log "rustup target add $RUST_TARGET"
    rustup target add "$RUST_TARGET" >&2
  fi
}

# The chroot (trixie: Slurm 24.11; arm64: Debian 12's Slurm 22.05 for arm64): debootstrap it once,
# mount /proc, /sys and /dev, install Slurm inside.
make_chroot() {
  [ -n "$R" ] || return 0
  if [ ! -x "$R/usr/bin/apt-get" ]; then
    command -v debootstrap >/dev/null || apt_install debootstrap
    local mirror
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    # Into $R.tmp, renamed when complete: an interrupted debootstrap is redone, never half-used.
    log "debootstrap $SUITE${ARCH:+ ($ARCH)} into $R (${mirror:-http://deb.debian.org/debian}; minutes under emulation)"
    # --one-file-system: never into a /proc, /sys or /dev that an interrupted run left mounted there.
    # debootstrap's second stage mounts proc and sys in its target: an interrupted one leaves them.
    if [ -d "$R.tmp" ]; then
      findmnt -Rno TARGET "$R.tmp" 2>/dev/null | sort -r | xargs -r umount -l
      rm -rf --one-file-system "$R.tmp"
    fi
    if [ -n "$ARCH" ]; then
      debootstrap --arch="$ARCH" --variant=minbase --include=slurmd,slurmctld,slurm-client,munge,libslurm-dev \
        "$SUITE" "$R.tmp" "${mirror:-http://deb.debian.org/debian}" >/dev/null
    else
      debootstrap --variant=minbase "$SUITE" "$R.tmp" "${mirror:-http://deb.debian.org/debian}" >/dev/null
    fi
    if [ -e "$R" ]; then
      for m in dev sys proc; do ! mountpoint -q "$R/$m" || umount -R "$R/$m"; done
      rm -rf --one-file-system "$R"
    fi
    mv "$R.tmp" "$R"
  fi
  mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
  mountpoint -q "$R/sys" || mount --rbind /sys "$R/sys"
  mountpoint -q "$R/dev" || mount --rbind /dev "$R/dev"
  cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
  cp /etc/hosts "$R/etc/hosts"
  # sid's Release file carries a Valid-Until date a few days ahead (stable's has none); from a mirror
  # that serves a snapshot older than that, apt refuses it as expired ("Release file … is expired").
  [ "$SUITE" != sid ] || echo 'Acquire::Check-Valid-Until "false";' > "$R/etc/apt/apt.conf.d/80launchguard-snapshot"
  if [ ! -x "$R/usr/sbin/slurmd" ] || [ ! -f "$R/usr/include/slurm/spank.h" ]; then
    log "installing slurmctld slurmd slurm-client munge libslurm-dev in the chroot"
    chroot "$R" bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq slurmctld slurmd slurm-client munge libslurm-dev 2>&1 >/dev/null | grep -v "apt-utils is not installed" >&2; exit "${PIPESTATUS[0]}"'
  fi
}

# A daemon did not come up: print its log's last fatal/error lines and, for the causes we know, the fix.
daemon_failed() {
  local name=$1 logf=$R$2 lines
  lines=$(grep -E 'fatal|error' "$logf" 2>/dev/null | tail -n 3 || true)
  log "$name did not start; the last errors in $logf:"
  printf '  %s\n' "${lines:-(none: run '$name -D' by hand to see why)}" >&2
  case "$lines" in
    *"CLUSTER NAME MISMATCH"*)
      log "fix: $R/var/spool/slurmctld holds the state of another cluster; remove it (rm -rf $R/var/spool/slurmctld) if that cluster is gone, then run 'scripts/cluster.sh up' again" ;;
    *"Address already in use"*)
      log "fix: another daemon holds this cluster's port: stop it (ss -ltnp shows which), then run 'scripts/cluster.sh up' again" ;;
    *"munge"*|*"Munge"*)
      log "fix: munged does not answer: check $R/var/log/munge/munged.log and 'munge -n | unmunge'" ;;
  esac
  exit 1
}

start_munge() {
  if [ ! -s "$R/etc/munge/munge.key" ]; then
    log "creating $R/etc/munge/munge.key"
    dd if=/dev/urandom of="$R/etc/munge/munge.key" bs=1 count=128 status=none
  fi
  on chown munge:munge /etc/munge/munge.key; chmod 400 "$R/etc/munge/munge.key"
  mkdir -p "$R/run/munge" && on chown munge:munge /run/munge
  if ! on bash -c 'munge -n 2>/dev/null | unmunge >/dev/null 2>&1'; then
    log "starting munged"
    start_daemon runuser -u munge -- /usr/sbin/munged --force
    local i
    for i in $(seq 100); do # munged answers within a second; 10 s on an emulated (arm64) chroot
      on bash -c 'munge -n 2>/dev/null | unmunge >/dev/null 2>&1' && break
      sleep 0.1
    done
    on bash -c 'munge -n | unmunge >/dev/null' || die "munged does not answer"
  fi
}

make_devices() {
  [ -e /dev/fakegpu0 ] || mknod /dev/fakegpu0 c 195 0
  [ -e /dev/fakegpu1 ] || mknod /dev/fakegpu1 c 195 1
  mkdir -p /dev/infiniband
  [ -e /dev/infiniband/uverbs0 ] || mknod /dev/infiniband/uverbs0 c 231 192
  [ -e /dev/infiniband/uverbs1 ] || mknod /dev/infiniband/uverbs1 c 231 193
  chmod 666 /dev/fakegpu0 /dev/fakegpu1 /dev/infiniband/uverbs0 /dev/infiniband/uverbs1
}

write_config() {
  local cpus mem
  cpus=$(nproc --all)
  mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 / 2 ))
  # Tasks are bound to their CPUs as on a site's node, so that `nproc` in a step shows the CPUs per
  # task launchguard's CPU line speaks of: on the host, task/cgroup with ConstrainCores=yes (the
  # step's cpuset, cgroup v1) plus task/affinity (sched_setaffinity); in a chroot task/affinity
  # alone (a second slurmd on the same cgroup v1 hierarchy would share the host slurmd's slurm_NODE
  # cgroups).
  local C=$R$CONF_DIR proctrack=proctrack/cgroup task=task/cgroup,task/affinity gres=gpu:2 grestypes=gpu
  local rdma="NodeName=$NODE Name=nic File=/dev/infiniband/uverbs0"
  if [ -n "$R" ]; then proctrack=proctrack/linuxproc; task=task/affinity; rdma=""
  else gres=gpu:2,nic:1; grestypes=gpu,nic; fi
  mkdir -p "$R/var/spool/slurmd" "$R/var/spool/slurmctld" "$C/plugstack.conf.d"
  if [ -f "$C/slurm.conf" ] && ! grep -qF "$MARK" "$C/slurm.conf"; then
    log "keeping the existing slurm.conf as slurm.conf.pre-launchguard"
    cp -a "$C/slurm.conf" "$C/slurm.conf.pre-launchguard"
  fi
  grep -qE "^127\.0\.0\.1[[:space:]].*\b$NODE\b" /etc/hosts || echo "127.0.0.1 $NODE" >> /etc/hosts
  [ -z "$R" ] || cp /etc/hosts "$R/etc/hosts"
  cat > "$C/slurm.conf" <<CONF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
$PORTS
AuthType=auth/munge
ProctrackType=$proctrack
TaskPlugin=$task
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=$grestypes
$(slurm_conf_daemons)
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdLogFile=/var/log/slurmd.log
SlurmdDebug=info
PlugStackConfig=$CONF_DIR/plugstack.conf
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=$gres State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  cat > "$C/cgroup.conf" <<CONF
$MARK
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainDevices=yes
ConstrainCores=yes
ConstrainRAMSpace=no
CONF
  # On the host cluster, uverbs0 is also a GRES ("nic"): with ConstrainDevices=yes a step that does not
  # ask for it is denied the device, the misconfiguration launch.devices reports (tests/next_to_pyxis.rs).
  printf '%s\nNodeName=%s Name=gpu File=/dev/fakegpu[0-1]\n%s\n' "$MARK" "$NODE" "$rdma" > "$C/gres.conf"
  echo "include $CONF_DIR/plugstack.conf.d/*.conf" > "$C/plugstack.conf"
}

wait_idle() {
  local i tries=100
  [ -z "$ARCH" ] || tries=600 # emulated slurmd registers in seconds, not tenths
  for i in $(seq "$tries"); do
    if on sinfo -h -n "$NODE" -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then return 0; fi
    if on sinfo -h -n "$NODE" -o '%T' 2>/dev/null | grep -qE 'drain|down'; then
      on scontrol update nodename="$NODE" state=resume 2>/dev/null || true
    fi
    sleep 0.2
  done
  on sinfo -N -l >&2 || true
  die "node $NODE did not become idle (see $R/var/log/slurmd.log, $R/var/log/slurmctld.log)"
}

start_slurm() {
  stop_pidfile "$R/run/slurmd.pid"
  stop_pidfile "$R/run/slurmctld.pid"
  # Leftover cgroups of killed steps keep device rules around; remove empty ones.
  [ -n "$R" ] || for d in /sys/fs/cgroup/devices/slurm /sys/fs/cgroup/freezer/slurm /sys/fs/cgroup/devices/slurm_$NODE /sys/fs/cgroup/freezer/slurm_$NODE; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  log "starting slurmctld and slurmd"
  start_daemon slurmctld || daemon_failed slurmctld /var/log/slurmctld.log
  local up=""
  for _ in $(seq 50); do on scontrol ping >/dev/null 2>&1 && { up=1; break; }; sleep 0.1; done
  [ -n "$up" ] || pid_alive "$R/run/slurmctld.pid" || daemon_failed slurmctld /var/log/slurmctld.log
  start_daemon slurmd || daemon_failed slurmd /var/log/slurmd.log
  sleep 0.2
  pid_alive "$R/run/slurmd.pid" || daemon_failed slurmd /var/log/slurmd.log
  wait_idle
  # Jobs left by an interrupted run (a killed srun can leave its job RUNNING with no step) would hold
  # CPUs and make every later test wait for resources.
  local jobs
  jobs=$(on squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)
  if [ -n "${jobs// /}" ]; then
    log "cancelling leftover jobs: $jobs"
    # shellcheck disable=SC2086
    on scancel $jobs || true
  fi
}

add_user() {
  id -u $TEST_USER >/dev/null 2>&1 || useradd -m -s /bin/bash $TEST_USER
  if [ -n "$R" ] && ! chroot "$R" id -u $TEST_USER >/dev/null 2>&1; then
    chroot "$R" useradd -m -s /bin/bash -u "$(id -u $TEST_USER)" $TEST_USER
  fi
}

# build-plugin: spank_launchguard.so against this cluster's Slurm headers, in its own target dir.
build_plugin() {
  log "building spank_launchguard.so${RUST_TARGET:+ for $RUST_TARGET} against $R/usr/include/slurm (into $BUILD_DIR)"
  # A first build for a release starts from another release's build dir when there is one: only the
  # plugin crate itself depends on the headers, so cargo rebuilds that and keeps every dependency
  # (minutes on a small machine).
  local seed
  if [ "$BUILD_DIR" != "$ROOT/target" ] && [ ! -d "$BUILD_DIR" ]; then
    for seed in "$ROOT"/target/slurm-[0-9][0-9].[0-9][0-9]/; do
      [ -d "$seed/release" ] || continue
      log "seeding $BUILD_DIR from ${seed%/}"
      rm -rf "$BUILD_DIR.tmp" && cp -a "${seed%/}" "$BUILD_DIR.tmp" && mv "$BUILD_DIR.tmp" "$BUILD_DIR"
      break
    done
  fi
  (cd "$ROOT" && SLURM_INCLUDE_DIR="$R/usr/include" CARGO_TARGET_DIR="$BUILD_DIR" \
    cargo build --release --quiet -p spank-launchguard ${RUST_TARGET:+--target "$RUST_TARGET"})
}

# install-plugin [plugstack args…]: copies target/release/libspank_launchguard.so into $PLUGIN_DIR
# atomically (a running srun never sees a half-written file) and writes the plugstack drop-in.
install_plugin() {
  local so=${LG_PLUGIN_SO:-$BUILD_DIR/${RUST_TARGET:+$RUST_TARGET/}release/libspank_launchguard.so}
  [ -f "$so" ] || die "$so not built: run 'LG_CLUSTER=$TARGET scripts/cluster.sh build-plugin' first"
  mkdir -p "$R$PLUGIN_DIR"
  cp "$so" "$R$PLUGIN_SO.tmp" && chmod 755 "$R$PLUGIN_SO.tmp" && mv -f "$R$PLUGIN_SO.tmp" "$R$PLUGIN_SO"
  echo "required $PLUGIN_SO $*" > "$R$DROPIN.tmp" && mv -f "$R$DROPIN.tmp" "$R$DROPIN"
  rm -f "$R$OLD_DROPIN"
  log "plugstack: $(cat "$R$DROPIN")"
}

# install-bin: the built `launchguard` binary onto PATH (/usr/local/bin), as docs/install.md's admin commands
# expect; the package installs /usr/bin/launchguard instead.
install_bin() {
  local bin=$ROOT/target/release/launchguard
  [ -x "$bin" ] || die "$bin not built: run 'cargo build --release -p launchguard' first"
  install -m 755 "$bin" /usr/local/bin/launchguard.tmp && mv -f /usr/local/bin/launchguard.tmp /usr/local/bin/launchguard
  # Its man pages (`man launchguard-agent` …), and Slurm's HealthCheckProgram wrapper pointing at this copy.
  local docs
  docs=$(mktemp -d)
  /usr/local/bin/launchguard generate-docs --out "$docs" >/dev/null || { rm -rf "$docs"; die "launchguard generate-docs failed"; }
  install -D -m 644 -t /usr/local/share/man/man1 "$docs"/man/*.1 || { rm -rf "$docs"; die "installing the man pages failed"; }
  rm -rf "$docs"
  sed 's|/usr/bin/launchguard|/usr/local/bin/launchguard|' "$ROOT/packaging/scripts/launchguard-health" >/usr/sbin/launchguard-health.tmp
  chmod 755 /usr/sbin/launchguard-health.tmp && mv -f /usr/sbin/launchguard-health.tmp /usr/sbin/launchguard-health
  log "installed /usr/local/bin/launchguard ($(/usr/local/bin/launchguard --version)), its man pages and /usr/sbin/launchguard-health"
}

# agent-up: the node agent without systemd (this machine has none as PID 1): `launchguard agent` in its
# own session, its log in $AGENT_LOG, its pid in $AGENT_PID; waits until its socket answers.
AGENT_PID=/run/launchguard-agent.pid
AGENT_LOG=/var/log/launchguard-agent.log
AGENT_SOCK=/run/launchguard/agent.sock
agent_up() {
  [ -z "$R" ] || die "agent-up runs the agent for the host cluster only"
  install_bin
  stop_pidfile "$AGENT_PID"
  rm -f "$AGENT_SOCK"  # a socket left by a killed agent would read as "up" below
  setsid /usr/local/bin/launchguard agent </dev/null >>"$AGENT_LOG" 2>&1 &
  echo $! > "$AGENT_PID"
  local i
  for i in $(seq 100); do
    [ -S "$AGENT_SOCK" ] && break
    pid_alive "$AGENT_PID" || { tail -n 5 "$AGENT_LOG" >&2; die "launchguard agent exited (log: $AGENT_LOG)"; }
    sleep 0.1
  done
  [ -S "$AGENT_SOCK" ] || die "launchguard agent did not open $AGENT_SOCK within 10 s (log: $AGENT_LOG)"
  log "launchguard agent running (pid $(cat "$AGENT_PID"), log $AGENT_LOG); 'launchguard status' asks it"
}

case "${1:-}" in
  up)
    [ -z "$R" ] && install_packages
    cross_tools
    make_chroot
    start_munge
    make_devices
    add_user
    write_config
    # Start clean: a leftover launchguard line pointing at a missing .so would stop slurmd from starting.
    rm -f "$R$DROPIN" "$R$OLD_DROPIN"
    start_slurm
    log "cluster up: $(on srun --version), node $NODE ($(on sinfo -h -o '%G' -n "$NODE")), user $TEST_USER"
    ;;
  prepare)
    [ -z "$R" ] && install_packages
    cross_tools
    make_chroot
    log "prepared: $(on slurmd -V)"
    ;;
  down)
    rm -f "$R$DROPIN" "$R$OLD_DROPIN"
    [ -n "$R" ] || stop_pidfile "$AGENT_PID"
    stop_pidfile "$R/run/slurmd.pid"
    stop_pidfile "$R/run/slurmctld.pid"
    if [ -n "$R" ]; then
      stop_pidfile "$R/run/munge/munged.pid"
      for m in dev sys proc; do mountpoint -q "$R/$m" && umount -R "$R/$m"; done
      log "slurmd, slurmctld and munged stopped; $R unmounted (kept for the next up)"
    else
      log "slurmd and slurmctld stopped (munged left running)"
    fi
    ;;
  status)
    pids=("$R/run/slurmctld.pid" "$R/run/slurmd.pid")
    [ -n "$R" ] || pids+=("$AGENT_PID")
    for f in "${pids[@]}"; do
      if pid_alive "$f"; then echo "$f: running ($(cat "$f"))"; else echo "$f: not running"; fi
    done
    on sinfo -N -o '%N %T %G' 2>/dev/null || true
    cat "$R$DROPIN" 2>/dev/null || echo "no launchguard plugstack line"
    ;;
  build-plugin)
    build_plugin
    ;;
  install-plugin)
    shift; install_plugin "$@"
    ;;
  remove-plugin)
    rm -f "$R$DROPIN" "$R$OLD_DROPIN"
    ;;
  install-bin)
    install_bin
    ;;
  agent-up)
    agent_up
    ;;
  agent-down)
    stop_pidfile "$AGENT_PID"
    ;;
  *)
    echo "usage: [LG_CLUSTER=host|trixie|arm64] $0 up|prepare|down|status|build-plugin|install-plugin [args…]|remove-plugin|install-bin|agent-up|agent-down" >&2; exit 2 ;;
esac
