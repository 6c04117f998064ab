#!/usr/bin/env bash
#
# bench-nccl.sh - benchmarks for `launchguard nccl` (issue 5). Not a timed test: prints figures.
#
#  1. outliers: N GENERATED pairwise nccl-tests files (default 1000, 64 nodes, node 17 planted 20%
#     slow). Runs seed 002's bash/awk script (../shared/bench/validate_performance.sh) and
#     `launchguard nccl outliers` on the same files in the same run, checks that every file gets the
#     same verdict, prints both times and the ratio (target >= 20x).
#  2. log scan: a >= 1 GiB NCCL_DEBUG=INFO log built by repeating the real fixture lines of
#     ../shared/fixtures/nccl/ (every INFO/WARN line of every fixture log, repeated, with one real
#     results table at the end), scanned by `launchguard nccl check` pinned to one core; prints MB/s
#     (target >= 300 MB/s).
#
# Usage: scripts/bench-nccl.sh            (from the repository root or anywhere)
# Env:   LAUNCHGUARD=path    binary to measure (default target/release/launchguard)
#        BENCH_FILES=1000    number of generated result files
#        BENCH_LOG_MB=1024   minimum size of the big log, MiB
#        BENCH_DIR=dir       where to put the files (default: a fresh mktemp -d, removed at exit)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${LAUNCHGUARD:-target/release/launchguard}
SEED_SCRIPT=../shared/bench/validate_performance.sh
FIXTURES=../shared/fixtures/nccl
N=${BENCH_FILES:-1000}
LOG_MB=${BENCH_LOG_MB:-1024}
SIZE=17179869184

if [ ! -x "$BIN" ]; then
    echo "bench-nccl: '$BIN' not found; build it: cargo build --release -p launchguard-node-agent (or set LAUNCHGUARD=path)" >&2
    exit 3
fi
if [ -n "${BENCH_DIR:-}" ]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== launchguard nccl benchmarks: $BIN, $(nproc) CPU(s), $(uname -sr)"

# ---------------------------------------------------------------------------------------------
echo "== 1. outliers over $N generated pairwise files (node p5en-dy-gpu-17 planted 20% slow)"
rm -rf "$WORK/runs"
"$BIN" nccl generate --out "$WORK/runs" --files "$N" --nodes 64 --bad-node 17 --slow-factor 0.8 --seed 1
FILES=("$WORK"/runs/*.out)

t0=$(now)
bash "$SEED_SCRIPT" -s "$SIZE" "${FILES[@]}" > "$WORK/seed.txt"
t1=$(now)
seed_s=$(elapsed "$t0" "$t1")

# Best of 5 for the fast side (one run is a few tens of milliseconds; the spread is noise).
ours_s=
for _ in 1 2 3 4 5; do
    t0=$(now)
    rc=0
    "$BIN" nccl outliers --size "$SIZE" --csv "${FILES[@]}" > "$WORK/ours.csv" || rc=$?
    t1=$(now)
    s=$(elapsed "$t0" "$t1")
    if [ -z "$ours_s" ] || awk -v a="$s" -v b="$ours_s" 'BEGIN { exit !(a < b) }'; then ours_s=$s; fi
done
if [ "$rc" -gt 2 ]; then
    echo "bench-nccl: launchguard nccl outliers could not read the files (exit $rc)" >&2
    exit 1
fi

awk '/^--- File: /{ f = $3 } /busbw:/{ print f, (/OUTLIER/ ? "OUTLIER" : "OK") }' "$WORK/seed.txt" | sort > "$WORK/seed.verdicts"
awk -F, 'NR > 1 && ($6 == "OK" || $6 == "OUTLIER") { print $1, $6 }' "$WORK/ours.csv" | sort > "$WORK/ours.verdicts"
seed_n=$(wc -l < "$WORK/seed.verdicts")
seed_out=$(grep -c OUTLIER "$WORK/seed.verdicts" || true)
ours_out=$(grep -c OUTLIER "$WORK/ours.verdicts" || true)
if ! diff -q "$WORK/seed.verdicts" "$WORK/ours.verdicts" > /dev/null; then
    echo "bench-nccl: VERDICTS DIFFER between the seed script and launchguard:" >&2
    diff "$WORK/seed.verdicts" "$WORK/ours.verdicts" | head -20 >&2
    exit 1
fi
"$BIN" nccl outliers --size "$SIZE" "${FILES[@]}" > "$WORK/ours.txt" || true
echo "   seed 002 script : ${seed_s} s, $seed_n files, $seed_out outlier(s)  ($(grep 'RESULT' "$WORK/seed.txt" | sed 's/^ *//'))"
echo "   launchguard     : ${ours_s} s (best of 5), $ours_out outlier(s)  ($(grep '^RESULT' "$WORK/ours.txt"))"
echo "   verdicts        : identical for all $seed_n files"
echo "   speed-up        : $(awk -v a="$seed_s" -v b="$ours_s" 'BEGIN { printf "%.1fx", a / b }') (target >= 20x)"

# ---------------------------------------------------------------------------------------------
echo "== 2. NCCL_DEBUG=INFO log scan, >= $LOG_MB MiB built from the real fixture lines, one core"
big=$WORK/big_info.log
chunk=$WORK/chunk.log
# Header (nccl-tests banner + rank lines) of the real all_reduce run, then every NCCL line of every
# fixture log repeated, then the real table and footer once at the end.
head_end=$(grep -n '^#       size' "$FIXTURES/all_reduce_perf_2gpu_nccl_debug_info.log" | cut -d: -f1)
grep -h ' NCCL \(INFO\|WARN\) ' "$FIXTURES"/*.log > "$chunk"
while [ "$(stat -c %s "$chunk")" -lt $((8 * 1024 * 1024)) ]; do
    cat "$chunk" "$chunk" > "$chunk.2" && mv "$chunk.2" "$chunk"
done
{
    head -n 7 "$FIXTURES/all_reduce_perf_2gpu_nccl_debug_info.log"
    need=$((LOG_MB * 1024 * 1024))
    have=0
    csize=$(stat -c %s "$chunk")
    while [ "$have" -lt "$need" ]; do cat "$chunk"; have=$((have + csize)); done
    tail -n +$((head_end - 2)) "$FIXTURES/all_reduce_perf_2gpu_nccl_debug_info.log"
} > "$big"
bytes=$(stat -c %s "$big")
lines=$(wc -l < "$big")
cat "$big" > /dev/null # warm the page cache: measure parsing, not the disk
pin=()
if command -v taskset > /dev/null; then pin=(taskset -c 0); fi
best=
for _ in 1 2 3; do
    t0=$(now)
    rc=0
    "${pin[@]}" "$BIN" nccl check "$big" > "$WORK/big.txt" || rc=$?
    t1=$(now)
    s=$(elapsed "$t0" "$t1")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
done
grep -q 'all_reduce_perf: 28 rows' "$WORK/big.txt" || { echo "bench-nccl: the big log's table was not found" >&2; cat "$WORK/big.txt" >&2; exit 1; }
echo "   log             : $bytes bytes, $lines lines (check exit $rc: $(tail -1 "$WORK/big.txt" | sed 's/.*verdict //'))"
echo "   scan            : ${best} s (best of 3, ${pin[*]:-unpinned})"
echo "   throughput      : $(awk -v b="$bytes" -v s="$best" 'BEGIN { printf "%.0f MB/s (%.0f MiB/s)", b / s / 1e6, b / s / 1048576 }') (target >= 300 MB/s)"
