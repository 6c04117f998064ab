#!/usr/bin/env bash
# A cgroup v2 GPU node: a real virtual machine with its own kernel, systemd as PID 1 and Slurm 24.11
# (Debian 13 "trixie": kernel 6.12, systemd 257) under QEMU's software emulation (TCG), with
# CgroupPlugin=cgroup/v2, ConstrainDevices=yes (Slurm's eBPF device filter), ConstrainCores=yes, and
# two harmless fake GPUs (/dev/fakegpu0-1, major 195, no driver) as Gres=gpu:2. There is no network:
# commands go in and results come back through a 9p share and a small service in the guest.
#
#   scripts/vm.sh image        install the host's tools (apt) and build the cached rootfs (debootstrap,
#                              /srv/lg-vm/rootfs-trixie; scripts/test.sh does this in the background)
#   scripts/vm.sh up           image, then a fresh disk made from the rootfs (mkfs.ext4 -d), boot it,
#                              wait for systemd's `running` and an idle Slurm node
#   scripts/vm.sh run [CMD…]   run CMD (or the script on stdin) as root in the guest; prints its output
#                              (stdout and stderr together) and exits with its status
#   scripts/vm.sh put FILE…    copy FILEs into the share: the guest reads them under /mnt/host/files/
#   scripts/vm.sh reboot       `systemctl reboot` inside; waits for the new boot (a new boot_id) and Slurm
#   scripts/vm.sh down         `systemctl poweroff` inside and wait for QEMU to exit (SIGTERM after 60 s)
#   scripts/vm.sh status       whether it is up, and its boot state
#
# Host side: qemu-system-x86 (on Debian 12 with qemu-utils from bookworm-backports, qemu-system-x86 is
# taken from backports too, through an apt configuration of its own under /srv/lg-vm/apt-bpo: the
# bookworm qemu-system-common 7.2 conflicts with it; /etc/apt is not changed), debootstrap, e2fsprogs
# (mkfs.ext4 -d: an image from a directory, without mount or loop device). /dev/kvm is not used: the
# one on the CI machine is a nested hypervisor a stock Debian kernel cannot run under, so TCG it is
# (boot to `running` in about 15-30 s, an idle guest takes about 14% of one core).
#
# The rootfs (debootstrap --variant=minbase of Debian's own packages, about 500 MB) is built once in
# rootfs-trixie.tmp and renamed when complete; its configuration (configure_rootfs below) is re-applied
# whenever this script's version of it changes. The rootfs is never booted itself: every `up` makes a
# new disk image from it, so a run starts from the same node and `down` forgets it. Delete /srv/lg-vm
# to rebuild. Needs root.
#
# Inside: hostname gpunode1, user lgtest (uid 1500), munge, slurmctld and slurmd as systemd services
# (cluster lgvm, SlurmUser=slurm), HealthCheckProgram=/usr/sbin/launchguard-health every 5 s (the
# package installs it), the share at /mnt/host, and a dummy network interface (Slurm resolves its
# addresses with AI_ADDRCONFIG and fails to bind with only `lo`; the interface sends nothing).
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
SUITE=trixie
CACHE=${LG_VM_CACHE:-/srv/lg-vm}
RFS=$CACHE/rootfs-$SUITE
IMG=$CACHE/disk-$SUITE.img
RUN=/run/lg-vm/$SUITE
SHARE=$RUN/share
NAME=gpunode1
# Seconds a `run` command may take before the host gives up waiting (the command goes on in the guest).
RUN_TIMEOUT=${LG_VM_RUN_TIMEOUT:-300}

log() { printf 'vm: %s\n' "$*" >&2; }
die() { printf 'vm: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, apt-get, the rootfs's owners)"

