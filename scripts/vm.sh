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
#   scripts/vm.sh status       whether each VM is up, and its boot state
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
#
# Two nodes (LG_VM_NODES=2 scripts/vm.sh up; scripts/test-vm2.sh): two VMs from the same rootfs,
# each with its own disk, kernel, boot_id, machine ID and hostname (systemd.hostname= on the kernel
# command line), joined by one private virtual link: QEMU's socket network backend, UDP unicast
# between 127.0.0.1 ports (17911/17912 for trixie, 17921/17922 for sid), virtio-net in the guests,
# 10.79.0.11 and .12. gpunode1 runs slurmctld and slurmd, gpunode2 slurmd (slurmctld's unit has
# ConditionHost=gpunode1); both share the rootfs's munge key and one slurm.conf (NodeAddr= on the
# link, no HealthCheckProgram). `LG_VM_NODE=2 scripts/vm.sh run|put|reboot` addresses gpunode2.
#
# Waits, each raised by its variable on a slow or loaded host (the error names it): LG_VM_BOOT_TIMEOUT
# (600 s to the guest's boot report), LG_VM_SLURM_TIMEOUT (600 s to an idle node), LG_VM_RUN_TIMEOUT
# (900 s of no new output from a `run` command). LG_VM_CACHE=DIR: the rootfs and disks in DIR, the
# running VM's files in /run/lg-vm-<DIR with / as _> (the default cache's in /run/lg-vm).
#
# sid (LG_VM_RELEASE=sid): the same node on Debian unstable (Slurm 26.05, kernel 7.x, dracut's initrd),
# rootfs /srv/lg-vm/rootfs-sid; /run/lg-vm/sid for its QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
. "$(dirname "$0")/lib/pidfile.sh"
# LG_VM_RELEASE: trixie (Debian 13, Slurm 24.11; the default) or sid (Debian unstable: Slurm 26.05,
# its own newer kernel and systemd). LG_VM_CACHE: where the rootfs and disk images live (/srv/lg-vm).
SUITE=${LG_VM_RELEASE:-trixie}
case "$SUITE" in trixie | sid) ;; *) printf 'vm: error: LG_VM_RELEASE must be trixie or sid, not %s\n' "$SUITE" >&2; exit 2 ;; esac
CACHE=${LG_VM_CACHE:-/srv/lg-vm}
RFS=$CACHE/rootfs-$SUITE
# Where a running VM keeps its QEMU pid file, console log and share: /run/lg-vm for the default cache,
# and for any other cache a directory named after the cache's path (LG_VM_CACHE=/srv/lg-vm-fresh:
# /run/lg-vm-_srv_lg-vm-fresh), so that a VM booted from another cache never takes, stops or deletes
# the files of the default one's (and the other way round).
if [ "$CACHE" = /srv/lg-vm ]; then RUNBASE=/run/lg-vm; else RUNBASE=/run/lg-vm-$(printf %s "$CACHE" | tr -c 'A-Za-z0-9.-' _); fi
# LG_VM_NODES=2: `up` boots two VMs, gpunode1 (slurmctld and slurmd) and gpunode2 (slurmd), joined by
# one private virtual link: QEMU's socket network backend, UDP unicast between two ports on the host's
# loopback (nothing else can reach it), 10.79.0.11 and .12 inside. LG_VM_NODE=2 makes run, put and
# reboot address gpunode2 (default 1). down and status cover every VM that is up.
NODES=${LG_VM_NODES:-1}
case "$NODES" in 1 | 2) ;; *) printf 'vm: error: LG_VM_NODES must be 1 or 2, not %s\n' "$NODES" >&2; exit 2 ;; esac
# The link's UDP ports on 127.0.0.1: node K listens on PORT0+K (trixie and sid apart).
case "$SUITE" in trixie) PORT0=17910 ;; sid) PORT0=17920 ;; esac
# node K: sets NAME, RUN (its QEMU's pid file, console log and share; node 1's is RUNBASE/SUITE as
# before) and IMG (its disk image).
node() {
  K=$1
  NAME=gpunode$K
  if [ "$K" = 1 ]; then RUN=$RUNBASE/$SUITE IMG=$CACHE/disk-$SUITE.img; else RUN=$RUNBASE/$SUITE-$NAME IMG=$CACHE/disk-$SUITE-$NAME.img; fi
  SHARE=$RUN/share
}
node "${LG_VM_NODE:-1}"
# Seconds a `run` command may go on with no new output before the host gives up waiting (the command
# goes on in the guest): each new byte of its output starts the count again, so a long install that
# prints is never cut, and a quiet one gets this long. 300 s was too short once at a host load of 25
# (an emulated CPU crawls then); the error names this variable.
RUN_TIMEOUT=${LG_VM_RUN_TIMEOUT:-900}
# Seconds `up` and `reboot` wait for Slurm to show the node idle after the boot.
SLURM_TIMEOUT=${LG_VM_SLURM_TIMEOUT:-600}

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
PACKAGES=systemd,systemd-sysv,dbus,udev,kmod,iproute2,linux-image-amd64,slurmd,slurmctld,slurm-client,munge,procps,util-linux,e2fsprogs,bpftool
# trixie's kernel takes initramfs-tools; sid's pulls dracut (its initrd is generic, with virtio_blk and
# ext4), and initramfs-tools beside it fails to install ("conflicts with linux-initramfs-tool").
[ "$SUITE" = sid ] || PACKAGES+=,initramfs-tools

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

