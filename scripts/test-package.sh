#!/usr/bin/env bash
# Package test, as root, on the one-node host cluster (scripts/cluster.sh; started if it is down):
#
#   1. scripts/package.sh builds the .deb and the .rpm;
#   2. the .rpm: file list, conffiles, Requires and scriptlets (rpm -qlp, -qpc, -qpR, --scripts), its
#      plugstack snippet, and its real %preun run against a plugstack that still loads its .so;
#   3. the .deb installed with dpkg -i; its files, the unit (systemd-analyze verify and security),
#      man page, completion, check-args on the shipped line;
#   4. the shipped plugstack snippet linked as an admin does: a bad srun warns, and with a copy in
#      enforce mode a bad srun is stopped and a good one runs; `launchguard check`;
#   5. removal: dpkg -r is refused while plugstack loads the .so (srun still works), a required line
#      to a missing .so is shown to break srun, then the documented order (line first, then
#      dpkg --purge) leaves no file behind and srun works.
#
# The cluster's own drop-in (/etc/slurm/plugstack.conf.d/zz-launchguard.conf, the dev build from
# `cluster.sh install-plugin`) is moved aside for the test and put back on exit; /etc/slurm is
# otherwise compared before and after. Prints one `test result:` line in cargo's format, which
# scripts/test.sh counts. Exits 1 if any check failed.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
# The package's /usr/bin/launchguard, not a development copy that scripts/cluster.sh install-bin (the
# demo's state) keeps in /usr/local/bin, which comes first on PATH.
export PATH=/usr/sbin:/usr/bin:$PATH
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ "$(id -u)" = 0 ] || { echo "test-package: run as root (dpkg -i, srun, /etc/slurm)" >&2; exit 2; }

PKG=launchguard
SO=/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so
SNIPPET=/usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf
UNIT=/lib/systemd/system/launchguard-agent.service
DROPDIR=/etc/slurm/plugstack.conf.d
DROPIN=$DROPDIR/zz-launchguard.conf
MISSING=$DROPDIR/99-lg-test-missing.conf
WORK=$(mktemp -d /tmp/launchguard-test-package.XXXXXX)
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); printf 'test-package: ok: %s\n' "$*"; }
bad() { FAIL=$((FAIL + 1)); printf 'test-package: FAIL: %s\n' "$*"; }
# check DESCRIPTION COMMAND…: one check, passed when COMMAND succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
has_line() { grep -qxF -- "$2" "$1"; }
contains() { grep -qF -- "$2" "$1"; }
# run NAME COMMAND…: runs COMMAND with stdout/stderr in $WORK/NAME.{out,err}, its status in $WORK/NAME.rc.
run() {
  local n=$1; shift
  set +e; "$@" >"$WORK/$n.out" 2>"$WORK/$n.err"; echo $? >"$WORK/$n.rc"; set -e
  printf 'test-package: $ %s  → rc=%s\n' "$*" "$(cat "$WORK/$n.rc")"
  sed 's/^/    | /' "$WORK/$n.out" "$WORK/$n.err" | head -n "${SHOW_LINES:-12}"
}
rc() { cat "$WORK/$1.rc"; }
# dpkg_wait ARGS…: dpkg, waiting up to 5 minutes while another dpkg/apt holds the lock.
dpkg_wait() {
  local i err status
  err=$(mktemp)
  for i in $(seq 150); do
    status=0
    dpkg "$@" 2>"$err" || status=$?
    if [ "$status" = 0 ] || ! grep -q 'lock was locked by another process' "$err"; then
      cat "$err" >&2; rm -f "$err"; return "$status"
    fi
    [ "$i" = 1 ] && echo "test-package: waiting for the dpkg lock" >&2
    sleep 2
  done
  cat "$err" >&2; rm -f "$err"; return 2
}

