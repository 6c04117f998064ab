#!/usr/bin/env bash
# The node test, as root: launchguard's .deb on a Debian 12 node booted with systemd as PID 1
# (scripts/node.sh: systemd-nspawn, Debian's munge/slurmctld/slurmd as services, cluster lgnode on
# ports 8817/8818, HealthCheckProgram=/usr/sbin/launchguard-health every 5 s), installed and removed
# with the manual's own command lines (read from docs/install.md, run verbatim), and checked under the real
# systemd:
#
#   1. README install: apt install, plugstack link, systemctl enable --now, systemctl status,
#      launchguard status
#   2. notify: `active` only after READY=1 (a first check run held 3 s by a munge socket that never
#      answers: the unit is `activating` until it is done); reload re-reads interval and check
#      settings (logged, both take effect); stop removes the socket; restart while sruns run
#   3. sandbox: the agent's verdicts and facts (under the unit's seccomp filter, capability bound,
#      ProtectSystem=strict) equal a plain root `launchguard check`'s, no EPERM/SIGSYS;
#      `systemd-analyze security` exposure <= 3.5
#   4. journald + HealthCheckProgram: munge key 0644 (CRITICAL) and a bad NCCL variable (WARNING):
#      journal entries with MESSAGE_ID, PRIORITY 2/4 and LAUNCHGUARD_* fields; the node drained with
#      `launchguard: …` within one HealthCheckInterval, resumed after the fix; a node drained by
#      hand is left alone; launch reports in the journal
#   5. watchdog: SIGSTOP the agent, systemd kills it within WatchdogSec and restarts it; sruns timed
#      meanwhile against a baseline (+50 ms at most)
#   6. tmpfiles.d after a reboot of the container: /run/launchguard, /run/enroot (README's line), and
#      the first enroot launch after the reboot needs no repair
#   7. README upgrade (a newer revision with apt while sruns run: agent restarted, no srun fails)
#      and removal (plugstack line, then apt purge)
#
# Builds the .deb with scripts/package.sh (deb only; LG_NODE_DEB=FILE uses FILE instead, a revision-1
# .deb scripts/test.sh just built) and repacks it as revision 2 for the upgrade. Prints `PASS:`/`FAIL:`
# lines and one `test result:` line in cargo's format (scripts/test.sh counts it); exits 1 on any
# failure. The node is brought down at the end (LG_NODE_KEEP=1 leaves it up for a look).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. "$ROOT/scripts/lib/apt.sh"
. "$ROOT/scripts/lib/install-doc.sh"
[ "$(id -u)" = 0 ] || { echo "test-node: run as root" >&2; exit 2; }
WORK=$(mktemp -d /tmp/launchguard-test-node.XXXXXX)
NODE_ROOT=/run/lg-node/root
INTERVAL=5 # HealthCheckInterval, scripts/node.sh
PASS=0
FAIL=0
T_START=$SECONDS

