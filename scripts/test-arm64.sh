#!/usr/bin/env bash
# The arm64 (aarch64, Grace) stage of scripts/test.sh, as root:
#   1. LG_CLUSTER=arm64 scripts/cluster.sh up: Debian 12's Slurm 22.05 for arm64 in /srv/lg-arm64,
#      under qemu-user (binfmt_misc), ports 8917/8918; debootstrapped once (~5-12 min), reused after;
#   2. LG_ARCH=arm64 scripts/package.sh: the arm64 .deb and .rpm (cross-built);
#   3. the .deb installed in the chroot with dpkg (Depends on its slurm-wlm-basic-plugins checked);
#   4. `launchguard check` of the installed aarch64 binary in the chroot (must print its table; the
#      node's faults on this VM are expected, a crash or no output is not);
#   5. the launch integration tests against the plugin the package installed (LG_PLUGIN_SO), minus
#      the srun release-rule tests listed in SKIP (see scripts/test.sh);
#   6. the package purged again, launchguard left listed in warn mode (from the build tree).
set -euo pipefail
cd "$(dirname "$0")/.."
R=/srv/lg-arm64
SO=/usr/lib/aarch64-linux-gnu/slurm-wlm/spank_launchguard.so
# Tests whose subject is srun's per-release CPU rules, already run on the same Slurm 22.05 on the
# host cluster; each takes 20-70 s under emulation.
SKIP=(valid_launches_are_never_rejected_in_enforce_mode following_the_trap_advice_silences_it
  srun_cpus_per_task_variable_follows_the_release sbatch_c2_then_plain_srun_follows_the_release
  steps_inside_salloc_keep_their_exemptions_and_the_trap_is_still_caught)
t0=$(date +%s)
say() { printf 'test-arm64: %s (%ds)\n' "$*" $(($(date +%s) - t0)) >&2; }

LG_CLUSTER=arm64 scripts/cluster.sh up
say "cluster up: $(chroot $R srun --version) on $(chroot $R uname -m)"
LG_ARCH=arm64 SLURM_INCLUDE_DIR=$R/usr/include CARGO_TARGET_DIR=$PWD/target scripts/package.sh
DEB=$(ls target/packages/launchguard_*+slurm22.05_arm64.deb)
RPM=$(ls target/packages/launchguard-*.slurm22.05.aarch64.rpm)
say "built $(du -h "$DEB" | cut -f1) $DEB and $(du -h "$RPM" | cut -f1) $RPM"
dpkg-deb -f "$DEB" Architecture | grep -qx arm64
dpkg-deb -c "$DEB" | grep -q "\./usr/lib/aarch64-linux-gnu/slurm-wlm/spank_launchguard.so"
# Both names of the plugstack snippet (the old one for links made before the rename).
dpkg-deb -c "$DEB" | grep "\./usr/share/launchguard/plugstack.conf.d/50-launchguard.conf" >/dev/null  # not -q: dpkg-deb must read to the end (pipefail)
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf |
  grep -qx "required $SO mode=warn"
cp "$DEB" "$R/tmp/launchguard_arm64.deb"
# The chroot has no systemd running: postinst's systemctl calls are skipped there (no /run/systemd/system).
chroot $R dpkg -i /tmp/launchguard_arm64.deb >&2
file -L "$R$SO" "$R/usr/bin/launchguard" | grep -c "ARM aarch64" | grep -qx 2
say "installed $(chroot $R dpkg-query -W -f '${Package} ${Version} ${Architecture}' launchguard)"
rc=0
chroot $R launchguard check >&2 || rc=$?
[ "$rc" -le 3 ] || { echo "test-arm64: launchguard check under arm64 failed (exit $rc)" >&2; exit 1; }
json=$(chroot $R launchguard check --json 2>/dev/null || true)
for id in node.munge.roundtrip node.slurm_conf.parse node.imex.service node.imex.channel node.gpu.nvml node.gpu.gres; do
  printf '%s' "$json" | grep -q "\"id\":\"$id\"" || { echo "test-arm64: launchguard check --json lacks $id" >&2; exit 1; }
done
say "launchguard check ran (exit $rc)"
skip=(); for s in "${SKIP[@]}"; do skip+=(--skip "$s"); done
LG_CLUSTER=arm64 LG_PLUGIN_SO=$R$SO LG_SLURM_TESTS=1 cargo test --release -p launchguard-tests -- "${skip[@]}"
say "launch tests done"
chroot $R launchguard --version >/dev/null
rm -f "$R/etc/slurm/plugstack.conf.d/zz-launchguard.conf"
chroot $R dpkg --purge launchguard >&2
[ ! -e "$R$SO" ]
LG_CLUSTER=arm64 LG_PLUGIN_SO=target/aarch64-unknown-linux-gnu/release/libspank_launchguard.so \
  scripts/cluster.sh install-plugin mode=warn
say "package purged; cluster left in warn mode"
