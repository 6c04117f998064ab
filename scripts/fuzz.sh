#!/usr/bin/env bash
# Runs every cargo-fuzz target for a while (default 20 s each; FUZZ_SECONDS to change).
#   scripts/fuzz.sh            all targets
#   scripts/fuzz.sh nccl_parse one target
# Installs cargo-fuzz if missing. Uses the nightly toolchain when installed, otherwise stable with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz needs unstable compiler flags). No sanitizer: the fuzzed crates
# forbid unsafe code, so the targets look for panics, hangs and unbounded memory.
#   FUZZ_BUILD_ONLY=1   install cargo-fuzz and build every target, run none (scripts/test.sh does this
#                       in the background, so the later runs start at once)
#   FUZZ_JOBS=N         targets fuzzed at the same time (default: the number of CPUs, at most 2); each
#                       libFuzzer run uses one core for FUZZ_SECONDS
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
# Build first, all targets in one cargo run (the runs below then start at once, and two runs never
# race on one build).
echo "fuzz: building ${#targets[@]} targets" >&2
build=("${FUZZ[@]}" build -s none)
[ $# != 1 ] || build+=("$1")
if ! blog=$("${build[@]}" 2>&1); then
  printf '%s\n' "$blog" | tail -n 40 >&2; echo "fuzz: the build failed" >&2; exit 1
fi
[ -z "${FUZZ_BUILD_ONLY:-}" ] || exit 0
JOBS=${FUZZ_JOBS:-$(nproc)}
[ "$JOBS" -le 2 ] || JOBS=2
OUTDIR=$(mktemp -d /tmp/launchguard-fuzz.XXXXXX)
trap 'rm -rf "$OUTDIR"' EXIT
# fuzz_one T: one libFuzzer run; its output to $OUTDIR/T, its status to $OUTDIR/T.rc.
fuzz_one() {
  local t=$1 rc=0
  mkdir -p "fuzz/corpus/$t"
  "${FUZZ[@]}" run -s none "$t" -- -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=5 >"$OUTDIR/$t" 2>&1 || rc=$?
  echo "$rc" >"$OUTDIR/$t.rc"
}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  echo "fuzz: $t for ${SECS}s" >&2
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
  grep -E '^(Done|#[0-9]+ +DONE|INFO: -max_total_time)|panicked|ERROR|SUMMARY' "$OUTDIR/$t" | sed "s/^/fuzz: $t: /" >&2 || true
  if [ "$(cat "$OUTDIR/$t.rc" 2>/dev/null)" != 0 ]; then
    echo "fuzz: $t FAILED (see fuzz/artifacts/$t); its last lines:" >&2
    tail -n 20 "$OUTDIR/$t" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
echo "fuzz: ${#targets[@]} targets ran ${SECS}s each ($JOBS at a time), no crash" >&2