ok() { PASS=$((PASS + 1)); printf 'test-node: PASS: %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'test-node: FAIL: %s\n' "$*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
say() { printf 'test-node:   | %s\n' "$@"; }
stage() { printf 'test-node: == %s (%d s)\n' "$*" $((SECONDS - T_START)) >&2; }
N() { scripts/node.sh shell "$@"; }
NB() { scripts/node.sh shell bash -c "$1"; }
now() { date +%s.%N; }
# journal SINCE: the agent unit's journal since a `now` value, as JSON lines.
journal() { N journalctl -u launchguard-agent -o json --no-pager --since "@${1%.*}"; }
jfind() { local since=$1; shift; journal "$since" | python3 "$ROOT/scripts/jfind.py" "$@"; }
finish() {
  local status=ok
  [ "$FAIL" = 0 ] || status=FAILED
  echo "test result: $status. $PASS passed; $FAIL failed; (scripts/test-node.sh, $((SECONDS - T_START)) s)"
  [ "$FAIL" = 0 ]
}
cleanup() {
  set +e
  [ -n "${HANG_PID:-}" ] && kill "$HANG_PID" 2>/dev/null
  [ "${LG_NODE_KEEP:-0}" = 1 ] || scripts/node.sh down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# readme_run NAME REGEX: runs that docs/install.md line verbatim in the node (in /root, where the .debs are).
readme_run() {
  local n=$1 line
  line=$(readme_cmd "$2") || { bad "docs/install.md has the line for: $2"; echo 99 >"$WORK/$n.rc"; return 0; }
  set +e
  # (an admin answers apt's questions with y)
  { yes 2>/dev/null || true; } | NB "cd /root && $line" >"$WORK/$n.out" 2>&1
  echo $? >"$WORK/$n.rc"
  set -e
  printf 'test-node: # %s  → rc=%s\n' "$line" "$(cat "$WORK/$n.rc")"
  tail -n "${SHOW:-4}" "$WORK/$n.out" | sed 's/^/test-node:   | /'
}
rc() { cat "$WORK/$1.rc"; }

# srun_loop FILE COUNT [ARGS…]: COUNT sruns as the node's non-root user, one after the other; writes
# "rc milliseconds" per srun to FILE.
srun_loop() {
  local f=$1 n=$2
  shift 2
  # shellcheck disable=SC2016
  NB "for i in \$(seq $n); do t=\$(date +%s%N); timeout 60 runuser -u lgtest -- srun -N1 ${*:-true} >/dev/null 2>&1; r=\$?; echo \"\$r \$(( (\$(date +%s%N) - t) / 1000000 ))\"; done" >"$f"
}
median() { sort -n -k2 "$1" | awk '{ a[NR] = $2 } END { print (NR ? a[int((NR + 1) / 2)] : -1) }'; }
loop_summary() { # loop_summary FILE: "N sruns, F failed, median M ms"
  printf '%d sruns, %d failed, median %d ms' "$(grep -c . "$1" || true)" "$(awk '$1 != 0 { f++ } END { print f + 0 }' "$1")" "$(median "$1")"
}
loop_failed() { awk '$1 != 0 { f++ } END { exit !(NR > 0 && f == 0) }' "$1"; }
agent_pid() { N systemctl show -p MainPID --value launchguard-agent; }
status_json() { N launchguard status --json 2>/dev/null || true; } # (exits 1 on a WARNING run)

stage "0. packages and the node"
command -v python3 >/dev/null || apt_install python3
if [ -n "${LG_NODE_DEB:-}" ]; then
  DEB1=$LG_NODE_DEB
else
  LG_PACKAGE_FORMATS=deb scripts/package.sh >"$WORK/package1.log" 2>&1 || { cat "$WORK/package1.log"; exit 1; }
  DEB1=$(ls target/packages/launchguard_*-1+slurm22.05_amd64.deb)
fi
cp "$DEB1" "$WORK/"
# The newer revision for the upgrade: the same package, revision 2 (what LG_PACKAGE_REVISION=2
# scripts/package.sh would name it), repacked with dpkg-deb instead of a second build.
dpkg-deb -R "$DEB1" "$WORK/rev2"
sed -i 's/^\(Version: .*\)-1+slurm/\1-2+slurm/' "$WORK/rev2/DEBIAN/control"
dpkg-deb -Zgzip --root-owner-group -b "$WORK/rev2" "$WORK/$(basename "${DEB1/-1+slurm/-2+slurm}")" >/dev/null
rm -rf "$WORK/rev2"
scripts/node.sh down >/dev/null 2>&1 || true
scripts/node.sh up
cp "$WORK"/launchguard_*.deb "$NODE_ROOT/root/"
say "$(N systemctl --version | head -n 1) as PID 1 of the node; $(N srun --version); debs: $(cd "$WORK" && ls launchguard_*.deb | tr '\n' ' ')"
# enroot is "used" on this node (its config names the per-user runtime path), so the plugin and the
# agent judge /run/enroot; munge key and the environment file are restored after each fault.
NB 'mkdir -p /etc/enroot && echo "ENROOT_RUNTIME_PATH /run/enroot/user-\$(id -u)" > /etc/enroot/enroot.conf && install -d -m 1777 /run/enroot'

stage "1. README install"
SHOW=3 readme_run install 'apt install \./launchguard_[^ ]*-1\+slurm'
check "README: apt install of the .deb succeeds" [ "$(rc install)" = 0 ]
readme_run link '^ln -s /usr/share/launchguard/plugstack.conf.d/'
check "README: the plugstack link is made" bash -c "[ $(rc link) = 0 ] && [ -L '$NODE_ROOT/etc/slurm/plugstack.conf.d/zz-launchguard.conf' ]"
readme_run enable '^systemctl enable --now launchguard-agent'
check "README: systemctl enable --now: rc 0, enabled and active" \
  bash -c "[ $(rc enable) = 0 ] && [ \"\$(scripts/node.sh shell systemctl is-enabled launchguard-agent)\" = enabled ] && [ \"\$(scripts/node.sh shell systemctl is-active launchguard-agent)\" = active ]"
SHOW=12 readme_run systemctl-status '^systemctl status launchguard-agent'
check "README: systemctl status shows active (running) and the agent's ready line" \
  bash -c "[ $(rc systemctl-status) = 0 ] && grep -q 'Active: active (running)' '$WORK/systemctl-status.out' && grep -q 'launchguard agent .* ready' '$WORK/systemctl-status.out'"
SHOW=6 readme_run lg-status '^launchguard status$'
check "README: launchguard status answers (exit 0-2) with the agent's last run" \
  bash -c "case $(rc lg-status) in 0|1|2) ;; *) exit 1 ;; esac; grep -q '^agent ' '$WORK/lg-status.out'"
srun_loop "$WORK/first.srun" 1
check "an srun as lgtest with the packaged plugin in plugstack runs ($(loop_summary "$WORK/first.srun"))" loop_failed "$WORK/first.srun"

stage "2. notify and lifecycle"
CONF=/etc/launchguard/launchguard.toml
cp "$NODE_ROOT$CONF" "$WORK/launchguard.toml.orig"
# A munge socket that accepts and never answers: the munge round trip of the first check run waits
# check_timeout_secs (3), so READY=1 comes 3 s after the start.
rm -f "$NODE_ROOT/var/lib/lg-hang.sock"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64)
import os; os.chmod(sys.argv[1], 0o777)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' "$NODE_ROOT/var/lib/lg-hang.sock" &
HANG_PID=$!
for i in $(seq 100); do [ -S "$NODE_ROOT/var/lib/lg-hang.sock" ] && break; sleep 0.1; done
{ echo "check_timeout_secs = 3"; sed 's/^\[munge\]$/[munge]\nsocket = "\/var\/lib\/lg-hang.sock"/' "$WORK/launchguard.toml.orig"; } >"$NODE_ROOT$CONF"
t0=$(now)
rm -f "$WORK/restarted"
( while ! [ -e "$WORK/restarted" ]; do scripts/node.sh shell systemctl is-active launchguard-agent 2>/dev/null; sleep 0.1; done ) >"$WORK/states" &
STATES_PID=$!
N systemctl restart launchguard-agent
t1=$(now)
touch "$WORK/restarted"
state_after=$(N systemctl is-active launchguard-agent)
wait "$STATES_PID" || true
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
# systemd's own record of the restart: the unit left 'inactive' (entered 'activating') at
# InactiveExitTimestampMonotonic and entered 'active' at ActiveEnterTimestampMonotonic. Their gap is
# how long it stayed 'activating'; the polled states above are shown but not judged (a poll through
# nsenter can take seconds on a loaded machine and miss the window).
activating=$(N systemctl show launchguard-agent -p InactiveExitTimestampMonotonic -p ActiveEnterTimestampMonotonic |
  awk -F= '{ v[$1] = $2 } END { printf "%.2f", (v["ActiveEnterTimestampMonotonic"] - v["InactiveExitTimestampMonotonic"]) / 1e6 }')
say "systemctl restart returned after $took s, then is-active: $state_after; 'activating' for $activating s (systemd's timestamps); states polled during it: $(uniq "$WORK/states" | tr '\n' ' ')"
# The last READY entry: --since has whole seconds, so the install's own entry can share t0's second.
{ jfind "$t0" --all MESSAGE_ID=8908bd5305544e829d54cc0e5f34b0aa || true; } | tail -n 1 >"$WORK/ready.line"
say "$(cat "$WORK/ready.line")"
check "notify: systemctl restart waits for READY=1 after the first check run (>= 3 s, 'activating' meanwhile, 'active' after)" \
  bash -c "awk -v t=$took -v a=$activating 'BEGIN { exit !(t >= 3.0 && a >= 2.9 && a < 30) }' && [ '$state_after' = active ] && grep -q 'first check run .* in 3[0-9][0-9][0-9]' '$WORK/ready.line'"
kill "$HANG_PID" 2>/dev/null || true
wait "$HANG_PID" 2>/dev/null || true
HANG_PID=
rm -f "$NODE_ROOT/var/lib/lg-hang.sock"
cp "$WORK/launchguard.toml.orig" "$NODE_ROOT$CONF"
N systemctl restart launchguard-agent

# Reload: a shorter interval and a disabled family.
before=$(status_json | python3 -c 'import json,sys; r=json.load(sys.stdin)["last_check"]; print(len(r["checks"]), sum(c["id"].startswith("node.hostname.") for c in r["checks"]))')
{ echo "interval_secs = 3"; echo 'disabled = ["node.hostname"]'; cat "$WORK/launchguard.toml.orig"; } >"$NODE_ROOT$CONF"
t0=$(now)
N systemctl reload launchguard-agent
sleep 0.5
jfind "$t0" MESSAGE_ID=ab30368ed3fb450483935740d6ad2672 >"$WORK/reload.line" || true
say "$(cat "$WORK/reload.line")"
check "reload: logged with MESSAGE_ID RELOADED, the new interval and the changed settings" \
  grep -q 'LAUNCHGUARD_CHANGED=interval_secs,disabled LAUNCHGUARD_INTERVAL_SECS=3 .*checks every 3 s; changed: interval_secs,disabled' "$WORK/reload.line"
after=$(status_json | python3 -c 'import json,sys; r=json.load(sys.stdin)["last_check"]; print(len(r["checks"]), sum(c["id"].startswith("node.hostname.") for c in r["checks"]))')
say "checks run (all, node.hostname.*): before the reload $before, after $after"
check "reload: the disabled family (node.hostname) is no longer run" bash -c "[ '${before#* }' -gt 0 ] && [ '${after#* }' = 0 ]"
stamps=()
for i in $(seq 40); do
  s=$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_check"]["timestamp"])')
  [ "${#stamps[@]}" -gt 0 ] && [ "${stamps[-1]}" = "$s" ] || stamps+=("$s")
  [ "${#stamps[@]}" -ge 3 ] && break
  sleep 0.5
done
say "check run timestamps after the reload: ${stamps[*]}"
check "reload: the new interval (3 s) takes effect (runs 3 s apart)" \
  bash -c "[ ${#stamps[@]} -ge 3 ] && d=\$(( ${stamps[2]:-0} - ${stamps[1]:-0} )) && [ \$d -ge 2 ] && [ \$d -le 4 ]"
cp "$WORK/launchguard.toml.orig" "$NODE_ROOT$CONF"
N systemctl reload launchguard-agent

t0=$(now)
N systemctl stop launchguard-agent
check "stop: the socket is removed (/run/launchguard stays, 0755 root)" \
  bash -c "! scripts/node.sh shell test -e /run/launchguard/agent.sock && [ \"\$(scripts/node.sh shell stat -c '%a %U' /run/launchguard)\" = '755 root' ]"
jfind "$t0" MESSAGE_ID=82c40d88b4dc47309f938f243c6e6245 | sed 's/^/test-node:   | /' || true
N systemctl start launchguard-agent
# A restart while sruns run: none may fail.
srun_loop "$WORK/restart.srun" 12 &
LOOP=$!
NB 'timeout 60 runuser -u lgtest -- srun -N1 sleep 3' >"$WORK/long.out" 2>&1 &
LONG=$!
sleep 1
pid_before=$(agent_pid)
N systemctl restart launchguard-agent
pid_after=$(agent_pid)
wait "$LOOP" || true
long_rc=0
wait "$LONG" || long_rc=$?
say "agent pid $pid_before → $pid_after during the sruns; $(loop_summary "$WORK/restart.srun"); a 3 s srun: rc $long_rc"
check "restart while sruns run: the agent restarted and no srun failed" \
  bash -c "[ '$pid_before' != '$pid_after' ] && [ $long_rc = 0 ] && awk '\$1 != 0 { exit 1 }' '$WORK/restart.srun' && [ -s '$WORK/restart.srun' ]"

stage "3. sandbox"
# Issue 28's state, where the agent's sandbox and root could disagree: enroot's data and cache paths
# under /tmp parents of another user (uid 1002) with mode 0700, in an enroot.conf only root reads
# (0600), named by the agent's config for this stage (root's CRITICAL node.enroot.storage: users
# cannot pass those 0700 parents; a private /tmp showed the agent an empty one).
N install -d -m 0755 /tmp/lg-issue28
N install -d -m 0700 -o 1002 /tmp/lg-issue28/enroot-data /tmp/lg-issue28/enroot-cache
# shellcheck disable=SC2016 # enroot expands $(id -u)
printf 'ENROOT_DATA_PATH /tmp/lg-issue28/enroot-data/user-$(id -u)\nENROOT_CACHE_PATH /tmp/lg-issue28/enroot-cache/user-$(id -u)\n' \
  >"$NODE_ROOT/etc/launchguard/issue28-enroot.conf"
chmod 0600 "$NODE_ROOT/etc/launchguard/issue28-enroot.conf"
sed 's|^\[enroot\]$|[enroot]\nconf = "/etc/launchguard/issue28-enroot.conf"|' "$WORK/launchguard.toml.orig" >"$NODE_ROOT$CONF"
N systemctl reload launchguard-agent
sleep 0.3
status_json | python3 -c 'import json,sys; json.dump(json.load(sys.stdin)["last_check"], sys.stdout)' >"$WORK/agent.json"
set +e
N launchguard check --json >"$WORK/root.json"
set -e
cp "$WORK/launchguard.toml.orig" "$NODE_ROOT$CONF"
rm -f "$NODE_ROOT/etc/launchguard/issue28-enroot.conf"
N rm -rf /tmp/lg-issue28
N systemctl reload launchguard-agent
python3 - "$WORK/root.json" "$WORK/agent.json" >"$WORK/sandbox.out" <<'EOF' && sandbox=0 || sandbox=$?
import json, sys
root, agent = (json.load(open(p)) for p in sys.argv[1:3])
def view(r):
    # verdicts and facts, and node.enroot.*'s messages (a private /tmp on the root filesystem gave
    # node.enroot.storage the same WARNING for another reason)
    return {**{c["id"]: c["status"] for c in r["checks"]}, **r.get("facts", {}),
            **{"message of " + c["id"]: c["message"] for c in r["checks"] if c["id"].startswith("node.enroot.")}}
a, b = view(root), view(agent)
if a.get("node.enroot.storage") != "critical":
    print("root's node.enroot.storage is %r, not 'critical': the state did not take" % a.get("node.enroot.storage"))
    sys.exit(1)
fams = sorted({k.split(".")[1] for k in a if k.startswith("node.")})
diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
# (a message may quote a user's 'Permission denied' as the symptom: only words root's run lacks count)
msg = {c["id"]: c["message"] for c in root["checks"]}
bad = [c["id"] + ": " + c["message"] for c in agent["checks"]
       if any(w in c["message"] and w not in msg.get(c["id"], "")
              for w in ("Operation not permitted", "Permission denied", "Bad system call", "EPERM"))]
print("%d checks in %d families (%s) and %d facts; differences from plain root: %s; EPERM/SIGSYS in the agent's messages: %s"
      % (len(root["checks"]), len(fams), " ".join(fams), len(root.get("facts", {})), diff or "none", bad or "none"))
sys.exit(1 if diff or bad or len(root["checks"]) < 25 else 0)
EOF
say "$(cat "$WORK/sandbox.out")"
check "sandbox: every check family under the unit's seccomp filter/capability bound/ProtectSystem=strict gives root's verdicts and facts, also on enroot paths under /tmp parents of uid 1002 (0700)" [ "$sandbox" = 0 ]
N journalctl -u launchguard-agent --no-pager -o cat >"$WORK/agent.log" || true
check "sandbox: no SIGSYS, core dump or 'Operation not permitted' in the unit's journal" \
  bash -c "! grep -Eq 'SIGSYS|status=31|Bad system call|Operation not permitted|core-dump' '$WORK/agent.log'"
N systemd-analyze security launchguard-agent.service >"$WORK/security.out" 2>&1 || true
exposure_line=$(grep 'Overall exposure level' "$WORK/security.out" || true)
say "$exposure_line"
exposure=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' "$WORK/security.out")
# 3.5 since issue 28 (2.9 before): the node's /tmp and /var/tmp, read-only homes, the kernel log
# (CAP_SYSLOG) and the live hostname, each needed by a check (systemd/README.md).
check "systemd-analyze security (online, systemd as PID 1): exposure ${exposure:-?} <= 3.5" \
  awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 3.5) }'

