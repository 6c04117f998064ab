#!/usr/bin/env bash
# A multi-node Slurm 22.05 test cluster on this one machine, for `launchguard sweep` and its tests.
#
#   scripts/multinode.sh up [N] [hostnames=differ]
#                                      N nodes (default 3): lgn1..lgnN. Idempotent: when the cluster is
#                                      already up with N nodes (and the same hostnames), `up` heals every
#                                      node and returns; otherwise it (re)writes the config and (re)starts
#                                      everything. hostnames=differ: each node's `hostname` is lgmnhI, not
#                                      its NodeName lgnI (slurm.conf NodeHostname=lgmnhI), as on clusters
#                                      that name nodes by rack position
#   scripts/multinode.sh down          stop every daemon (pid files only), remove namespaces and bridge
#   scripts/multinode.sh status        daemons, nodes as slurmctld sees them, broken nodes
#   scripts/multinode.sh break NODE WHAT   make exactly one node differ from the rest, WHAT is one of
#        munge-key        a different /etc/munge/munge.key and its munged restarted with it: the node
#                         refuses every credential (Slurm: "Not responding", srun cannot launch there)
#        munge-key-file   a different key file on disk only; the running munged keeps the old key
#                         (the node works today and breaks at its next munged restart)
#        hosts-loopback   the node's own name resolves to 127.0.1.1 in its /etc/hosts
#        hosts-fe80       the node's own name resolves to fe80::1 (link-local) in its /etc/hosts
#        plugstack        its plugstack.conf lists one more plugin (an optional Pyxis line) than the others'
#        down             its slurmd is stopped (Slurm notices within SlurmdTimeout=10 s)
#   scripts/multinode.sh heal [NODE]   undo every break on NODE (default: all nodes)
#   scripts/multinode.sh env           print `export SLURM_CONF=…` for this cluster's clients
#
# Layout: bridge lgmnbr0 10.78.0.1/24 on the host, one network
# namespace lgmnI per node (veth, address 10.78.0.(10+I)), slurmctld on the host on ports 6917/6918 with
# its own config, state, logs and pid files under $LG_MN_DIR (default /run/lg-mn), so it runs beside
# the one-node cluster of scripts/cluster.sh (6817/6818, /etc/slurm) and the 24.11 chroot (7817/7818).
# Clients use it with SLURM_CONF=$LG_MN_DIR/slurm.conf.
#
# Each node's slurmd runs under `nsenter --net=… unshare --uts --mount`: its own hostname and its own
# bind-mounted /etc/hosts, /etc/munge (key), munged socket directory and plugstack.conf, all backed by
# files under $LG_MN_DIR/nodes/lgnI/ that `break`/`heal` rewrite in place (same inode, so the bind
# mounts see it). Every node has its own munged (started on the host with --socket/--key-file under
# that directory); slurmctld and the clients on the host use a munged of their own, named in
# slurm.conf's AuthInfo=socket=…, so the host's /run/munge is never touched.
#
# Must run as root. Installs iproute2/util-linux if missing. Never kills daemons by name: only through
# their pid files.
set -euo pipefail
# The daemons this script starts outlive it: they must not inherit a caller's descriptors above 2.
# `flock /tmp/lg-cluster-multinode.lock scripts/multinode.sh up N` would otherwise leave the lock held
# by every munged it started, for as long as they run (fd 255 is bash reading this script).
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  case "$fd" in 0|1|2|255|*[!0-9]*) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done
. "$(dirname "$0")/lib/apt.sh"
. "$(dirname "$0")/lib/pidfile.sh"

D=${LG_MN_DIR:-/run/lg-mn}
BR=lgmnbr0
NET=10.78.0
CTLD_HOST=$(hostname -s)
CONF=$D/slurm.conf
MARK="# written by launchguard scripts/multinode.sh"

log() { printf 'multinode: %s\n' "$*" >&2; }
die() { printf 'multinode: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it creates network namespaces and starts slurmctld/slurmd/munged)"

export SLURM_CONF=$CONF


install_packages() {
  local need=()
  command -v ip >/dev/null || need+=(iproute2)
  command -v nsenter >/dev/null && command -v unshare >/dev/null || need+=(util-linux)
  for c in slurmctld slurmd munged; do [ -x "/usr/sbin/$c" ] || need+=("$( [ $c = munged ] && echo munge || echo $c)"); done
  command -v srun >/dev/null || need+=(slurm-client)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} (apt-get)"
    apt_install "${need[@]}"
  fi
}

