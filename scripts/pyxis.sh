#!/usr/bin/env bash
# Real Pyxis and enroot on this machine, built from their public sources, for launchguard's
# "next to Pyxis" integration tests (tests/tests/real_pyxis.rs, enabled by LG_PYXIS=1).
#
#   scripts/pyxis.sh build SRC_DIR [BUILD_DIR]   build Pyxis and enroot from SRC_DIR/pyxis and SRC_DIR/enroot
#   scripts/pyxis.sh install [BUILD_DIR]         install both into /usr/local (enroot's config into /etc/enroot)
#   scripts/pyxis.sh image [FILE [NAME=VALUE…]]  write a tiny busybox squashfs test image (no network needed);
#                                                NAME=VALUE pairs go to the image's /etc/environment, which
#                                                enroot reads like an image's ENV
#   scripts/pyxis.sh image-pmix [FILE]           the busybox image plus a PMIx client (tests/pmix-client/lgtest_pmix.c,
#                                                built against the node's libpmix-dev) and the libraries it loads,
#                                                at the same paths as on the node: the "image's PMIx" of the
#                                                container PMIx test
#   scripts/pyxis.sh prereqs                     /dev/mqueue, /dev/log and /run/pyxis (install does it too)
#   scripts/pyxis.sh status                      say what is installed where
#
# SRC_DIR holds source trees of https://github.com/NVIDIA/pyxis (tested: v0.24.0) and
# https://github.com/NVIDIA/enroot (tested: v4.1.2), e.g.
#   git -C pyxis.git archive v0.24.0 | tar -x -C SRC_DIR/pyxis
#   git -C enroot.git archive v4.1.2 | tar -x -C SRC_DIR/enroot
# Nothing of theirs is copied into this repository. BUILD_DIR defaults to /var/tmp/lg-pyxis-build.
#
# enroot's source archive has no git submodules (musl, libbsd's upstream, linux-headers, makeself), so the
# build uses glibc (FORCE_GLIBC=1), the system's linux-libc-dev headers instead of deps/linux-headers, a stub
# deps/makeself (only `enroot bundle` needs it), and libbsd-dev's strlcpy/strlcat (glibc 2.36 has neither).
# Pyxis builds unmodified against the installed libslurm-dev.
#
# This script never lists Pyxis in plugstack.conf: the tests add `plugstack.conf.d/pyxis.conf` for
# the time they run and remove it afterwards, so the shared cluster stays as it was.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"

BUILD_DIR_DEFAULT=/var/tmp/lg-pyxis-build
IMAGE_DEFAULT=/var/lib/launchguard-test/busybox.sqsh
PMIX_IMAGE_DEFAULT=/var/lib/launchguard-test/busybox-pmix.sqsh
log() { printf 'pyxis.sh: %s\n' "$*" >&2; }
die() { printf 'pyxis.sh: error: %s\n' "$*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "run as root (it installs packages and files under /usr/local and /etc)"; }

# Installs what is missing: build tools, Slurm's headers, enroot's runtime tools, busybox for the image.
apt_need() {
  local need=() pkg
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]} (apt-get)"
  apt_install "${need[@]}"
}