host_tools() {
  local need=()
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
  if ! command -v qemu-system-x86_64 >/dev/null; then
    if dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null | grep -q bpo; then
      # qemu-utils from bookworm-backports Breaks bookworm's qemu-system-common: the matching
      # qemu-system-x86 from backports, with apt's lists and archives kept under $CACHE/apt-bpo.
      log "installing qemu-system-x86 from bookworm-backports (the installed qemu-utils is from there)"
      local A=$CACHE/apt-bpo
      mkdir -p "$A/lists/partial" "$A/archives/partial"
      local s
      for s in bookworm bookworm-updates bookworm-backports; do
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $s main"
      done >"$A/sources.list"
      local o=(-o "Dir::Etc::sourcelist=$A/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$A/lists"
        -o "Dir::Cache::archives=$A/archives")
      apt_get "${o[@]}" update || die "apt-get update (backports) failed"
      apt_get "${o[@]}" install --no-install-recommends -t bookworm-backports qemu-system-x86 ||
        die "installing qemu-system-x86 from bookworm-backports failed"
    else
      need+=(qemu-system-x86 qemu-utils)
    fi
  fi
  [ ${#need[@]} = 0 ] || { log "installing ${need[*]} (apt-get)"; apt_install --no-install-recommends "${need[@]}" || die "apt-get install ${need[*]} failed"; }
}

# The Debian packages of the guest: systemd as init, a kernel and its initramfs, Slurm 24.11 and munge,
# and bpftool to show the eBPF device program Slurm attaches to a job's cgroup.
PACKAGES=systemd,systemd-sysv,dbus,udev,kmod,iproute2,linux-image-amd64,initramfs-tools,slurmd,slurmctld,slurm-client,munge,procps,util-linux,e2fsprogs,bpftool

debootstrap_rootfs() {
  [ -e "$RFS/.lg-vm-debootstrap" ] && return 0
  local T=$RFS.tmp mirror
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  rm -rf "$T"
  mkdir -p "$CACHE"
  log "debootstrap $SUITE into $T ($mirror; log $T.log; about 1-3 minutes)"
  # (one apt/dpkg at a time with the suite's other scripts: the same lock as scripts/lib/apt.sh)
  flock -o -w 900 /run/lock/launchguard-apt.lock \
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$T" "$mirror" >"$T.log" 2>&1 ||
    die "debootstrap failed: see $T.log"
  ls "$T"/boot/vmlinuz-* "$T"/boot/initrd.img-* >/dev/null 2>&1 || die "no kernel or initrd in $T/boot: see $T.log"
  chroot "$T" apt-get clean
  touch "$T/.lg-vm-debootstrap"
  rm -rf "$RFS"
  mv "$T" "$RFS"
  rm -f "$T.log"
}

# The guest's configuration, written into the rootfs (idempotent; re-run when this function changes).
configure_rootfs() {
  local R=$1
  echo "$NAME" >"$R/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$NAME" >"$R/etc/hosts"
  printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$R/etc/fstab"
  chroot "$R" passwd -d root >/dev/null
  chroot "$R" bash -c 'id lgtest >/dev/null 2>&1 || useradd -m -u 1500 -s /bin/bash lgtest'
  # The fake GPUs (195 is the NVIDIA major; no driver behind it: an allowed open(2) gives ENXIO, a
  # cgroup-denied one EPERM) and a fake InfiniBand verbs device, recreated at every boot.
  cat >"$R/etc/tmpfiles.d/lg-fakedev.conf" <<'EOF'
c! /dev/fakegpu0 0666 root root - 195:0
c! /dev/fakegpu1 0666 root root - 195:1
d /dev/infiniband 0755 root root -
c! /dev/infiniband/uverbs0 0666 root root - 231:192
EOF
  cat >"$R/etc/systemd/system/lg-dummy-net.service" <<'EOF'
[Unit]
Description=A dummy interface for Slurm (no network in this VM; Slurm binds with AI_ADDRCONFIG)
Before=munge.service slurmctld.service slurmd.service network.target
DefaultDependencies=no
After=systemd-udevd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy; ip addr replace 192.0.2.10/24 dev dummy0; ip link set dummy0 up; ip link set lo up'

[Install]
WantedBy=multi-user.target
EOF
  # The command channel: every /mnt/host/cmd/ID.sh is renamed ID.run and run by bash as root (each in
  # the background, so commands can overlap), its output in ID.out, then its exit status in ID.rc.
  # /mnt/host/boot gets "BOOT_ID STATE" once systemd is done booting (STATE: running or degraded).
  cat >"$R/usr/local/sbin/lg-vm-agent" <<'EOF'
#!/bin/bash
S=/mnt/host
mkdir -p $S
# (the virtio channel can appear after the first try: "9pnet_virtio: no channels available")
until mountpoint -q $S; do
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 hostshare $S 2>/dev/null || sleep 0.5
done
mkdir -p $S/cmd
state=$(systemctl is-system-running --wait 2>/dev/null)
echo "$(cat /proc/sys/kernel/random/boot_id) $state" >$S/boot.tmp && mv -f $S/boot.tmp $S/boot
# Polled every 0.3 s with bash builtins only (a fork or exec costs milliseconds of emulated CPU):
# `read -t` on a FIFO no one writes is the sleep.
mkfifo /run/lg-vm-agent.tick 2>/dev/null || true
exec 3<>/run/lg-vm-agent.tick
while :; do
  for f in $S/cmd/*.sh; do
    [ -e "$f" ] || continue
    id=${f%.sh}
    mv "$f" "$id.run" 2>/dev/null || continue
    (cd /root && bash "$id.run" >"$id.out" 2>&1 </dev/null; echo $? >"$id.rc.tmp"; mv -f "$id.rc.tmp" "$id.rc") &
  done
  read -r -t 0.3 -u 3 _ || true
done
EOF
  chmod 755 "$R/usr/local/sbin/lg-vm-agent"
  cat >"$R/etc/systemd/system/lg-vm-agent.service" <<'EOF'
[Unit]
Description=Command channel of the launchguard test VM (9p share /mnt/host)
After=local-fs.target

[Service]
ExecStart=/usr/local/sbin/lg-vm-agent
Restart=always
RestartSec=1
KillMode=process

[Install]
WantedBy=multi-user.target
EOF
  mkdir -p "$R/etc/slurm/plugstack.conf.d" "$R/var/log/slurm"
  cat >"$R/etc/slurm/slurm.conf" <<EOF
# written by launchguard scripts/vm.sh
ClusterName=lgvm
SlurmctldHost=$NAME
AuthType=auth/munge
CredType=cred/munge
SlurmUser=slurm
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu,nic
MpiDefault=none
ReturnToService=2
# (jobs share the node: without it a job takes all of RealMemory and the next one waits)
DefMemPerCPU=500
# (an emulated node answers slowly when the host is busy: the default 10 s fails step launches)
MessageTimeout=60
HealthCheckProgram=/usr/sbin/launchguard-health
HealthCheckInterval=5
HealthCheckNodeState=ANY
PlugStackConfig=/etc/slurm/plugstack.conf
NodeName=$NAME Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:2,nic:1 State=UNKNOWN
PartitionName=debug Nodes=$NAME Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$R/etc/slurm/cgroup.conf" <<'EOF'
# written by launchguard scripts/vm.sh
CgroupPlugin=cgroup/v2
ConstrainCores=yes
ConstrainDevices=yes
ConstrainRAMSpace=yes
EOF
  cat >"$R/etc/slurm/gres.conf" <<EOF
# written by launchguard scripts/vm.sh
NodeName=$NAME Name=gpu File=/dev/fakegpu[0-1]
NodeName=$NAME Name=nic File=/dev/infiniband/uverbs0
EOF
  echo 'include /etc/slurm/plugstack.conf.d/*.conf' >"$R/etc/slurm/plugstack.conf"
  mkdir -p "$R/var/lib/slurm/slurmctld" "$R/var/lib/slurm/slurmd"
  chroot "$R" chown -R slurm:slurm /var/lib/slurm /var/log/slurm
  # Under emulation every unit costs seconds: none of the timers that wake the CPU, no first-boot
  # cache rebuilds (ldconfig, hwdb and the journal catalog are current from the packages' own
  # postinsts), no modules for hardware the VM lacks, no login prompt on the serial console.
  chroot "$R" systemctl -q mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
    dpkg-db-backup.timer systemd-tmpfiles-clean.timer e2scrub_reap.service ldconfig.service \
    systemd-update-done.service systemd-journal-catalog-update.service systemd-hwdb-update.service \
    modprobe@drm.service modprobe@fuse.service modprobe@configfs.service modprobe@efi_pstore.service \
    modprobe@dm_mod.service modprobe@loop.service serial-getty@ttyS0.service getty@tty1.service \
    systemd-firstboot.service systemd-machine-id-commit.service >/dev/null 2>&1 || true
  # (a fixed machine-id: no first-boot setup of one)
  [ -s "$R/etc/machine-id" ] || chroot "$R" systemd-machine-id-setup >/dev/null 2>&1 || true
  chroot "$R" systemctl -q enable munge slurmctld slurmd lg-dummy-net lg-vm-agent 2>/dev/null
}

rootfs() {
  host_tools
  debootstrap_rootfs
  local want have
  want=$(declare -f configure_rootfs | sha256sum | cut -c1-16)
  have=$(cat "$RFS/.lg-vm-config" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    log "configuring $RFS"
    rm -f "$RFS/.lg-vm-config"
    configure_rootfs "$RFS"
    echo "$want" >"$RFS/.lg-vm-config"
  fi
}

qemu_pid() { [ -s "$RUN/qemu.pid" ] && kill -0 "$(cat "$RUN/qemu.pid")" 2>/dev/null && cat "$RUN/qemu.pid"; }

# boot_state: "BOOT_ID STATE" the guest's channel wrote after its last boot, or nothing.
boot_state() { cat "$SHARE/boot" 2>/dev/null || true; }

# wait_boot OLD_BOOT_ID: waits until the guest's channel reports a boot other than OLD_BOOT_ID.
wait_boot() {
  local old=$1 t0=$SECONDS limit=${LG_VM_BOOT_TIMEOUT:-600} b
  while :; do
    b=$(boot_state)
    if [ -n "$b" ] && [ "${b%% *}" != "$old" ]; then break; fi
    qemu_pid >/dev/null || { tail -n 30 "$RUN/console.log" >&2; die "QEMU exited during the boot (console: $RUN/console.log)"; }
    [ $((SECONDS - t0)) -lt "$limit" ] || { tail -n 30 "$RUN/console.log" >&2; die "no boot report from the guest after $limit s (console: $RUN/console.log)"; }
    sleep 0.5
  done
  if [ "${b#* }" != running ]; then
    run_cmd 'systemctl --failed --no-legend' >&2 || true
    die "the guest booted ${b#* }"
  fi
}

wait_slurm() {
  local t0=$SECONDS
  until run_cmd "sinfo -h -o '%T'" 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
    [ $((SECONDS - t0)) -lt 300 ] || { run_cmd 'sinfo; systemctl status slurmd slurmctld --no-pager | tail -n 20' >&2 || true; die "node $NAME not idle after 300 s"; }
    sleep 1
  done
}

# run_cmd SCRIPT: runs SCRIPT (bash) in the guest through the share; prints its output, returns its status.
run_cmd() {
  qemu_pid >/dev/null || die "the VM is not up (scripts/vm.sh up)"
  local id f t0=$SECONDS
  id=$(date +%s%N)-$$-$RANDOM
  f=$SHARE/cmd/$id
  printf '%s\n' "$1" >"$f.tmp"
  mv "$f.tmp" "$f.sh"
  while [ ! -e "$f.rc" ]; do
    if [ $((SECONDS - t0)) -ge "$RUN_TIMEOUT" ] || ! qemu_pid >/dev/null; then
      cat "$f.out" 2>/dev/null || true
      log "no result after $((SECONDS - t0)) s for: $1"
      return 124
    fi
    sleep 0.1
  done
  cat "$f.out"
  local rc
  rc=$(cat "$f.rc")
  rm -f "$f.run" "$f.out" "$f.rc"
  return "$rc"
}

up() {
  rootfs
  if qemu_pid >/dev/null; then log "already up (QEMU pid $(qemu_pid))"; return 0; fi
  local t0=$SECONDS kernel initrd
  kernel=$(ls "$RFS"/boot/vmlinuz-* | sort -V | tail -n 1)
  initrd=$(ls "$RFS"/boot/initrd.img-* | sort -V | tail -n 1)
  rm -rf "$RUN"
  mkdir -p "$SHARE/cmd" "$SHARE/files"
  rm -f "$IMG"
  truncate -s 4G "$IMG"
  mkfs.ext4 -q -F -L root -d "$RFS" "$IMG"
  log "disk image made from $RFS in $((SECONDS - t0)) s; booting (console: $RUN/console.log)"
  qemu-system-x86_64 -machine q35 -accel tcg,thread=multi -cpu max -smp 2,sockets=1,cores=2,threads=1 -m 3072 \
    -kernel "$kernel" -initrd "$initrd" \
    -append 'root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 quiet' \
    -drive "file=$IMG,format=raw,if=virtio,cache=unsafe" \
    -virtfs "local,path=$SHARE,mount_tag=hostshare,security_model=none,id=hs" \
    -nic none -display none -vga none -serial "file:$RUN/console.log" -monitor none \
    -daemonize -pidfile "$RUN/qemu.pid"
  wait_boot none
  wait_slurm
  log "up in $((SECONDS - t0)) s: $(run_cmd 'echo "$(uname -r), $(systemctl --version | head -n 1), $(srun --version), /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup)"')"
}

reboot() {
  qemu_pid >/dev/null || die "the VM is not up"
  local old t0=$SECONDS
  old=$(boot_state)
  old=${old%% *}
  rm -f "$SHARE/boot"
  # (not waited for: the channel goes down with the guest)
  printf 'systemctl reboot\n' >"$SHARE/cmd/reboot-$$.tmp"
  mv "$SHARE/cmd/reboot-$$.tmp" "$SHARE/cmd/reboot-$$.sh"
  wait_boot "${old:-none}"
  rm -f "$SHARE"/cmd/reboot-$$.*
  wait_slurm
  log "rebooted in $((SECONDS - t0)) s (boot_id $(boot_state))"
}

down() {
  local p i
  if p=$(qemu_pid); then
    printf 'systemctl poweroff\n' >"$SHARE/cmd/poweroff-$$.tmp"
    mv "$SHARE/cmd/poweroff-$$.tmp" "$SHARE/cmd/poweroff-$$.sh"
    for i in $(seq 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$p" 2>/dev/null; then
      log "QEMU still running 60 s after systemctl poweroff: SIGTERM to $p"
      kill "$p" 2>/dev/null || true
      for i in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    fi
  fi
  rm -rf "$RUN"
  rm -f "$IMG"
  log "down"
}

case "${1:-}" in
  image) rootfs; log "rootfs ready in $RFS" ;;
  up) up ;;
  down) down ;;
  reboot) reboot ;;
  run)
    shift
    if [ $# = 0 ]; then run_cmd "$(cat)"; else run_cmd "$(printf '%q ' "$@")"; fi ;;
  put)
    shift
    qemu_pid >/dev/null || die "the VM is not up"
    cp "$@" "$SHARE/files/" ;;
  status)
    if p=$(qemu_pid); then echo "up: QEMU pid $p, boot $(boot_state)"; else echo down; exit 1; fi ;;
  *) echo "usage: scripts/vm.sh image|up|run [CMD…]|put FILE…|reboot|down|status" >&2; exit 2 ;;
esac