stage "4. journald and HealthCheckProgram"
show_node() { N scontrol show node lgnode | grep -E 'State=|Reason=' | sed 's/^ *//' | tr '\n' ' '; }
wait_node() { # wait_node SECONDS PREDICATE-REGEX: seconds until `scontrol show node` matches, or -1
  local limit=$1 re=$2 t0=$SECONDS
  while [ $((SECONDS - t0)) -le "$limit" ]; do
    if N scontrol show node lgnode | grep -Eq "$re"; then echo $((SECONDS - t0)); return 0; fi
    sleep 0.25
  done
  echo -1
}
say "before: $(show_node)"
t0=$(now)
N chmod 0644 /etc/munge/munge.key
NB 'echo NCCL_SOCKET_IFNAME=nosuchif0 >> /etc/environment'
# (the reload makes the agent log the findings now; the drain is launchguard-health's, from slurmd)
N systemctl reload launchguard-agent &
drain_s=$(wait_node $((INTERVAL + 3)) 'Reason=launchguard: node.munge.key_mode')
wait
say "after chmod 0644 /etc/munge/munge.key: $(show_node)(${drain_s} s after the chmod)"
check "health: munge key 0644 drains the node with Reason=launchguard: … within one HealthCheckInterval ($INTERVAL s)" \
  bash -c "[ $drain_s -ge 0 ] && [ $drain_s -le $((INTERVAL + 1)) ] && scontrol_state=\$(scripts/node.sh shell scontrol show node lgnode) && grep -q 'State=[A-Z+]*DRAIN' <<<\"\$scontrol_state\""