nodes_configured() { [ -f "$D/node-count" ] && cat "$D/node-count" || echo 0; }
hostnames_configured() { [ -f "$D/hostname-mode" ] && cat "$D/hostname-mode" || echo same; }
hn() { # index -> the node's hostname
  if [ "$(hostnames_configured)" = differ ]; then echo "lgmnh$1"; else echo "lgn$1"; fi
}
nd() { echo "$D/nodes/$1"; }          # a node's own files
idx() { echo "${1#lgn}"; }             # lgn3 -> 3

# ---- per-node files (rewritten in place so that bind mounts keep seeing them) ----
write_hosts() { # node n [mode]
  local node=$1 n=$2 mode=${3:-good} i f names
  f=$(nd "$node")/hosts
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    echo "$NET.1 $CTLD_HOST"
    for i in $(seq "$n"); do
      names="lgn$i"
      [ "$(hn "$i")" = "lgn$i" ] || names="$(hn "$i") lgn$i"
      if [ "lgn$i" = "$node" ] && [ "$mode" = loopback ]; then echo "127.0.1.1 $names"
      elif [ "lgn$i" = "$node" ] && [ "$mode" = fe80 ]; then echo "fe80::1 $names"
      else echo "$NET.$((10 + i)) $names"; fi
    done
  } > "$f.new"
  [ -f "$f" ] || : > "$f"
  cat "$f.new" > "$f"; rm -f "$f.new"
}
write_plugstack() { # node [mode]
  local f
  f=$(nd "$1")/plugstack.conf
  [ -f "$f" ] || : > "$f"
  if [ "${2:-good}" = extra ]; then
    # One plugin line more than the others: Pyxis listed as optional (not installed here, so Slurm
    # skips it; the plugin list, which launchguard check digests, differs).
    printf '%s\noptional /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so\n' "$(cat "$D/plugstack.conf")" > "$f"
  else
    cat "$D/plugstack.conf" > "$f"
  fi
}
write_key() { # node [random]
  local k
  k=$(nd "$1")/etc-munge/munge.key
  [ -f "$k" ] || install -o munge -g munge -m 400 /dev/null "$k"
  chmod 600 "$k"
  if [ "${2:-}" = random ]; then dd if=/dev/urandom bs=1 count=128 status=none > "$k"; else cat "$D/ctld-munge/munge.key" > "$k"; fi
  chmod 400 "$k"
}

start_munged() { # dir-with-etc-munge-and-munge-run
  local dir=$1 i
  pid_alive "$dir/munge-run/munged.pid" && return 0
  rm -f "$dir/munge-run/munge.socket.2" "$dir/munge-run/munge.socket.2.lock"
  runuser -u munge -- /usr/sbin/munged --force --socket="$dir/munge-run/munge.socket.2" \
    --key-file="$dir/etc-munge/munge.key" --pid-file="$dir/munge-run/munged.pid" \
    --log-file="$dir/munge-state/munged.log" --seed-file="$dir/munge-state/munged.seed"
  for i in $(seq 50); do [ -S "$dir/munge-run/munge.socket.2" ] && return 0; sleep 0.1; done
  die "munged for $dir did not start (see $dir/munge-state/munged.log)"
}
make_munge_dirs() { # dir
  install -d -o munge -g munge -m 700 "$1/etc-munge" "$1/munge-state"
  install -d -o munge -g munge -m 755 "$1/munge-run"
}

