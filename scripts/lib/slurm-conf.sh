# shellcheck shell=bash
# Sourced by scripts/cluster.sh and scripts/node.sh. slurm_conf_daemons: the slurm.conf lines their
# one-node clusters share (pid files, spool and state directories, root as SlurmUser, no MPI default,
# nodes returning to service by themselves), paths as seen from the cluster's own root.
slurm_conf_daemons() {
  cat <<'CONF'
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
MpiDefault=none
ReturnToService=2
CONF
}