jfind "$t0" MESSAGE_ID=26624f63eee84b53945857a5f532f1e3 LAUNCHGUARD_CHECK=node.munge.key_mode >"$WORK/crit.line" || true
jfind "$t0" MESSAGE_ID=26624f63eee84b53945857a5f532f1e3 LAUNCHGUARD_CHECK=node.nccl_env.files >"$WORK/warn.line" || true
say "$(cat "$WORK/crit.line")" "$(cat "$WORK/warn.line")"
check "journal: the CRITICAL finding has PRIORITY=2, MESSAGE_ID FINDING, LAUNCHGUARD_CHECK and LAUNCHGUARD_SEVERITY=critical" \
  grep -q '^PRIORITY=2 MESSAGE_ID=26624f63eee84b53945857a5f532f1e3 LAUNCHGUARD_CHECK=node.munge.key_mode LAUNCHGUARD_SEVERITY=critical MESSAGE=launchguard: node.munge.key_mode: ' "$WORK/crit.line"
check "journal: the WARNING finding has PRIORITY=4 and LAUNCHGUARD_SEVERITY=warning" \
  grep -q '^PRIORITY=4 MESSAGE_ID=26624f63eee84b53945857a5f532f1e3 LAUNCHGUARD_CHECK=node.nccl_env.files LAUNCHGUARD_SEVERITY=warning ' "$WORK/warn.line"