# ---- network ----
make_net() { # n
  local n=$1 i
  ip link show "$BR" >/dev/null 2>&1 || { ip link add "$BR" type bridge; ip addr add "$NET.1/24" dev "$BR"; }
  ip link set "$BR" up
  for i in $(seq "$n"); do
    [ -e "/var/run/netns/lgmn$i" ] || ip netns add "lgmn$i"
    if ! ip link show "lgmn$i-h" >/dev/null 2>&1; then
      ip link add "lgmn$i-h" type veth peer name eth0 netns "lgmn$i"
      ip link set "lgmn$i-h" master "$BR" up
      ip -n "lgmn$i" addr add "$NET.$((10 + i))/24" dev eth0
      ip -n "lgmn$i" link set eth0 up
      ip -n "lgmn$i" link set lo up
    fi
  done
}
del_net() {
  local ns
  for ns in /var/run/netns/lgmn*; do
    [ -e "$ns" ] || continue
    ns=${ns##*/}
    ip link del "$ns-h" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
}

write_config() { # n
  local n=$1 i first
  mkdir -p "$D/state" "$D/spool"
  # Job ids never repeat from one (re)started cluster to the next (the state is wiped, so slurmctld
  # would start again at 1): whatever outlives a cluster (a slurmstepd, an srun) cannot then
  # signal or report on the next cluster's job of the same id. 100000 ids per cluster, wrapping
  # below Slurm's default MaxJobId (67043328).
  # With no counter yet (a fresh $D, or one an older script left, whose cluster began at 1), start
  # from the clock rather than at 1.
  first=$(cat "$D/next-first-job-id" 2>/dev/null || true)
  [[ "$first" =~ ^[0-9]+$ ]] && [ "$first" -ge 1 ] && [ "$first" -le 60000000 ] || first=$(( $(date +%s) % 599 * 100000 + 100001 ))
  echo $(( first + 100000 > 60000000 ? 1 : first + 100000 )) > "$D/next-first-job-id"
  {
    echo "$MARK"
    cat <<CONF
ClusterName=lgmn
FirstJobId=$first
SlurmctldHost=$CTLD_HOST($NET.1)
SlurmctldPort=6917
SlurmdPort=6918
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket.2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmdSpoolDir=$D/spool/slurmd.%n
StateSaveLocation=$D/state
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.%n.log
SlurmUser=root
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=5
PlugStackConfig=$D/plugstack.conf
CONF
    for i in $(seq "$n"); do
      echo "NodeName=lgn$i NodeHostname=$(hn "$i") NodeAddr=$NET.$((10 + i)) CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"
    done
    echo "PartitionName=lgmn Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } > "$CONF"
  # A plugstack.conf with one real (empty) include, the file every node's copy must equal.
  mkdir -p "$D/plugstack.conf.d"
  [ -f "$D/plugstack.conf" ] || : > "$D/plugstack.conf"
  printf '%s\ninclude %s/plugstack.conf.d/*.conf\n' "$MARK" "$D" > "$D/plugstack.conf"
  echo "$n" > "$D/node-count"
}

start_slurmd() { # node
  local node=$1 i dir
  dir=$(nd "$node")
  pid_alive "$D/slurmd.$node.pid" && return 0
  i=$(idx "$node")
  # The mount namespace lives as long as slurmd (and its slurmstepds) do.
  nsenter --net="/var/run/netns/lgmn$i" unshare --uts --mount --propagation private sh -c "
    set -e
    hostname $(hn "$i")
    mount --bind '$dir/hosts' /etc/hosts
    mount --bind '$dir/etc-munge' /etc/munge
    mount --bind '$dir/munge-run' /run/munge
    mount --bind '$dir/munge-run' '$D/munge'
    mount --bind '$dir/plugstack.conf' '$D/plugstack.conf'
    # The nodes have no enroot of their own: an enroot.conf installed on this machine (scripts/pyxis.sh)
    # must not make every node look the same kind of unhealthy in the sweep tests.
    if [ -d /etc/enroot ]; then mount -t tmpfs -o size=64k,mode=755 lgmn-no-enroot /etc/enroot; fi
    # Likewise /etc/slurm belongs to the one-node cluster (scripts/cluster.sh): these nodes read $D's
    # slurm.conf and plugstack, and must not see that cluster's plugstack drop-ins as theirs.
    if [ -d /etc/slurm ]; then mount -t tmpfs -o size=64k,mode=755 lgmn-no-etc-slurm /etc/slurm; fi
    exec /usr/sbin/slurmd -f '$CONF' -N $node
  "
}

wait_nodes() { # node… : wait until idle
  local node i st
  for node in "$@"; do
    for i in $(seq 300); do
      st=$(sinfo -h -n "$node" -o '%T' 2>/dev/null || true)
      case "$st" in idle|mixed|allocated) break ;; esac
      case "$st" in down*|drain*) scontrol update nodename="$node" state=resume 2>/dev/null || true ;; esac
      # A job slurmctld could not terminate there while the node was broken stays "completing" until
      # slurmctld resends TERMINATE_JOB (every 60 s); down + resume ends it now (test cluster only).
      if [ "$i" = 25 ] && [ "$st" = completing ]; then
        scontrol update nodename="$node" state=down reason="multinode.sh heal" 2>/dev/null || true
      fi
      sleep 0.2
    done
    case "$st" in idle|mixed|allocated) ;; *) die "node $node is '$st', not idle (see $D/slurmd.$node.log, $D/slurmctld.log)" ;; esac
  done
}

