//! Build script shared by the crates whose integration tests need a running Slurm cluster and root
//! (`launchguard-tests`, `launchguard`, `launchguard-sweep`): it sets `cfg(slurm_tests)` only when
//! `LG_SLURM_TESTS=1`, so `cargo test` passes on any machine (those test files compile to nothing
//! and each crate's `slurm_cluster_tests` gate reports them as ignored), while `scripts/test.sh`,
//! which exports `LG_SLURM_TESTS=1` and brings the clusters up, runs them all and fails on any skip.
//!
//! For `launchguard-tests` only, it also sets `cfg(lg_pyxis)` when `LG_PYXIS=1`: without it the
//! real-Pyxis test (`tests/tests/real_pyxis.rs`) is listed as ignored with its reason, the one skip
//! `scripts/test.sh` accepts (Pyxis cannot be fetched in CI). Only that crate reads `LG_PYXIS`, so
//! changing it never rebuilds the agent or the sweep.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(slurm_tests)");
    println!("cargo::rustc-check-cfg=cfg(lg_pyxis)");
    println!("cargo::rerun-if-env-changed=LG_SLURM_TESTS");
    if std::env::var("LG_SLURM_TESTS").as_deref() == Ok("1") {
        println!("cargo::rustc-cfg=slurm_tests");
    }
    if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("launchguard-tests") {
        println!("cargo::rerun-if-env-changed=LG_PYXIS");
        if std::env::var("LG_PYXIS").as_deref() == Ok("1") {
            println!("cargo::rustc-cfg=lg_pyxis");
        }
    }
}
