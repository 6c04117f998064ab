#!/usr/bin/env bash
# The main job, on a fresh machine, as root: brings up a one-node Slurm with launchguard listed in
# plugstack, then runs good and bad launches as the non-root user `lgtest` and shows what the user
# sees and srun's exit codes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

scripts/cluster.sh up
echo "demo: building spank_launchguard.so and launchguard (cargo build --release)" >&2
cargo build --release --quiet -p spank-launchguard -p launchguard
scripts/cluster.sh agent-up   # launchguard on PATH, and its node agent (no systemd here) receiving the launches' reports

JOBDIR=/tmp/lg-demo; mkdir -p $JOBDIR; chmod 1777 $JOBDIR

# Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then B=$'\033[1m' D=$'\033[2m' H=$'\033[1;34m' N=$'\033[0m'; else B="" D="" H="" N=""; fi

shown() {  # the command as a user would type it: quote only words that need it
  local out="" w
  for w in "$@"; do
    if [[ $w =~ ^[][A-Za-z0-9_,.:=/@%+-]+$ ]]; then out+="$w "; else out+="'${w//\'/\'\\\'\'}' "; fi
  done
  printf '%s' "${out% }"
}

show() {  # show 'what this launch is' cmd…   — runs as lgtest in /tmp, prints output and exit code
  local title=$1; shift
  printf '\n%s# %s%s\n$ %s\n' "$B" "$title" "$N" "${SHOWCMD:-$(shown "$@")}"
  set +e
  (cd /tmp && runuser -u lgtest -- "$@" 2>&1 | sed 's/^/  /')
  local rc=${PIPESTATUS[0]}
  set -e
  printf '  %s→ %s exit %s%s\n' "$D" "${EXITOF:-$1}" "$rc" "$N"
}

mode() {
  scripts/cluster.sh install-plugin "$@" 2>/dev/null
  printf '\n%s== plugstack: %s%s\n' "$H" "$(cat /etc/slurm/plugstack.conf.d/zz-launchguard.conf)" "$N"
}

cat > $JOBDIR/train.sh <<'JOB'
#!/bin/bash
#SBATCH -c 2
#SBATCH --gres=gpu:2
srun bash -c 'echo "step: $(nproc) CPUs"'
echo "srun exit $?"
JOB
chmod 644 $JOBDIR/train.sh

mode mode=enforce
show "A GPU step without --cpus-per-task (one CPU per rank)" srun --gres=gpu:1 echo training
show "--export without ALL (the step would lose PATH)" srun --export=FOO=1 hostname
show "A comma inside an --export value (Slurm cuts it)" srun -c 2 --export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET printenv NCCL_DEBUG_SUBSYS
EXITOF=sbatch SHOWCMD="sbatch -W -o train.out train.sh; cat train.out   # train.sh: #SBATCH -c 2, --gres=gpu:2, then srun bash -c …" \
show "#SBATCH -c 2, then a plain srun (22.05 gives the step 1 CPU per task)" bash -c "sbatch -W -o $JOBDIR/train.out $JOBDIR/train.sh >/dev/null; cat $JOBDIR/train.out"
show "A healthy launch: launchguard says nothing" srun -c 2 --gres=gpu:1 --export=ALL,FOO=1 bash -c 'echo "training with $SLURM_CPUS_PER_TASK CPUs per task, FOO=$FOO"'

mode mode=warn
# The test cluster binds tasks to their CPUs as sites do (scripts/cluster.sh), so nproc shows the line's count.
show "Warn mode: the same GPU step runs, with one line of advice (nproc shows its one CPU)" srun --gres=gpu:1 bash -c 'echo "training on $(nproc) CPU"'
show "Warn mode: the export mistake reaches Slurm's own error" srun --export=FOO=1 hostname

printf '\n%sValidate a plugstack line without touching srun:%s\n$ launchguard check-args "mode=enforce cpus_per_task=wran"\n' "$B" "$N"
set +e; launchguard check-args "mode=enforce cpus_per_task=wran" 2>&1 | sed 's/^/  /'; printf '  %s→ exit %s%s\n' "$D" "${PIPESTATUS[0]}" "$N"; set -e

scripts/cluster.sh install-plugin mode=warn 2>/dev/null

printf '\n%sThe node agent has been receiving these launches:%s\n$ launchguard status\n' "$B" "$N"
set +e; launchguard status --limit 5 2>&1 | sed 's/^/  /'; printf '  %s→ exit %s%s\n' "$D" "${PIPESTATUS[0]}" "$N"; set -e
echo
echo "demo: done. Left running: the cluster, with launchguard in warn mode (/etc/slurm/plugstack.conf.d/zz-launchguard.conf)," >&2
echo "      and the agent without systemd (scripts/cluster.sh agent-up; log /var/log/launchguard-agent.log);" >&2
echo "      launchguard is on PATH (/usr/local/bin/launchguard, built at target/release/launchguard)." >&2
echo "      Try srun yourself as 'runuser -u lgtest -- srun …', 'launchguard status', 'launchguard check';" >&2
echo "      stop everything with scripts/cluster.sh down." >&2
