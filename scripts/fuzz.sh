#!/usr/bin/env bash
# Runs every cargo-fuzz target for a while (default 20 s each; FUZZ_SECONDS to change).
#   scripts/fuzz.sh            all targets
#   scripts/fuzz.sh nccl_parse one target
# Installs cargo-fuzz if missing. Uses the nightly toolchain when installed, otherwise stable with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz needs unstable compiler flags). No sanitizer: the fuzzed crates
# forbid unsafe code, so the targets look for panics, hangs and unbounded memory.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-20}
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --quiet
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  FUZZ=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  FUZZ=(cargo fuzz)
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("${FUZZ[@]}" list)
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  echo "fuzz: $t for ${SECS}s" >&2
  "${FUZZ[@]}" run -s none "$t" -- -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=5 2>&1 \
    | grep -E '^(Done|#[0-9]+ +DONE|INFO: -max_total_time)|panicked|ERROR|SUMMARY' || true
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "fuzz: $t FAILED (see fuzz/artifacts/$t)" >&2; exit 1; }
done
echo "fuzz: ${#targets[@]} targets ran ${SECS}s each, no crash" >&2