heal_node() { # node n
  local node=$1 n=$2 dir
  dir=$(nd "$node")
  write_hosts "$node" "$n"
  write_plugstack "$node"
  if ! cmp -s "$dir/etc-munge/munge.key" "$D/ctld-munge/munge.key" || [ -e "$dir/munge-key-broken" ]; then
    write_key "$node"
    stop_pidfile "$dir/munge-run/munged.pid"
    # slurmd too: re-registering with the right key ends the jobs slurmctld could not clean up there
    # (they keep the node "completing" otherwise).
    [ -e "$dir/munge-key-broken" ] && stop_pidfile "$D/slurmd.$node.pid"
    rm -f "$dir/munge-key-broken"
    # munged must start after the key's mtime (a second later), or node.munge.key_stale rightly
    # says the running munged may hold an older key.
    sleep 1
  fi
  start_munged "$dir"
  start_slurmd "$node"
}

# end_node_processes: every process left in a node's network namespace once its slurmd is stopped
# is that node's: a slurmstepd (and its tasks) that outlived slurmd. Left alive, it keeps its
# job and step ids into the next cluster, whose job ids start again at 1: a leftover step 1.0 on
# lgn1+lgn2 killed the next cluster's job 1 on those same nodes (its batch script got SIGKILL,
# its output stayed empty, and the NCCL sweep test named a healthy pair failed). The namespace
# selects the processes exactly (`ip netns pids`), no name is matched.
end_node_processes() {
  local ns pids i all=() p
  for ns in /var/run/netns/lgmn*; do
    [ -e "$ns" ] || continue
    pids=$(ip netns pids "${ns##*/}" 2>/dev/null || true)
    [ -n "$pids" ] || continue
    all+=($pids)
    kill $pids 2>/dev/null || true
    for i in $(seq 50); do
      pids=$(ip netns pids "${ns##*/}" 2>/dev/null || true)
      [ -n "$pids" ] || break
      all+=($pids)
      sleep 0.1
    done
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  # A process leaves the namespace list as it starts to exit: wait (up to 5 s) until each is gone
  # or a zombie, so none is still running when the next cluster starts.
  for p in "${all[@]}"; do
    for i in $(seq 50); do
      case "$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$p/stat" 2>/dev/null)" in ""|Z|X|x) break ;; esac
      sleep 0.1
    done
  done
  return 0
}

