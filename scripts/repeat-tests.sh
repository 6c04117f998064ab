#!/usr/bin/env bash
# Runs integration test binaries again and again under CPU load, to find tests whose outcome
# depends on timing (issue: a test command you can trust on any machine).
#
#   scripts/repeat-tests.sh [-n RUNS] [-l LOAD] [PACKAGE:TEST ...]
#
#   -n RUNS   runs of each binary (default 5)
#   -l LOAD   stress-ng CPU workers beside each run (default: one per core; 0 = no extra load;
#             stress-ng is installed with apt-get if missing)
#   PACKAGE:TEST  e.g. launchguard-sweep:multinode (default: every binary under tests/tests,
#             node-agent/tests, sweep/tests, nccl/tests and core/tests); PACKAGE:lib runs the
#             package's unit tests (`--lib`; launchguard's include tests against the host cluster)
#   LG_CLUSTER=trixie|sid   the launch tests (launchguard-tests) run on that chroot cluster, under
#             its lock, as scripts/test.sh runs them
#
# Each run is `cargo test --release -p PACKAGE --test TEST` with LG_SLURM_TESTS=1 (the cluster
# tests compiled in), under `flock -o` of the lock of the cluster it uses (the host cluster's, the
# multinode cluster's; none for the pure nccl and core binaries), so it can run beside other users
# of those clusters. Needs root and the clusters
# scripts/test.sh brings up. Prints one line per run and a table of passes per binary at the end;
# exits 1 if any run failed. The log of each failed run is kept under $LG_REPEAT_DIR
# (default /tmp/lg-repeat).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/apt.sh

RUNS=5
LOAD=$(nproc)
while getopts "n:l:h" o; do
  case $o in
    n) RUNS=$OPTARG ;;
    l) LOAD=$OPTARG ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "repeat-tests: -n wants a positive number, not '$RUNS'" >&2; exit 2; }
[[ "$LOAD" =~ ^[0-9]+$ ]] || { echo "repeat-tests: -l wants a number of workers, not '$LOAD'" >&2; exit 2; }

binaries=("$@")
if [ ${#binaries[@]} = 0 ]; then
  for dir in tests node-agent sweep nccl core; do
    pkg=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -1)
    for f in "$dir"/tests/*.rs; do
      [ -e "$f" ] || continue
      name=$(basename "$f" .rs)
      # Helpers compiled into other test binaries, not binaries of their own.
      case "$name" in slurm_tests_cfg) continue ;; esac
      binaries+=("$pkg:$name")
    done
  done
fi

OUT=${LG_REPEAT_DIR:-/tmp/lg-repeat}
mkdir -p "$OUT"
export LG_SLURM_TESTS=1
if [ "$LOAD" -gt 0 ]; then
  command -v stress-ng >/dev/null || apt_install stress-ng
  stress-ng --cpu "$LOAD" --timeout 0 --quiet &
  STRESS=$!
  trap 'kill $STRESS 2>/dev/null' EXIT
fi

echo "repeat-tests: ${#binaries[@]} binaries x $RUNS runs, $LOAD stress-ng CPU workers beside them"
declare -A passed
failed_any=0
for b in "${binaries[@]}"; do
  pkg=${b%%:*} test=${b#*:}
  passed[$b]=0
  cargo build --release -q -p "$pkg" --tests 2>&1 | tail -5
  for run in $(seq "$RUNS"); do
    log="$OUT/$pkg.$test.$run.log"
    start=$(date +%s)
    # The cluster the binary uses, locked as every user of it does (pure binaries take none).
    case "$pkg:$test" in
      *:multinode|launchguard-sweep:*) lock=(flock -o /tmp/lg-cluster-multinode.lock) ;;
      launchguard-tests:*) lock=(flock -o "/tmp/lg-cluster-${LG_CLUSTER:-host}.lock") ;;
      launchguard-nccl:*|launchguard-core:*) lock=() ;;
      *) lock=(flock -o /tmp/lg-cluster-host.lock) ;;
    esac
    if [ "$test" = lib ]; then what=(--lib); else what=(--test "$test"); fi
    if "${lock[@]}" cargo test --release -q -p "$pkg" "${what[@]}" >"$log" 2>&1; then
      passed[$b]=$((passed[$b] + 1))
      echo "repeat-tests: $b run $run/$RUNS ok ($(( $(date +%s) - start )) s, $(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}') tests)"
      rm -f "$log"
    else
      failed_any=1
      echo "repeat-tests: $b run $run/$RUNS FAILED ($(( $(date +%s) - start )) s): $log"
      grep -E '^test .* FAILED|^    [a-z_0-9:]+$' "$log" | sed 's/^/repeat-tests:   /' | head -10
    fi
  done
done
echo "repeat-tests: passes per binary ($RUNS runs each, load $LOAD):"
for b in "${binaries[@]}"; do printf '  %-45s %s/%s\n' "$b" "${passed[$b]}" "$RUNS"; done
exit $failed_any
