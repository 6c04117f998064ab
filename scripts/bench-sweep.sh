#!/usr/bin/env bash
# How `launchguard sweep` grows with the node count: wall time on namespace nodes of
# scripts/multinode.sh (one machine, so this measures Slurm's and launchguard's orchestration, not a
# network). For each size N:
#   srun       `srun -N N --ntasks-per-node=1 true`: Slurm's own fan-out, the floor
#   sweep      `launchguard sweep` (every node runs `launchguard check --json`), healthy cluster
#   down       the same with one node's slurmd just stopped: the launch-error path and the deadline
#   munge      the same with one node's munged running with a different key
#              (for both: `named` lists the nodes the sweep flagged, which must be the broken one;
#              `unjudged` the nodes it could not judge, said apart: it names no fault there)
#   jobs/steps `launchguard sweep nccl --launch jobs|steps` with the stand-in all_reduce_perf and a
#              planted slow node (up to two rounds), once each; pairs/rounds/bad after the figure
# Medians of REPS runs (default 5) for the first two; one run for the others (they take seconds).
# MUNGE_ONLY=1: only the munge-key fault, once per position in POSITIONS (default "first middle last":
# lgn1, lgn<N/2>, lgnN) and per moment: `fresh` sweeps right after the key changed (slurmctld has
# not noticed), `noticed` waits (bounded, 60 s) until sinfo shows the node not responding first.
# One line per run: nodes, node broken, moment, ms, named, unjudged; each run's --json report is
# kept in /tmp/lg-bench-sweep-<N>-<node>-<moment>.json. SLOW=S (with MUNGE_ONLY): every node sleeps S
# seconds before its check (--check-command), so its report is lost with the step the broken node
# aborts and the sweep's retry path runs (docs/sweep.md's `slow` row: SLOW=3).
# `load` is the 1-minute load average when the size was done (the machine may be shared).
# Holds /tmp/lg-cluster-multinode.lock (flock -o: the daemons do not keep it) for all sizes; leaves a 3-node cluster up, as the tests expect.
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

