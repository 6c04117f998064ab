#!/usr/bin/env bash
# Every test, as root on a fresh machine: brings up the one-node Slurm 22.05 of the host, a Slurm
# 24.11 in a Debian 13 chroot and a Slurm 26.05 in a Debian sid chroot (installing Slurm, munge,
# debootstrap and the build's C dependencies with apt if missing; the chroots are reused when
# present), checks formatting and lints, builds the plugin once per release, fuzzes each parser
# briefly, then runs the unit tests and the real-cluster integration tests on the three releases.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 10; 0 skips fuzzing)
#   LG_RELEASES="host trixie sid"   which clusters to test (default all three)
#   LG_ARM64=0                   skips the arm64 stage (Grace nodes, emulated; see below)
#   LG_VM=0                      skips the cgroup v2 VM stage (scripts/test-vm.sh; see below)
#   LG_VM2=1                     adds the two-VM sweep stage (scripts/test-vm2.sh; off by default: see below)
#   LG_VM_SID=1                  adds scripts/test-vm.sh on the Debian sid VM (Slurm 26.05; off by default)
# It ends with `tests: N passed, N failed, N skipped`, on success and failure alike. On a failure it
# also prints the stage that failed, the command that reruns exactly the failed test (with the
# variables the cluster tests need) or the stage, and which clusters it left running
# (scripts/lib/teststage.sh, scripts/lib/testlog.py). A skipped test fails the run, except the
# real-Pyxis test where Pyxis is not installed, which the closing line names as an accepted skip.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/teststage.sh
# Cluster tests are compiled in only with LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs); here they must
# all run, and the closing line fails the run if any test was ignored.
export LG_SLURM_TESTS=1
RELEASES=${LG_RELEASES:-host trixie sid}
LOG=$(mktemp /tmp/launchguard-test.XXXXXX)
TESTLOG=$LOG
# say WHAT: one progress line with the seconds since the start, so a slow stage shows in CI's log.
say() { echo "test: $* (at ${SECONDS} s)" >&2; }
# Until the first stage line: a failure here is in bringing the clusters up.
STAGE="bringing up the test clusters"
RERUN="scripts/cluster.sh up && scripts/multinode.sh up 3"
# The closing count is printed once: by the last line on success, by the EXIT trap on a failure.
SUMMARY_PRINTED=0
# Replaced by the full trap once the background chains run.
trap 'rc=$?; if [ "$rc" != 0 ]; then test_failed "$rc" || true; fi; rm -f "$LOG" || true' EXIT