# slurm_files DIR N: slurm.conf and gres.conf for nodes gpunode1..N (gpunode1 runs slurmctld) in DIR,
# and for N > 1 the hosts file that names them by their addresses on the virtual link.
slurm_files() {
  local D=$1 n=$2 k nodes=gpunode1 addr=
  [ "$n" = 1 ] || nodes="gpunode[1-$n]"
  {
    cat <<EOF
# written by launchguard scripts/vm.sh
ClusterName=lgvm
SlurmctldHost=gpunode1
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
PlugStackConfig=/etc/slurm/plugstack.conf
EOF
    # (one node only: the two-node cluster is for the sweep; there a `launchguard health` every 5 s
    # takes most of each emulated CPU, runs pile up when the host is busy, and nothing tests it)
    [ "$n" != 1 ] || printf 'HealthCheckProgram=/usr/sbin/launchguard-health\nHealthCheckInterval=5\nHealthCheckNodeState=ANY\n'
    for k in $(seq "$n"); do
      [ "$n" = 1 ] || addr=" NodeAddr=10.79.0.1$k"
      echo "NodeName=gpunode$k$addr Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:2,nic:1 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
  } >"$D/slurm.conf"
  cat >"$D/gres.conf" <<EOF
# written by launchguard scripts/vm.sh
NodeName=$nodes Name=gpu File=/dev/fakegpu[0-1]
NodeName=$nodes Name=nic File=/dev/infiniband/uverbs0
EOF
  if [ "$n" != 1 ]; then
    { echo '127.0.0.1 localhost'; for k in $(seq "$n"); do echo "10.79.0.1$k gpunode$k"; done; } >"$D/hosts"
  fi
}

# The guest's configuration, written into the rootfs (idempotent; re-run when this function changes).
configure_rootfs() {
  local R=$1
  # Every path below is "$R/…": an empty or / root would rewrite this host's own files.
  case "$R" in ""|/) die "configure_rootfs: '$R' is not a rootfs directory" ;; esac
  echo gpunode1 >"$R/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 gpunode1\n' >"$R/etc/hosts"
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
  mkdir -p "$R/etc/slurm/plugstack.conf.d" "$R/var/log/slurm" "$R/etc/slurm/lg-vm-two"
  slurm_files "$R/etc/slurm" 1
  # The two-node cluster's files (LG_VM_NODES=2): lg-vm-cluster.service puts them in place at boot.
  slurm_files "$R/etc/slurm/lg-vm-two" 2
  cat >"$R/etc/systemd/system/lg-vm-cluster.service" <<'EOF'
