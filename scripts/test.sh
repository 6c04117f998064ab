#!/usr/bin/env bash
# Every test, as root on a fresh machine: brings up the one-node Slurm 22.05 of the host and a Slurm
# 24.11 in a Debian 13 chroot (installing Slurm, munge, debootstrap and the build's C dependencies with
# apt if missing; the chroot is reused when present), checks formatting and lints, builds the plugin
# once per release, fuzzes each parser briefly, then runs the unit tests and the real-cluster
# integration tests on both releases.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 10; 0 skips fuzzing)
#   LG_RELEASES="host trixie"   which clusters to test (default both)
#   LG_ARM64=0                   skips the arm64 stage (Grace nodes, emulated; see below)
set -euo pipefail
cd "$(dirname "$0")/.."
RELEASES=${LG_RELEASES:-host trixie}
LOG=$(mktemp /tmp/launchguard-test.XXXXXX)
trap 'rm -f "$LOG"' EXIT

for c in $RELEASES; do LG_CLUSTER=$c scripts/cluster.sh up; done
# launchguard sweep (issue 8): a three-node Slurm on this machine (namespaces, ports 6917/6918) for
# sweep/tests/multinode.rs, run below by `cargo test --workspace` (about 80 s of tests).
scripts/multinode.sh up 3
echo "test: cargo fmt --check" >&2
cargo fmt --all -- --check
echo "test: cargo clippy -D warnings" >&2
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
echo "test: cargo build --release" >&2
cargo build --release --workspace --quiet
for c in $RELEASES; do [ "$c" = host ] || LG_CLUSTER=$c scripts/cluster.sh build-plugin; done
if [ "${FUZZ_SECONDS:-10}" != 0 ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
fi
for c in $RELEASES; do
  [ "$c" = host ] && continue
  echo "test: launch tests on the $c cluster ($(chroot /srv/lg-$c srun --version))" >&2
  LG_CLUSTER=$c cargo test --release -p launchguard-tests 2>&1 | tee -a "$LOG"
done
echo "test: cargo test --release --workspace (host cluster: $(srun --version))" >&2
cargo test --release --workspace 2>&1 | tee -a "$LOG"
# Packages (scripts/test-package.sh): build the .deb and .rpm, install the .deb, srun against the
# installed plugin, refuse removal while plugstack loads it, purge; host cluster only.
case " $RELEASES " in *" host "*) scripts/test-package.sh 2>&1 | tee -a "$LOG" ;; esac
# arm64 (Grace nodes; issue 18): a one-node Slurm 22.05 for aarch64 in /srv/lg-arm64 run by qemu-user
# (scripts/cluster.sh, LG_CLUSTER=arm64; the debootstrap is cached there). The arm64 .deb is built
# (cross-compiled), installed in the chroot with dpkg, `launchguard check` runs there, and the launch
# tests run against the plugin the package installed. Under emulation every srun takes ~4 s, so the
# tests that only exercise srun's release rules (identical Slurm 22.05 and identical code on the host
# cluster above) are skipped here: the subset still loads every plugin callback and every syscall path
# (access(2), open flags, send flags, enroot's repair, devices, the NCCL environment). ~5 minutes.
if [ "${LG_ARM64:-1}" != 0 ]; then scripts/test-arm64.sh 2>&1 | tee -a "$LOG"; fi
# Leave both clusters as the demo does: launchguard listed in warn mode.
for c in $RELEASES; do LG_CLUSTER=$c scripts/cluster.sh install-plugin mode=warn; done
# One closing line over every cargo test run above (both clusters, every crate).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$LOG"
