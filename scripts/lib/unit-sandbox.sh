#!/usr/bin/env bash
# unit-sandbox.sh UNIT COMMAND…: runs COMMAND, as root, under the sandbox that UNIT's settings
# give a service (systemd.exec(5)), for hosts where systemd is not PID 1 (scripts/test-package.sh,
# node-agent/tests/sandbox.rs). The settings are read from the unit file, so a test that compares
# root's `launchguard check` with the agent's follows every edit of the unit:
#
#   ProtectSystem=strict|full|yes  every mount (strict; but /proc, /sys, /dev), or /usr, /boot, /efi
#                                  and /etc (full), or /usr, /boot, /efi (yes) remounted read-only
#   ProtectHome=yes|read-only|tmpfs  /home, /root, /run/user: an empty mode-0000 (yes) or 0755 (tmpfs)
#                                  read-only tmpfs on each, or read-only
#   PrivateTmp=yes                 a fresh 1777 directory of the node's /tmp bound on /tmp and
#                                  /var/tmp (as systemd's /tmp/systemd-private-*)
#   ProtectKernelLogs=yes          an inaccessible character device bound on /dev/kmsg, /proc/kmsg
#   ProtectHostname=yes            a UTS namespace of its own (a copy of the hostname at start)
#   PrivateMounts= (always)        a mount namespace with propagation from the node (slave)
#   CapabilityBoundingSet=, NoNewPrivileges=yes   setpriv --bounding-set=-all,+… --no-new-privs
#
# Not emulated (a read's answer does not change): the seccomp filter, ProtectKernelTunables=,
# ProtectControlGroups= (read-only), address families, Nice=. A setting that would hide or change
# what a check reads but that this script cannot emulate (PrivateDevices=yes, ProtectProc=,
# InaccessiblePaths=, …) makes it refuse (exit 2) rather than emulate a weaker sandbox.
# The real unit under systemd as PID 1: scripts/test-node.sh.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: unit-sandbox.sh UNIT COMMAND…" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "unit-sandbox: run as root (unshare, mount)" >&2; exit 2; }
UNIT_FILE=$1
shift
[ -r "$UNIT_FILE" ] || { echo "unit-sandbox: cannot read $UNIT_FILE" >&2; exit 2; }
# The last assignment of a setting in the unit wins (drop-ins are not read: pass the merged unit).
val() { sed -n "s/^$1=//p" "$UNIT_FILE" | tail -n 1; }
off() { case "$1" in "" | no | false | 0 | off | default) return 0 ;; *) return 1 ;; esac; }

for s in PrivateDevices PrivateNetwork PrivateUsers DynamicUser ProcSubset RootDirectory RootImage \
  InaccessiblePaths TemporaryFileSystem BindPaths BindReadOnlyPaths ReadOnlyPaths NoExecPaths; do
  v=$(val "$s")
  if ! off "$v" && ! { [ "$s" = ProcSubset ] && [ "$v" = all ]; }; then
    echo "unit-sandbox: cannot emulate $s=$v of $UNIT_FILE" >&2
    exit 2
  fi
done
v=$(val ProtectProc)
case "$v" in "" | default) ;; *) echo "unit-sandbox: cannot emulate ProtectProc=$v" >&2; exit 2 ;; esac

PROTECT_SYSTEM=$(val ProtectSystem)
PROTECT_HOME=$(val ProtectHome)
PRIVATE_TMP=$(val PrivateTmp)
KERNEL_LOGS=$(val ProtectKernelLogs)
caps=$(val CapabilityBoundingSet | tr '[:upper:]' '[:lower:]' | sed 's/cap_/+/g; s/ \+/,/g')
nnp=()
off "$(val NoNewPrivileges)" || nnp=(--no-new-privs)
uts=()
off "$(val ProtectHostname)" || uts=(--uts)

# Files of the emulation (the private /tmp, the inaccessible node) live in the node's /tmp, as
# systemd's do, and go when COMMAND ends.
PRIV=$(mktemp -d /tmp/systemd-private-lg-unit-sandbox.XXXXXX)
trap 'rm -rf "$PRIV"' EXIT
mkdir -m 1777 "$PRIV/tmp" "$PRIV/var-tmp"
mknod -m 0000 "$PRIV/inaccessible-chr" c 0 0

export PROTECT_SYSTEM PROTECT_HOME PRIVATE_TMP KERNEL_LOGS PRIV
# shellcheck disable=SC2016 # expanded by the inner bash
inner='
set -eu
# Mount points, decoded (mountinfo escapes a space as \040), one a line.
points() { awk "{ print \$5 }" /proc/self/mountinfo | while IFS= read -r p; do printf "%b\n" "$p"; done; }
ro() { mountpoint -q "$1" || mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; }
# First what binds from $PRIV (in the node'"'"'s /tmp), before /tmp is replaced.
case "$KERNEL_LOGS" in
yes | true) for p in /dev/kmsg /proc/kmsg; do [ -e "$p" ] && mount --bind "$PRIV/inaccessible-chr" "$p"; done ;;
esac
private=no
case "$PRIVATE_TMP" in
yes | true) mount --bind "$PRIV/var-tmp" /var/tmp; mount --bind "$PRIV/tmp" /tmp; private=yes ;;
esac
case "$PROTECT_SYSTEM" in
strict)
  # Everything but the API file systems (and a private /tmp, which systemd leaves writable).
  points | grep -vE "^/(proc|sys|dev)(/|\$)" | sort -u | while IFS= read -r p; do
    if [ "$private" = yes ] && { [ "$p" = /tmp ] || [ "$p" = /var/tmp ]; }; then continue; fi
    ro "$p" || true
  done ;;
full) for p in /usr /boot /efi /etc; do if [ -d "$p" ]; then ro "$p"; fi; done ;;
yes | true) for p in /usr /boot /efi; do if [ -d "$p" ]; then ro "$p"; fi; done ;;
esac
for p in /home /root /run/user; do
  [ -d "$p" ] || continue
  case "$PROTECT_HOME" in
  yes | true) mount -t tmpfs -o ro,mode=0000 tmpfs "$p" ;;
  tmpfs) mount -t tmpfs -o ro,mode=0755 tmpfs "$p" ;;
  read-only) ro "$p" ;;
  esac
done
exec "$@"
'
status=0
unshare --mount --propagation slave "${uts[@]}" -- bash -c "$inner" sh \
  setpriv --bounding-set=-all${caps:+,$caps} --inh-caps=-all "${nnp[@]}" -- "$@" || status=$?
exit "$status"