MOVED=no
cleanup() {
  set +e
  rm -f "$MISSING"
  if [ "$MOVED" = yes ]; then
    # From here on $DROPIN is the test's: unlink it before purging what a failed run left installed
    # (the prerm refuses otherwise), then put the cluster's drop-in back.
    rm -f "$DROPIN"
    if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'ok installed'; then
      dpkg_wait --purge "$PKG" >/dev/null 2>&1
    fi
    if [ -e "$WORK/dropin.saved" ] || [ -L "$WORK/dropin.saved" ]; then mv -f "$WORK/dropin.saved" "$DROPIN"; fi
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# rpm (rpm -qp…, rpm2cpio), cpio and man from Debian's archive when missing.
need=()
command -v rpm >/dev/null || need+=(rpm)
command -v cpio >/dev/null || need+=(cpio)
command -v man >/dev/null || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-package: installing ${need[*]} (apt-get)" >&2
  apt_install "${need[@]}"
fi

# The one-node cluster must be up (scripts/test.sh starts it; standalone runs start it here).
if ! scontrol ping 2>/dev/null | grep -q UP; then scripts/cluster.sh up; fi

echo "test-package: 1. build" >&2
scripts/package.sh
SLURM_REL=$(srun --version | awk '{ split($2, v, "."); print v[1] "." v[2] }')
DEB=$(ls target/packages/"${PKG}"_*+slurm"${SLURM_REL}"_amd64.deb)
RPM=$(ls target/packages/"${PKG}"-*."slurm${SLURM_REL}".x86_64.rpm)
ls -l "$DEB" "$RPM"
check "the .deb's version names the Slurm release it was built for (+slurm$SLURM_REL)" \
  bash -c "dpkg-deb -f '$DEB' Version | grep -qE '^[0-9.]+-[0-9]+\\+slurm$SLURM_REL\$'"
check "the .deb depends on slurm-wlm-basic-plugins of that release only" \
  bash -c "dpkg-deb -f '$DEB' Depends | grep -qF 'slurm-wlm-basic-plugins (>= $SLURM_REL)' && dpkg-deb -f '$DEB' Depends | grep -qF 'slurm-wlm-basic-plugins (<< '"

echo "test-package: 2. the .rpm" >&2
rpm -qlp "$RPM" >"$WORK/rpm.files"
sed 's/^/    | /' "$WORK/rpm.files"
for f in /usr/bin/launchguard /usr/lib64/slurm/spank_launchguard.so \
  /usr/lib/systemd/system/launchguard-agent.service /usr/lib/tmpfiles.d/launchguard.conf \
  /usr/share/launchguard/tmpfiles.d/enroot-runtime.conf "$SNIPPET" /usr/share/launchguard/plugstack-refs \
  /etc/launchguard/launchguard.toml /usr/share/man/man1/launchguard.1.gz /usr/share/man/man1/launchguard-agent.1.gz \
  /usr/share/bash-completion/completions/launchguard /usr/share/zsh/site-functions/_launchguard \
  /usr/share/fish/vendor_completions.d/launchguard.fish /usr/share/doc/launchguard/README.md \
  /usr/share/doc/launchguard/CHANGELOG.md /usr/share/licenses/launchguard/LICENSE-MIT \
  /usr/share/launchguard/prometheus/launchguard-alerts.yml /usr/share/doc/launchguard/docs/install.md \
  /usr/share/doc/launchguard/docs/reference/launch-checks.md; do
  check "rpm -qlp lists $f" has_line "$WORK/rpm.files" "$f"
done
check "rpm -qpc: /etc/launchguard/launchguard.toml is a config file" \
  bash -c "rpm -qpc '$RPM' | grep -qxF /etc/launchguard/launchguard.toml"
rpm -qpR "$RPM" >"$WORK/rpm.requires"
check "rpm -qpR: Requires slurm >= $SLURM_REL and < the next release" \
  bash -c "grep -qxF 'slurm >= $SLURM_REL' '$WORK/rpm.requires' && grep -q '^slurm < ' '$WORK/rpm.requires'"
check "rpm: release names the Slurm release" bash -c "rpm -qp --qf '%{RELEASE}' '$RPM' | grep -qxE '[0-9]+\\.slurm$SLURM_REL'"
rpm -qp --scripts "$RPM" >"$WORK/rpm.scripts"
sed 's/^/    | /' "$WORK/rpm.scripts"
check "rpm --scripts: %preun looks for plugstack lines before the .so goes" contains "$WORK/rpm.scripts" '/usr/share/launchguard/plugstack-refs'
mkdir -p "$WORK/rpmroot"
# (Debian's rpm2cpio 4.18 exits 1 after writing this package's whole archive; the checks below
# look at the extracted files.)
(cd "$WORK/rpmroot" && { rpm2cpio "$ROOT/$RPM" || true; } | cpio -idm --quiet)
check "the .rpm's plugstack snippet names RHEL's plugin directory" \
  grep -qx 'required /usr/lib64/slurm/spank_launchguard.so mode=warn' "$WORK/rpmroot$SNIPPET"
check "the .rpm's .so exports the SPANK symbols after stripping" \
  bash -c "nm -D '$WORK/rpmroot/usr/lib64/slurm/spank_launchguard.so' | grep -q ' slurm_spank_init_post_opt$'"
# The .rpm's own %preun, run with /etc/slurm/plugstack.conf.d replaced (in a private mount namespace)
# by a directory that links the .rpm's snippet as an admin would on RHEL, and REFS pointed at the
# .rpm's plugstack-refs (the package is not installed here).
awk '/^preuninstall scriptlet/ { on = 1; next } /^[a-z]+ scriptlet/ { on = 0 } on' "$WORK/rpm.scripts" |
  sed "s|^REFS=.*|REFS=$WORK/rpmroot/usr/share/launchguard/plugstack-refs|" >"$WORK/preun.sh"
mkdir -p "$WORK/fake-dropdir" "$WORK/empty-dropdir"
ln -s "$WORK/rpmroot$SNIPPET" "$WORK/fake-dropdir/zz-launchguard.conf"
# shellcheck disable=SC2016 # $1.. expand in the inner sh
preun() { # preun DROPDIR ARG
  unshare -m sh -c 'mount --bind "$1" /etc/slurm/plugstack.conf.d && sh "$2" "$3"' sh "$1" "$WORK/preun.sh" "$2"
}
run rpm-preun-linked preun "$WORK/fake-dropdir" 0
check "rpm %preun (erase) refuses while plugstack loads /usr/lib64/slurm/spank_launchguard.so" \
  bash -c "[ $(rc rpm-preun-linked) != 0 ] && grep -q 'not removed: plugstack still loads' '$WORK/rpm-preun-linked.err'"
run rpm-preun-upgrade preun "$WORK/fake-dropdir" 1
check "rpm %preun (upgrade) does not refuse" [ "$(rc rpm-preun-upgrade)" = 0 ]
run rpm-preun-unlinked preun "$WORK/empty-dropdir" 0
check "rpm %preun (erase) goes on once the line is gone" [ "$(rc rpm-preun-unlinked)" = 0 ]

echo "test-package: 3. dpkg -i" >&2
# Take the cluster's dev drop-in out of plugstack for the test (put back by cleanup).
if [ -e "$DROPIN" ] || [ -L "$DROPIN" ]; then mv -f "$DROPIN" "$WORK/dropin.saved"; fi
MOVED=yes
( cd /etc/slurm && find . -path ./plugstack.conf.d/zz-launchguard.conf -prune -o -type f -print0 | sort -z | xargs -0 sha256sum ) >"$WORK/etc-slurm.before"
if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'ok installed'; then dpkg_wait --purge "$PKG" >/dev/null; fi
SHOW_LINES=20 run dpkg-install dpkg_wait -i "$DEB"
check "dpkg -i installs the .deb" [ "$(rc dpkg-install)" = 0 ]
if [ "$(rc dpkg-install)" != 0 ]; then
  echo "test result: FAILED. $PASS passed; $FAIL failed; (scripts/test-package.sh: stopped, the .deb did not install)"
  exit 1
fi
for f in /usr/bin/launchguard "$SO" "$UNIT" /usr/lib/tmpfiles.d/launchguard.conf \
  /usr/share/launchguard/tmpfiles.d/enroot-runtime.conf "$SNIPPET" /etc/launchguard/launchguard.toml \
  /usr/share/bash-completion/completions/launchguard /usr/share/zsh/vendor-completions/_launchguard \
  /usr/share/fish/vendor_completions.d/launchguard.fish /usr/share/doc/launchguard/copyright \
  /usr/share/launchguard/prometheus/launchguard-alerts.yml /usr/share/doc/launchguard/docs/install.md \
  /usr/share/doc/launchguard/docs/reference/launch-checks.md; do
  check "installed: $f" test -f "$f"
done
check "dpkg: /etc/launchguard/launchguard.toml is a conffile" \
  bash -c "dpkg-query -W -f='\${Conffiles}' $PKG | grep -q '/etc/launchguard/launchguard.toml'"
check "postinst: systemd-tmpfiles made /run/launchguard (0755 root)" \
  bash -c "[ \"\$(stat -c '%a %U' /run/launchguard)\" = '755 root' ]"
check "man launchguard finds the installed page" bash -c "man -w launchguard | grep -q '^/usr/share/man/man1/launchguard.1.gz$'"
check "man launchguard-agent finds the installed page" bash -c "man -w launchguard-agent | grep -q '^/usr/share/man/man1/launchguard-agent.1.gz$'"
check "bash completion registers launchguard" \
  bash -c "source /usr/share/bash-completion/completions/launchguard && complete -p launchguard >/dev/null"
run analyze-verify systemd-analyze verify "$UNIT"
check "systemd-analyze verify $UNIT: no output, rc 0" \
  bash -c "[ $(rc analyze-verify) = 0 ] && ! [ -s '$WORK/analyze-verify.out' ] && ! [ -s '$WORK/analyze-verify.err' ]"
set +e; systemd-analyze security --offline=yes "$UNIT" >"$WORK/security.out" 2>&1; set -e
grep -E 'Overall exposure' "$WORK/security.out" | sed 's/^/    | /'
exposure=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' "$WORK/security.out")
# 3.5 since issue 28 (2.9 before): the node's /tmp and /var/tmp, read-only homes, the kernel log
# (CAP_SYSLOG) and the live hostname, each needed by a check (systemd/README.md).
check "systemd-analyze security: exposure ${exposure:-?} is at most 3.5 (OK)" \
  awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 3.5) }'
