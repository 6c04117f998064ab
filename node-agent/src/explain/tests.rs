use super::*;

fn rules() -> &'static Rules {
    Rules::builtin().expect("the built-in table parses")
}

/// The finding IDs of a report, in its order.
fn id_list(rep: &Report) -> Vec<&str> {
    rep.findings.iter().map(|f| f.id.as_str()).collect()
}

fn ids(rep: &Report) -> Vec<(&str, Severity, u64)> {
    rep.findings
        .iter()
        .map(|f| (f.id.as_str(), f.severity, f.count))
        .collect()
}

/// The rules that ignore case (`(?i-u:...)` around ASCII text: the regex crate is built without
/// Unicode's case tables) match every example in upper and in lower case too.
#[test]
fn case_blind_rules_match_their_examples_in_any_case() {
    let r = rules();
    let blind: Vec<_> = r
        .rules
        .iter()
        .zip(&r.res)
        .filter(|(rule, _)| rule.regex.contains("(?i-u"))
        .collect();
    assert!(blind.len() >= 10, "{} case-blind rules", blind.len());
    // Besides the examples, one line for every alternative of every case-blind rule (the examples
    // do not reach them all), in this crate's own words.
    let more: &[(&str, &str)] = &[
        ("node.munge.key_digest", "unmunge: Invalid credential (the other munge key)"),
        ("node.munge.key_digest", "Invalid Credential seen by MUNGE on decode"),
        ("node.munge.daemon", "munge: failed to connect to /run/munge/munge.socket.2"),
        ("node.munge.daemon", "munge: socket error on /run/munge/munge.socket.2"),
        ("node.munge.daemon", "/run/munge/munge.socket.2: Connection refused"),
        ("node.munge.daemon", "/run/munge/munge.socket.2: no such file or directory"),
        ("launch.devices", "cuInit returned CUDA_ERROR_NO_DEVICE"),
        ("launch.devices", "cudaGetDeviceCount: cudaErrorNoDevice"),
        ("job.shm", "Bus error (core dumped): insufficient shared memory for the loader"),
        ("job.shm", "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."),
        ("launch.gpu_options", "invalid device ordinal"),
        ("job.clock_skew", "munged: Error: Expired credential from node3"),
    ];
    // (An ID can have several rules: the case-blind one is meant.)
    let id_of = |id: &str| {
        r.rules
            .iter()
            .position(|x| x.id == id && x.regex.contains("(?i-u"))
            .unwrap_or_else(|| panic!("no case-blind rule {id}"))
    };
    for (id, line) in more {
        let i = id_of(id);
        for v in [
            line.to_string(),
            line.to_ascii_uppercase(),
            line.to_ascii_lowercase(),
        ] {
            assert!(r.res[i].is_match(&v), "{id} does not match {v:?}");
        }
    }
    for (rule, re) in blind {
        for ex in &rule.examples {
            for v in [ex.to_ascii_uppercase(), ex.to_ascii_lowercase()] {
                assert!(re.is_match(&v), "{} does not match {v:?}", rule.id);
            }
        }
    }
}

#[test]
fn every_example_is_explained_by_its_own_rule_and_no_counter_is() {
    let r = rules();
    assert!(r.rules.len() >= 30, "{} rules", r.rules.len());
    for (i, rule) in r.rules.iter().enumerate() {
        for ex in &rule.examples {
            let got = r.explain_line(ex);
            assert_eq!(
                got.as_ref().map(|g| g.0),
                Some(i),
                "example {ex:?} of rule {} ({}) is explained by {:?}",
                i + 1,
                rule.id,
                got.map(|g| r.rules[g.0].id.clone())
            );
            let (_, what) = r.explain_line(ex).unwrap();
            assert!(!what.contains(['{', '}']), "{what}");
            assert!(!what.ends_with(": "), "{what}");
        }
        for c in &rule.counter {
            assert_ne!(
                r.explain_line(c).map(|g| g.0),
                Some(i),
                "counter {c:?} of rule {} ({})",
                i + 1,
                rule.id
            );
        }
    }
}

#[test]
fn findings_are_one_line_with_id_what_why_fix() {
    let r = rules();
    for rule in &r.rules {
        let rep = explain_bytes(r, rule.examples[0].as_bytes());
        assert_eq!(rep.findings.len(), 1, "{}", rule.id);
        let line = rep.findings[0].line();
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with(&format!("launchguard: {}: ", rule.id)),
            "{line}"
        );
        assert_eq!(line.matches("; ").count(), 2, "{line}");
        assert!(line.contains("(line 1)"), "{line}");
    }
}

