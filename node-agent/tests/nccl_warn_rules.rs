//! Issue 31: every NCCL WARN rule's examples (whole lines as NCCL and aws-ofi-nccl print them) give
//! the rule's finding in BOTH `launchguard explain` and `launchguard nccl check`, its
//! counter-examples do not; the healthy real runs stay clean; and lines pasted without NCCL's
//! `NCCL INFO` token still read as an NCCL log in both commands.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use launchguard_nccl::warn_rules::RULES;

/// The NCCL finding IDs `explain --json -` gives for `text`.
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

/// (verdict, finding IDs) of `nccl check --json FILE`.
fn check_ids(path: &Path) -> (String, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["nccl", "check", "--json", path.to_str().unwrap()])
        .output()
        .expect("launchguard runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = &v["files"][0];
    (
        f["verdict"].as_str().unwrap().to_string(),
        f["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect(),
    )
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lg-warn-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_rule_example_gives_its_id_in_both_commands_and_no_counter_example_does() {
    let mut wrong = vec![];
    for (i, r) in RULES.iter().enumerate() {
        for (j, line) in r.examples.iter().chain(r.counter.iter()).enumerate() {
            let is_example = j < r.examples.len();
            let text = format!("{line}\n");
            let e = explain_ids(&text);
            let (_, n) = check_ids(&temp_file(&format!("r{i}_{j}.log"), &text));
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
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The real healthy runs on H200s (`nccl/tests/fixtures/`): GO in `nccl check`, OK in `explain`,
/// and no finding but the notes they always had (a new WARN rule must not fire on a healthy log).
#[test]
fn healthy_runs_stay_go_with_only_their_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../nccl/tests/fixtures");
    let notes = [
        "nccl.env.nvls_disabled",
        "nccl.single_node",
        "nccl.no_results",
    ];
    let healthy = [
        "all_reduce_perf_2gpu_nccl_debug_info.log",
        "all_reduce_perf_2gpu_net_socket.log",
        "all_reduce_perf_2gpu_plain.log",
        "alltoall_perf_2gpu_nccl_debug_info.log",
        "torch_1gpu_h200_ok.log",
        "torch_2proc_rank0.log",
        "torch_2proc_rank1.log",
        "torch_2proc_srun_style_combined.log",
        "synthetic/gb300_18n_mnnvl_all_reduce_16g.log",
        "synthetic/gb300_18n_no_mnnvl_all_reduce_16g.log",
    ];
    for name in healthy {
        let p = root.join(name);
        let (verdict, ids) = check_ids(&p);
        assert_eq!(verdict, "go", "{name}: {ids:?}");
        assert!(
            ids.iter().all(|i| notes.contains(&i.as_str())),
            "{name}: {ids:?}"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
            .args(["explain", "--json", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let e: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(e.iter().all(|i| notes.contains(i)), "{name}: {e:?}");
    }
}

/// Issue 31 item 4: `Initialized NET plugin Socket`, `NET/Socket : Using […]`, `NET/OFI …` pasted
/// alone are NCCL's log (a note, not UNREADABLE and not "nothing known").
#[test]
fn lines_without_the_info_token_read_as_an_nccl_log_in_both_commands() {
    for (i, line) in [
        "Initialized NET plugin Socket",
        "NET/Socket : Using [0]eth0:10.0.0.5<0>",
        "NET/OFI Selected provider is efa, fabric is efa-direct (found 8 nics)",
        "gpu-a:4101:4101 [0] NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.5<0>",
        "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    ]
    .iter()
    .enumerate()
    {
        let text = format!("{line}\n");
        let (verdict, n) = check_ids(&temp_file(&format!("h{i}.log"), &text));
        assert_ne!(verdict, "unreadable", "{line}: {n:?}");
        let e = explain_ids(&text);
        assert!(e.iter().any(|x| x.starts_with("nccl.")), "{line}: {e:?}");
    }
    // Prose that mentions NCCL is not its log.
    let (verdict, _) = check_ids(&temp_file("prose.log", "We use NCCL over Socket here.\n"));
    assert_eq!(verdict, "unreadable");
}

/// A WARN that only relays an earlier failure (`nccl.follow_on`), or NCCL's or aws-ofi-nccl's own
/// consistency check (`nccl.internal_error`, `nccl.ofi.internal_error`), is named alone (not the
/// generic `nccl.warn`), and is left out next to the WARN whose rule names the cause, in both
/// commands.
#[test]
fn relay_warns_are_named_alone_and_left_out_next_to_a_cause() {
    let relay = "gpu-a:4101:4190 [0] proxy.cc:1734 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 1, retcode 3\n";
    let internal =
        "gpu-a:4101:4190 [0] socket.cc:395 NCCL WARN ncclSocketListen: pass NULL socket\n";
    let ofi_internal =
        "gpu-a:4101:4190 [0] NCCL WARN NET/OFI Called irecv on inactive communicator\n";
    let cause = "gpu-a:4101:4190 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n";
    for (i, (text, want, not)) in [
        (relay.to_string(), "nccl.follow_on", "nccl.warn"),
        (internal.to_string(), "nccl.internal_error", "nccl.warn"),
        (
            ofi_internal.to_string(),
            "nccl.ofi.internal_error",
            "nccl.warn",
        ),
        (
            format!("{ofi_internal}{cause}"),
            "nccl.memlock",
            "nccl.ofi.internal_error",
        ),
        (
            format!("{cause}{relay}{internal}"),
            "nccl.memlock",
            "nccl.follow_on",
        ),
        (
            format!("{relay}{internal}{cause}"),
            "nccl.memlock",
            "nccl.internal_error",
        ),
    ]
    .iter()
    .enumerate()
    {
        let e = explain_ids(text);
        let (_, n) = check_ids(&temp_file(&format!("relay{i}.log"), text));
        for ids in [&e, &n] {
            assert!(ids.iter().any(|x| x == want), "{text}: {ids:?}");
            assert!(!ids.iter().any(|x| x == not), "{text}: {ids:?}");
        }
        if i >= 3 {
            for ids in [&e, &n] {
                assert!(
                    !ids.iter().any(|x| x == "nccl.warn"
                        || x == "nccl.follow_on"
                        || x == "nccl.internal_error"
                        || x == "nccl.ofi.internal_error"),
                    "{text}: {ids:?}"
                );
            }
        }
    }
}