LINE=$(grep '^required' "$SNIPPET")
run check-args launchguard check-args "$LINE"
check "launchguard check-args accepts the shipped line (the .so it names exists)" [ "$(rc check-args)" = 0 ]

echo "test-package: 4. the plugin from the package, in plugstack" >&2
ln -s "$SNIPPET" "$DROPIN"
run srun-bad-warn srun --gres=gpu:1 true
check "linked (mode=warn): a GPU step without -c runs and gets launch.cpus_per_task" \
  bash -c "[ $(rc srun-bad-warn) = 0 ] && grep -q '^launchguard: launch.cpus_per_task: ' '$WORK/srun-bad-warn.err'"
# Admins who change arguments copy the snippet instead of linking it.
rm -f "$DROPIN"
sed 's/ mode=warn$/ mode=enforce/' "$SNIPPET" >"$DROPIN"
check "the enforce copy names the packaged .so" grep -qx "required $SO mode=enforce" "$DROPIN"
run srun-bad-enforce srun --gres=gpu:1 true
check "copied (mode=enforce): the bad srun is stopped (rc != 0, launch.cpus_per_task, stopped by policy)" \
  bash -c "[ $(rc srun-bad-enforce) != 0 ] && grep -q '^launchguard: launch.cpus_per_task: ' '$WORK/srun-bad-enforce.err' \
    && grep -q 'stopped by the site.s policy' '$WORK/srun-bad-enforce.err'"
