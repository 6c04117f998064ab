# Stages of scripts/test.sh and what it prints when one fails (sourced; bash).
#
#   stage DESCRIPTION RERUN [RERUN_ENV]   starts a stage: prints `test: DESCRIPTION (at N s)` and
#                                        remembers the command that reruns it and, for a cargo test
#                                        stage, the variables a rerun of one test needs
#   test_failed RC                       from the EXIT trap: which stage failed, the test counts so far,
#                                        the exact rerun command, and what is left running
#   left_running                         the clusters, agent and test node whose daemons are alive
#
# TESTLOG must name the file that collects every cargo test run's output (scripts/lib/testlog.py
# reads it). The rerun line of a failed cargo test is built from the test names libtest printed and
# cargo's `to rerun pass` hint, with RERUN_ENV in front (cargo's hint alone runs 0 cluster tests:
# they are compiled only with LG_SLURM_TESTS=1).
STAGE="start"
RERUN=""
RERUN_ENV=""
TESTLIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

stage() {
  STAGE=$1
  RERUN=$2
  RERUN_ENV=${3:-}
  echo "test: $1 (at ${SECONDS} s)" >&2
}

. "$TESTLIB_DIR/pidfile.sh"
# _alive FILE: FILE names a live process that is FILE's (pidfile.sh: not a reused pid).
_alive() { pid_alive "$1"; }

left_running() {
  local any=0
  _left() { [ "$any" = 1 ] || echo "test: left running for a look (stop each with the command after it):"; any=1; echo "test:   $1"; }
  _alive /run/slurmctld.pid && _left "the one-node cluster (Slurm 22.05, ports 6817/6818): scripts/cluster.sh down"
  _alive /run/launchguard-agent.pid && _left "the node agent, pid $(cat /run/launchguard-agent.pid): scripts/cluster.sh agent-down"
  _alive /run/lg-mn/slurmctld.pid && _left "the three-node cluster (SLURM_CONF=/run/lg-mn/slurm.conf): scripts/multinode.sh down"
  _alive /srv/lg-trixie/run/slurmctld.pid && _left "the Slurm 24.11 chroot cluster (ports 7817/7818): LG_CLUSTER=trixie scripts/cluster.sh down"
  _alive /srv/lg-sid/run/slurmctld.pid && _left "the Slurm 26.05 chroot cluster (ports 7917/7918): LG_CLUSTER=sid scripts/cluster.sh down"
  _alive /srv/lg-arm64/run/slurmctld.pid && _left "the emulated arm64 cluster (ports 8917/8918): LG_CLUSTER=arm64 scripts/cluster.sh down"
  _alive /run/lg-node/nspawn.pid && _left "the systemd test node (systemd-nspawn, ports 8817/8818): scripts/node.sh down"
  _alive /run/lg-vm/trixie/qemu.pid && _left "the cgroup v2 VM (QEMU, Slurm 24.11 inside): scripts/vm.sh down"
  _alive /run/lg-vm/trixie-gpunode2/qemu.pid && _left "the second VM of the two-node cluster (scripts/test-vm2.sh): scripts/vm.sh down"
  _alive /run/lg-vm/sid/qemu.pid && _left "the Slurm 26.05 VM (QEMU, Debian sid): LG_VM_RELEASE=sid scripts/vm.sh down"
  local d
  for d in /etc/slurm/plugstack.conf.d/*launchguard*.conf; do
    [ -e "$d" ] && _left "launchguard listed in $d: $(grep -v '^#' "$d" | head -n 1) (scripts/cluster.sh install-plugin mode=warn restores the demo's line)"
  done
  [ "$any" = 1 ] || echo "test: nothing left running"
}

test_failed() {
  echo "test: FAILED (exit $1) at ${SECONDS} s" >&2
  python3 "$TESTLIB_DIR/testlog.py" summary "$TESTLOG" --failed-stage "$STAGE" --rerun-env "$RERUN_ENV" --rerun "$RERUN" >&2 || true
  left_running >&2 || true
}
