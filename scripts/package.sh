#!/usr/bin/env bash
# Builds launchguard's .deb and .rpm for the Slurm release whose headers are installed:
#
#   scripts/package.sh        → target/packages/launchguard_<ver>-1+slurmXX.YY_amd64.deb
#                                target/packages/launchguard-<ver>-1.slurmXX.YY.x86_64.rpm
#   LG_ARCH=arm64 scripts/package.sh
#                             → target/packages/launchguard_<ver>-1+slurmXX.YY_arm64.deb
#                                target/packages/launchguard-<ver>-1.slurmXX.YY.aarch64.rpm
#
# Steps: read the Slurm release from slurm_version.h (the plugin loads only on that major.minor, so
# the package version names it, like Pyxis's), `cargo build --release` of the plugin and the
# launchguard binary, man pages and shell completions from the CLI definition
# (`launchguard generate-docs`), then cargo-deb and cargo-generate-rpm (installed with
# `cargo install --locked` when missing: several minutes on a small machine). Needs no root.
#
#   SLURM_INCLUDE_DIR=DIR   build against DIR/slurm/*.h instead of /usr/include (another release);
#                           then the build goes to target/slurm-XX.YY/ like `cluster.sh build-plugin`
#   LG_PACKAGE_REVISION=N   package revision (default 1)
#   LG_PACKAGE_FORMATS=deb  only the .deb (scripts/test-node.sh; default "deb rpm")
#   LG_PACKAGE_TOOLS_ONLY=1 install what packaging needs (cargo-deb, cargo-generate-rpm; for arm64 the
#                           cross gcc and the Rust target) and stop before building (scripts/test.sh
#                           does this in the background)
#   LG_ARCH=amd64|arm64     the architecture (default amd64, this machine's). arm64 (Grace nodes)
#                           cross-builds for aarch64-unknown-linux-gnu with Debian's cross gcc (the
#                           linker is set in .cargo/config.toml; gcc-aarch64-linux-gnu is installed with
#                           apt when missing) and takes the arm64 variant ([…variants.slurm-XX-YY-arm64]:
#                           the plugin under /usr/lib/aarch64-linux-gnu/slurm-wlm/). The Slurm headers are
#                           the same on both architectures, so any release's headers serve.
#
# The .deb's Depends on slurm-wlm-basic-plugins come from [package.metadata.deb.variants.slurm-XX-YY]
# in node-agent/Cargo.toml (one per release); the .rpm's Requires: slurm and release are set here.
# The .rpm holds binaries built on this machine: build it on the oldest distribution it must run on
# (its glibc), with that distribution's Slurm headers.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. "$ROOT/scripts/lib/apt.sh"
OUT=$ROOT/target/packages
STAGE=$OUT/stage
REVISION=${LG_PACKAGE_REVISION:-1}
FORMATS=${LG_PACKAGE_FORMATS:-deb rpm}
want() { case " $FORMATS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
ARCH=${LG_ARCH:-amd64}
case "$ARCH" in
  amd64) RUST_TARGET=""; MULTIARCH=x86_64-linux-gnu; STRIP=strip ;;
  arm64) RUST_TARGET=aarch64-unknown-linux-gnu; MULTIARCH=aarch64-linux-gnu; STRIP=aarch64-linux-gnu-strip ;;
  *) printf 'package: error: LG_ARCH must be amd64 or arm64, not %s\n' "$ARCH" >&2; exit 2 ;;
esac

log() { printf 'package: %s\n' "$*" >&2; }
die() { printf 'package: error: %s\n' "$*" >&2; exit 1; }

# The tools packaging needs (cargo-deb and cargo-generate-rpm; for arm64 the cross gcc and the Rust
# target), installed when missing. They need no Slurm headers, so LG_PACKAGE_TOOLS_ONLY stops here.
for tool in deb generate-rpm; do
  want "${tool#generate-}" || continue
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    log "installing cargo-$tool (cargo install --locked; takes minutes)"
    cargo install --locked --quiet "cargo-$tool"
  fi
done

if [ -n "$RUST_TARGET" ]; then
  if ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -f /usr/aarch64-linux-gnu/include/stdio.h ]; then
    log "installing gcc-aarch64-linux-gnu libc6-dev-arm64-cross (apt-get; needs root)"
    apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross || die "installing the aarch64 cross gcc failed"
  fi
  rustup target list --installed 2>/dev/null | grep -qx "$RUST_TARGET" || rustup target add "$RUST_TARGET"
