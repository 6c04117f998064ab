//! Issue 31: every rule of aws-ofi-nccl's own table (`nccl/src/ofi_rules.rs`) gives its finding for
//! its example lines (whole lines as NCCL prints the plugin's WARNs) in BOTH `launchguard explain`
//! and `launchguard nccl check`, and not for its counter-examples.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use launchguard_nccl::ofi_rules::{FOLLOW_ON, RULES};

/// The finding IDs `explain --json -` gives for `text`.
fn explain_ids(text: &str) -> Vec<String> {
    let mut c = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["explain", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("launchguard runs");
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// The finding IDs of `nccl check --json FILE`.
fn check_ids(path: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["nccl", "check", "--json", path.to_str().unwrap()])
        .output()
        .expect("launchguard runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_ofi_rule_example_gives_its_id_in_both_commands_and_no_counter_example_does() {
    let dir = std::env::temp_dir().join(format!("lg-ofi-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut wrong = vec![];
    for (i, r) in RULES.iter().enumerate() {
        for (j, line) in r.examples.iter().chain(r.counter.iter()).enumerate() {
            let is_example = j < r.examples.len();
            let text = format!("{line}\n");
            let p = dir.join(format!("r{i}_{j}.log"));
            std::fs::write(&p, &text).unwrap();
            let (e, n) = (explain_ids(&text), check_ids(&p));
            let (in_e, in_n) = (e.iter().any(|x| x == r.id), n.iter().any(|x| x == r.id));
            if in_e != is_example || in_n != is_example {
                wrong.push(format!(
                    "{} ({}): {line}\n  explain {e:?}\n  nccl check {n:?}",
                    r.id,
                    if is_example { "example" } else { "counter" }
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The plugin's relays (`ofi_rules::FOLLOW_ON`) read as `nccl.follow_on` in both commands, and
/// their counter-examples (the WARN a relay follows, a rule's own line) do not.
#[test]
fn every_ofi_relay_example_is_a_follow_on_in_both_commands_and_no_counter_example_is() {
    let dir = std::env::temp_dir().join(format!("lg-ofi-relays-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut wrong = vec![];
    let lines = FOLLOW_ON.examples.iter().map(|l| (l, true));
    for (j, (line, is_example)) in lines
        .chain(FOLLOW_ON.counter.iter().map(|l| (l, false)))
        .enumerate()
    {
        let text = format!("{line}\n");
        let p = dir.join(format!("relay_{j}.log"));
        std::fs::write(&p, &text).unwrap();
        let (e, n) = (explain_ids(&text), check_ids(&p));
        let id = "nccl.follow_on";
        let (in_e, in_n) = (e.iter().any(|x| x == id), n.iter().any(|x| x == id));
        if in_e != is_example || in_n != is_example {
            wrong.push(format!(
                "{line} ({})\n  explain {e:?}\n  nccl check {n:?}",
                if is_example { "example" } else { "counter" }
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
