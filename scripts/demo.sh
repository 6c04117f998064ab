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

JOBDIR=/tmp/lg-demo; mkdir -p $JOBDIR; chmod 1777 $JOBDIR

shown() {  # the command as a user would type it: quote only words that need it
  local out="" w
  for w in "$@"; do
    if [[ $w =~ ^[][A-Za-z0-9_,.:=/@%+-]+$ ]]; then out+="$w "; else out+="'${w//\'/\'\\\'\'}' "; fi
  done
  printf '%s' "${out% }"
}

show() {  # show 'what this launch is' cmd…   — runs as lgtest in /tmp, prints output and exit code
  local title=$1; shift
  printf '\n\033[1m# %s\033[0m\n$ %s\n' "$title" "${SHOWCMD:-$(shown "$@")}"
  set +e
  (cd /tmp && runuser -u lgtest -- "$@" 2>&1 | sed 's/^/  /')
  local rc=${PIPESTATUS[0]}
  set -e
  printf '  \033[2m→ %s exit %s\033[0m\n' "${EXITOF:-$1}" "$rc"
}

mode() {
  scripts/cluster.sh install-plugin "$@" 2>/dev/null
  printf '\n\033[1;34m== plugstack: %s\033[0m\n' "$(cat /etc/slurm/plugstack.conf.d/50-launchguard.conf)"
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
show "Warn mode: the same GPU step runs, with one line of advice" srun --gres=gpu:1 echo training
show "Warn mode: the export mistake reaches Slurm's own error" srun --export=FOO=1 hostname

printf '\n\033[1mValidate a plugstack line without touching srun:\033[0m\n$ launchguard check-args "mode=enforce cpus_per_task=wran"\n'
set +e; "$ROOT/target/release/launchguard" check-args "mode=enforce cpus_per_task=wran" 2>&1 | sed 's/^/  /'; printf '  \033[2m→ exit %s\033[0m\n' "${PIPESTATUS[0]}"; set -e

scripts/cluster.sh install-plugin mode=warn 2>/dev/null
echo
echo "demo: done. The cluster is still up with launchguard in warn mode; try srun yourself as 'runuser -u lgtest -- srun …'," >&2
echo "      or stop it with scripts/cluster.sh down." >&2