run srun-good srun -c 2 --gres=gpu:1 echo ran
check "copied (mode=enforce): a good srun runs silently" \
  bash -c "[ $(rc srun-good) = 0 ] && grep -qx ran '$WORK/srun-good.out' && ! grep -q launchguard '$WORK/srun-good.err'"
SHOW_LINES=30 run lg-check launchguard check --json
check "launchguard check --json: exit 0-2 (OK, WARNING, CRITICAL) with JSON on stdout" \
  bash -c "case $(rc lg-check) in 0|1|2) ;; *) exit 1;; esac; python3 -c '
import json, sys
t = open(sys.argv[1]).read().strip()
try:
    json.loads(t)
except ValueError:
    [json.loads(l) for l in t.splitlines() if l.strip()]
' '$WORK/lg-check.out'"
# systemd is not PID 1 here, so the unit cannot be started; instead the installed agent's checks run
# in the installed unit's sandbox as scripts/lib/unit-sandbox.sh applies it from the unit file
# (capability bound, no_new_privs, ProtectSystem=, ProtectHome=, PrivateTmp=, ProtectKernelLogs=,
# ProtectHostname=), and must judge the node exactly as unconfined root does: with the installed
# config, and on a state where the two could differ (issue 28), recreated here: enroot's data and
# cache paths under /tmp parents of another user (uid 1002) with mode 0700, enroot.conf root-only
# (0600), and its runtime directory on a read-only mount. Configs live under /run (seen by any
# sandbox), the state under $WORK (/tmp).
STATE_RUN=$(mktemp -d /run/launchguard-test-package.XXXXXX)
STATE_MOUNT=$STATE_RUN/ro
trap 'umount "$STATE_MOUNT" 2>/dev/null; rm -rf "$STATE_RUN"; cleanup' EXIT
mkdir -p "$STATE_RUN/ro-src/enroot" "$STATE_MOUNT" "$WORK/enroot-data" "$WORK/enroot-cache"
chmod 1777 "$STATE_RUN/ro-src/enroot"
chmod 0755 "$WORK"
chown 1002 "$WORK/enroot-data" "$WORK/enroot-cache"
chmod 0700 "$WORK/enroot-data" "$WORK/enroot-cache"
mount --bind "$STATE_RUN/ro-src" "$STATE_MOUNT"
mount -o remount,bind,ro "$STATE_MOUNT"
# shellcheck disable=SC2016 # enroot expands $(id -u)
printf 'ENROOT_RUNTIME_PATH %s/enroot/user-$(id -u)\nENROOT_DATA_PATH %s/enroot-data/user-$(id -u)\nENROOT_CACHE_PATH %s/enroot-cache/user-$(id -u)\n' \
  "$STATE_MOUNT" "$WORK" "$WORK" >"$STATE_RUN/enroot.conf"
