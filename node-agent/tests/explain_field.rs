//! `launchguard explain` on job outputs written after public reports (tests/field/README.md lists
//! each one's source): the real binary, its exit code and the findings it prints; plus standard
//! input, and inputs it must refuse (a FIFO, a device, a directory, a missing file).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn field(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/field/explain")
        .join(name)
}

/// Runs `launchguard explain --json ARGS` and returns (exit code, the JSON report or Null, stderr).
fn explain(args: &[&str], stdin: Option<&[u8]>) -> (i32, serde_json::Value, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_launchguard"));
    c.arg("explain").arg("--json").args(args);
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("launchguard runs");
    if let Some(data) = stdin {
        let mut w = child.stdin.take().unwrap();
        w.write_all(data).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// (finding ID, count), in the report's order: causes by first line, then hints, then relays.
type Want = &'static [(&'static str, u64)];

/// (file, exit code, findings).
const CASES: &[(&str, i32, Want)] = &[
    ("export_hostname.out", 2, &[("launch.export_all", 1)]),
    ("export_date_tasks.out", 2, &[("launch.export_all", 6)]),
    ("export_mpi_app.out", 2, &[("launch.export_all", 2)]),
    ("batch_script_gone.err", 2, &[("job.batch_script", 1)]),
    (
        "pyxis_run_enroot.out",
        2,
        &[
            ("launch.enroot_runtime", 1),
            // Pyxis 0.23's bare import line: a hint, after the enroot line that names the cause.
            ("job.container_import", 1),
            ("job.pyxis_follow_on", 2),
            ("job.spank_failed", 1),
        ],
    ),
    (
        "pyxis_epilog_paths.log",
        2,
        &[
            ("node.enroot.storage", 1),
            ("node.enroot.storage", 1),
            ("launch.enroot_runtime", 1),
            ("node.enroot.storage", 1),
            ("job.pyxis_follow_on", 2),
            ("job.spank_failed", 1),
        ],
    ),
    (
        "enroot_xdg_runtime.txt",
        2,
        &[("node.enroot.runtime_path", 1)],
    ),
    (
        "enroot_userns.out",
        2,
        &[("job.user_namespaces", 1), ("job.pyxis_follow_on", 2)],
    ),
    (
        "enroot_data_fixed_path.out",
        2,
        &[("node.enroot.storage", 1), ("job.pyxis_follow_on", 2)],
    ),
    ("cpus_per_task_env.out", 2, &[("launch.cpus_per_task", 1)]),
    (
        "dataloader_workers.out",
        1,
        &[("job.dataloader_workers", 1)],
    ),
    ("munge_invalid.txt", 2, &[("node.munge.key_digest", 1)]),
    ("munge_expired_ctld.log", 2, &[("job.clock_skew", 1)]),
    ("job_credential_expired.out", 2, &[("job.clock_skew", 2)]),
    (
        "pmix_library.out",
        2,
        &[("node.pmix.loads", 1), ("node.pmix.offered", 1)],
    ),
    ("slurmd_pmix.log", 2, &[("node.pmix.loads", 2)]),
    ("pmix_psec_container.out", 2, &[("job.pmix_psec", 2)]),
    (
        "pmix_gds_container.out",
        2,
        &[("job.pmix_gds_fallback", 2), ("job.pmix_gds", 2)],
    ),
    (
        "enroot_unknown_device.out",
        2,
        &[("launch.devices", 1), ("node.enroot.nvidia_hook", 1)],
    ),
    (
        "nvidia_hook_cgroup.log",
        2,
        &[
            ("node.enroot.nvidia_hook", 1),
            ("node.enroot.nvidia_hook", 1),
            ("job.pyxis_follow_on", 2),
            ("job.spank_failed", 1),
        ],
    ),
    ("pyxis_no_cuda_device.out", 2, &[("launch.devices", 1)]),
    ("oom_steps.out", 2, &[("job.oom_kill", 2)]),
    ("tmpdir_scratch.out", 1, &[("job.tmpdir", 1)]),
    // NCCL lines: the model of `launchguard nccl check` (issue 30), one finding per input.
    (
        "nccl_socket_multinode.out",
        1,
        &[("nccl.socket", 1), ("nccl.no_results", 1)],
    ),
    (
        "nccl_warn_peer_closed.out",
        1,
        &[("nccl.peer_closed", 1), ("nccl.no_results", 1)],
    ),
    ("nccl_info_only.out", 0, &[("nccl.no_results", 1)]),
    (
        "plugstack_dlopen.out",
        2,
        &[("node.plugstack.required_so", 1)],
    ),
    // Issue 31: Pyxis, enroot and munge reports of kinds the rule table did not know.
    ("enroot_whiteout_caps.out", 2, &[("node.enroot.caps", 2)]),
    (
        "enroot_caps_lzo.out",
        2,
        &[("node.enroot.caps", 1), ("job.container_image_path", 1)],
    ),
    (
        "enroot_switchroot_rootfs.out",
        2,
        &[("job.enroot_switchroot", 1)],
    ),
    (
        "enroot_start_no_unsquashfs.out",
        2,
        &[("node.enroot.deps", 1)],
    ),
    (
        "pyxis_entrypoint.out",
        2,
        &[
            ("job.container_entrypoint", 1),
            ("job.pyxis_follow_on", 2),
            ("job.spank_failed", 1),
        ],
    ),
    (
        "pyxis_exec_bash_hint.out",
        2,
        &[
            ("job.container_exec", 1),
            ("job.container_entrypoint", 1),
            ("job.pyxis_follow_on", 2),
            ("job.spank_failed", 1),
        ],
    ),
    (
        "pyxis_seccomp.out",
        2,
        &[("job.enroot_kernel", 1), ("job.spank_failed", 1)],
    ),
    ("enroot_helper_missing.out", 2, &[("node.enroot.deps", 3)]),
    (
        "srun_test_exec_container.out",
        2,
        &[("job.exec_missing", 1)],
    ),
    (
        "munge_keyfile_insecure.log",
        2,
        &[("node.munge.key_mode", 1)],
    ),
    (
        "munge_socket_permission.txt",
        2,
        &[("node.munge.socket_dir_access", 1)],
    ),
    (
        "munge_socket_inaccessible.log",
        2,
        &[("node.munge.socket_dir_access", 1)],
    ),
    ("munge_socket_bound.log", 2, &[("node.munge.daemon", 1)]),
    ("munge_unauthorized_uid.log", 2, &[("job.munge_uid", 1)]),
    (
        "munge_logdir_group.log",
        2,
        &[("node.munge.dirs_secure", 1)],
    ),
    (
        "munge_logdir_owner.log",
        2,
        &[("node.munge.dirs_secure", 1), ("node.munge.dirs_secure", 1)],
    ),
    (
        "munge_etc_group_writable.log",
        2,
        &[("node.munge.dirs_secure", 1)],
    ),
];