fi
[ -z "${LG_PACKAGE_TOOLS_ONLY:-}" ] || { log "tools ready for formats '$FORMATS'${RUST_TARGET:+ and $RUST_TARGET}"; exit 0; }

# The Slurm release of the headers the plugin is built against (what spank-plugin/build.rs reads).
INCLUDE=${SLURM_INCLUDE_DIR:-/usr/include}
vh=$INCLUDE/slurm/slurm_version.h
[ -f "$vh" ] || die "$vh not found: install libslurm-dev (RHEL: slurm-devel) or set SLURM_INCLUDE_DIR"
num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$vh")
[ -n "$num" ] || die "no SLURM_VERSION_NUMBER in $vh"
major=$(( (num >> 16) & 0xff )); minor=$(( (num >> 8) & 0xff ))
SLURM_REL=$(printf '%d.%02d' "$major" "$minor")
next_minor=$(printf '%d.%02d' "$major" $((minor + 1)))
VARIANT=slurm-$major-$(printf '%02d' "$minor")
[ "$ARCH" = amd64 ] || VARIANT=$VARIANT-$ARCH
# Only the plugin depends on the Slurm headers: for another release's headers it is built into
# target/slurm-XX.YY/ (as `cluster.sh build-plugin` does), while the launchguard binary, the same for
# every release, is built once in the usual target directory and copied beside it (a second build of
# it from cold takes minutes on a small machine).
BIN_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [ "$INCLUDE" != /usr/include ]; then
  export SLURM_INCLUDE_DIR=$INCLUDE
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/slurm-$SLURM_REL}
fi
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
VERSION=$(cargo pkgid -p launchguard | sed 's/.*[@#]//')
log "launchguard $VERSION for Slurm $SLURM_REL on $ARCH (headers: $vh)"
grep -qF "[package.metadata.deb.variants.$VARIANT]" node-agent/Cargo.toml ||
  die "no [package.metadata.deb.variants.$VARIANT] in node-agent/Cargo.toml: add one (name and Depends on slurm-wlm-basic-plugins $SLURM_REL) for this Slurm release"

REL=$TARGET_DIR/${RUST_TARGET:+$RUST_TARGET/}release
if [ "$TARGET_DIR" = "$BIN_TARGET_DIR" ]; then
  log "cargo build --release -p spank-launchguard -p launchguard${RUST_TARGET:+ --target $RUST_TARGET}"
  cargo build --release --quiet -p spank-launchguard -p launchguard ${RUST_TARGET:+--target "$RUST_TARGET"}
else
  log "cargo build --release -p spank-launchguard${RUST_TARGET:+ --target $RUST_TARGET} (into $TARGET_DIR), -p launchguard (into $BIN_TARGET_DIR)"
  cargo build --release --quiet -p spank-launchguard ${RUST_TARGET:+--target "$RUST_TARGET"}
  CARGO_TARGET_DIR=$BIN_TARGET_DIR cargo build --release --quiet -p launchguard ${RUST_TARGET:+--target "$RUST_TARGET"}
  mkdir -p "$REL"
  cp -f "$BIN_TARGET_DIR/${RUST_TARGET:+$RUST_TARGET/}release/launchguard" "$REL/launchguard"
  [ -z "$RUST_TARGET" ] || { CARGO_TARGET_DIR=$BIN_TARGET_DIR cargo build --release --quiet -p launchguard; mkdir -p "$TARGET_DIR/release"; cp -f "$BIN_TARGET_DIR/release/launchguard" "$TARGET_DIR/release/launchguard"; }
fi
[ -f "$REL/libspank_launchguard.so" ] || die "$REL/libspank_launchguard.so was not built"
# Man pages and completions come from this machine's own build (they do not depend on the
# architecture, and an aarch64 binary would need qemu to run here).
BIN=$TARGET_DIR/release/launchguard
[ -z "$RUST_TARGET" ] || [ "$TARGET_DIR" != "$BIN_TARGET_DIR" ] || cargo build --release --quiet -p launchguard

# Generated files the manifests' assets name: man pages, completions, the RPM's plugstack snippet.
rm -rf "$STAGE"
mkdir -p "$STAGE/rpm"
"$BIN" generate-docs --help >/dev/null 2>&1 ||
  die "$BIN has no generate-docs subcommand (man pages and completions come from it)"
