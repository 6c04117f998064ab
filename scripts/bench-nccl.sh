#!/usr/bin/env bash
#
# bench-nccl.sh - benchmarks for `launchguard nccl` (issue 5). Not a timed test: prints figures.
#
#  1. outliers: N GENERATED pairwise nccl-tests files (default 1000, 64 nodes, node 17 planted 20%
#     slow). Runs the reference bash/awk script (nccl/tests/fixtures/reference/validate_performance.sh) and
#     `launchguard nccl outliers` on the same files in the same run, checks that every file gets the
#     same verdict, prints both times and the ratio (target >= 20x).
#     Skipped (with a note) when that script is missing.
#  2. log scan (issue 33): a >= 1 GiB NCCL_DEBUG=INFO log built by repeating the real fixture lines
#     of nccl/tests/fixtures/ (every INFO/WARN line of every fixture log, repeated, with one real
#     results table at the end), scanned by `launchguard nccl check` beside the anchors `wc -l` and
#     `grep -c NCCL`, each pinned to one core (`taskset -c 0`) and on all cores, in the same run;
#     prints best-of-3 wall times, MB/s (10^6 bytes per second) and the ratios the issue sets:
#     on one core launchguard <= grep, on all cores launchguard <= 2x wc -l. The ratios hold on a
#     noisy machine better than the times. Also checks one core and all cores give the same JSON.
#  3. many hosts (issue 15): a log from BENCH_HOSTS hosts x 8 ranks with distinct pids, nccl-tests
#     -J JSON with 100,000 distinct device hosts, and 50,000 `#  Rank` lines; prints each time
#     next to the time for the same number of lines from one host (per-line cost must not grow with
#     the number of hosts: the ratio should stay near 1).
#
# Usage: scripts/bench-nccl.sh            (from the repository root or anywhere)
# Env:   LAUNCHGUARD=path    binary to measure (default target/release/launchguard)
#        BENCH_BEFORE=path   part 2: another launchguard binary (an earlier build) measured in the
#                            same run, with the ratio to it and a check that its JSON is the same
#        BENCH_FILES=1000    number of generated result files
#        BENCH_LOG_MB=1024   minimum size of the big log, MiB
#        BENCH_HOSTS=1000    hosts in the many-hosts log (part 3)
#        BENCH_PARTS="1 2 3" which parts to run
#        BENCH_DIR=dir       where to put the files (default: a fresh mktemp -d, removed at exit)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${LAUNCHGUARD:-target/release/launchguard}
SEED_SCRIPT=nccl/tests/fixtures/reference/validate_performance.sh
FIXTURES=nccl/tests/fixtures
PARTS=${BENCH_PARTS:-1 2 3}
HOSTS=${BENCH_HOSTS:-1000}
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
want() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# cputime CMD...: runs CMD, sets CPU_S (user+sys of the child, seconds) and RC. Output goes to a
# file, not /dev/null: GNU grep stops at the first match when its output is /dev/null.
cputime() {
    local tf
    tf=$(mktemp)
    RC=0
    ( TIMEFORMAT='%U %S'; time "$@" > "$WORK/out.txt" ) 2> "$tf" || RC=$?
    CPU_S=$(awk 'END { printf "%.3f", $1 + $2 }' "$tf")
    rm -f "$tf"
}

echo "== launchguard nccl benchmarks: $BIN, $(nproc) CPU(s), $(uname -sr)"

# ---------------------------------------------------------------------------------------------
if want 1 && [ ! -f "$SEED_SCRIPT" ]; then
    echo "== 1. skipped: $SEED_SCRIPT (the reference bash/awk script) is not there"
elif want 1; then
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
    echo "bench-nccl: VERDICTS DIFFER between the reference script and launchguard:" >&2
    diff "$WORK/seed.verdicts" "$WORK/ours.verdicts" | head -20 >&2
    exit 1
fi
"$BIN" nccl outliers --size "$SIZE" "${FILES[@]}" > "$WORK/ours.txt" || true
echo "   reference script: ${seed_s} s, $seed_n files, $seed_out outlier(s)  ($(grep 'RESULT' "$WORK/seed.txt" | sed 's/^ *//'))"
echo "   launchguard     : ${ours_s} s (best of 5), $ours_out outlier(s)  ($(grep '^RESULT' "$WORK/ours.txt"))"
echo "   verdicts        : identical for all $seed_n files"
echo "   speed-up        : $(awk -v a="$seed_s" -v b="$ours_s" 'BEGIN { printf "%.1fx", a / b }') (target >= 20x)"
fi