[Unit]
Description=The two-node cluster's network and Slurm files, when the kernel command line says lg.nodes=2
Before=munge.service slurmctld.service slurmd.service network.target
DefaultDependencies=no
After=systemd-udevd.service local-fs.target
ConditionKernelCommandLine=lg.nodes=2

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/lg-vm-cluster

[Install]
WantedBy=multi-user.target
EOF
  # (the link's interface is found by the MAC address vm.sh gives node K, 52:54:00:4c:47:0K)
  cat >"$R/usr/local/sbin/lg-vm-cluster" <<'EOF'
#!/bin/bash
set -eu
k=$(hostname); k=${k#gpunode}
cp /etc/slurm/lg-vm-two/slurm.conf /etc/slurm/lg-vm-two/gres.conf /etc/slurm/
cp /etc/slurm/lg-vm-two/hosts /etc/hosts
modprobe virtio_net
dev=
for i in $(seq 200); do
  dev=$(ip -o link | awk -v m="52:54:00:4c:47:0$k" '$0 ~ "link/ether " m { sub(":$", "", $2); print $2; exit }')
  [ -z "$dev" ] || break
  sleep 0.1
done
[ -n "$dev" ] || { echo "lg-vm-cluster: no interface with MAC 52:54:00:4c:47:0$k" >&2; exit 1; }
ip addr replace "10.79.0.1$k/24" dev "$dev"
ip link set "$dev" up
EOF
  chmod 755 "$R/usr/local/sbin/lg-vm-cluster"
  # slurmctld runs on gpunode1 only (systemd.hostname= on the kernel command line names each VM).
  mkdir -p "$R/etc/systemd/system/slurmctld.service.d"
  printf '[Unit]\nConditionHost=gpunode1\n' >"$R/etc/systemd/system/slurmctld.service.d/lg-vm.conf"
  cat >"$R/etc/slurm/cgroup.conf" <<'EOF'
# written by launchguard scripts/vm.sh
CgroupPlugin=cgroup/v2
ConstrainCores=yes
ConstrainDevices=yes
ConstrainRAMSpace=yes
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
  # A unit's start may take minutes when the emulated CPUs share a busy host. Once here, at a host
  # load of 25, slurmd ended failed and the boot degraded (its journal was lost with the VM; the
  # default 90 s start timeout is the likely cause), so starts get 15 min.
  mkdir -p "$R/etc/systemd/system.conf.d"
  printf '[Manager]\nDefaultTimeoutStartSec=15min\n' >"$R/etc/systemd/system.conf.d/lg-vm.conf"
  # (a fixed machine-id: no first-boot setup of one)
  [ -s "$R/etc/machine-id" ] || chroot "$R" systemd-machine-id-setup >/dev/null 2>&1 || true
  chroot "$R" systemctl -q enable munge slurmctld slurmd lg-dummy-net lg-vm-cluster lg-vm-agent 2>/dev/null
}

