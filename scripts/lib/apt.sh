# shellcheck shell=bash
# Sourced by the scripts that install Debian packages. apt_get ARGS…: apt-get, non-interactive, with
# apt's own output dropped and debconf's "apt-utils is not installed" notice (harmless on a minimal
# image) filtered from stderr; apt's errors still reach stderr and its exit status is returned.
# Our scripts' apt-get runs take turns through one lock file (scripts/test.sh prepares chroots and
# tools in the background at the same time): `apt-get update` does not wait for the lists lock of
# another update, it fails at once. DPkg::Lock::Timeout covers another dpkg (unattended-upgrades).
# Both waits are bounded at 15 min. `flock -o`: the lock's descriptor is not inherited by apt, dpkg
# or a daemon a postinst starts (munged would otherwise hold the lock for its lifetime).
apt_get() {
  DEBIAN_FRONTEND=noninteractive flock -o -w 900 /run/lock/launchguard-apt.lock \
    apt-get -o DPkg::Lock::Timeout=900 -y -qq "$@" \
    2> >(grep -v 'apt-utils is not installed' >&2) >/dev/null
}

# apt_install PKG…: `apt-get update`, then install PKG… (nothing when none is given). Returns non-zero
# when either fails, also where the caller's `set -e` would not act (a failing update in an `&&` list).
apt_install() {
  [ $# -gt 0 ] || return 0
  apt_get update || return 1
  apt_get install "$@"
}