# ---------------------------------------------------------------------------------------------
if want 2; then
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
# Warm the page cache and write the new log out first: measure parsing, not the disk. Without the
# sync, the kernel was still writing the fresh 1 GiB back during the timed runs (on the H200 host the
# one-core scan took 0.86-1.36 s over six runs with the log on disk, 0.76-0.95 s with it on tmpfs and
# 0.81-0.93 s after the sync, one build).
cat "$big" > /dev/null
sync
pin=()
if command -v taskset > /dev/null; then pin=(taskset -c 0); fi
# best3 CMD...: best wall time of 3 runs (seconds) into B3, with CPU time (user+sys) into C3.
best3() {
    B3=
    C3=
    for _ in 1 2 3; do
        local t0 t1 s
        t0=$(now)
        cputime "$@"
        t1=$(now)
        s=$(elapsed "$t0" "$t1")
        if [ -z "$B3" ] || awk -v a="$s" -v b="$B3" 'BEGIN { exit !(a < b) }'; then B3=$s; fi
        if [ -z "$C3" ] || awk -v a="$CPU_S" -v b="$C3" 'BEGIN { exit !(a < b) }'; then C3=$CPU_S; fi
    done
}
best3 "${pin[@]}" wc -l "$big"; wc1=$B3
best3 "${pin[@]}" grep -c NCCL "$big"; grep1=$B3
best3 "${pin[@]}" "$BIN" nccl check "$big"; lg1=$B3; lg1_cpu=$C3
best3 wc -l "$big"; wcN=$B3
best3 grep -c NCCL "$big"; grepN=$B3
best3 "$BIN" nccl check "$big"; lgN=$B3
if [ -n "${BENCH_BEFORE:-}" ]; then
    best3 "${pin[@]}" "$BENCH_BEFORE" nccl check "$big"; old1=$B3
    best3 "$BENCH_BEFORE" nccl check "$big"; oldN=$B3
fi
# Largest resident memory of one scan (KiB), where GNU time is there.
rss() { if [ -x /usr/bin/time ]; then { /usr/bin/time -f %M "$@" 2>&1 > /dev/null || true; } | tail -1; else echo "?"; fi; }
rss1=$(rss "${pin[@]}" "$BIN" nccl check "$big")
rssN=$(rss "$BIN" nccl check "$big")
rc=0
"$BIN" nccl check "$big" > "$WORK/big.txt" || rc=$?
grep -q 'all_reduce_perf: 28 rows' "$WORK/big.txt" || { echo "bench-nccl: the big log's table was not found" >&2; cat "$WORK/big.txt" >&2; exit 1; }
# The same verdict from one thread (pinned) and from all of them.
"${pin[@]}" "$BIN" nccl check --json "$big" > "$WORK/one.json" || true
"$BIN" nccl check --json "$big" > "$WORK/all.json" || true
cmp -s "$WORK/one.json" "$WORK/all.json" || { echo "bench-nccl: one core and all cores disagree" >&2; exit 1; }
if [ -n "${BENCH_BEFORE:-}" ]; then
    "$BENCH_BEFORE" nccl check --json "$big" > "$WORK/before.json" || true
    cmp -s "$WORK/one.json" "$WORK/before.json" || { echo "bench-nccl: $BENCH_BEFORE gives other JSON" >&2; exit 1; }
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mbs() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.0f MB/s", b / s / 1e6 }'; }
echo "   log             : $bytes bytes, $lines lines (check exit $rc: $(tail -1 "$WORK/big.txt" | sed 's/.*verdict //'); same JSON on 1 and $(nproc) cores)"
echo "   best of 3 wall  : 1 core (${pin[*]:-unpinned})          all $(nproc) cores"
printf '   %-16s: %8s s  %-12s %8s s  %s\n' "wc -l" "$wc1" "($(mbs "$wc1"))" "$wcN" "($(mbs "$wcN"))"
printf '   %-16s: %8s s  %-12s %8s s  %s\n' "grep -c NCCL" "$grep1" "($(mbs "$grep1"))" "$grepN" "($(mbs "$grepN"))"
printf '   %-16s: %8s s  %-12s %8s s  %s\n' "launchguard" "$lg1" "($(mbs "$lg1"))" "$lgN" "($(mbs "$lgN"))"
if [ -n "${BENCH_BEFORE:-}" ]; then
    printf '   %-16s: %8s s  %-12s %8s s  %s\n' "before" "$old1" "($(mbs "$old1"))" "$oldN" "($(mbs "$oldN"))"
    echo "   before/launchguard: 1 core $(ratio "$old1" "$lg1")x, all cores $(ratio "$oldN" "$lgN")x (same JSON)"