case " $RELEASES " in *" host "*) HOST=1 ;; *) HOST=0 ;; esac
ARM64=${LG_ARM64:-1}
# The cgroup v2 VM runs Slurm 24.11 and installs the 24.11 .deb, built from the trixie chroot's headers
# with the host's packaging tools: it needs both clusters.
case " $RELEASES " in *" trixie "*) VM=${LG_VM:-$HOST} ;; *) VM=0 ;; esac
# The host cluster first: its packages (libslurm-dev, clang) are what the build needs.
[ "$HOST" = 0 ] || scripts/cluster.sh up
# launchguard sweep (issue 8): a three-node Slurm on this machine (namespaces, ports 6917/6918) for
# sweep/tests/multinode.rs, run below by `cargo test --workspace` (about 80 s of tests).
scripts/multinode.sh up 3
# The HTML reports' browser test (node-agent/tests/html_report.rs) renders them with headless
# Chromium; under LG_REQUIRE_BROWSER=1 it fails instead of skipping where chromium is missing.
. scripts/lib/apt.sh
command -v chromium >/dev/null || apt_install --no-install-recommends chromium
export LG_REQUIRE_BROWSER=1
# On a fresh machine the chroots and the node's rootfs are debootstrapped (downloads, unpacking, and
# for arm64 dpkg under emulation: most of a cold run's setup). That runs here in the background, one
# after the other (one apt at a time), while the lints, the build and the fuzzers use the CPU; each
# stage below waits for what it needs. With /srv/lg-* cached each step takes seconds.
PREP=$(mktemp -d /tmp/launchguard-prep.XXXXXX)
# Its own process group (set -m), so a run that stops early stops the debootstraps too (an interrupted
# one is redone next time: cluster.sh and node.sh build into a .tmp directory and rename it).
set -m
(
  trap 'echo $? >"$PREP/prep.exit"' EXIT
  for c in $RELEASES; do
    [ "$c" = host ] || { LG_CLUSTER=$c scripts/cluster.sh prepare && touch "$PREP/$c"; } || exit 1
  done
  if [ "$HOST" = 1 ]; then scripts/node.sh rootfs && touch "$PREP/node" || exit 1; fi
  if [ "$ARM64" != 0 ]; then LG_CLUSTER=arm64 scripts/cluster.sh prepare && touch "$PREP/arm64" || exit 1; fi
  if [ "$VM" != 0 ]; then scripts/vm.sh image && touch "$PREP/vm" || exit 1; fi
) </dev/null >"$PREP/prep.log" 2>&1 &
PREP_PID=$!
# The tools the later stages need, compiled in the background at low priority (nice 10) so that they
# take the CPU the test stages leave idle (they mostly wait on srun) rather than the build's, in the
# order the stages below need them: for arm64 the cross gcc and the Rust target (downloads), then
# cargo-deb and cargo-generate-rpm, then cargo-fuzz and the fuzz targets (the fuzz stage runs last).
# On a fresh machine that is several minutes of compiling; with them cached, seconds.
(
  trap 'echo $? >"$PREP/tools.exit"' EXIT
  if [ "$ARM64" != 0 ]; then LG_ARCH=arm64 LG_PACKAGE_TOOLS_ONLY=1 LG_PACKAGE_FORMATS=none nice -n 10 scripts/package.sh && touch "$PREP/arm64-tools" || exit 1; fi
  if [ "$HOST" = 1 ]; then LG_PACKAGE_TOOLS_ONLY=1 nice -n 10 scripts/package.sh && touch "$PREP/package-tools" || exit 1; fi
  if [ "${FUZZ_SECONDS:-10}" != 0 ]; then FUZZ_BUILD_ONLY=1 nice -n 10 scripts/fuzz.sh && touch "$PREP/fuzz" || exit 1; fi
) </dev/null >"$PREP/tools.log" 2>&1 &
TOOLS_PID=$!
set +m
# (Each part `|| true`: under set -e a failing command in an EXIT trap would become the run's status.)
trap 'rc=$?; kill -TERM -- "-$PREP_PID" "-$TOOLS_PID" 2>/dev/null || true; wait "$PREP_PID" "$TOOLS_PID" 2>/dev/null || true; if [ "$rc" != 0 ] && [ "$SUMMARY_PRINTED" = 0 ]; then test_failed "$rc" || true; fi; rm -f "$LOG" || true; rm -rf "$PREP" || true' EXIT
# ready NAME CHAIN: waits until the background CHAIN (prep or tools) has made NAME; fails the run with
# the chain's log if it ended without making NAME.
ready() {
  local t0=$SECONDS chain=${2:-prep}
  while [ ! -e "$PREP/$1" ]; do
    if [ -e "$PREP/$chain.exit" ] && [ ! -e "$PREP/$1" ]; then
      echo "test: preparing $1 failed:" >&2; cat "$PREP/$chain.log" >&2; exit 1
    fi
    sleep 2
  done
  [ $((SECONDS - t0)) -lt 2 ] || say "waited $((SECONDS - t0)) s for the $1 preparation"
}
# The repository tests itself: nothing may cite or read material a reader of it does not have (the
# project's private design notes or the ../shared folder beside its checkout).
stage "no citations of files outside the repository" "git grep -niE 'seeds? ?0[0-9]{2}|seed_0[0-9]{2}|spank-facts|\.\./shared' -- . ':!scripts/test.sh'"
if git grep -niE 'seeds? ?0[0-9]{2}|seed_0[0-9]{2}|spank-facts|\.\./shared' -- . ':!scripts/test.sh'; then
  echo "test: the lines above cite files outside the repository: cite docs/ or public documentation" >&2; exit 1
