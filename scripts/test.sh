#!/usr/bin/env bash
# Every test, as root on a fresh machine: brings up the one-node Slurm (installing Slurm, munge and
# the build's C dependencies with apt if missing), checks formatting and lints, builds, fuzzes each
# parser briefly, then runs the unit and real-cluster integration tests.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 10; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/cluster.sh up
echo "test: cargo fmt --check" >&2
cargo fmt --all -- --check
echo "test: cargo clippy -D warnings" >&2
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
echo "test: cargo build --release" >&2
cargo build --release --workspace --quiet
if [ "${FUZZ_SECONDS:-10}" != 0 ]; then
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
fi
echo "test: cargo test --release --workspace" >&2
cargo test --release --workspace