"$BIN" generate-docs --out "$STAGE"
ls "$STAGE"/man/*.1 >/dev/null 2>&1 || die "generate-docs wrote no man pages into $STAGE/man"
for f in launchguard.bash _launchguard launchguard.fish; do
  [ -s "$STAGE/completions/$f" ] || die "generate-docs wrote no $STAGE/completions/$f"
done
gzip -9n "$STAGE"/man/*.1
# Debian wants its own changelog (changelog.Debian.gz, one entry for this build) and the upstream one as
# changelog.gz.
mkdir -p "$STAGE/deb"
maintainer=$(sed -n 's/^maintainer = "\(.*\)"$/\1/p' node-agent/Cargo.toml | head -n 1)
cat >"$STAGE/deb/changelog" <<EOF
launchguard ($VERSION-$REVISION+slurm$SLURM_REL) unstable; urgency=medium

  * launchguard $VERSION built against the Slurm $SLURM_REL headers:
    spank_launchguard.so loads only on Slurm $SLURM_REL.
    Upstream changes: /usr/share/doc/launchguard/changelog.gz

 -- $maintainer  $(git log -1 --format=%cD 2>/dev/null || date -R)
EOF
gzip -9n <CHANGELOG.md >"$STAGE/deb/changelog.gz"
# One plugstack snippet, three plugin directories: Debian's multiarch slurm-wlm/ (x86_64-linux-gnu or
# aarch64-linux-gnu) and RHEL's lib64/slurm/ (both architectures).
sed "s|/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so|/usr/lib/$MULTIARCH/slurm-wlm/spank_launchguard.so|" \
  packaging/zz-launchguard.conf > "$STAGE/deb/zz-launchguard.conf"
# The old name (50-launchguard.conf, for links made before the rename) as a file of its own: cargo-deb
# keeps one asset per source when a variant merges assets by source (the arm64 and 23.11/24.11
# variants), so the two names must not share one staged file.
cp "$STAGE/deb/zz-launchguard.conf" "$STAGE/deb/50-launchguard.conf"
sed 's|/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so|/usr/lib64/slurm/spank_launchguard.so|' \
  packaging/zz-launchguard.conf > "$STAGE/rpm/zz-launchguard.conf"
grep -q '^required /usr/lib64/slurm/spank_launchguard.so' "$STAGE/rpm/zz-launchguard.conf" ||
  die "packaging/zz-launchguard.conf does not name /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so"
# cargo-deb strips what it packages; cargo-generate-rpm does not. --strip-unneeded keeps the .so's
# dynamic symbols (slurm_spank_init_post_opt…, plugin_name, plugin_version).
"$STRIP" --strip-unneeded -o "$STAGE/rpm/launchguard" "$REL/launchguard"
"$STRIP" --strip-unneeded -o "$STAGE/rpm/spank_launchguard.so" "$REL/libspank_launchguard.so"

mkdir -p "$OUT"
DEB_VERSION=$VERSION-$REVISION+slurm$SLURM_REL
# Only this release's packages are replaced: target/packages/ can hold one pair per Slurm release.
RPM_ARCH=$(uname -m)
[ "$ARCH" = amd64 ] || RPM_ARCH=aarch64
rm -f "$OUT"/launchguard_*+slurm"$SLURM_REL"_"$ARCH".deb
want rpm && rm -f "$OUT"/launchguard-*."slurm$SLURM_REL"."$RPM_ARCH".rpm
log "cargo deb (variant $VARIANT, version $DEB_VERSION)"
# (cargo-deb warns that the staged ../target/packages/ assets are not Cargo build products: they are not.)
cargo deb -p launchguard --no-build --variant "$VARIANT" --deb-version "$DEB_VERSION" ${RUST_TARGET:+--target "$RUST_TARGET"} -o "$OUT/" 2>&1 |
  grep -v "does not match the pattern, and will not be built" >&2 || true
ls "$OUT"/launchguard_*+slurm"$SLURM_REL"_"$ARCH".deb >/dev/null 2>&1 || die "cargo deb made no $ARCH .deb"
if ! want rpm; then
  ls -l "$OUT"/launchguard_*+slurm"$SLURM_REL"_"$ARCH".deb
  exit 0
fi
log "cargo generate-rpm (release $REVISION.slurm$SLURM_REL, requires slurm >= $SLURM_REL, < $next_minor)"
cargo generate-rpm -p node-agent -o "$OUT/" ${RUST_TARGET:+--target "$RUST_TARGET"} \
  -s "release = \"$REVISION.slurm$SLURM_REL\"" \
  -s "requires = { slurm = \">= $SLURM_REL, < $next_minor\" }"
ls -l "$OUT"/launchguard_*+slurm"$SLURM_REL"_"$ARCH".deb "$OUT"/launchguard-*."slurm$SLURM_REL"."$RPM_ARCH".rpm