t1=$(now)
N chmod 0400 /etc/munge/munge.key
NB "sed -i '/^NCCL_SOCKET_IFNAME=nosuchif0\$/d' /etc/environment"
N systemctl reload launchguard-agent &
resume_s=$(wait_node $((INTERVAL + 3)) 'State=IDLE ')
wait
say "after chmod 0400: $(show_node)(${resume_s} s after the chmod)"
check "health: the fix resumes the node within one interval" bash -c "[ $resume_s -ge 0 ] && [ $resume_s -le $((INTERVAL + 1)) ] && ! scripts/node.sh shell scontrol show node lgnode | grep -q 'Reason='"
jfind "$t1" MESSAGE_ID=032b70a2e71742d6a0d5590858c788e9 LAUNCHGUARD_CHECK=node.munge.key_mode >"$WORK/clear.line" || true
say "$(cat "$WORK/clear.line")"
check "journal: the cleared finding has MESSAGE_ID CLEARED, PRIORITY=5" grep -q '^PRIORITY=5 MESSAGE_ID=032b70a2e71742d6a0d5590858c788e9 LAUNCHGUARD_CHECK=node.munge.key_mode LAUNCHGUARD_SEVERITY=ok' "$WORK/clear.line"
N scontrol update nodename=lgnode state=drain reason="disk swap by hand"
N chmod 0644 /etc/munge/munge.key
sleep $((INTERVAL + 2))
say "drained by hand, key 0644 for $((INTERVAL + 2)) s: $(show_node)"
check "health: a node drained by hand with another reason keeps that reason while the fault is there" \
  bash -c "scripts/node.sh shell scontrol show node lgnode | grep -q 'Reason=disk swap by hand'"
