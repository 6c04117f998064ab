# Daemons started from a pidfile (sourced by cluster.sh and multinode.sh).

# pid_alive FILE: FILE names a running process.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }

# stop_pidfile FILE: SIGTERM the process FILE names, wait up to 5 s, then SIGKILL; remove FILE.
stop_pidfile() {
  local f=$1 i
  if pid_alive "$f"; then
    kill "$(cat "$f")" 2>/dev/null || true
    for i in $(seq 50); do pid_alive "$f" || break; sleep 0.1; done
    pid_alive "$f" && kill -9 "$(cat "$f")" 2>/dev/null || true
  fi
  rm -f "$f"
}