rootfs() {
  host_tools
  debootstrap_rootfs
  local want have
  want=$(declare -f configure_rootfs slurm_files | sha256sum | cut -c1-16)
  have=$(cat "$RFS/.lg-vm-config" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    log "configuring $RFS"
    rm -f "$RFS/.lg-vm-config"
    configure_rootfs "$RFS"
    echo "$want" >"$RFS/.lg-vm-config"
  fi
}

qemu_pid() { pidfile_pid "$RUN/qemu.pid"; }

# boot_state: "BOOT_ID STATE" the guest's channel wrote after its last boot, or nothing.
boot_state() { cat "$SHARE/boot" 2>/dev/null || true; }

# wait_boot OLD_BOOT_ID: waits until the guest's channel reports a boot other than OLD_BOOT_ID.
wait_boot() {
  local old=$1 t0=$SECONDS limit=${LG_VM_BOOT_TIMEOUT:-600} b
  while :; do
    b=$(boot_state)
    if [ -n "$b" ] && [ "${b%% *}" != "$old" ]; then break; fi
    qemu_pid >/dev/null || { tail -n 30 "$RUN/console.log" >&2; die "QEMU exited during the boot (console: $RUN/console.log)"; }
    [ $((SECONDS - t0)) -lt "$limit" ] || { tail -n 30 "$RUN/console.log" >&2; die "no boot report from the guest after $limit s (console: $RUN/console.log; on a slow or loaded host raise LG_VM_BOOT_TIMEOUT, seconds)"; }
    sleep 0.5
  done
  if [ "${b#* }" != running ]; then
    run_cmd 'systemctl --failed --no-legend; for u in $(systemctl --failed --no-legend --plain | cut -d" " -f1); do journalctl -b -u "$u" --no-pager | tail -n 15; done' >&2 || true
    die "the guest booted ${b#* }"
  fi
}

# wait_slurm: waits until Slurm shows this node (NAME) idle.
wait_slurm() {
  local t0=$SECONDS
  until run_cmd "sinfo -h -n $NAME -o '%T'" 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
    [ $((SECONDS - t0)) -lt "$SLURM_TIMEOUT" ] || { run_cmd 'sinfo; systemctl status slurmd slurmctld --no-pager | tail -n 20' >&2 || true; die "node $NAME not idle $SLURM_TIMEOUT s after the boot (on a slow or loaded host raise LG_VM_SLURM_TIMEOUT, seconds)"; }
    sleep 1
  done
}

# run_wait_verdict SILENT_S LIMIT_S PICKED_UP: what run_cmd does while a command has no result: "wait",
# or the reason it gives up (the count is from the command's last new output, not its start).
run_wait_verdict() {
  local silent=$1 limit=$2 picked=$3
  if [ "$silent" -lt "$limit" ]; then echo wait; return; fi
  if [ "$picked" = 1 ]; then
    echo "still running in the guest with no new output for $silent s"
  else
    echo "not picked up by the guest's command channel in $silent s (lg-vm-agent not running, or the guest hung: see $RUN/console.log)"
  fi
}

# run_cmd SCRIPT: runs SCRIPT (bash) in the guest through the share; prints its output, returns its status.
run_cmd() {
  qemu_pid >/dev/null || die "the VM is not up (scripts/vm.sh up)"
  local id f t0=$SECONDS last=$SECONDS size=0 n picked verdict
  id=$(date +%s%N)-$$-$RANDOM
  f=$SHARE/cmd/$id
  printf '%s\n' "$1" >"$f.tmp"
  mv "$f.tmp" "$f.sh"
  while [ ! -e "$f.rc" ]; do
    if ! qemu_pid >/dev/null; then
      cat "$f.out" 2>/dev/null || true
      log "QEMU exited after $((SECONDS - t0)) s, with no result for: $1 (console: $RUN/console.log)"
      return 124
    fi
    n=$(stat -c %s "$f.out" 2>/dev/null || echo 0)
    [ "$n" = "$size" ] || { size=$n; last=$SECONDS; }
    picked=1
    [ ! -e "$f.sh" ] || picked=0
    verdict=$(run_wait_verdict $((SECONDS - last)) "$RUN_TIMEOUT" "$picked")
    if [ "$verdict" != wait ]; then
      cat "$f.out" 2>/dev/null || true
      log "no result after $((SECONDS - t0)) s for: $1: $verdict; the host stops waiting (on a slow or loaded host raise LG_VM_RUN_TIMEOUT, seconds of no new output, now $RUN_TIMEOUT)"
      return 124
    fi
    sleep 0.2
  done
  cat "$f.out"
  local rc
  rc=$(cat "$f.rc")
  rm -f "$f.run" "$f.out" "$f.rc"
  return "$rc"
}

# boot_vm: a fresh disk from the rootfs for node K (node sets the paths), and its QEMU started.
boot_vm() {
  local t0=$SECONDS kernel initrd net append mid
  kernel=$(ls "$RFS"/boot/vmlinuz-* | sort -V | tail -n 1)
  initrd=$(ls "$RFS"/boot/initrd.img-* | sort -V | tail -n 1)
  rm -rf "$RUN"
  mkdir -p "$SHARE/cmd" "$SHARE/files"
  rm -f "$IMG"
  truncate -s 4G "$IMG"
  mkfs.ext4 -q -F -L root -d "$RFS" "$IMG"
  # Each VM names itself from the kernel command line (systemd.hostname=, and a machine ID of its
  # own: the rootfs's with the node number at the end); lg.nodes=2 makes lg-vm-cluster.service set
  # up the link and the two-node Slurm files.
  mid=$(cat "$RFS/etc/machine-id")
  append="root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 quiet systemd.hostname=$NAME systemd.machine_id=${mid:0:30}0$K lg.nodes=$NODES"
  if [ "$NODES" = 1 ]; then
    net=(-nic none)
  else
    # UDP unicast between the two QEMUs on the host's loopback: node K sends to the other's port.
    net=(-netdev "socket,id=link,udp=127.0.0.1:$((PORT0 + 3 - K)),localaddr=127.0.0.1:$((PORT0 + K))"
      -device "virtio-net-pci,netdev=link,mac=52:54:00:4c:47:0$K")
  fi
  log "$NAME: disk image made from $RFS in $((SECONDS - t0)) s; booting (console: $RUN/console.log)"
  qemu-system-x86_64 -machine q35 -accel tcg,thread=multi -cpu max -smp 2,sockets=1,cores=2,threads=1 -m 3072 \
    -kernel "$kernel" -initrd "$initrd" -append "$append" \
    -drive "file=$IMG,format=raw,if=virtio,cache=unsafe" \
    -virtfs "local,path=$SHARE,mount_tag=hostshare,security_model=none,id=hs" \
    "${net[@]}" -display none -vga none -serial "file:$RUN/console.log" -monitor none \
    -daemonize -pidfile "$RUN/qemu.pid"
}

up() {
  rootfs
  node 1
  if qemu_pid >/dev/null; then log "already up (QEMU pid $(qemu_pid))"; return 0; fi
  local t0=$SECONDS k
  # (all started before any is waited for: they boot side by side)
  for k in $(seq "$NODES"); do node "$k"; boot_vm; done
  for k in $(seq "$NODES"); do node "$k"; wait_boot none; done
  for k in $(seq "$NODES"); do node "$k"; wait_slurm; done
  node 1
  log "up in $((SECONDS - t0)) s ($NODES VM): $(run_cmd 'echo "$(uname -r), $(systemctl --version | head -n 1), $(srun --version), /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup); sinfo: $(sinfo -h -N -o "%N %T" | tr "\n" " ")"')"
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

# down: powers off every VM of this release that is up (both of a two-node cluster), and forgets them.
down() {
  local p i k
  for k in 1 2; do
    node "$k"
    if p=$(qemu_pid); then
      printf 'systemctl poweroff\n' >"$SHARE/cmd/poweroff-$$.tmp"
      mv "$SHARE/cmd/poweroff-$$.tmp" "$SHARE/cmd/poweroff-$$.sh"
    fi
  done
  for k in 1 2; do
    node "$k"
    if p=$(qemu_pid); then
      for i in $(seq 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
      if kill -0 "$p" 2>/dev/null; then
        log "$NAME: QEMU still running 60 s after systemctl poweroff: SIGTERM to $p"
        kill "$p" 2>/dev/null || true
        for i in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
      fi
    fi
    rm -rf "$RUN"
    rm -f "$IMG"
  done
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
    up=0
    for k in 1 2; do
      node "$k"
      if p=$(qemu_pid); then echo "$NAME up: QEMU pid $p, boot $(boot_state)"; up=1; fi
    done
    [ "$up" = 1 ] || { echo down; exit 1; } ;;
  *) echo "usage: scripts/vm.sh image|up|run [CMD…]|put FILE…|reboot|down|status" >&2; exit 2 ;;
esac