#[test]
fn the_issue_lines_are_all_explained() {
    let out = "\
slurmstepd: error: execve(): python: No such file or directory
slurmstepd: error: pyxis: mkdir: cannot create directory '/run/enroot': Permission denied
srun: fatal: cpus_per_task set by two different environment variables SLURM_CPUS_PER_TASK=4 != SLURM_TRES_PER_TASK=cpu:1
error: Munge decode failed: Invalid credential
UserWarning: This DataLoader will create 6 worker processes in total. Our suggested max number of worker in current system is 1, which is smaller than what this DataLoader is going to create.
srun: error:  mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:197: pmi/pmix: can not load PMIx library
";
    let rep = explain_bytes(rules(), out.as_bytes());
    let got = id_list(&rep);
    assert_eq!(
        got,
        [
            "job.exec_missing",
            "launch.enroot_runtime",
            "launch.cpus_per_task",
            "node.munge.key_digest",
            "launch.cpus_per_task",
            "node.pmix.loads"
        ]
    );
    assert_eq!(rep.exit_code, 2);
    assert_eq!(rep.status, "critical");
    assert_eq!(
        rep.findings[0].what,
        "slurmstepd could not find 'python' on the node: most likely the node has only python3"
    );
    assert_eq!(rep.findings[4].severity, Severity::Warning);
}

#[test]
fn repeated_symptoms_are_counted_once_and_different_programs_kept_apart() {
    let mut out = String::new();
    for t in 0..64 {
        out.push_str(&format!(
            "{t}: slurmstepd: error: execve(): python3: No such file or directory\n"
        ));
        out.push_str("some unrelated line\n");
    }
    out.push_str("slurmstepd: error: execve(): torchrun: No such file or directory\n");
    let rep = explain_bytes(rules(), out.as_bytes());
    assert_eq!(
        ids(&rep),
        [
            ("launch.export_all", Severity::Critical, 64),
            ("launch.export_all", Severity::Critical, 1)
        ]
    );
    assert_eq!(rep.findings[0].first_line, 1);
    assert_eq!(rep.findings[1].first_line, 129);
    assert!(rep.findings[0].line().contains("(line 1, 64 times)"));
    assert_eq!(rep.lines, 129);
    // Two rules with the same finding merge: the OOM summary line and srun's per-task line.
    let oom = "slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of the step tasks have been OOM Killed.\nsrun: error: node3: task 0: Out Of Memory\n";
    assert_eq!(
        ids(&explain_bytes(rules(), oom.as_bytes())),
        [("job.oom_kill", Severity::Critical, 2)]
    );
}

#[test]
fn exit_codes_follow_the_worst_finding() {
    let r = rules();
    let none = explain_bytes(r, b"hello\nepoch 1 loss 0.3\n");
    assert_eq!((none.status.as_str(), none.exit_code), ("ok", 0));
    assert!(none.findings.is_empty());
    assert_eq!(none.lines, 2);
    let warn = explain_bytes(r, b"node1:1:1 [0] NCCL INFO Using network Socket\n");
    assert_eq!((warn.status.as_str(), warn.exit_code), ("warning", 1));
    let crit = explain_bytes(
        r,
        b"node1:1:1 [0] NCCL INFO Using network Socket\nRuntimeError: No CUDA GPUs are available\n",
    );
    assert_eq!((crit.status.as_str(), crit.exit_code), ("critical", 2));
    let empty = explain_bytes(r, b"");
    assert_eq!((empty.exit_code, empty.lines, empty.bytes), (0, 0, 0));
}

#[test]
fn long_lines_are_read_in_part_and_distinct_findings_are_bounded() {
    let r = rules();
    let mut data = b"RuntimeError: No CUDA GPUs are available ".to_vec();
    data.extend(vec![b'x'; 1 << 20]);
    data.extend_from_slice(b"\n");
    // The symptom beyond MAX_LINE is not read: the line's head was.
    data.extend(vec![b'y'; MAX_LINE + 10]);
    data.extend_from_slice(b" CUDA out of memory\nlast\n");
    let rep = explain_bytes(r, &data);
    assert_eq!(ids(&rep), [("launch.devices", Severity::Critical, 1)]);
    assert_eq!((rep.lines, rep.long_lines), (3, 2));
    assert_eq!(rep.bytes, data.len() as u64);

    let mut many = String::new();
    for i in 0..1000 {
        many.push_str(&format!(
            "slurmstepd: error: Unable to create TMPDIR [/scratch/{i}]: Permission denied\n"
        ));
    }
    let rep = explain_bytes(r, many.as_bytes());
    assert_eq!(rep.findings.len(), MAX_DISTINCT);
    assert_eq!(rep.more_findings, 1000 - MAX_DISTINCT as u64);
}

