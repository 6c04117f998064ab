//! Says in `cargo test`'s own output whether this crate's cluster tests ran: without `LG_SLURM_TESTS=1`
//! they are compiled out (`tests/slurm_tests_cfg.rs`) and this test is listed as ignored, with why.
#[test]
#[cfg_attr(
    not(slurm_tests),
    ignore = "Slurm cluster tests skipped: they need root and a running cluster; scripts/test.sh brings one up and sets LG_SLURM_TESTS=1"
)]
fn slurm_cluster_tests() {
    let ping = std::process::Command::new("scontrol").arg("ping").output();
    assert!(
        ping.as_ref().is_ok_and(|o| o.status.success()),
        "LG_SLURM_TESTS=1 but the host cluster does not answer: {ping:?}"
    );
}