stop_all() {
  local f
  for f in "$D"/slurmd.*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  end_node_processes
  stop_pidfile "$D/slurmctld.pid"
  for f in "$D"/nodes/*/munge-run/munged.pid "$D/ctld-munge/munge-run/munged.pid"; do [ -e "$f" ] && stop_pidfile "$f"; done
  return 0
}

up() {
  local n=${1:-3} mode=same i
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "N must be 1..200, not '$n'"
  case "${2:-}" in
    "") ;;
    hostnames=differ) mode=differ ;;
    *) die "up: the option after N is hostnames=differ, not '$2'" ;;
  esac
  install_packages
  if [ "$(nodes_configured)" = "$n" ] && [ "$(hostnames_configured)" = "$mode" ] && pid_alive "$D/slurmctld.pid" && scontrol ping >/dev/null 2>&1; then
    for i in $(seq "$n"); do heal_node "lgn$i" "$n"; done
    mapfile -t names < <(seq -f "lgn%g" "$n"); wait_nodes "${names[@]}"
    log "up (already): $n nodes healed, SLURM_CONF=$CONF"
    return 0
  fi
  # Let this cluster's jobs end first: a slurmstepd that outlives its slurmd keeps the node
  # "completing" in the next cluster.
  if pid_alive "$D/slurmctld.pid" && scontrol ping >/dev/null 2>&1; then
    scancel -u root 2>/dev/null || true
    for i in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  stop_all
  del_net
  rm -rf "$D/state" "$D/spool" "$D"/slurmd.*.log "$D/nodes"
  mkdir -p "$D"
  make_net "$n"
  echo "$mode" > "$D/hostname-mode"
  write_config "$n"
  # The cluster's own munge key and munged (slurmctld and clients on the host).
  make_munge_dirs "$D/ctld-munge"
  [ -s "$D/ctld-munge/etc-munge/munge.key" ] || { dd if=/dev/urandom bs=1 count=128 status=none > "$D/ctld-munge/etc-munge/munge.key"; chown munge:munge "$D/ctld-munge/etc-munge/munge.key"; chmod 400 "$D/ctld-munge/etc-munge/munge.key"; }
  ln -sfn etc-munge/munge.key "$D/ctld-munge/munge.key"
  start_munged "$D/ctld-munge"
  mkdir -p "$D/munge"
  mountpoint -q "$D/munge" || mount --bind "$D/ctld-munge/munge-run" "$D/munge"
  for i in $(seq "$n"); do
    make_munge_dirs "$(nd "lgn$i")"
    write_key "lgn$i"
  done
  log "starting slurmctld ($CONF, ports 6917/6918)"
  /usr/sbin/slurmctld -c -f "$CONF"
  for i in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.1; done
  for i in $(seq "$n"); do heal_node "lgn$i" "$n"; done
  mapfile -t names < <(seq -f "lgn%g" "$n"); wait_nodes "${names[@]}"
  log "up: $n nodes lgn1..lgn$n, $(srun --version); export SLURM_CONF=$CONF"
}

down() {
  stop_all
  del_net
  mountpoint -q "$D/munge" && umount "$D/munge" || true
  rm -f "$D/node-count"
  log "down: daemons stopped, namespaces and $BR removed (config and logs kept in $D)"
}

break_node() { # node what
  local node=$1 what=$2 n dir
  n=$(nodes_configured)
  [[ "$node" =~ ^lgn[0-9]+$ ]] && [ "$(idx "$node")" -ge 1 ] && [ "$(idx "$node")" -le "$n" ] || die "no node '$node' (lgn1..lgn$n)"
  dir=$(nd "$node")
  case "$what" in
    munge-key)
      write_key "$node" random
      touch "$dir/munge-key-broken"
      stop_pidfile "$dir/munge-run/munged.pid"
      sleep 1
      start_munged "$dir" ;;
    munge-key-file) write_key "$node" random ;;
    hosts-loopback) write_hosts "$node" "$n" loopback ;;
    hosts-fe80) write_hosts "$node" "$n" fe80 ;;
    plugstack) write_plugstack "$node" extra ;;
    down) stop_pidfile "$D/slurmd.$node.pid" ;;
    *) die "break: WHAT must be munge-key|munge-key-file|hosts-loopback|hosts-fe80|plugstack|down, not '$what'" ;;
  esac
  log "broke $node: $what"
}

heal() { # [node]
  local n i
  n=$(nodes_configured)
  [ "$n" -gt 0 ] || die "not up"
  if [ -n "${1:-}" ]; then heal_node "$1" "$n"; wait_nodes "$1"; return; fi
  for i in $(seq "$n"); do heal_node "lgn$i" "$n"; done
  mapfile -t names < <(seq -f "lgn%g" "$n"); wait_nodes "${names[@]}"
}

status() {
  local f n i dir
  n=$(nodes_configured)
  if pid_alive "$D/slurmctld.pid"; then echo "slurmctld: running ($(cat "$D/slurmctld.pid")), SLURM_CONF=$CONF"; else echo "slurmctld: not running"; fi
  for i in $(seq "$n"); do
    dir=$(nd "lgn$i")
    f="$D/slurmd.lgn$i.pid"
    printf 'lgn%s: slurmd %s, munged %s, key %s, plugstack %s, hosts %s\n' "$i" \
      "$(pid_alive "$f" && echo running || echo stopped)" \
      "$(pid_alive "$dir/munge-run/munged.pid" && echo running || echo stopped)" \
      "$(cmp -s "$dir/etc-munge/munge.key" "$D/ctld-munge/munge.key" && echo same || echo DIFFERENT)" \
      "$(cmp -s "$dir/plugstack.conf" "$D/plugstack.conf" && echo same || echo DIFFERENT)" \
      "$(grep -E "[[:space:]]lgn$i\$" "$dir/hosts" | awk '{print $1}')"
  done
  pid_alive "$D/slurmctld.pid" && sinfo -N -h -o '%N %T %E' || true
}

case "${1:-}" in
  up) up "${2:-3}" "${3:-}" ;;
  down) down ;;
  status) status ;;
  break) [ $# -eq 3 ] || die "usage: break NODE WHAT"; break_node "$2" "$3" ;;
  heal) heal "${2:-}" ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 up [N] [hostnames=differ]|down|status|break NODE WHAT|heal [NODE]|env" >&2; exit 2 ;;
esac