#[test]
fn captured_values_cannot_break_the_finding_shape() {
    let line =
        "slurmstepd: error: Unable to create TMPDIR [/scratch/a;b]: Permission denied; really\n";
    let rep = explain_bytes(rules(), line.as_bytes());
    let f = &rep.findings[0];
    assert_eq!(f.id, "job.tmpdir");
    assert!(f.what.contains("a\\;b"), "{}", f.what);
    let long = format!(
        "slurmstepd: error: Unable to create TMPDIR [/{}]: Permission denied\n",
        "z".repeat(5000)
    );
    let rep = explain_bytes(rules(), long.as_bytes());
    assert!(rep.findings[0].what.chars().count() < 200);
    // The NCCL model's findings are clipped too (a WARN line of 5000 characters).
    let long = format!("h:1:1 [0] NCCL WARN {}\n", "z".repeat(5000));
    let rep = explain_bytes(rules(), long.as_bytes());
    let w = rep.findings.iter().find(|f| f.id == "nccl.warn").unwrap();
    assert!(w.what.chars().count() < 300, "{}", w.what.len());
    // Invalid UTF-8 is replaced, not refused.
    let rep = explain_bytes(
        rules(),
        b"\xff\xfe error: Munge decode failed: Expired credential\n",
    );
    assert_eq!(rep.findings[0].id, "job.clock_skew");
}

#[test]
fn broken_tables_are_refused_with_the_rule_named() {
    let ok = r#"[[rule]]
id = "job.x"
severity = "warning"
regex = 'boom (?P<n>\d+)'
what = "boom {n}"
why = "w"
fix = "f"
doc = "https://example.invalid/doc"
examples = ["boom 1"]
"#;
    assert!(Rules::parse(ok).is_ok());
    for (from, to, want) in [
        ("boom (?P<n>\\d+)'", "boom (?P<n>\\d+'", "regex"),
        ("what = \"boom {n}\"", "what = \"boom {m}\"", "{m}"),
        ("why = \"w\"", "why = \"w; x\"", "';'"),
        ("id = \"job.x\"", "id = \"Job\"", "id"),
        ("examples = [\"boom 1\"]", "examples = []", "example"),
        ("doc = \"https://", "doc = \"http://", "https"),
        ("severity = \"warning\"", "severity = \"fatal\"", "fatal"),
        ("fix = \"f\"", "fix = \"f\"\nfixx = \"g\"", "fixx"),
    ] {
        let bad = ok.replace(from, to);
        assert_ne!(bad, ok, "{from}");
        let e = Rules::parse(&bad).unwrap_err();
        assert!(e.contains(want), "{from} -> {e}");
    }
    assert!(Rules::parse("").is_err());
}

/// Issue 31 item 5: the cause the line's own text points at leads. An unversioned `python` is
/// missing on current Debian, Ubuntu and RHEL whatever the environment, so the missing program
/// comes first and `--export` after it; a program every node has (hostname) can only be missing
/// from PATH, so `--export` leads there.
#[test]
fn the_likeliest_cause_of_a_missing_program_is_named_first() {
    let r = rules();
    let one = |line: &str| {
        let rep = explain_bytes(r, line.as_bytes());
        assert_eq!(rep.findings.len(), 1, "{line}");
        rep.findings[0].clone()
    };
    let py = one("slurmstepd: error: execve(): python: No such file or directory");
    assert_eq!(py.id, "job.exec_missing");
    assert!(py.what.contains("only python3"), "{}", py.what);
    let (first, export) = (py.why.find("python-is-python3"), py.why.find("--export"));
    assert!(
        first.is_some() && export.is_some() && first < export,
        "the missing python3-only command must come before --export: {}",
        py.why
    );
    assert!(py.fix.starts_with("call python3"), "{}", py.fix);
    // python3 itself missing is not the python3-only case.
    let py3 = one("slurmstepd: error: execve(): python3: No such file or directory");
    assert_eq!(py3.id, "launch.export_all");
    let host = one("0: slurmstepd-n1: error: execve(): hostname: No such file or directory");
    assert_eq!(host.id, "launch.export_all");
    assert!(host.why.starts_with("srun --export=VAR"), "{}", host.why);
}

/// Issue 24 item 8: nccl-tests' `Out of bounds values : N FAILED` pasted from a job's output says
/// what is known (corrupted data, not a tuning problem) and the two steps with their commands.
#[test]
fn out_of_bounds_values_say_rerun_once_then_drain() {
    let text =
        "lgn1:12:12 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
                # Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 12.5\n";
    let rep = explain_bytes(rules(), text.as_bytes());
    let f = rep
        .findings
        .iter()
        .find(|f| f.id == "nccl.out_of_bounds")
        .unwrap_or_else(|| panic!("{:?}", ids(&rep)));
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.why.contains("corrupted in flight"), "{}", f.why);
    assert!(
        f.fix
            .starts_with("rerun the same command once on the same nodes (srun -w lgn1 …)")
            && f.fix.contains("scontrol update nodename=lgn1 state=drain"),
        "{}",
        f.fix
    );
}