N chmod 0400 /etc/munge/munge.key
sleep $((INTERVAL + 1))
say "key fixed, $((INTERVAL + 1)) s later: $(show_node)"
check "health: ...and is not resumed by launchguard after the fix" \
  bash -c "scripts/node.sh shell scontrol show node lgnode | grep -q 'Reason=disk swap by hand' && scripts/node.sh shell scontrol show node lgnode | grep -q 'State=[A-Z+]*DRAIN'"
N scontrol update nodename=lgnode state=resume
# Launch reports.
t0=$(now)
NB 'timeout 60 runuser -u lgtest -- srun -N1 true; timeout 60 runuser -u lgtest -- srun -N1 --export=NONE true' >"$WORK/launch.out" 2>&1 || true
sleep 0.5
jfind "$t0" MESSAGE_ID=7c3613215b974e6fa69bff88de07bdb2 LAUNCHGUARD_ACTION=allowed >"$WORK/allowed.line" || true
jfind "$t0" MESSAGE_ID=7c3613215b974e6fa69bff88de07bdb2 LAUNCHGUARD_FINDINGS~launch.export_all >"$WORK/warned.line" || true
say "$(cat "$WORK/allowed.line")" "$(cat "$WORK/warned.line")"
check "journal: an allowed launch report: MESSAGE_ID LAUNCH, PRIORITY=5, LAUNCHGUARD_JOB/_UID=1500/_ACTION=allowed" \
  grep -Eq '^PRIORITY=5 MESSAGE_ID=7c3613215b974e6fa69bff88de07bdb2 LAUNCHGUARD_ACTION=allowed .*LAUNCHGUARD_JOB=[0-9]+ .*LAUNCHGUARD_UID=1500' "$WORK/allowed.line"