chmod 0600 "$STATE_RUN/enroot.conf"
printf '[enroot]\nconf = "%s"\n' "$STATE_RUN/enroot.conf" >"$STATE_RUN/launchguard.toml"
launchguard check --json >"$WORK/check-root.json" || true
scripts/lib/unit-sandbox.sh "$UNIT" launchguard check --json >"$WORK/check-sandbox.json" 2>"$WORK/check-sandbox.err" || true
launchguard check --json --config "$STATE_RUN/launchguard.toml" >"$WORK/check-root-state.json" || true
scripts/lib/unit-sandbox.sh "$UNIT" launchguard check --json --config "$STATE_RUN/launchguard.toml" \
  >"$WORK/check-sandbox-state.json" 2>>"$WORK/check-sandbox.err" || true
sed 's/^/    | /' "$WORK/check-sandbox.err"
compare() { # compare ROOT.json SANDBOX.json [ID EXPECTED-STATUS]…: verdicts and facts equal; each ID
  # named has root's EXPECTED-STATUS and the same message both ways (where /tmp is on the root
  # filesystem, a private /tmp gave node.enroot.storage the same WARNING for another reason)
  python3 -c '
import json, sys
want = dict(zip(sys.argv[3::2], sys.argv[4::2]))
def load(p):
    r = json.load(open(p))
    # the verdicts and the facts (slurm_version comes from running slurmd -V)
    return {**{c["id"]: c["status"] for c in r["checks"]}, **r.get("facts", {}),
            **{"message of " + c["id"]: c["message"] for c in r["checks"] if c["id"] in want}}
a, b = load(sys.argv[1]), load(sys.argv[2])
diff = {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
miss = {k: (a.get(k), v) for k, v in want.items() if a.get(k) != v}
print("    | %d checks and facts, differences: %s%s" % (len(a), diff or "none", "; root did not say %s" % miss if miss else ""))
sys.exit(1 if diff or miss or not a else 0)
' "$@"
}
check "in the unit's sandbox ($(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT"), no_new_privs, its file system settings) launchguard check judges the node as root does (verdicts and facts)" \
  compare "$WORK/check-root.json" "$WORK/check-sandbox.json"