cmd_build() {
  local src=${1:-} build=${2:-$BUILD_DIR_DEFAULT}
  [ -n "$src" ] || die "usage: $0 build SRC_DIR [BUILD_DIR]"
  [ -f "$src/pyxis/spank_pyxis.lds" ] || die "$src/pyxis is not a Pyxis source tree (no spank_pyxis.lds)"
  [ -f "$src/enroot/enroot.in" ] || die "$src/enroot is not an enroot source tree (no enroot.in)"
  need_root
  apt_need gcc make libslurm-dev linux-libc-dev libbsd-dev libcap2-bin
  rm -rf "$build"; mkdir -p "$build"
  cp -a "$src/pyxis" "$src/enroot" "$build/"

  log "building Pyxis in $build/pyxis"
  make -C "$build/pyxis" >"$build/pyxis.log" 2>&1 || { tail -20 "$build/pyxis.log"; die "Pyxis build failed ($build/pyxis.log)"; }

  log "building enroot in $build/enroot"
  local e=$build/enroot
  # Stand-ins for the missing submodules: an empty linux-headers install, a makeself stub.
  mkdir -p "$e/deps/linux-headers" "$e/deps/makeself"
  printf 'install:\n\tmkdir -p $(prefix)/include\n' >"$e/deps/linux-headers/Makefile"
  printf '#!/bin/sh\necho "enroot-makeself: not built (stub; only enroot bundle needs it)" >&2\nexit 1\n' \
    >"$e/deps/makeself/makeself.sh"
  chmod 755 "$e/deps/makeself/makeself.sh"
  # glibc 2.36 has no strlcpy/strlcat: declare them (a header forced into the utilities through CFLAGS,
  # which enroot's Makefile appends to its own) and link the system libbsd.so.0 after the tree's libbsd.a.
  printf '#include <stddef.h>\nsize_t strlcpy(char *, const char *, size_t);\nsize_t strlcat(char *, const char *, size_t);\n' \
    >"$build/strl.h"
  (cd "$e" && CFLAGS="-include $build/strl.h" make FORCE_GLIBC=1 prefix=/usr/local sysconfdir=/etc \
      LDLIBS="-l:libbsd.a -l:libbsd.so.0" >"$build/enroot.log" 2>&1) ||
    { tail -20 "$build/enroot.log"; die "enroot build failed ($build/enroot.log)"; }
  log "built: $build/pyxis/spank_pyxis.so, $build/enroot/enroot and its utilities"
}

cmd_install() {
  local build=${1:-$BUILD_DIR_DEFAULT}
  [ -f "$build/pyxis/spank_pyxis.so" ] || die "no built Pyxis in $build (run: $0 build SRC_DIR)"
  need_root
  apt_need squashfs-tools jq parallel pigz zstd libcap2-bin libbsd0
  make -C "$build/pyxis" install prefix=/usr/local >/dev/null
  (cd "$build/enroot" && CFLAGS="-include $build/strl.h" make install FORCE_GLIBC=1 prefix=/usr/local \
      sysconfdir=/etc LDLIBS="-l:libbsd.a -l:libbsd.so.0" >/dev/null &&
    make setcap prefix=/usr/local >/dev/null)
  node_prereqs
  log "installed /usr/local/lib/slurm/spank_pyxis.so, /usr/local/share/pyxis/pyxis.conf, /usr/local/bin/enroot*, /etc/enroot"
  log "not listed in plugstack.conf: the tests list it while they run"
}

# What a systemd node has and this VM may lack, which enroot's ENROOT_RESTRICT_DEV hook
# (hooks.d/10-devices.sh) bind-mounts into every container: the POSIX message queue filesystem at
# /dev/mqueue (systemd's dev-mqueue.mount) and the syslog socket /dev/log (journald's). Without them
# every RESTRICT_DEV container fails with "enroot-mount: failed to mount: /dev/mqueue …". /dev/log is
# created as a socket nobody reads (loggers get ECONNREFUSED, as with no socket at all).
node_prereqs() {
  if ! mountpoint -q /dev/mqueue; then
    mkdir -p /dev/mqueue && mount -t mqueue mqueue /dev/mqueue && log "mounted mqueue at /dev/mqueue"
  fi
  if [ ! -e /dev/log ]; then
    python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind("/dev/log")' &&
      log "created the socket /dev/log (no syslog daemon here)"
  fi
  # Pyxis's slurmd side creates its runtime directory when slurmd loads it; the tests list Pyxis in a
  # running cluster without restarting slurmd, so create it as Pyxis would (mode 0755, root).
  install -d -m 755 -o root -g root /run/pyxis
}

