# shellcheck shell=bash
# Sourced by the scripts that install Debian packages. apt_get ARGS…: apt-get, non-interactive, waiting
# up to 15 min for another apt/dpkg to let go of its lock, with apt's own output dropped and
# debconf's "apt-utils is not installed" notice (harmless on a minimal image) filtered from stderr;
# apt's errors still reach stderr and its exit status is returned.
apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -y -qq "$@" \
    2> >(grep -v 'apt-utils is not installed' >&2) >/dev/null
}
