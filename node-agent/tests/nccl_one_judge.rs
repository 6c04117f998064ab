//! Issue 30: `launchguard explain` and `launchguard nccl check` judge NCCL lines with one model, so
//! both print the same NCCL finding IDs and severities (NO-GO is explain's critical) for every NCCL
//! input in the repository: the real H200 runs (`nccl/tests/fixtures/`), the hand-written field
//! inputs (`nccl/tests/fixtures/field/`, `tests/field/explain/nccl_*`). And the verdicts a user
//! expects on the real PyTorch runs: healthy is OK/GO with notes only, the two jobs that died are
//! CRITICAL/NO-GO naming the variable that killed them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(args)
        .output()
        .expect("launchguard runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// (id, severity) pairs of NCCL findings, sorted.
type Ids = Vec<(String, String)>;

/// (id, severity) of the NCCL findings, sorted; severities as explain names them.
fn nccl_ids(findings: &serde_json::Value) -> Ids {
    let mut v: Vec<(String, String)> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"].as_str().unwrap().starts_with("nccl."))
        .map(|f| {
            let sev = match f["severity"].as_str().unwrap() {
                "no-go" => "critical",
                s => s,
            };
            (f["id"].as_str().unwrap().to_string(), sev.to_string())
        })
        .collect();
    v.sort();
    v
}

fn both(path: &Path) -> (i32, Ids, i32, Ids) {
    let p = path.to_str().unwrap();
    let (nc, n) = run(&["nccl", "check", "--json", p]);
    let (ec, e) = run(&["explain", "--json", p]);
    let nf = &n["files"][0]["findings"];
    (nc, nccl_ids(nf), ec, nccl_ids(&e["findings"]))
}

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut v = vec![];
    for (dir, keep) in [
        ("nccl/tests/fixtures", ".log"),
        ("nccl/tests/fixtures/field", ".log"),
        ("tests/field/explain", ".out"),
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(keep) && (dir != "tests/field/explain" || name.starts_with("nccl")) {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

#[test]
fn explain_and_nccl_check_agree_on_every_nccl_input() {
    let files = inputs();
    assert!(files.len() >= 20, "{files:?}");
    let mut disagree = vec![];
    for f in &files {
        let (nc, n, ec, e) = both(f);
        // The exit codes agree too: GO/OK 0, WARN/WARNING 1, NO-GO/CRITICAL 2.
        if n != e || (nc != ec && nc != 3) {
            disagree.push(format!(
                "{}: nccl check {nc} {n:?} / explain {ec} {e:?}",
                f.display()
            ));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
}

#[test]
fn the_real_h200_pytorch_runs_get_the_verdicts_a_user_expects() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../nccl/tests/fixtures");
    for healthy in [
        "torch_1gpu_h200_ok.log",
        "torch_2proc_rank0.log",
        "torch_2proc_rank1.log",
    ] {
        let (nc, n, ec, e) = both(&dir.join(healthy));
        assert_eq!((nc, ec), (0, 0), "{healthy}: {n:?}");
        assert!(e.iter().all(|(_, s)| s == "info"), "{healthy}: {e:?}");
    }
    let (nc, n, ec, _) = both(&dir.join("torch_1gpu_h200_socket_ifname_nomatch.log"));
    assert_eq!((nc, ec), (2, 2));
    assert!(
        n.contains(&("nccl.socket_ifname_nomatch".into(), "critical".into())),
        "{n:?}"
    );
    let (nc, n, ec, _) = both(&dir.join("torch_1gpu_h200_net_ib_forced.log"));
    assert_eq!((nc, ec), (2, 2));
    assert!(
        n.contains(&("nccl.net_init_failed".into(), "critical".into())),
        "{n:?}"
    );
    // explain's text says what happened: a forced NCCL_NET fails init, it does not fall back.
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args([
            "explain",
            dir.join("torch_1gpu_h200_net_ib_forced.log")
                .to_str()
                .unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fails NCCL init instead of falling back"),
        "{text}"
    );
    assert!(
        !text.contains("falls back to TCP sockets between nodes"),
        "{text}"
    );
}