fi
echo "   launchguard CPU : ${lg1_cpu} s on 1 core ($(mbs "$lg1_cpu") of CPU time; MB = 10^6 bytes); max RSS ${rss1} KiB on 1 core, ${rssN} KiB on all"
echo "   ratios          : 1 core: launchguard/grep $(ratio "$lg1" "$grep1") (target <= 1), launchguard/wc $(ratio "$lg1" "$wc1");" \
    "all cores: launchguard/wc $(ratio "$lgN" "$wcN") (target <= 2), launchguard/grep $(ratio "$lgN" "$grepN")"
fi

# ---------------------------------------------------------------------------------------------
if want 3; then
echo "== 3. many hosts: per-line cost must not grow with hosts, processes or ranks (issue 15)"
# scan3 NAME FILE: best-of-3 CPU seconds of `nccl check FILE` into T3.
scan3() {
    T3=
    for _ in 1 2 3; do
        cputime "$BIN" nccl check "$2"
        if [ "$RC" -gt 3 ]; then echo "bench-nccl: nccl check $1 exited $RC" >&2; exit 1; fi
        if [ -z "$T3" ] || awk -v a="$CPU_S" -v b="$T3" 'BEGIN { exit !(a < b) }'; then T3=$CPU_S; fi
    done
}
line='NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA'
awk -v H="$HOSTS" -v L="$line" 'BEGIN { n = H * 8 * 100; for (i = 0; i < n; i++) { h = i % H; r = int(i / H) % 8; printf "gpu-%05d:%d:%d [%d] %s\n", h, 10000 + h * 8 + r, 20000 + i, r, L } }' > "$WORK/hosts.log"
awk -v H="$HOSTS" -v L="$line" 'BEGIN { n = H * 8 * 100; for (i = 0; i < n; i++) { r = i % 8; printf "gpu-%05d:%d:%d [%d] %s\n", 1, 10000 + r, 20000 + i, r, L } }' > "$WORK/onehost.log"
scan3 hosts "$WORK/hosts.log"; many=$T3
scan3 onehost "$WORK/onehost.log"; one=$T3
echo "   log, $HOSTS hosts x 8 ranks : ${many} s CPU for $(wc -l < "$WORK/hosts.log") lines; one host: ${one} s ($(awk -v a="$many" -v b="$one" 'BEGIN { printf "%.2fx", a / b }'))"
awk 'BEGIN { n = 80000; for (i = 0; i < n; i++) printf "node-1:%d:%d [0] NCCL INFO cudaDriverVersion 12040\n", 1000 + i, 1000 + i }' > "$WORK/pids.log"
scan3 pids "$WORK/pids.log"
echo "   log, 80,000 distinct pids  : ${T3} s CPU"
awk 'BEGIN { n = 50000; printf "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n"; for (i = 0; i < n; i++) printf "#  Rank %5d Group  0 Pid %6d on gpu-%05d device  %d [0000:%02x:00] NVIDIA H100 80GB HBM3\n", i, 1000 + i, int(i / 8), i % 8, 16 + i % 8 }' > "$WORK/ranks.log"
scan3 ranks "$WORK/ranks.log"
echo "   50,000 '#  Rank' lines     : ${T3} s CPU"
awk 'BEGIN { n = 100000; printf "{\"version\":3,\"args\":[\"./all_reduce_perf\"],\"nccl_version\":22809,\"config\":{\"nthreads\":1,\"ngpus\":8,\"devices\":["; for (i = 0; i < n; i++) printf "%s{\"rank\":%d,\"group\":0,\"pid\":%d,\"hostname\":\"gpu-%06d\",\"device\":0,\"device_hex\":\"0000:10:00\",\"device_info\":\"NVIDIA H100\"}", (i ? "," : ""), i * 8, 1000 + i, i; printf "]},\"results\":[{\"size\":8,\"count\":2,\"type\":\"float\",\"redop\":\"sum\",\"root\":\"-1\",\"out_of_place\":{\"time\":10.0,\"alg_bw\":0.0,\"bus_bw\":0.0,\"nwrong\":0},\"in_place\":{\"time\":10.0,\"alg_bw\":0.0,\"bus_bw\":0.0,\"nwrong\":0}}],\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":0.0,\"okay\":\"unchecked\"},\"errors\":[]}\n" }' > "$WORK/hosts.json"
scan3 json "$WORK/hosts.json"
echo "   -J JSON, 100,000 device hosts ($(stat -c %s "$WORK/hosts.json") bytes): ${T3} s CPU"
fi