# The busybox tree every test image starts from, in $1.
busybox_tree() {
  local tmp=$1 a
  mkdir -p "$tmp/bin" "$tmp/etc" "$tmp/tmp" "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/root"
  cp /bin/busybox "$tmp/bin/busybox"
  for a in sh ls cat env echo id mkdir sleep true false grep nproc test head; do ln -s busybox "$tmp/bin/$a"; done
  chmod 1777 "$tmp/tmp"
  : >"$tmp/etc/environment"
}

# Writes the squashfs image $2 from the tree $1 and removes the tree.
squash() {
  local tmp=$1 out=$2
  mkdir -p "$(dirname "$out")"
  rm -f "$out"
  mksquashfs "$tmp" "$out" -quiet -noappend -all-root >/dev/null
  rm -rf "$tmp"
  chmod 644 "$out"
  log "wrote $out"
}

# The image's PMIx: the client binary, every library ldd names for it and libpmix's own directory
# (its MCA components), copied to the paths they have on the node. Debian's libpmix2 builds its psec
# components munge and native into libpmix, as an image's OpenPMIx usually is.
cmd_image_pmix() {
  local out=${1:-$PMIX_IMAGE_DEFAULT} tmp src lib pmixdir
  need_root
  apt_need busybox-static squashfs-tools gcc libpmix-dev pkg-config
  src="$(cd "$(dirname "$0")/.." && pwd)/tests/pmix-client/lgtest_pmix.c"
  tmp=$(mktemp -d)
  busybox_tree "$tmp"
  # shellcheck disable=SC2046 # pkg-config prints several words on purpose
  gcc -O2 -Wall $(pkg-config --cflags pmix) -o "$tmp/bin/lgtest_pmix" "$src" $(pkg-config --libs pmix)
  # libpmix's directory (its MCA components) and its help texts (the words PMIx prints on errors)
  pmixdir=$(pkg-config --variable=libdir pmix)
  mkdir -p "$tmp$pmixdir" "$tmp$(dirname "$pmixdir")/share"
  cp -a "$pmixdir/." "$tmp$pmixdir/"
  find "$tmp$pmixdir" -name "*.a" -delete
  [ ! -d "$(dirname "$pmixdir")/share/pmix" ] || cp -a "$(dirname "$pmixdir")/share/pmix" "$tmp$(dirname "$pmixdir")/share/"
  # the libraries of the client and of the components libpmix opens at run time (zlib's pcompress)
  for lib in $( (ldd "$tmp/bin/lgtest_pmix"; find "$pmixdir/pmix" -name "*.so" -exec ldd {} \;) |
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
    mkdir -p "$tmp$(dirname "$lib")"
    cp -L "$lib" "$tmp$lib"
  done
  squash "$tmp" "$out"
}

cmd_image() {
  local out=${1:-$IMAGE_DEFAULT} tmp kv
  [ $# -gt 0 ] && shift
  need_root
  apt_need busybox-static squashfs-tools
  tmp=$(mktemp -d)
  busybox_tree "$tmp"
  for kv in "$@"; do
    case "$kv" in *=*) printf '%s\n' "$kv" >>"$tmp/etc/environment" ;; *) die "image: '$kv' is not NAME=VALUE" ;; esac
  done
  squash "$tmp" "$out"
}

cmd_status() {
  for f in /usr/local/lib/slurm/spank_pyxis.so /usr/local/bin/enroot /etc/enroot/enroot.conf "$IMAGE_DEFAULT" \
    /var/lib/launchguard-test/busybox-nccl.sqsh "$PMIX_IMAGE_DEFAULT"; do
    if [ -e "$f" ]; then echo "present  $f"; else echo "missing  $f"; fi
  done
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  install) shift; cmd_install "$@" ;;
  image) shift; cmd_image "$@" ;;
  image-pmix) shift; cmd_image_pmix "$@" ;;
  status) cmd_status ;;
  prereqs) need_root; node_prereqs ;;
  *) die "usage: $0 build SRC_DIR [BUILD_DIR] | install [BUILD_DIR] | image [FILE [NAME=VALUE…]] | image-pmix [FILE] | prereqs | status" ;;
esac