fi
stage "cargo fmt --check" "cargo fmt --all -- --check"
cargo fmt --all -- --check
stage "cargo clippy -D warnings" "cargo clippy --release --workspace --all-targets -- -D warnings"
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
stage "no module imports a module that imports it back (scripts/module-cycles.py)" "python3 scripts/module-cycles.py"
python3 scripts/module-cycles.py
stage "the closing count's own test (scripts/lib/testlog.py self-test)" "python3 scripts/lib/testlog.py self-test"
python3 scripts/lib/testlog.py self-test >&2
stage "the catalogue's extraction on small inputs (scripts/catalog.py self-test)" "python3 scripts/catalog.py self-test"
python3 scripts/catalog.py self-test >&2
# The Prometheus alerting rules the package ships: promtool check rules and test rules
# (scripts/test-alerts.sh; promtool from Debian's prometheus package, fetched if missing).
stage "alerting rules (scripts/test-alerts.sh)" "scripts/test-alerts.sh"
scripts/test-alerts.sh 2>&1 | tee -a "$LOG"
stage "cargo build --release" "cargo build --release --workspace"
cargo build --release --workspace --quiet
for c in $RELEASES; do
  [ "$c" = host ] || { stage "the $c cluster" "LG_CLUSTER=$c scripts/cluster.sh up && LG_CLUSTER=$c scripts/cluster.sh build-plugin"; ready "$c"; LG_CLUSTER=$c scripts/cluster.sh up; LG_CLUSTER=$c scripts/cluster.sh build-plugin; }
done
for c in $RELEASES; do
  [ "$c" = host ] && continue
  stage "launch tests on the $c cluster ($(chroot /srv/lg-$c srun --version))" \
    "LG_SLURM_TESTS=1 LG_CLUSTER=$c cargo test --release -p launchguard-tests" "LG_SLURM_TESTS=1 LG_CLUSTER=$c"
  LG_CLUSTER=$c cargo test --release -p launchguard-tests 2>&1 | tee -a "$LOG"
done
# Real Pyxis and enroot (tests/tests/real_pyxis.rs, both plugstack orders, ~1 min) run on the host
# cluster when scripts/pyxis.sh has installed them here (their sources cannot be fetched in CI);
# otherwise that test prints one "skipped: real Pyxis runs only on the host cluster …" line.
if [ -z "${LG_PYXIS:-}" ]; then
  LG_PYXIS=0
  if [ -e /usr/local/lib/slurm/spank_pyxis.so ] && [ -x /usr/local/bin/enroot ] &&
     [ -e /var/lib/launchguard-test/busybox.sqsh ] && [ -e /var/lib/launchguard-test/busybox-nccl.sqsh ]; then
    LG_PYXIS=1
  fi
fi
stage "cargo test --release --workspace (host cluster: $(srun --version); real Pyxis: LG_PYXIS=$LG_PYXIS)" \
  "LG_SLURM_TESTS=1 LG_PYXIS=$LG_PYXIS cargo test --release --workspace" "LG_SLURM_TESTS=1 LG_PYXIS=$LG_PYXIS"
LG_PYXIS=$LG_PYXIS cargo test --release --workspace 2>&1 | tee -a "$LOG"
# Packages (scripts/test-package.sh): build the .deb and .rpm, install the .deb, srun against the
# installed plugin, refuse removal while plugstack loads it, purge; host cluster only.
stage "packages (scripts/test-package.sh)" "scripts/test-package.sh"
case " $RELEASES " in *" host "*) ready package-tools tools; scripts/test-package.sh 2>&1 | tee -a "$LOG" ;; esac
# arm64 (Grace nodes; issue 18): a one-node Slurm 22.05 for aarch64 in /srv/lg-arm64 run by qemu-user
# (scripts/cluster.sh, LG_CLUSTER=arm64; the debootstrap is cached there). The arm64 .deb is built
# (cross-compiled), installed in the chroot with dpkg, `launchguard check` runs there, and the launch
# tests run against the plugin the package installed. Under emulation every srun takes ~4 s, so the
# tests that only exercise srun's release rules (identical Slurm 22.05 and identical code on the host
# cluster above) are skipped here: the subset still loads every plugin callback and every syscall path
# (access(2), open flags, send flags, enroot's repair, devices, the NCCL environment). ~5 minutes.
if [ "$ARM64" != 0 ]; then ready arm64; ready arm64-tools tools; stage "arm64 (scripts/test-arm64.sh)" "scripts/test-arm64.sh"; scripts/test-arm64.sh 2>&1 | tee -a "$LOG"; fi
# The node as shipped (scripts/test-node.sh, about 2 minutes with the rootfs cached in /srv/lg-node): the
# .deb in a Debian 12 systemd-nspawn container with systemd as PID 1 and its own munge/slurmctld/slurmd
# (ports 8817/8818): docs/install.md's install/upgrade/purge lines, notify, reload, watchdog, journald fields,
# the unit's sandbox, tmpfiles.d after a reboot, HealthCheckProgram drain/resume.
[ "$HOST" = 0 ] || { stage "the node as shipped (scripts/test-node.sh)" "LG_NODE_DEB=target/packages/launchguard_…_amd64.deb scripts/test-node.sh"; ready node; }
case " $RELEASES " in
  *" host "*) LG_NODE_DEB=$(ls target/packages/launchguard_*-1+slurm"$(srun --version | awk '{ split($2, v, "."); print v[1] "." v[2] }')"_amd64.deb) \
    scripts/test-node.sh 2>&1 | tee -a "$LOG" ;;