/// Issue 31: Pyxis prints that an enroot command failed (`child N failed with error code`,
/// `couldn't execute enroot command`, `container start failed with error code`) and only then the
/// enroot log that says why, and its `--no-container-entrypoint` advice between the two. Pasted
/// alone, such a line is a relay that names the lines to read; pasted with the lines around it (in
/// Pyxis 0.24.0's order), the enroot cause leads, the advice follows it and the relays come last.
#[test]
fn pyxis_relays_name_the_enroot_log_and_the_enroot_cause_leads() {
    let r = rules();
    for line in [
        "slurmstepd: error: pyxis: child 5123 failed with error code: 1",
        "slurmstepd: error: pyxis: couldn't execute enroot command",
        "slurmstepd: error: pyxis: container start failed with error code: 1",
    ] {
        let rep = explain_bytes(r, line.as_bytes());
        assert_eq!(
            ids(&rep),
            [("job.pyxis_follow_on", Severity::Critical, 1)],
            "{line}"
        );
        let f = &rep.findings[0];
        assert!(f.what.contains("only relays"), "{}", f.what);
        assert!(
            f.fix
                .starts_with("read the lines after 'pyxis: printing enroot log file:'"),
            "{}",
            f.fix
        );
    }
    let fork = "slurmstepd: error: pyxis: fork error: Resource temporarily unavailable\n\
                slurmstepd: error: pyxis: failed to start container\n";
    let rep = explain_bytes(r, fork.as_bytes());
    assert_eq!(
        ids(&rep),
        [
            ("job.pyxis_resources", Severity::Critical, 1),
            ("job.pyxis_follow_on", Severity::Critical, 1)
        ]
    );
    assert!(rep.findings[1].fix.contains("fork error"));
    // Pyxis 0.24.0: the exit code, the entrypoint advice, then enroot's log.
    let start = "\
slurmstepd: error: pyxis: child 812 failed with error code: 1
slurmstepd: error: pyxis: container start failed with error code: 1
slurmstepd: error: pyxis: if the image has an unusual entrypoint, try using --no-container-entrypoint
slurmstepd: error: pyxis: printing enroot log file:
slurmstepd: error: pyxis:     enroot-nsenter: failed to create user namespace: Permission denied
slurmstepd: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1
";
    let rep = explain_bytes(r, start.as_bytes());
    let got = id_list(&rep);
    assert_eq!(
        got,
        [
            "job.user_namespaces",
            "job.container_entrypoint",
            "job.pyxis_follow_on",
            "job.spank_failed"
        ]
    );
    assert_eq!(rep.findings[2].count, 2);
    // `enroot list` failing for a data path the user cannot create: the storage cause leads.
    let list = "\
slurmstepd: error: pyxis: child 77 failed with error code: 1
slurmstepd: error: pyxis: couldn't execute enroot command
slurmstepd: error: pyxis: printing enroot log file:
slurmstepd: error: pyxis:     mkdir: cannot create directory '/raid/enroot-data/user-1000': Permission denied
slurmstepd: error: pyxis: couldn't get list of existing container filesystems
";
    let rep = explain_bytes(r, list.as_bytes());
    let got = id_list(&rep);
    assert_eq!(
        got,
        [
            "node.enroot.storage",
            "node.enroot.storage",
            "job.pyxis_follow_on"
        ]
    );
    assert!(rep.findings[0].example.contains("/raid/enroot-data"));
}

/// Issue 31: enroot creates a missing ENROOT_DATA_PATH with mode 0700, so a fixed data path shared
/// by all users belongs to the first user, and `enroot list` (Pyxis runs it for --container-name)
/// fails for everyone else with `Could not change directory`: the data path leads, Pyxis's relays
/// come after it.
#[test]
fn a_data_path_enroot_cannot_enter_leads_the_pyxis_list_failure() {
    let out = "\
slurmstepd: error: pyxis: child 77 failed with error code: 1
slurmstepd: error: pyxis: couldn't execute enroot command
slurmstepd: error: pyxis: printing enroot log file:
slurmstepd: error: pyxis:     [ERROR] Could not change directory: /tmp/enroot-data
slurmstepd: error: pyxis: couldn't get list of existing container filesystems
slurmstepd: error: pyxis: couldn't get list of containers
";
    let rep = explain_bytes(rules(), out.as_bytes());
    let got: Vec<(&str, &str)> = rep
        .findings
        .iter()
        .map(|f| (f.id.as_str(), f.what.as_str()))
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        got[0],
        (
            "node.enroot.storage",
            "enroot could not enter the directory '/tmp/enroot-data'"
        )
    );
    assert!(rep.findings[0].fix.contains("per user"));
    assert_eq!(got[1].0, "node.enroot.storage");
    assert_eq!(got[2].0, "job.pyxis_follow_on");
    assert_eq!(rep.findings[2].count, 2);
}