check "… and on enroot paths under /tmp parents of uid 1002 (0700), a 0600 enroot.conf and a read-only mount: node.enroot.storage is root's CRITICAL there too (users cannot pass the 0700 parents)" \
  compare "$WORK/check-root-state.json" "$WORK/check-sandbox-state.json" node.enroot.storage critical node.enroot.run_dir ok

echo "test-package: 5. removal" >&2
rm -f "$DROPIN"
ln -s "$SNIPPET" "$DROPIN"
run dpkg-remove-linked dpkg_wait -r "$PKG"
check "dpkg -r is refused while plugstack loads the .so, naming the line" \
  bash -c "[ $(rc dpkg-remove-linked) != 0 ] && grep -q 'not removed: plugstack still loads $SO' '$WORK/dpkg-remove-linked.err' \
    && grep -qF '$DROPIN:' '$WORK/dpkg-remove-linked.err'"
check "after the refusal the package and its .so are still installed" \
  bash -c "dpkg-query -W -f='\${Status}' $PKG | grep -q 'ok installed' && [ -f '$SO' ]"
run srun-after-refusal srun -c 2 --gres=gpu:1 true
check "after the refusal srun still works" [ "$(rc srun-after-refusal)" = 0 ]
# What the refusal prevents: a required line naming a .so that is not there.
echo "required /usr/lib/x86_64-linux-gnu/slurm-wlm/lg_test_missing.so" >"$MISSING"
run srun-missing-so srun true
check "a required line to a missing .so fails srun (what the prerm prevents)" [ "$(rc srun-missing-so)" != 0 ]
rm -f "$MISSING"
# The documented order: the plugstack line first, then the package.
rm -f "$DROPIN"
run dpkg-purge dpkg_wait --purge "$PKG"
check "dpkg --purge succeeds once the line is gone" [ "$(rc dpkg-purge)" = 0 ]
for f in "$SO" /usr/bin/launchguard "$UNIT" /etc/launchguard /usr/share/launchguard /run/launchguard; do
  check "purged: $f is gone" bash -c "! [ -e '$f' ]"
done
run srun-after-purge srun -c 2 --gres=gpu:1 echo ran
check "after the purge srun still works" \
  bash -c "[ $(rc srun-after-purge) = 0 ] && grep -qx ran '$WORK/srun-after-purge.out'"
( cd /etc/slurm && find . -path ./plugstack.conf.d/zz-launchguard.conf -prune -o -type f -print0 | sort -z | xargs -0 sha256sum ) >"$WORK/etc-slurm.after"
check "the package never changed a file under /etc/slurm" cmp -s "$WORK/etc-slurm.before" "$WORK/etc-slurm.after"

status=ok
[ "$FAIL" = 0 ] || status=FAILED
echo "test result: $status. $PASS passed; $FAIL failed; (scripts/test-package.sh)"
[ "$FAIL" = 0 ]