# flagged: the nodes a `sweep --json` report names (a finding of their own, no report, or named by a
# cluster-wide finding), comma-separated, "-" for none.
# Unjudged nodes (finding cluster.node_unjudged) are not counted as named.
flagged() { python3 -c 'import json,sys
r=json.load(sys.stdin); bad=set(); unj=set()
for n in r["nodes"]:
    ids=[f["id"] for f in n.get("findings",[])]
    if ids==["cluster.node_unjudged"]: unj.add(n["node"]); continue
    if ids or n.get("result")!="report": bad.add(n["node"])
for f in r.get("cluster_findings",[]): bad.update(f.get("nodes",[]))
print((",".join(sorted(bad)) or "-") + ("" if len(sys.argv)<2 else " " + (",".join(sorted(unj)) or "-")))' "$@"; }
fault() { # [unjudged] -> "ms named [unjudged]"
  local t0 t1 j
  t0=$(now)
  if [ -n "${SLOW:-}" ]; then
    j=$("$LG" sweep --json --timeout 60 --check-command="sleep $SLOW; exec $(realpath "$LG") check --json --config=$CONFIG" 2>/dev/null || true)
  else
    j=$("$LG" sweep --json --timeout 60 --check-arg=--config="$CONFIG" 2>/dev/null || true)
  fi
  t1=$(now)
  # Kept for reading afterwards: the last report of each kind of run.
  [ -z "${SAVE:-}" ] || printf '%s\n' "$j" > "$SAVE"
  echo "$(ms "$t0" "$t1") $(printf '%s' "$j" | flagged "$@")"
}
noticed() { # node: wait until slurmctld marks it not responding (`*`), at most 60 s
  local i
  for i in $(seq 300); do
    case "$(sinfo -h -n "$1" -o '%T')" in *'*'*) return 0 ;; esac
    sleep 0.2
  done
  echo "bench-sweep: $1 not marked not responding within 60 s" >&2; return 1
}
munge_only() { # n
  local n=$1 pos node moment r
  scripts/multinode.sh up "$n" >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; return 1; }
  for pos in ${POSITIONS:-first middle last}; do
    case "$pos" in first) node=lgn1 ;; middle) node=lgn$(( (n + 1) / 2 )) ;; last) node=lgn$n ;; *) node=$pos ;; esac
    for moment in fresh noticed; do
      scripts/multinode.sh break "$node" munge-key >/dev/null 2>&1 || { echo "bench-sweep: break failed" >&2; return 1; }
      [ "$moment" = fresh ] || noticed "$node" || return 1
      r=$(SAVE=/tmp/lg-bench-sweep-$n-$node-$moment.json fault unjudged)
      printf '%-5s %-6s %-8s %8s %-9s %s\n' "$n" "$node" "$moment" ${r%% *} $(echo "$r" | cut -d' ' -f2) $(echo "$r" | cut -d' ' -f3)
      scripts/multinode.sh heal >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; return 1; }
    done
  done
}
summary() { python3 -c 'import json,sys; r=json.load(sys.stdin); print("%d/%d/%s" % (len(r["runs"]), max(x["round"] for x in r["runs"]), ",".join(r["bad"]) or "-"))'; }
nccl() { # launch -> "ms pairs/rounds/bad"
  local out t0 t1 j
  out=$(mktemp -d /tmp/lg-bench-nccl.XXXXXX)
  t0=$(now)
  j=$(LG_FAKE_SLOW_NODE=lgn2 "$LG" sweep nccl --launch "$1" --quiet --json --rounds 2 --command "$STANDIN" --out "$out" || true)
  t1=$(now)
  rm -rf "$out"
  echo "$(ms "$t0" "$t1") $(printf '%s' "$j" | summary)"
}
one_size() { # n
  local n=$1 s=() w=() d m jobs steps
  scripts/multinode.sh up "$n" >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; return 1; }
  for _ in $(seq "$REPS"); do
    s+=("$(time_ms srun -N "$n" --ntasks-per-node=1 true)")
    w+=("$(time_ms "$LG" sweep --check-arg=--config="$CONFIG")")
  done
  # Exit code must be 0 on the healthy cluster, or the figure means nothing.
  "$LG" sweep --check-arg=--config="$CONFIG" >/dev/null || { echo "bench-sweep: sweep on $n healthy nodes did not exit 0" >&2; return 1; }
  scripts/multinode.sh break "lgn$n" down >/dev/null 2>&1 || { echo "bench-sweep: break failed" >&2; return 1; }
  d=$(fault)
  scripts/multinode.sh heal >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; return 1; }
  scripts/multinode.sh break "lgn$n" munge-key >/dev/null 2>&1 || { echo "bench-sweep: break failed" >&2; return 1; }
  m=$(fault)
  scripts/multinode.sh heal >/tmp/lg-bench-sweep-up.log 2>&1 || { cat /tmp/lg-bench-sweep-up.log >&2; return 1; }
  jobs=$(nccl jobs)
  steps=$(nccl steps)
  printf '%-5s %8s %8s %8s %-7s %8s %-7s %8s %-9s %8s %-9s %5s\n' "$n" \
    "$(printf '%s\n' "${s[@]}" | median)" "$(printf '%s\n' "${w[@]}" | median)" ${d% *} "${d#* }" ${m% *} "${m#* }" \
    ${jobs% *} "${jobs#* }" ${steps% *} "${steps#* }" "$(cut -d' ' -f1 /proc/loadavg)"
}

if [ -n "${MUNGE_ONLY:-}" ]; then
  printf '%-5s %-6s %-8s %8s %-9s %s\n' nodes broken moment ms named unjudged
  flock -o /tmp/lg-cluster-multinode.lock bash -c "$(declare -f now ms flagged fault noticed munge_only)
    LG='$LG' CONFIG='$CONFIG' POSITIONS='${POSITIONS:-first middle last}' SLOW='${SLOW:-}'
    for n in $SIZES; do munge_only \$n || exit 1; done
    scripts/multinode.sh up 3 >/dev/null 2>&1"
  exit
fi
printf '%-5s %8s %8s %8s %-7s %8s %-7s %8s %-9s %8s %-9s %5s\n' nodes srun_ms sweep_ms down_ms named munge_ms named jobs_ms "p/r/bad" steps_ms "p/r/bad" load
# One hold of the lock for every size (a test run slipping in between would rebuild the cluster).
flock -o /tmp/lg-cluster-multinode.lock bash -c "$(declare -f now ms median time_ms flagged fault summary nccl one_size)
  LG='$LG' REPS='$REPS' CONFIG='$CONFIG' STANDIN='$STANDIN'
  for n in $SIZES; do one_size \$n || exit 1; done
  scripts/multinode.sh up 3 >/dev/null 2>&1"