# srun's report is the user's claim (issue 26: a user's srun must not write ERROR entries): logged at
# PRIORITY=5 with LAUNCHGUARD_SOURCE=user_claim, its finding and severity kept as fields.
check "journal: srun's report of an error-severity finding (--export=NONE) is the user's claim: PRIORITY=5, LAUNCHGUARD_FINDINGS=launch.export_all, LAUNCHGUARD_SOURCE=user_claim" \
  grep -Eq '^PRIORITY=5 MESSAGE_ID=7c3613215b974e6fa69bff88de07bdb2 LAUNCHGUARD_ACTION=warned .*LAUNCHGUARD_FINDINGS=launch.export_all .*LAUNCHGUARD_SEVERITY=error LAUNCHGUARD_SOURCE=user_claim .*MESSAGE=launch warned \(claimed by the user.s srun, not verified\)' "$WORK/warned.line"

stage "5. watchdog"
srun_loop "$WORK/base.srun" 8
wd=$(N systemctl show -p WatchdogUSec --value launchguard-agent)
pid=$(agent_pid)
t0=$(now)
N kill -STOP "$pid"
say "SIGSTOP to the agent (pid $pid, WatchdogSec=$wd) at $(date -u -d "@${t0%.*}" +%T)"
: >"$WORK/wd.srun"
killed=""
for i in $(seq 45); do
  srun_loop "$WORK/wd1.srun" 1
  cat "$WORK/wd1.srun" >>"$WORK/wd.srun"
  if [ -z "$killed" ] && jfind "$t0" MESSAGE~'Watchdog timeout' >"$WORK/wd.line" 2>/dev/null; then
    killed=$(N journalctl -u launchguard-agent -o json --since "@${t0%.*}" --no-pager | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if "Watchdog timeout" in e.get("MESSAGE", ""):
        print("%.1f" % (int(e["__REALTIME_TIMESTAMP"]) / 1e6 - float(sys.argv[1]))); break' "$t0")
    break
  fi
  sleep 0.5
done
back=""
for i in $(seq 100); do
  p=$(agent_pid)
  if [ "$p" != "$pid" ] && [ "$p" != 0 ] && [ "$(N systemctl is-active launchguard-agent)" = active ]; then
    back=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    break
  fi
  srun_loop "$WORK/wd1.srun" 1
  cat "$WORK/wd1.srun" >>"$WORK/wd.srun"
done
N journalctl -u launchguard-agent --since "@${t0%.*}" --no-pager -o short-precise | grep -E 'Watchdog|Killing|Main process exited|Failed with|Scheduled restart|Started|ready' |
  sed 's/^/test-node:   | /' || true
# The baseline brackets the stopped period: 8 sruns before the SIGSTOP and 8 after the restart (this
# machine's srun time drifts with its load).
srun_loop "$WORK/after.srun" 8
cat "$WORK/after.srun" >>"$WORK/base.srun"
base=$(median "$WORK/base.srun")
wdmed=$(median "$WORK/wd.srun")
say "killed ${killed:-?} s after SIGSTOP, active again (new pid $(agent_pid)) after ${back:-?} s; sruns: baseline median $base ms; while stopped/restarting $(loop_summary "$WORK/wd.srun")"
wd_s=$(awk -v w="$wd" 'BEGIN { sub(/s$/, "", w); print w + 0 }')
check "watchdog: systemd kills the SIGSTOPped agent within WatchdogSec ($wd)" \
  awk -v k="${killed:--1}" -v w="$wd_s" 'BEGIN { exit !(k >= 0 && k <= w + 1) }'
check "watchdog: the agent is restarted and active (Restart=on-failure)" [ -n "$back" ]
check "watchdog: no srun failed meanwhile and their median stays within +50 ms of the baseline ($wdmed vs $base ms)" \
  bash -c "loop_ok=\$(awk '\$1 != 0 { f++ } END { print f + 0 }' '$WORK/wd.srun'); [ \$loop_ok = 0 ] && [ $wdmed -ge 0 ] && [ $wdmed -le $((base + 50)) ]"

stage "6. tmpfiles.d after a reboot"
# (node.enroot.run_dir is disabled for the control: with /run/enroot gone it is CRITICAL and
# launchguard-health would drain the node before the srun runs)
{ echo 'disabled = ["node.enroot.run_dir"]'; cat "$WORK/launchguard.toml.orig"; } >"$NODE_ROOT$CONF"
n0=$(NB 'grep -c "repaired .*/run/enroot" /var/log/slurm/slurmd.log || true')
NB 'rm -rf /run/enroot && timeout 60 runuser -u lgtest -- srun -N1 true' >/dev/null 2>&1 || true
sleep 0.3
n1=$(NB 'grep -c "repaired .*/run/enroot" /var/log/slurm/slurmd.log || true')
cp "$WORK/launchguard.toml.orig" "$NODE_ROOT$CONF"
say "control, without the tmpfiles line: /run/enroot removed, one srun: slurmd.log repair lines $n0 → $n1"
check "control: without /run/enroot the plugin repairs it at the first launch (logged)" [ "$n1" -gt "$n0" ]
readme_run enroot-tmpfiles '^ln -s /usr/share/launchguard/tmpfiles.d/enroot-runtime.conf'
check "README: the enroot tmpfiles line runs" [ "$(rc enroot-tmpfiles)" = 0 ]
scripts/node.sh reboot
modes=$(NB 'stat -c "%n %a %U:%G" /run/launchguard /run/enroot')
say "after the reboot: $(echo "$modes" | tr '\n' ';') agent: $(N systemctl is-active launchguard-agent)"
check "tmpfiles.d after a reboot: /run/launchguard 755 root:root, /run/enroot 1777 root:root, agent active (enabled)" \
  bash -c "grep -qx '/run/launchguard 755 root:root' <<<'$modes' && grep -qx '/run/enroot 1777 root:root' <<<'$modes' && [ \"\$(scripts/node.sh shell systemctl is-active launchguard-agent)\" = active ]"
n2=$(NB 'grep -c "repaired .*/run/enroot" /var/log/slurm/slurmd.log || true')
srun_loop "$WORK/boot.srun" 1
n3=$(NB 'grep -c "repaired .*/run/enroot" /var/log/slurm/slurmd.log || true')
say "first srun after the reboot: $(loop_summary "$WORK/boot.srun"); slurmd.log repair lines $n2 → $n3"
check "the first launch after the reboot needs no repair of /run/enroot" bash -c "[ '$n2' = '$n3' ] && awk '\$1 != 0 { exit 1 }' '$WORK/boot.srun'"

stage "7. README upgrade and removal"
pid=$(agent_pid)
srun_loop "$WORK/upgrade.srun" 15 &
LOOP=$!
sleep 0.5
SHOW=3 readme_run upgrade 'apt install \./launchguard_[^ ]*-2\+slurm'
wait "$LOOP" || true
newpid=$(agent_pid)
ver=$(N dpkg-query -W -f='${Version}' launchguard)
say "installed $ver; agent pid $pid → $newpid ($(N systemctl is-active launchguard-agent)); $(loop_summary "$WORK/upgrade.srun")"
check "README upgrade: apt install of revision 2 while sruns run: installed, agent restarted, no srun failed" \
  bash -c "[ $(rc upgrade) = 0 ] && [[ '$ver' == *-2+slurm* ]] && [ '$pid' != '$newpid' ] && [ '$newpid' != 0 ] && awk '\$1 != 0 { exit 1 }' '$WORK/upgrade.srun' && [ -s '$WORK/upgrade.srun' ]"
readme_run unlink '^rm /etc/slurm/plugstack.conf.d/zz-launchguard.conf'
SHOW=3 readme_run purge '^apt purge launchguard'
check "README removal: the line first, then apt purge: both succeed" bash -c "[ $(rc unlink) = 0 ] && [ $(rc purge) = 0 ]"
left=$(NB 'for f in /usr/bin/launchguard /usr/sbin/launchguard-health /lib/systemd/system/launchguard-agent.service /etc/launchguard /etc/systemd/system/multi-user.target.wants/launchguard-agent.service /run/launchguard; do [ -e $f ] && echo $f; done; systemctl is-active launchguard-agent' || true)
say "after the purge: $(echo "$left" | tr '\n' ' ')"
check "purged: no file left, the agent is gone" bash -c "[ '$(echo "$left" | tr '\n' ' ')' = 'inactive ' ]"
srun_loop "$WORK/purged.srun" 1
check "after the purge srun works ($(loop_summary "$WORK/purged.srun"))" loop_failed "$WORK/purged.srun"

finish
