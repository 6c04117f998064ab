# Daemons started from a pidfile (sourced by cluster.sh, multinode.sh, node.sh, vm.sh and
# teststage.sh).
#
# A pid file can outlive its process: /run on this kind of machine may be a disk directory that
# survives a reboot, and a run that is cut short leaves its files. The kernel then reuses the pid, and
# a bare `kill $(cat FILE)` ends whatever holds that number now: a CI run lost the host's munged,
# started a second earlier, to the three-node cluster stopping a munged named by a stale file. So a
# pid counts as FILE's only when that process started no later than FILE was written (the daemon,
# or the script that started it, writes the file after the process exists): a process that started
# later holds a reused pid.

# pidfile_pid FILE: prints the pid FILE names when that process runs and is the one FILE was written
# for (see above); fails (status 1, nothing printed) otherwise, also for a missing or malformed FILE.
pidfile_pid() {
  local f=$1 pid stat start btime mtime hz
  [ -s "$f" ] || return 1
  read -r pid <"$f" 2>/dev/null || [ -n "${pid:-}" ] || return 1
  # (pid 1 is init, never a daemon of these scripts)
  [[ "$pid" =~ ^[1-9][0-9]{0,9}$ ]] && [ "$pid" -gt 1 ] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  # Field 22 of /proc/PID/stat: the start time in clock ticks after boot (proc(5)); the command
  # name in field 2 may hold spaces and parentheses, so the fields are counted after its last ')'.
  stat=${stat##*) }
  # A zombie (state Z or X) has ended: it is no longer running.
  case "${stat%% *}" in Z|X|x) return 1 ;; esac
  start=$(awk '{ print $20 }' <<<"$stat")
  btime=$(awk '$1 == "btime" { print $2 }' /proc/stat)
  hz=$(getconf CLK_TCK)
  mtime=$(stat -c %Y "$f" 2>/dev/null) || return 1
  [[ "$start" =~ ^[0-9]+$ && "$btime" =~ ^[0-9]+$ && "$hz" =~ ^[1-9][0-9]*$ ]] || return 1
  # Whole seconds on both sides (btime, %Y): 2 s of slack for the rounding and for a daemon whose
  # forked child starts just after its parent wrote the file.
  [ $((btime + start / hz)) -le $((mtime + 2)) ] || return 1
  echo "$pid"
}

# pid_alive FILE: FILE names a running process (pidfile_pid's test).
pid_alive() { pidfile_pid "$1" >/dev/null; }

# stop_pidfile FILE: SIGTERM the process FILE names (when it is FILE's, see above), wait up to 5 s,
# then SIGKILL; remove FILE.
stop_pidfile() {
  local f=$1 i pid
  if pid=$(pidfile_pid "$f"); then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do pid_alive "$f" || break; sleep 0.1; done
    pid_alive "$f" && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
