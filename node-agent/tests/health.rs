//! `launchguard health` against the real slurmctld: drains on a CRITICAL finding with a
//! `launchguard:` reason, resumes only what it drained, never touches someone else's drain, never
//! drains on UNKNOWN, and `--dry-run` changes nothing.
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

mod common;
use common::*;

const OTHERS: &str = "disabled = [\"node.hostname\", \"node.slurm_conf\", \"node.pmix\", \"node.enroot\", \"node.plugstack\", \"node.nccl_env\", \"node.devices\"]\n";

#[test]
fn health_drains_on_critical_resumes_its_own_and_leaves_foreign_drains_alone() {
    let _g = launchguard_tests::lock();
    let _r = ResumeOnDrop;
    if state().0.contains("DRAIN") {
        resume();
    }
    let d = scratch("health");
    let bad = config(
        &d,
        &format!(
            "{OTHERS}[munge]\nkey = \"{}\"\n",
            d.join("missing.key").display()
        ),
    );
    let good_dir = scratch("health-good");
    let good = config(&good_dir, OTHERS);

    let o = lg(&["health", "--dry-run", "--config", &bad]);
    assert!(
        o.stdout
            .contains("would drain: Reason=launchguard: node.munge.key_present:"),
        "{o:?}"
    );
    assert_eq!(o.code, 2);
    assert!(
        !state().0.contains("DRAIN"),
        "dry-run drained: {:?}",
        state()
    );

    let o = lg(&["health", "--config", &bad]);
    assert_eq!(o.code, 2, "{o:?}");
    let (st, reason) = state();
    assert!(st.contains("DRAIN"), "{st}");
    assert!(
        reason.starts_with("launchguard: node.munge.key_present:"),
        "{reason}"
    );

    let o = lg(&["health", "--config", &bad]);
    assert!(o.stdout.contains("nothing to change"), "{o:?}");

    // The check that drained it cannot judge now (ENOTDIR: UNKNOWN): the drain stays.
    let unknown = config(
        &scratch("health-unknown"),
        &format!("{OTHERS}[munge]\nkey = \"/etc/hosts/munge.key\"\n"),
    );
    let o = lg(&["health", "--config", &unknown]);
    assert_eq!(o.code, 3, "{o:?}");
    assert!(
        state().0.contains("DRAIN"),
        "resumed on UNKNOWN: {:?} {o:?}",
        state()
    );

    let o = lg(&["health", "--config", &good]);
    assert!(o.stdout.contains("resume"), "{o:?}");
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!state().0.contains("DRAIN"), "{:?}", state());

    // Someone else's drain: never overwritten, never resumed.
    cmd(&[
        "scontrol",
        "update",
        &format!("NodeName={}", node()),
        "State=DRAIN",
        "Reason=bad DIMM in slot 3",
    ]);
    let o = lg(&["health", "--config", &bad]);
    assert!(
        o.stdout.contains("already drained by someone else"),
        "{o:?}"
    );
    assert!(state().1.starts_with("bad DIMM in slot 3"), "{:?}", state());
    let o = lg(&["health", "--config", &good]);
    assert!(o.stdout.contains("nothing to change"), "{o:?}");
    assert!(
        state().0.contains("DRAIN") && state().1.starts_with("bad DIMM"),
        "{:?}",
        state()
    );
    resume();

    // UNKNOWN (a hung check: a munged that never answers) never drains.
    let hd = scratch("health-hung");
    let sock = hd.join("munge.socket.2");
    let _wedged =
        std::os::unix::net::UnixListener::bind(&sock).expect("bind a socket nobody answers");
    let hung = config(
        &hd,
        &format!(
            "disabled = [\"node.hostname\", \"node.slurm_conf\", \"node.pmix\", \"node.enroot\", \"node.plugstack\", \"node.devices\", \"node.nccl_env\", \"node.imex\", \"node.gpu\"]\ncheck_timeout_secs = 1\n[munge]\nsocket = \"{}\"\n",
            sock.display()
        ),
    );
    let o = lg(&["health", "--config", &hung]);
    assert_eq!(o.code, 3, "{o:?}");
    assert!(!state().0.contains("DRAIN"), "{:?}", state());
}