esac
# The cgroup v2 node (scripts/test-vm.sh; rootfs cached in /srv/lg-vm): the 24.11 .deb installed as
# docs/install.md says on a real VM with its own kernel (QEMU, software emulation), systemd as PID 1,
# CgroupPlugin=cgroup/v2: devices behind the eBPF filter, CPUs bound to -c, HealthCheckProgram,
# /run/enroot after a real reboot, `launchguard check` on a real kernel.
if [ "$VM" != 0 ]; then
  stage "the cgroup v2 node (scripts/test-vm.sh)" "scripts/test-vm.sh"
  ready vm; ready package-tools tools
  scripts/test-vm.sh 2>&1 | tee -a "$LOG"
fi
# Opt-in, each several minutes of emulated boot and install on top (docs/development.md has the
# figures): the sweep across two VMs on one virtual link (healthy, then a munge key mismatch on one),
# and the cgroup v2 node's checks on Slurm 26.05 (Debian sid's VM; its rootfs is built here, not in
# the background).
if [ "$VM" != 0 ] && [ "${LG_VM2:-0}" = 1 ]; then
  stage "the sweep across two VMs (scripts/test-vm2.sh)" "scripts/test-vm2.sh"
  ready vm; ready package-tools tools
  scripts/test-vm2.sh 2>&1 | tee -a "$LOG"
fi
if [ "${LG_VM_SID:-0}" = 1 ] && case " $RELEASES " in *" sid "*) true ;; *) false ;; esac; then
  stage "the cgroup v2 node on Slurm 26.05 (LG_VM_RELEASE=sid scripts/test-vm.sh)" "LG_VM_RELEASE=sid scripts/test-vm.sh"
  ready sid; ready package-tools tools
  LG_VM_RELEASE=sid scripts/test-vm.sh 2>&1 | tee -a "$LOG"
fi
# The fuzzers (built in the background above), two targets at a time.
if [ "${FUZZ_SECONDS:-10}" != 0 ]; then
  stage "fuzz" "FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh"
  ready fuzz tools
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
fi
# Leave the machine as scripts/demo.sh does: launchguard listed in warn mode on every cluster, the
# built `launchguard` on PATH (/usr/local/bin; the package test purged /usr/bin/launchguard), and the
# node agent running without systemd.
stage "leaving the demo's state (plugin in warn mode, the agent up)" "scripts/cluster.sh install-plugin mode=warn && scripts/cluster.sh agent-up"
for c in $RELEASES; do LG_CLUSTER=$c scripts/cluster.sh install-plugin mode=warn; done
case " $RELEASES " in *" host "*) scripts/cluster.sh agent-up ;; esac
# The clusters only the tests use are stopped: the three namespace nodes and the emulated arm64 node.
scripts/multinode.sh down >/dev/null 2>&1 || true
[ "$ARM64" = 0 ] || LG_CLUSTER=arm64 scripts/cluster.sh down >/dev/null 2>&1 || true
say "done"
# One closing line over every cargo test run above (both clusters, every crate); a test ignored here
# (a cluster test compiled out, or an #[ignore]) fails the run: every test must have run. The one
# accepted skip, the real-Pyxis test where Pyxis is not installed, is named in that line.
SUMMARY_PRINTED=1
python3 scripts/lib/testlog.py summary "$LOG"