#[test]
fn field_reports_get_the_verdict_they_deserve() {
    let dir = field("");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|c| c.0.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "every fixture has a case and every case a fixture"
    );
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field/README.md"),
    )
    .unwrap();
    for (file, code, want) in CASES {
        assert!(
            readme.contains(file),
            "{file} is not listed in tests/field/README.md"
        );
        let p = field(file);
        let (got_code, rep, err) = explain(&[p.to_str().unwrap()], None);
        let got: Vec<(String, u64)> = rep["findings"]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: no JSON ({err})"))
            .iter()
            .map(|f| {
                (
                    f["id"].as_str().unwrap().to_string(),
                    f["count"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, u64)> = want.iter().map(|(i, n)| (i.to_string(), *n)).collect();
        assert_eq!(got, want, "{file}");
        assert_eq!(got_code, *code, "{file}: {rep}");
        assert_eq!(rep["exit_code"], *code, "{file}");
    }
}

#[test]
fn text_output_is_one_finding_per_line_and_says_when_nothing_is_known() {
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["explain", field("pyxis_run_enroot.out").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("launchguard: launch.enroot_runtime: enroot could not create its runtime directory '/run/enroot' (line 5); "), "{text}");
    assert!(
        lines[4].ends_with("CRITICAL — 4 known symptoms (4 critical, 0 warning) in 9 lines"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["explain", field("nccl_info_only.out").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // A healthy NCCL log: OK, with the NCCL model's note that it is no benchmark.
    assert!(
        text.contains("OK — nothing wrong found, 1 note in 6 lines"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(0));
}

/// `launchguard explain -` (text): the summary names standard input as such, not `-:`, and counts
/// "1 line", not "1 lines".
#[test]
fn text_summary_names_standard_input_and_counts_one_line() {
    let run = |stdin: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_launchguard"))
            .args(["explain", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(b"srun: error: n1: task 0: Out Of Memory\n");
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(
            "standard input: CRITICAL — 1 known symptom (1 critical, 0 warning) in 1 line"
        ),
        "{text}"
    );
    assert!(last.ends_with(" in 1 line"), "{text}");
    let text = run(b"all fine\n");
    assert!(
        text.starts_with("standard input: OK — no known symptom in 1 line "),
        "{text}"
    );
}

#[test]
fn standard_input_is_read_to_its_end() {
    let data = std::fs::read(field("oom_steps.out")).unwrap();
    let (code, rep, _) = explain(&["-"], Some(&data));
    assert_eq!(code, 2);
    assert_eq!(rep["findings"][0]["id"], "job.oom_kill");
    assert_eq!(rep["input"], "-");
    // A big stream: a million lines, constant memory, every repeat counted.
    let mut big = Vec::new();
    for i in 0..200_000 {
        writeln!(big, "step {i}: loss 0.{i}").unwrap();
        big.extend_from_slice(b"srun: error: n1: task 0: Out Of Memory\n");
    }
    let (code, rep, _) = explain(&["-"], Some(&big));
    assert_eq!(code, 2);
    assert_eq!(rep["findings"][0]["count"], 200_000);
    assert_eq!(rep["lines"], 400_000);
}

#[test]
fn inputs_that_never_end_or_do_not_exist_are_refused_with_exit_3() {
    let dir = std::env::temp_dir().join(format!("lg-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for p in [
        fifo.to_str().unwrap(),
        "/dev/zero",
        "/dev/urandom",
        dir.to_str().unwrap(),
        "/nonexistent/slurm-1.out",
    ] {
        let t = std::time::Instant::now();
        let (code, rep, err) = explain(&[p], None);
        assert_eq!(code, 3, "{p}: {err}");
        assert_eq!(rep, serde_json::Value::Null, "{p}");
        assert!(
            err.starts_with(&format!("launchguard: explain: {p}: ")),
            "{err}"
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{p}");
    }
    let (_, _, err) = explain(&[fifo.to_str().unwrap()], None);
    assert!(err.contains("launchguard explain -"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_rule_list_names_every_rule() {
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["explain", "--list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules = v.as_array().unwrap();
    assert!(rules.len() >= 30);
    assert!(rules
        .iter()
        .all(|r| r["doc"].as_str().unwrap().starts_with("https://")));
}
