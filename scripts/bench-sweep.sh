#!/usr/bin/env bash
# How `launchguard sweep` grows with the node count: wall time on 2, 4 and 8 namespace nodes of
# scripts/multinode.sh (one machine, so this measures Slurm's and launchguard's orchestration, not a
# network). For each size N:
#   srun       `srun -N N --ntasks-per-node=1 true`: Slurm's own fan-out, the floor
#   sweep      `launchguard sweep` (every node runs `launchguard check --json`), healthy cluster
#   sweep-down the same with one node's slurmd stopped (Slurm has not noticed yet): the per-node
#              retry path and the deadline
#   nccl       `launchguard sweep nccl` with the stand-in all_reduce_perf and a planted slow node
#              (two rounds), once
# Medians of REPS runs (default 5) for the first two; one run for the last two (they take seconds).
# Leaves a 3-node cluster up, as the tests expect.
#   LAUNCHGUARD=path (default target/release/launchguard)   SIZES="2 4 8"   REPS=5
set -euo pipefail
cd "$(dirname "$0")/.."
LG=${LAUNCHGUARD:-target/release/launchguard}
SIZES=${SIZES:-2 4 8}
REPS=${REPS:-5}
CONFIG=$PWD/sweep/tests/fixtures/multinode-launchguard.toml
STANDIN=$PWD/sweep/tests/fixtures/all_reduce_perf_standin.sh
export SLURM_CONF=/run/lg-mn/slurm.conf
[ -x "$LG" ] || { echo "bench-sweep: $LG missing: cargo build --release -p launchguard" >&2; exit 1; }

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }
time_ms() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now); ms "$t0" "$t1"; }

printf '%-5s %10s %10s %12s %10s %s\n' nodes srun_ms sweep_ms sweep_down_ms nccl_ms "nccl (pairs/rounds/bad)"
for n in $SIZES; do
  scripts/multinode.sh up "$n" >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; exit 1; }
  s=(); w=()
  for _ in $(seq "$REPS"); do
    s+=("$(time_ms srun -N "$n" --ntasks-per-node=1 true)")
    w+=("$(time_ms "$LG" sweep --check-arg=--config="$CONFIG")")
  done
  # Exit code must be 0 on the healthy cluster, or the figure means nothing.
  "$LG" sweep --check-arg=--config="$CONFIG" >/dev/null || { echo "bench-sweep: sweep on $n healthy nodes did not exit 0" >&2; exit 1; }
  scripts/multinode.sh break "lgn$n" down >/dev/null 2>&1 || { echo "bench-sweep: break failed" >&2; exit 1; }
  d=$(time_ms "$LG" sweep --timeout 60 --check-arg=--config="$CONFIG")
  scripts/multinode.sh heal >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; exit 1; }
  out=$(mktemp -d /tmp/lg-bench-nccl.XXXXXX)
  t0=$(now)
  j=$(LG_FAKE_SLOW_NODE=lgn2 "$LG" sweep nccl --quiet --json --rounds 2 --command "$STANDIN" --out "$out" || true)
  t1=$(now)
  rm -rf "$out"
  summary=$(printf '%s' "$j" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%d/%d/%s" % (len(r["runs"]), max(x["round"] for x in r["runs"]), ",".join(r["bad"]) or "-"))')
  printf '%-5s %10s %10s %12s %10s %s\n' "$n" \
    "$(printf '%s\n' "${s[@]}" | median)" "$(printf '%s\n' "${w[@]}" | median)" "$d" "$(ms "$t0" "$t1")" "$summary"
done
scripts/multinode.sh up 3 >/dev/null 2>&1
