//! End-to-end launches on the real cluster: the exact line the user sees and srun's exit code.
//!
//! Needs `scripts/cluster.sh up` (root) and `cargo build --release -p spank-launchguard`;
//! `scripts/test.sh` does both. The cluster has 2 fake GPUs (`--gres=gpu:N` gives a GPU step).
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

use launchguard_tests::{
    lock, no_plugstack, plugstack, plugstack_line, run, sbatch, srun, As, Run, LOGIN_CONF,
    PLUGIN_PATH,
};

/// The running Slurm release as (major, minor), from `srun --version` ("slurm-wlm 22.05.8").
fn release() -> (u16, u16) {
    let r = run(As::Root, &[], &["srun", "--version"]);
    let v = r.stdout.split_whitespace().nth(1).expect("srun --version");
    let mut it = v.split('.');
    let major = it.next().and_then(|x| x.parse().ok()).expect("major");
    let minor = it.next().and_then(|x| x.parse().ok()).expect("minor");
    (major, minor)
}

fn reads_slurm_cpus() -> bool {
    release() >= (23, 11)
}

const WHY_ONE: &str = "NCCL and data-loader threads of each rank share one core, so NCCL bandwidth drops to 1/4-1/10 with no error";

/// The line for a GPU step without -c, with `min_cpus_per_task=4` in plugstack.
fn no_cpt_line() -> String {
    let fix = if reads_slurm_cpus() {
        let (a, b) = release();
        format!("add --cpus-per-task=4 to srun (min_cpus_per_task=4 set by the admin), or set it once with #SBATCH --cpus-per-task=4 (srun {a}.{b:02} inherits SLURM_CPUS_PER_TASK)")
    } else {
        "add --cpus-per-task=4 to srun (min_cpus_per_task=4 set by the admin), or export SRUN_CPUS_PER_TASK=4 before srun".to_string()
    };
    format!(
        "launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun has no -c/--cpus-per-task; {WHY_ONE}; {fix}"
    )
}

const EXPORT_FOO_LINE: &str = "launchguard: launch.export_all: --export=FOO=1 does not include ALL, so the step gets none of your environment; the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; use --export=ALL,FOO=1";

/// Whether slurmstepd itself printed its execve failure (not launchguard's quote of it): as
/// `slurmstepd: error: execve(): …` up to 24.11, `[<timestamp>] error: execve(): …` on 26.05.
fn slurm_execve_error(r: &Run) -> bool {
    r.stderr.lines().any(|l| {
        (l.starts_with("slurmstepd") || l.starts_with('['))
            && l.contains("error: execve(): hostname: No such file or directory")
    })
}

fn assert_silent(r: &Run) {
    assert!(!r.mentions_launchguard(), "launchguard spoke: {r:#?}");
}

#[test]
fn healthy_launches_print_nothing_and_run() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    for who in [As::User, As::Root] {
        let r = srun(who, &["-c", "2", "--gres=gpu:1", "hostname"]);
        assert_eq!(r.code, 0, "{r:#?}");
        assert!(!r.stdout.trim().is_empty());
        assert_silent(&r);
        let r = srun(who, &["--export=ALL,FOO=1", "printenv", "FOO"]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "1\n"), "{r:#?}");
        assert_silent(&r);
        let r = srun(who, &["-n2", "true"]);
        assert_eq!(r.code, 0, "{r:#?}");
        assert_silent(&r);
    }
}

#[test]
fn gpu_step_without_cpus_per_task_is_rejected_in_enforce_mode() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=4");
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![no_cpt_line().as_str()], "{r:#?}");
    assert!(r.stdout.is_empty(), "the step must not run: {r:#?}");
    assert!(r
        .stderr
        .contains("Plugin stack post-option processing failed"));
}

#[test]
fn gpu_step_without_cpus_per_task_warns_and_runs_in_warn_mode() {
    let _g = lock();
    plugstack("mode=warn min_cpus_per_task=4");
    let r = srun(As::User, &["--gpus=1", "echo", "ran"]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(r.stdout, "ran\n");
    assert_eq!(r.findings(), vec![no_cpt_line().as_str()], "{r:#?}");
    // warn is the default mode
    plugstack("min_cpus_per_task=4");
    let r = srun(As::User, &["-G", "1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings(), vec![no_cpt_line().as_str()], "{r:#?}");
}

#[test]
fn an_optional_plugin_can_only_warn() {
    // Slurm ignores an optional plugin's errors: enforcement needs `required` (docs/install.md).
    let _g = lock();
    plugstack_line(&format!(
        "optional {PLUGIN_PATH} mode=enforce min_cpus_per_task=4"
    ));
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings(), vec![no_cpt_line().as_str()], "{r:#?}");
}

#[test]
fn off_mode_is_silent() {
    let _g = lock();
    plugstack("mode=off");
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_silent(&r);
    let r = srun(As::User, &["--export=FOO=1", "hostname"]);
    assert_eq!(r.code, 2, "slurm's own execve failure: {r:#?}");
    assert_silent(&r);
    // a per-check override beats the mode
    plugstack("mode=enforce cpus_per_task=off");
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_silent(&r);
}

#[test]
fn fewer_cpus_than_the_minimum_only_warns_even_in_enforce_mode() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    let r = srun(As::User, &["-c", "1", "--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.cpus_per_task: this GPU step asks for 1 CPU per task, fewer than the site's minimum (2); \
              NCCL proxy and data-loader threads compete for too few cores, which costs bandwidth and step time; \
              use --cpus-per-task=2 (min_cpus_per_task=2 set by the admin)"],
        "{r:#?}"
    );
}

#[test]
fn export_without_all_is_rejected_before_allocation_in_enforce_mode() {
    let _g = lock();
    plugstack("mode=enforce");
    let r = srun(As::User, &["--export=FOO=1", "hostname"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![EXPORT_FOO_LINE], "{r:#?}");
    assert!(!slurm_execve_error(&r), "rejected before launch: {r:#?}");
    for args in [
        &["--export=NONE", "hostname"][..],
        &["--export", "NONE", "hostname"][..],
    ] {
        let r = srun(As::User, args);
        assert_eq!(r.code, 1, "{r:#?}");
        assert_eq!(
            r.findings(),
            vec!["launchguard: launch.export_all: --export=NONE does not include ALL, so the step gets none of your environment; \
                  the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; \
                  use --export=ALL"],
            "{r:#?}"
        );
    }
    // SRUN_EXPORT_ENV is srun's input variable for --export
    let r = run(
        As::User,
        &[("SRUN_EXPORT_ENV", "FOO=1")],
        &["srun", "hostname"],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.export_all: SRUN_EXPORT_ENV=FOO=1 does not include ALL, so the step gets none of your environment; \
              the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; \
              set SRUN_EXPORT_ENV=ALL,FOO=1 or pass --export=ALL,FOO=1 to srun"],
        "{r:#?}"
    );
}

#[test]
fn export_without_all_warns_in_warn_mode_and_slurm_fails_as_usual() {
    let _g = lock();
    plugstack("mode=warn");
    let r = srun(As::User, &["--export=FOO=1", "hostname"]);
    assert_eq!(r.code, 2, "{r:#?}");
    // srun's warning only: slurmstepd sees srun already reported it
    assert_eq!(r.findings(), vec![EXPORT_FOO_LINE], "{r:#?}");
    assert!(slurm_execve_error(&r), "{r:#?}");
}

#[test]
fn export_value_cut_at_a_comma_warns_and_the_step_runs() {
    let _g = lock();
    plugstack("mode=enforce");
    let r = srun(
        As::User,
        &[
            "--export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET",
            "printenv",
            "NCCL_DEBUG_SUBSYS",
        ],
    );
    assert_eq!(r.code, 0, "a warning never rejects: {r:#?}");
    assert_eq!(r.stdout, "INIT\n", "Slurm really cuts the value");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.export_split: --export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET is cut at the comma: \
              the step gets NCCL_DEBUG_SUBSYS=INIT and 'NET' is read as a variable name; \
              NCCL_DEBUG_SUBSYS silently loses part of its value, since Slurm splits --export at every comma outside quotes; \
              quote the whole entry, --export='ALL,\"NCCL_DEBUG_SUBSYS=INIT,NET\"' (Slurm keeps commas inside quotes and \
              drops quotes around a whole entry), or export NCCL_DEBUG_SUBSYS in the job script and pass --export=ALL"],
        "{r:#?}"
    );
}

/// What `launch.export_split` says the step gets for `--export=VALUE` is what the running release's
/// srun gives the task (srun splits with `find_quote_token`: quotes protect commas and are kept,
/// quotes around a whole entry are dropped), and the fix it offers works. Field report: on 22.05
/// `--export='ALL,X="a,b"'` gives the task `X="a,b"`, yet the line said the value was cut.
#[test]
fn export_split_says_what_the_task_really_gets() {
    let _g = lock();
    plugstack("mode=warn");
    // (export value, what the task's X is, the line's claim or None for no finding)
    let table: &[(&str, &str, Option<&str>)] = &[
        (
            "ALL,X=\"a,b\"",
            "\"a,b\"",
            Some("keeps the quotes: the step gets X=\"a,b\", quote characters included"),
        ),
        (
            "ALL,X='a,b'",
            "'a,b'",
            Some("keeps the quotes: the step gets X='a,b', quote characters included"),
        ),
        (
            "ALL,X=a,b",
            "a",
            Some("is cut at the comma: the step gets X=a and 'b' is read as a variable name"),
        ),
        // the fix the lines give: the whole entry quoted
        ("ALL,\"X=a,b\"", "a,b", None),
    ];
    for (value, task_gets, claim) in table {
        let export = format!("--export={value}");
        let r = srun(As::User, &[&export, "printenv", "X"]);
        assert_eq!(r.code, 0, "{r:#?}");
        assert_eq!(
            r.stdout,
            format!("{task_gets}\n"),
            "what srun gives the task for {export}: {r:#?}"
        );
        let lines = r.findings();
        match claim {
            Some(c) => {
                assert_eq!(lines.len(), 1, "{export}: {r:#?}");
                assert!(
                    lines[0]
                        .starts_with(&format!("launchguard: launch.export_split: {export} {c};")),
                    "{export}: {r:#?}"
                );
            }
            None => assert!(lines.is_empty(), "{export}: {r:#?}"),
        }
    }
}

/// The inherited-`-c` trap of 22.05/23.02: two tasks on the node of an `sbatch -c 2` job, each of
/// which gets 1 CPU (a single task would hold both of the job's CPUs: see
/// `one_task_per_node_holds_the_jobs_cpus_and_is_never_called_one_cpu`).
const TRAP_SCRIPT: &str = "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --gres=gpu:2\nsrun -n 2 bash -c 'echo step ran'\necho \"srun rc=$?\"\n";

/// The trap's line: 2 tasks x 2 CPUs do not fit in the 2 CPUs the job holds, so `-c 2` alone would
/// make srun refuse the step; the fix says what fits.
fn trap_line() -> String {
    format!(
        "launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun 22.05 does not read SLURM_CPUS_PER_TASK=2 \
         from the allocation (sbatch/salloc -c 2); {WHY_ONE}; \
         the job holds 2 CPUs on this node, too few for 2 tasks x 2 CPUs: run 1 task per node with -c 2 \
         (srun --ntasks-per-node=1 -c 2), or submit the job with --ntasks-per-node=2 -c 2"
    )
}

/// `sbatch --ntasks-per-gpu=1 -c 2`: on the releases whose srun refuses the job's
/// `SLURM_TRES_PER_TASK=cpu=2` next to `SLURM_NTASKS_PER_GPU` (23.11.7–25.05.0: 24.11 here), sbatch
/// is warned and the plain srun inside really dies with Slurm's own fatal line, while the fix it
/// names (`unset SLURM_TRES_PER_TASK`) runs; on 22.05 the same job runs and nothing is said.
#[test]
fn ntasks_per_gpu_with_c_warns_exactly_where_srun_refuses_it() {
    let _g = lock();
    plugstack("mode=warn");
    let v = run(As::Root, &[], &["srun", "--version"]);
    let full = v
        .stdout
        .split_whitespace()
        .nth(1)
        .expect("version")
        .to_string();
    let micro: Option<u16> = full.split('.').nth(2).and_then(|m| m.parse().ok());
    let (major, minor) = release();
    let refuses = launchguard_core::checks::gpu_options::refuses_tres_per_task(
        launchguard_core::SlurmRelease::new(major, minor),
        micro,
    )
    .expect("micro release known");
    let script = "#!/bin/bash\nsrun true; echo srun rc=$?\nunset SLURM_TRES_PER_TASK\nsrun true; echo fixed rc=$?\n";
    let (r, out) = sbatch(
        As::User,
        "ntasks-per-gpu",
        &["--ntasks-per-gpu=1", "--gpus=1", "-c", "2"],
        script,
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("launchguard: launch.gpu_options"))
        .collect();
    assert!(out.contains("fixed rc=0\n"), "{out}");
    if refuses {
        assert!(
            out.contains("SLURM_TRES_PER_TASK is mutually exclusive with --ntasks-per-gpu")
                && out.contains("srun rc=1\n"),
            "srun did not refuse on {full}: {out}"
        );
        assert_eq!(said.len(), 1, "{r:#?}");
        assert!(
            said[0].contains(&format!("on Slurm {major}.{minor:02}.")),
            "{}",
            said[0]
        );
        assert!(said[0].contains("unset SLURM_TRES_PER_TASK"), "{}", said[0]);
    } else {
        assert!(out.contains("srun rc=0\n"), "srun failed on {full}: {out}");
        assert!(said.is_empty(), "{r:#?}");
    }
}

#[test]
fn sbatch_c2_then_plain_srun_follows_the_release() {
    let _g = lock();
    if reads_slurm_cpus() {
        // 23.11+: the step really gets 2 CPUs per task. In enforce mode slurmstepd would reject the
        // step if S_STEP_CPUS_PER_TASK were 1, so silence proves it.
        plugstack("mode=enforce");
        let script = TRAP_SCRIPT.replace(
            "srun -n 2 bash -c 'echo step ran'",
            "srun -n 1 bash -c 'echo step ran with $SLURM_CPUS_PER_TASK $(nproc)'",
        );
        let (_, out) = sbatch(As::User, "trap-2411", &[], &script);
        assert_eq!(out, "step ran with 2 2\nsrun rc=0\n");
        return;
    }
    // 22.05/23.02: two tasks silently get 1 CPU each.
    plugstack("mode=warn");
    let (r, out) = sbatch(As::User, "trap-warn", &[], TRAP_SCRIPT);
    assert_eq!(r.code, 0, "{r:#?}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("launchguard: launch."))
        .collect();
    assert_eq!(lines, vec![trap_line().as_str()], "{out}");
    assert!(
        out.contains("step ran\nstep ran\n") && out.contains("srun rc=0\n"),
        "{out}"
    );

    plugstack("mode=enforce");
    let (_, out) = sbatch(As::User, "trap-enforce", &[], TRAP_SCRIPT);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("launchguard: launch."))
        .collect();
    assert_eq!(lines, vec![trap_line().as_str()], "{out}");
    assert!(!out.contains("step ran"), "{out}");
    assert!(out.contains("srun rc=1\n"), "{out}");
}

#[test]
fn valid_launches_are_never_rejected_in_enforce_mode() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["--export=PATH,FOO=1", "printenv", "FOO"],
        vec!["--export=PATH=/usr/bin:/bin,FOO=1", "printenv", "FOO"],
        vec!["-J", "", "-c", "2", "--gres=gpu:1", "echo", "1"],
        vec!["--cpus-per-gpu=1", "--gres=gpu:1", "echo", "1"],
        vec!["--cpu-bind=none", "--gres=gpu:1", "echo", "1"],
        vec!["--mpi=none", "-c2", "--gres=gpu:1", "echo", "1"],
    ];
    if reads_slurm_cpus() {
        cases.push(vec!["--tres-per-task=cpu:2", "--gres=gpu:1", "echo", "1"]);
    }
    for args in &cases {
        let r = srun(As::User, args);
        assert_eq!((r.code, r.stdout.as_str()), (0, "1\n"), "{args:?}: {r:#?}");
        assert!(r.findings().is_empty(), "{args:?}: {r:#?}");
    }
    // an --overlap monitoring step inside a running GPU job: a warning, never a rejection. The first
    // step runs until the overlap step has run (marker files, at most 60 s), and the overlap step
    // starts once the first one runs, however slow the machine: they really overlap.
    let script = "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --gres=gpu:2\nm=/tmp/lg-tests/overlap.$SLURM_JOB_ID\n\
                  srun -c 2 sh -c \"touch $m.started; t=0; while [ ! -e $m.done ] && [ \\$t -lt 600 ]; do sleep 0.1; t=\\$((t+1)); done\" &\n\
                  t=0; while [ ! -e $m.started ] && [ $t -lt 600 ]; do sleep 0.1; t=$((t+1)); done\n\
                  srun --overlap echo overlap ran\necho \"srun rc=$?\"\ntouch $m.done\nwait\nrm -f $m.started $m.done\n";
    let (_, out) = sbatch(As::User, "overlap", &[], script);
    assert!(out.contains("overlap ran\nsrun rc=0\n"), "{out}");
}

#[test]
fn srun_cpus_per_task_variable_follows_the_release() {
    let _g = lock();
    plugstack("mode=enforce");
    // SRUN_CPUS_PER_TASK is what 22.05/23.02 read; 23.11+ ignore it, and the advice says so.
    let r = run(
        As::User,
        &[("SRUN_CPUS_PER_TASK", "2")],
        &["srun", "--gres=gpu:1", "echo", "ran"],
    );
    if reads_slurm_cpus() {
        let (a, b) = release();
        assert_eq!(r.code, 1, "{r:#?}");
        assert_eq!(
            r.findings(),
            vec![format!(
                "launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun {a}.{b:02} no longer reads SRUN_CPUS_PER_TASK=2; \
                 {WHY_ONE}; add --cpus-per-task=2 to srun, or set it once with #SBATCH --cpus-per-task=2 (srun {a}.{b:02} inherits SLURM_CPUS_PER_TASK)"
            )
            .as_str()],
            "{r:#?}"
        );
    } else {
        assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
        assert_silent(&r);
    }
    // and the other way round for SLURM_CPUS_PER_TASK
    let r = run(
        As::User,
        &[("SLURM_CPUS_PER_TASK", "2")],
        &["srun", "--gres=gpu:1", "echo", "ran"],
    );
    if reads_slurm_cpus() {
        assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
        assert_silent(&r);
    } else {
        assert_eq!(r.code, 1, "{r:#?}");
        assert!(
            r.findings()[0].contains("srun 22.05 does not read SLURM_CPUS_PER_TASK=2"),
            "{r:#?}"
        );
    }
}

#[test]
fn steps_inside_salloc_keep_their_exemptions_and_the_trap_is_still_caught() {
    // Inside salloc, srun inherits no GPU variables, so only slurmstepd sees the GPUs.
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    let salloc = ["salloc", "-c2", "--gres=gpu:1"];
    for inner in [
        &["srun", "--overlap", "-n1", "echo", "1"][..],
        &["srun", "--cpus-per-gpu=1", "-n1", "echo", "1"][..],
        &["srun", "-c1", "-n1", "echo", "1"][..],
        &["srun", "-c2", "-n1", "echo", "1"][..],
    ] {
        let argv: Vec<&str> = salloc.iter().chain(inner).copied().collect();
        let r = run(As::User, &[], &argv);
        assert_eq!((r.code, r.stdout.as_str()), (0, "1\n"), "{argv:?}: {r:#?}");
        if inner[1] != "--overlap" {
            assert!(r.findings().is_empty(), "{argv:?}: {r:#?}");
        }
    }
    // 22.05/23.02: two tasks on the node, 1 CPU each (one task would hold both of the job's CPUs).
    // 23.11+ read SLURM_CPUS_PER_TASK=2 from salloc -c2: one task gets its 2 CPUs (two would need 4).
    let inner: &[&str] = if reads_slurm_cpus() {
        &["srun", "echo", "1"]
    } else {
        &["srun", "-n", "2", "echo", "1"]
    };
    let argv: Vec<&str> = salloc.iter().chain(inner).copied().collect();
    let r = run(As::User, &[], &argv);
    if reads_slurm_cpus() {
        assert_eq!((r.code, r.stdout.as_str()), (0, "1\n"), "{r:#?}");
        assert!(r.findings().is_empty(), "{r:#?}");
    } else {
        assert_eq!(r.code, 1, "{r:#?}");
        assert_eq!(r.findings().len(), 1, "{r:#?}");
        assert!(
            r.findings()[0].starts_with(
                "launchguard: launch.cpus_per_task: this GPU step (1 GPU on this node) runs with 1 CPU per task although SLURM_CPUS_PER_TASK=2: srun 22.05 does not read it"
            ),
            "{r:#?}"
        );
        assert!(r
            .stderr
            .contains("launchguard: this launch was stopped by the site's policy (enforce mode)"));
    }
}

/// The trap line's fix (`srun --ntasks-per-node=1 -c 2` in place of `srun -n 2`), followed, runs
/// silently in enforce mode with the job's 2 CPUs in its task, on every release.
#[test]
fn following_the_trap_advice_silences_it() {
    let _g = lock();
    plugstack("mode=enforce");
    let fixed = TRAP_SCRIPT.replace(
        "srun -n 2 bash -c 'echo step ran'",
        "srun --ntasks-per-node=1 -c 2 bash -c 'echo step ran on $(nproc)'",
    );
    let (_, out) = sbatch(As::User, "trap-fixed-c", &[], &fixed);
    assert_eq!(out, "step ran on 2\nsrun rc=0\n");
}

/// The number of CPUs per task a `launch.cpus_per_task` line claims ("gets 1 CPU per task", "asks
/// for 2 CPUs per task"), or `None` when the line names none.
fn claimed_cpus(line: &str) -> Option<usize> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(4).find_map(|w| {
        (matches!(w[1], "CPU" | "CPUs")
            && w[2] == "per"
            && w[3].trim_end_matches([';', ':', ',']) == "task")
            .then(|| w[0].parse().ok())
            .flatten()
    })
}

/// What each task of a step really has, one line per task: `nproc` (its sched_getaffinity mask)
/// and its `Cpus_allowed_list` from /proc/self/status.
const PROBE: &str = "echo cpus $(nproc) $(grep ^Cpus_allowed_list: /proc/self/status)";

/// `(nproc, CPUs in Cpus_allowed_list)` of each task, from `PROBE`'s lines.
fn probed_cpus(out: &str) -> Vec<(usize, usize)> {
    let got: Vec<(usize, usize)> = out
        .lines()
        .filter_map(|l| l.strip_prefix("cpus "))
        .map(|l| {
            let (nproc, list) = l
                .split_once(" Cpus_allowed_list:")
                .unwrap_or_else(|| panic!("no Cpus_allowed_list in {l:?}"));
            let count = list
                .trim()
                .split(',')
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                    None => 1,
                })
                .sum();
            (nproc.trim().parse().expect("nproc"), count)
        })
        .collect();
    assert!(!got.is_empty(), "no task printed its CPUs: {out:?}");
    got
}

/// The CPU line's count is what the user can see in the same step: the test clusters bind tasks to
/// their CPUs as sites do (slurm.conf TaskPlugin task/affinity, with task/cgroup and cgroup.conf
/// ConstrainCores=yes on the host), so `nproc` and `Cpus_allowed_list` in the step print the number
/// of CPUs per task the line says, for srun without -c, for the release's inherited-`-c` rule inside
/// `sbatch -c 2`, and for an explicit `-c 2` under a higher minimum.
#[test]
fn the_cpu_line_says_what_nproc_shows_in_the_step() {
    let _g = lock();
    plugstack("mode=warn min_cpus_per_task=4");
    let check = |case: &str, findings: Vec<&str>, out: &str| {
        let [line] = findings[..] else {
            panic!("{case}: want one launch.cpus_per_task line, got {findings:#?}\n{out}");
        };
        let said = claimed_cpus(line).unwrap_or_else(|| panic!("{case}: no count in {line}"));
        let tasks = probed_cpus(out);
        assert!(
            tasks.iter().all(|t| *t == (said, said)),
            "{case}: the line says {said} CPU(s) per task, the tasks' (nproc, Cpus_allowed_list) are {tasks:?}: {line}\n{out}"
        );
        said
    };
    let r = srun(As::User, &["--gres=gpu:1", "bash", "-c", PROBE]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(check("srun without -c", r.findings(), &r.stdout), 1);
    let r = srun(As::User, &["-c", "2", "--gres=gpu:1", "bash", "-c", PROBE]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(check("srun -c 2", r.findings(), &r.stdout), 2);
    // Inside `sbatch -c 2`, a plain srun gets 2 CPUs per task on 23.11+ (no line about the count; the
    // step shows SLURM_CPUS_PER_TASK) and 1 on 22.05, where the line says so. On 22.05 two tasks
    // share the job's 2 CPUs: a single task gets both, since a step without --exact takes all of the
    // job's CPUs on the node and auto binding then binds the one task to the whole socket (no line:
    // one_task_per_node_holds_the_jobs_cpus_and_is_never_called_one_cpu).
    plugstack("mode=warn");
    let tasks = if reads_slurm_cpus() { "" } else { "-n 2 " };
    let script =
        format!("#!/bin/bash\n#SBATCH -c 2\n#SBATCH --gres=gpu:2\nsrun {tasks}bash -c '{PROBE}'\n");
    let (r, out) = sbatch(As::User, "cpu-claim", &[], &script);
    assert_eq!(r.code, 0, "{r:#?}\n{out}");
    let findings: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("launchguard: launch."))
        .collect();
    if reads_slurm_cpus() {
        assert!(findings.is_empty(), "{out}");
        assert_eq!(probed_cpus(&out), vec![(2, 2)], "{out}");
    } else {
        assert_eq!(check("sbatch -c 2; srun -n 2", findings, &out), 1);
        assert_eq!(probed_cpus(&out).len(), 2, "{out}");
    }
}

/// The one-task launch (`srun --ntasks-per-node=1 torchrun …`, or a plain `srun` in a one-task job):
/// a step without `--exact` holds all of the job's CPUs on the node (srun(1) `--exact`) and its one
/// task is bound to all of them, so it is never a step of "1 CPU per task", on any release, in
/// `sbatch -c 2` (where 22.05's srun ignores `SLURM_CPUS_PER_TASK`), in `sbatch -n 2` without `-c`,
/// or in `salloc -c2`. Enforce mode runs them, silently, and `nproc` shows the job's 2 CPUs.
#[test]
fn one_task_per_node_holds_the_jobs_cpus_and_is_never_called_one_cpu() {
    let _g = lock();
    plugstack("mode=enforce");
    for (case, sbatch_opts, srun_opts) in [
        (
            "sbatch -c 2 -N1 -n1; srun",
            "#SBATCH -c 2\n#SBATCH -N 1\n#SBATCH -n 1",
            "",
        ),
        (
            "sbatch -c 2; srun --ntasks-per-node=1",
            "#SBATCH -c 2",
            "--ntasks-per-node=1 ",
        ),
        ("sbatch -n 2; srun -n 1", "#SBATCH -n 2", "-n 1 "),
    ] {
        let script = format!(
            "#!/bin/bash\n{sbatch_opts}\n#SBATCH --gres=gpu:2\nsrun {srun_opts}bash -c '{PROBE}'\necho \"srun rc=$?\"\n"
        );
        let (r, out) = sbatch(As::User, "one-task", &[], &script);
        assert_eq!(r.code, 0, "{case}: {r:#?}\n{out}");
        let said: Vec<&str> = out.lines().filter(|l| l.contains("launchguard")).collect();
        assert!(said.is_empty(), "{case}: a false alarm: {said:#?}\n{out}");
        assert!(out.contains("srun rc=0\n"), "{case}: {out}");
        assert_eq!(probed_cpus(&out), vec![(2, 2)], "{case}: {out}");
    }
    let r = run(
        As::User,
        &[],
        &["salloc", "-c2", "--gres=gpu:1", "srun", "bash", "-c", PROBE],
    );
    assert_eq!(r.code, 0, "salloc -c2; srun: {r:#?}");
    assert!(r.findings().is_empty(), "salloc -c2; srun: {r:#?}");
    assert_eq!(probed_cpus(&r.stdout), vec![(2, 2)], "{r:#?}");
    // A lone task in a job of 1 CPU really has 1: slurmstepd stops it (srun left it to slurmstepd).
    let script =
        format!("#!/bin/bash\n#SBATCH --gres=gpu:2\nsrun bash -c '{PROBE}'\necho \"srun rc=$?\"\n");
    let (_, out) = sbatch(As::User, "one-task-one-cpu", &[], &script);
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("launchguard: launch."))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].starts_with(
            "launchguard: launch.cpus_per_task: this GPU step (2 GPUs on this node) runs with 1 CPU per task;"
        ),
        "{out}"
    );
    // ...and the fix is the job's: -c on an srun inside a job of 1 CPU would be refused (the first
    // case above is that fix followed)
    assert!(
        said[0].contains("#SBATCH --cpus-per-task=N or salloc -c N for one inside"),
        "{out}"
    );
    assert!(
        out.contains("srun rc=1\n") && !out.contains("cpus "),
        "{out}"
    );
}

#[test]
fn sbatch_export_none_warns_at_submission_and_inner_srun_is_caught() {
    let _g = lock();
    plugstack("mode=enforce");
    let script = "#!/bin/bash\n/usr/bin/srun hostname\necho \"srun rc=$?\"\n";
    let (r, out) = sbatch(As::User, "export-none", &["--export=NONE"], script);
    assert_eq!(r.code, 0, "a submission is never rejected: {r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.export_all: --export=NONE does not include ALL: every srun in this job inherits SLURM_EXPORT_ENV=NONE; \
              those steps get no PATH and fail with 'execve(): <command>: No such file or directory' \
              (a container srun starts, its image supplies PATH, but without your variables); \
              submit with --export=ALL or give each srun in the script --export=ALL"],
        "{r:#?}"
    );
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("launchguard: launch."))
        .collect();
    assert_eq!(
        lines,
        vec!["launchguard: launch.export_all: SLURM_EXPORT_ENV=NONE, inherited from the allocation (sbatch/salloc --export=NONE), \
              gives this step none of your environment; \
              the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; \
              add --export=ALL to this srun, or unset SLURM_EXPORT_ENV in the job script before srun"],
        "{out}"
    );
    assert!(out.contains("srun rc=1\n"), "{out}");

    // the same through an #SBATCH line
    let script = "#!/bin/bash\n#SBATCH --export=NONE\n/usr/bin/srun --export=ALL hostname\necho \"srun rc=$?\"\n";
    let (r, out) = sbatch(As::User, "export-none-directive", &[], script);
    assert_eq!(r.findings().len(), 1, "{r:#?}");
    assert!(r.findings()[0]
        .starts_with("launchguard: launch.export_all: #SBATCH --export=NONE does not include ALL"));
    assert!(
        out.contains("srun rc=0\n"),
        "--export=ALL on srun fixes it: {out}"
    );
}

#[test]
fn slurmstepd_judges_the_step_when_srun_had_no_launchguard() {
    // An srun whose plugstack lacks launchguard (a login node without it): only slurmstepd's checks run.
    let _g = lock();
    let login = [("SLURM_CONF", LOGIN_CONF)];
    plugstack("mode=enforce min_cpus_per_task=4");
    let r = run(
        As::User,
        &login,
        &["srun", "-n2", "--gres=gpu:2", "echo", "ran"],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(!r.stdout.contains("ran"), "{r:#?}");
    let fix = if reads_slurm_cpus() {
        "add --cpus-per-task=4 to srun (min_cpus_per_task=4 set by the admin), or set it once with #SBATCH --cpus-per-task=4".to_string()
    } else {
        "add --cpus-per-task=4 to srun (min_cpus_per_task=4 set by the admin), or export SRUN_CPUS_PER_TASK=4 before srun".to_string()
    };
    let want = format!(
        "launchguard: launch.cpus_per_task: this GPU step (2 GPUs on this node) runs with 1 CPU per task; {WHY_ONE}; {fix}"
    );
    let got = r.findings();
    assert_eq!(got.len(), 1, "printed once for 2 tasks: {r:#?}");
    assert!(got[0].starts_with(&want), "{r:#?}");

    let r = run(As::User, &login, &["srun", "--export=FOO=1", "hostname"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(!slurm_execve_error(&r), "stopped before execve: {r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.export_all: the step's environment has no PATH (srun --export without ALL, or SLURM_EXPORT_ENV=NONE from sbatch --export=NONE); \
              the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; \
              run srun --export=ALL (or --export=ALL,VAR=value), or unset SLURM_EXPORT_ENV in the job script before srun"],
        "{r:#?}"
    );

    plugstack("mode=warn min_cpus_per_task=4");
    let r = run(As::User, &login, &["srun", "--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings().len(), 1, "{r:#?}");
    assert!(r.findings()[0].starts_with("launchguard: launch.cpus_per_task: this GPU step (1 GPU on this node) runs with 1 CPU per task"));

    plugstack("mode=warn min_cpus_per_task=2");
    let r = run(
        As::User,
        &login,
        &["srun", "-c", "2", "--gres=gpu:1", "echo", "ran"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_silent(&r);
}

#[test]
fn a_forged_srun_marker_never_lifts_slurmstepds_rejection() {
    // The bypass: an srun without launchguard (the user's own SLURM_CONF with an empty
    // plugstack) and a marker claiming srun exempted the step and reported everything.
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    let forged = "v1;cpt=*;ctr=0;ovl=0;reported=launch.cpus_per_task+launch.export_all";
    for marker in [
        forged,
        "v1;cpt=1;ctr=0;ovl=0;reported=launch.cpus_per_task",
        "v1;cpt=*;ctr=0;ovl=0;reported=",
    ] {
        let env = [
            ("SLURM_CONF", LOGIN_CONF),
            ("SLURM_LAUNCHGUARD_SRUN", marker),
        ];
        let r = run(As::User, &env, &["srun", "--gres=gpu:1", "echo", "ran"]);
        assert_eq!(r.code, 1, "{marker}: {r:#?}");
        assert!(!r.stdout.contains("ran"), "{marker}: {r:#?}");
        // A marker claiming srun printed the line only keeps it off the terminal (it is in slurmd's
        // log and the agent's report); without that claim the user reads why.
        let got = r.findings();
        if marker.ends_with("reported=") {
            assert_eq!(got.len(), 1, "{marker}: {r:#?}");
            assert!(
                got[0].starts_with("launchguard: launch.cpus_per_task: this GPU step (1 GPU on this node) runs with 1 CPU per task"),
                "{r:#?}"
            );
        } else {
            assert!(got.is_empty(), "{marker}: {r:#?}");
        }
    }
    // What the marker claimed, done for real through the variables srun itself acts on, runs (the
    // same as typing --cpus-per-gpu, --overlap or -c 1), with the plugin-less srun too.
    for var in [
        ("SLURM_CPUS_PER_GPU", "2"),
        ("SLURM_CPU_BIND", "none"),
        ("SLURM_OVERLAP", "1"),
    ] {
        let env = [("SLURM_CONF", LOGIN_CONF), var];
        let r = run(As::User, &env, &["srun", "--gres=gpu:1", "echo", "ran"]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{var:?}: {r:#?}");
    }
    // With launchguard in srun's plugstack, its marker still keeps a warning from printing twice.
    plugstack("mode=warn min_cpus_per_task=2");
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings().len(), 1, "printed once: {r:#?}");
}

#[test]
fn bad_plugstack_arguments_are_named_and_jobs_still_run() {
    let _g = lock();
    plugstack("mode=wran colour=red min_cpus_per_task=-1");
    let r = srun(As::User, &["-c", "2", "hostname"]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert!(!r.stdout.trim().is_empty());
    for want in [
        "srun: error: launchguard: plugstack argument 'mode=wran': 'wran' is not enforce|warn|off; using the default mode=warn",
        "srun: error: launchguard: plugstack argument 'colour=red': unknown key 'colour'",
        "srun: error: launchguard: plugstack argument 'min_cpus_per_task=-1': '-1' is not a number from 1 to 4096 or auto",
    ] {
        assert!(r.stderr.contains(want), "missing {want:?}: {r:#?}");
    }
    // the bad mode fell back to warn, not enforce: the bad launch runs with a warning
    let r = srun(As::User, &["--gres=gpu:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings().len(), 1, "{r:#?}");
}

#[test]
fn garbage_values_never_break_a_launch() {
    let _g = lock();
    // Differential: each launch must end the same with launchguard (warn) as without it.
    type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            vec![("SRUN_CPUS_PER_TASK", "abc")],
            vec!["srun", "--gres=gpu:1", "true"],
        ),
        (
            vec![("SRUN_CPUS_PER_TASK", "-1")],
            vec!["srun", "--gres=gpu:1", "true"],
        ),
        (
            vec![("SLURM_CPUS_PER_TASK", "99999999999999")],
            vec!["srun", "--gres=gpu:1", "true"],
        ),
        (
            vec![("SLURM_GPUS_ON_NODE", "\u{1}\u{2}")],
            vec!["srun", "true"],
        ),
        (
            vec![("SLURM_LAUNCHGUARD_SRUN", "v1;cpt=zz;reported=+++")],
            vec!["srun", "true"],
        ),
        (vec![], vec!["srun", "-c", "", "true"]),
        (vec![], vec!["srun", "--export=", "/bin/true"]),
        (vec![], vec!["srun", "--gres=gpu:99999999999", "true"]),
        (vec![], vec!["srun", "--cpus-per-task=0", "true"]),
    ];
    for (env, argv) in &cases {
        no_plugstack();
        let base = run(As::User, env, argv);
        plugstack("mode=warn");
        let with = run(As::User, env, argv);
        assert_eq!(
            base.code, with.code,
            "{env:?} {argv:?}: {base:#?} vs {with:#?}"
        );
        assert_eq!(base.stdout, with.stdout, "{env:?} {argv:?}");
        assert!(!with.stderr.contains("internal error"), "{with:#?}");
    }
    // a very long argv
    let long = "x".repeat(100_000);
    plugstack("mode=enforce");
    let r = srun(As::User, &["--gres=gpu:1", "-c", "2", "echo", &long]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.len(), long.len() + 1);
}

/// What the running `tool`'s own getopt_long says about `--name`: `required`, `none` or `optional`
/// (only as `--name=value`), or `None` when it does not take the option at all (24.11's srun still
/// prints `--power` in its help but refuses it). sbatch and salloc get a non-existent partition and
/// mutually exclusive memory options, srun no command, so nothing is ever allocated.
fn getopt_kind(tool: &str, name: &str) -> Option<&'static str> {
    let mut argv = vec![tool];
    if tool != "srun" {
        argv.extend(["-p", "lgnopart", "--mem=1", "--mem-per-cpu=1"]);
    }
    let bare = format!("--{name}");
    let mut a = argv.clone();
    a.push(&bare);
    let r = run(As::Root, &[], &a);
    if r.stderr.contains("unrecognized option") {
        return None;
    }
    if r.stderr.contains("requires an argument") {
        return Some("required");
    }
    let with = format!("--{name}=x");
    let mut a = argv.clone();
    a.push(&with);
    let r = run(As::Root, &[], &a);
    if r.stderr.contains("doesn't allow an argument") {
        Some("none")
    } else {
        Some("optional")
    }
}

/// Issue: options missing from the argv tables moved the CPU judgement from srun to slurmstepd. Every
/// option the running release prints in `srun/sbatch/salloc --help`, and srun's hidden
/// `--tasks-per-node`, must be in the tables with the argument the binary's getopt gives it.
#[test]
fn every_option_in_help_of_the_running_release_parses() {
    use launchguard_core::argv::{option_arg, Tool};
    let norm = |k: &str| if k == "optional" { "none" } else { k }.to_string();
    let mut checked = 0;
    for (tool, name) in [
        (Tool::Srun, "srun"),
        (Tool::Sbatch, "sbatch"),
        (Tool::Salloc, "salloc"),
    ] {
        let help = run(As::Root, &[], &[name, "--help"]);
        let mut opts: Vec<String> = help
            .stdout
            .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
            .filter_map(|w| w.strip_prefix("--"))
            .map(|w| {
                w.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect::<String>()
            })
            .filter(|w| w.len() > 1 && !matches!(w.as_str(), "help" | "usage" | "version"))
            .collect();
        if tool == Tool::Srun {
            opts.push("tasks-per-node".into());
        }
        opts.sort();
        opts.dedup();
        assert!(opts.len() > 60, "{name} --help: {help:?}");
        for o in &opts {
            let Some(kind) = getopt_kind(name, o) else {
                continue; // printed by --help, refused by getopt: nothing to parse
            };
            let want = norm(kind);
            let got = option_arg(tool, o).map(norm);
            assert_eq!(got.as_deref(), Some(want.as_str()), "{name} --{o}");
            checked += 1;
        }
    }
    assert!(checked > 250, "{checked}");
}

/// `srun --gres=gpu:2 --tasks-per-node=1 true`: the hidden alias is known, so srun judges (and in
/// enforce mode stops) the launch before allocation, with Slurm's post-option line after ours.
#[test]
fn hidden_srun_options_keep_the_judgement_in_srun() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=4");
    let r = srun(
        As::User,
        &["--gres=gpu:2", "--tasks-per-node=1", "echo", "ran"],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![no_cpt_line().as_str()], "{r:#?}");
    assert!(
        r.stderr.contains("post-option processing failed"),
        "stopped by srun before allocation: {r:#?}"
    );
    assert!(!r.stdout.contains("ran"), "{r:#?}");
}

/// A slurmstepd rejection with the step's output in a file (`srun -o FILE`) still reaches the user's
/// terminal: slurmstepd relays it to srun (`srun: launchguard: …`), and the file has it too. The
/// variable reaches the step through `--export` only, so srun's own check cannot see it.
#[test]
fn a_slurmstepd_rejection_reaches_the_terminal_when_output_goes_to_a_file() {
    let _g = lock();
    plugstack("mode=enforce fabric=efa min_cpus_per_task=2");
    let out = format!("{}/lg-rejected.out", launchguard_tests::SCRATCH);
    let _ = std::fs::remove_file(launchguard_tests::host_path(&out));
    let args = [
        "-c2",
        "--gres=gpu:1",
        "--export=ALL,NCCL_NET=IB",
        "echo",
        "ran",
    ];
    let mut argv = vec!["srun", "-o", out.as_str()];
    argv.extend(args);
    let r = run(As::User, &[], &argv);
    let file = std::fs::read_to_string(launchguard_tests::host_path(&out)).unwrap_or_default();
    assert_ne!(r.code, 0, "{r:#?}");
    let want = nccl_net_ib_line();
    assert!(
        r.stderr.lines().any(|l| l == format!("srun: {want}")),
        "the terminal shows the reason: {r:#?}\nfile: {file}"
    );
    assert!(
        file.lines().any(|l| l == want),
        "the output file has it too: {file}"
    );
    assert!(!file.lines().any(|l| l == "ran"), "{file}");
    // Without -o the line reaches the terminal once, the usual way, not relayed a second time.
    let mut argv = vec!["srun"];
    argv.extend(args);
    let r = run(As::User, &[], &argv);
    assert_ne!(r.code, 0, "{r:#?}");
    assert_eq!(r.stderr.matches(want).count(), 1, "printed once: {r:#?}");
}

fn nccl_net_ib_line() -> &'static str {
    "launchguard: launch.nccl_env: NCCL_NET=IB is set on this EFA node (rule efa.nccl_net_ib); \
     on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation; \
     set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET"
}

/// Issue: `NCCL_NET=IB srun -n1 hostname` on `fabric=efa` was stopped. NCCL rules follow
/// `gpu_steps_only`; a GPU step is stopped by srun before allocation when srun's environment shows the
/// variable, and by slurmstepd (line before Slurm's exit line) when srun had no launchguard.
#[test]
fn nccl_rules_spare_cpu_only_steps_and_stop_gpu_steps_early() {
    let _g = lock();
    let ib = [("NCCL_NET", "IB")];
    plugstack("mode=enforce fabric=efa min_cpus_per_task=2");
    let r = run(As::User, &ib, &["srun", "-n1", "hostname"]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_silent(&r);
    let r = run(
        As::User,
        &ib,
        &["srun", "-c2", "--gres=gpu:1", "echo", "ran"],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![nccl_net_ib_line()], "{r:#?}");
    assert!(r.stderr.contains("post-option processing failed"), "{r:#?}");
    assert!(!r.stdout.contains("ran"), "{r:#?}");
    // with gpu_steps_only=no the CPU-only step is judged too
    plugstack("mode=enforce fabric=efa min_cpus_per_task=2 gpu_steps_only=no");
    let r = run(As::User, &ib, &["srun", "-n1", "-c2", "hostname"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![nccl_net_ib_line()], "{r:#?}");
    // srun without launchguard: slurmstepd judges, and its line comes before Slurm's own
    plugstack("mode=enforce fabric=efa min_cpus_per_task=2");
    let mut env = ib.to_vec();
    env.push(("SLURM_CONF", LOGIN_CONF));
    let r = run(As::User, &env, &["srun", "-n1", "hostname"]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_silent(&r);
    let r = run(
        As::User,
        &env,
        &["srun", "-c2", "--gres=gpu:1", "echo", "ran"],
    );
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(!r.stdout.contains("ran"), "{r:#?}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    let ours = lines
        .iter()
        .position(|l| *l == nccl_net_ib_line())
        .unwrap_or_else(|| panic!("no launchguard line: {r:#?}"));
    if let Some(slurm) = lines
        .iter()
        .position(|l| l.contains("Exited with exit code"))
    {
        assert!(ours < slurm, "launchguard's line first: {r:#?}");
    }
}

/// A plugstack line longer than Slurm's 4095-byte line buffer: Slurm cuts it (the plugin gets the
/// devices of the first piece only, and logs `Invalid option`/`Invalid line. Ignoring.` for the
/// rest), and the launch prints at most 10 finding lines, then how many more it did not show.
/// Field report: such a launch printed 158 `launch.devices` lines.
#[test]
fn a_plugstack_line_past_slurms_buffer_gives_a_capped_launch() {
    let _g = lock();
    let head = format!("required {PLUGIN_PATH} mode=warn devices=");
    let list: Vec<String> = (0..400)
        .map(|i| format!("/dev/lgtest-absent-{i:04}"))
        .collect();
    let line = format!("{head}{}", list.join(","));
    assert!(line.len() > 4095);
    // What Slurm hands the plugin: the first 4095 bytes (fgets into a 4096-byte buffer).
    let kept = line[..4095][head.len()..].split(',').count();
    assert!(
        !line[..4095].ends_with(','),
        "a cut after a comma would void the whole list"
    );
    plugstack_line(&line);
    let r = srun(As::User, &["-n1", "true"]);
    no_plugstack();
    assert_eq!(r.code, 0, "warn mode: {r:#?}");
    assert!(
        r.stderr.contains("Invalid line. Ignoring."),
        "Slurm's own word on the cut: {r:#?}"
    );
    let shown = r
        .findings()
        .into_iter()
        .filter(|l| l.starts_with("launchguard: launch.devices:"))
        .count();
    assert_eq!(shown, 10, "{r:#?}");
    let more = format!(
        "launchguard: {} more finding lines not shown (at most 10 per launch); slurmd's log on this node has every one",
        kept - 10
    );
    assert!(r.stderr.lines().any(|l| l == more), "want {more:?}: {r:#?}");
}

/// Issue 24 item 5: `--gpus-per-task=1` with 2 tasks on the node binds each task to its own GPU, and
/// both see it as device 0 (one GPU in each task's CUDA_VISIBLE_DEVICES), so `cuda:LOCAL_RANK` is past the end for
/// task 1: srun warns with the fix and the step runs; `--gpu-bind=none` (the fix) gives each task
/// both GPUs and no line; one task per node no line. On the host cluster (ConstrainDevices=yes) each
/// task may open only its own GPU's device file: the other task's GPU is closed to it (no P2P).
#[test]
fn gpus_per_task_with_several_tasks_per_node_warns_and_the_fix_shows_every_gpu() {
    let _g = lock();
    plugstack("mode=enforce");
    let visible = &["bash", "-c", "echo $SLURM_LOCALID=$CUDA_VISIBLE_DEVICES"];
    let mut argv = vec!["-n2", "--ntasks-per-node=2", "-c1", "--gpus-per-task=1"];
    argv.extend_from_slice(visible);
    let r = srun(As::User, &argv);
    assert_eq!(r.code, 0, "{r:#?}");
    // Each task's CUDA_VISIBLE_DEVICES lists one GPU, so CUDA numbers it 0 in each task (the value
    // is 0 where ConstrainDevices renumbers the step's devices, as on the host cluster, and the
    // node's index where it does not, as in the chroot clusters).
    let mut lines: Vec<(&str, &str)> = r.stdout.lines().filter_map(|l| l.split_once('=')).collect();
    lines.sort();
    assert_eq!(
        lines.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        ["0", "1"],
        "{r:#?}"
    );
    assert!(
        lines
            .iter()
            .all(|(_, v)| v.len() == 1 && v.parse::<u32>().is_ok()),
        "each task sees one GPU: {r:#?}"
    );
    let said: Vec<&str> = r
        .findings()
        .into_iter()
        .filter(|l| l.starts_with("launchguard: launch.gpu_options"))
        .collect();
    assert_eq!(said.len(), 1, "{r:#?}");
    assert!(
        said[0].starts_with("launchguard: launch.gpu_options: --gpus-per-task=1 with 2 tasks per node binds each task to its own 1 GPU (numbered from 0)"),
        "{}",
        said[0]
    );
    assert!(said[0].contains("add --gpu-bind=none"), "{}", said[0]);
    if launchguard_tests::rootfs().is_empty() {
        let opens = "for d in /dev/fakegpu0 /dev/fakegpu1; do (exec 3<$d) 2>&1; done | grep -c 'not permitted'";
        let r = srun(
            As::User,
            &[
                "-n2",
                "--ntasks-per-node=2",
                "-c1",
                "--gpus-per-task=1",
                "bash",
                "-c",
                opens,
            ],
        );
        assert_eq!(
            r.stdout, "1\n1\n",
            "each task is denied the other GPU: {r:#?}"
        );
        let r = srun(
            As::User,
            &[
                "-n2",
                "--ntasks-per-node=2",
                "-c1",
                "--gpus-per-task=1",
                "--gpu-bind=none",
                "bash",
                "-c",
                opens,
            ],
        );
        assert_eq!(r.stdout, "0\n0\n", "every task opens both GPUs: {r:#?}");
    }

    let mut argv = vec![
        "-n2",
        "--ntasks-per-node=2",
        "-c1",
        "--gpus-per-task=1",
        "--gpu-bind=none",
    ];
    argv.extend_from_slice(visible);
    let r = srun(As::User, &argv);
    assert_eq!(r.code, 0, "{r:#?}");
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    lines.sort();
    // 22.05 leaves CUDA_VISIBLE_DEVICES unset with --gpu-bind=none: CUDA then numbers the step's
    // GPUs the task can open, the same for every task.
    assert!(
        lines == ["0=", "1="] || lines == ["0=0,1", "1=0,1"],
        "{r:#?}"
    );
    assert!(
        !r.findings().iter().any(|l| l.contains("gpu_options")),
        "{r:#?}"
    );

    let mut argv = vec!["-n1", "-c1", "--gpus-per-task=1"];
    argv.extend_from_slice(visible);
    let r = srun(As::User, &argv);
    assert_eq!(r.code, 0, "{r:#?}");
    assert!(
        !r.findings().iter().any(|l| l.contains("gpu_options")),
        "{r:#?}"
    );
}

/// The MPI types `srun --mpi=list` offers on this cluster (`pmix`, `pmix_v4`, `pmi2`, `none`…).
fn mpi_types() -> Vec<String> {
    let r = run(As::Root, &[], &["srun", "--mpi=list"]);
    let text = format!("{}{}", r.stdout, r.stderr);
    let mut out: Vec<String> = text
        .lines()
        .map(|l| l.trim().trim_start_matches("srun: "))
        .filter(|l| !l.is_empty() && !l.contains(' ') && !l.ends_with(':'))
        .map(str::to_string)
        .collect();
    // "specific pmix plugin versions available: pmix_v4" (22.05-24.11)
    for l in text.lines() {
        if let Some(v) = l.split("available:").nth(1) {
            out.extend(v.split(',').map(|s| s.trim().to_string()));
        }
    }
    out
}

/// Issue 24 item 4: an srun that uses Slurm's mpi/pmix where its plugin or PMIx library is missing
/// stops with Slurm's own words; launchguard says which file is missing and what to do, before them.
/// On each release: a pmix type the node does not have (`pmix_v99`, and plain `pmix` on 26.05,
/// whose chroot has no pmix plugin), by --mpi, SLURM_MPI_TYPE and slurm.conf's MpiDefault; where
/// pmix is offered, the library hidden in a private mount namespace (22.05 opens libpmix.so, 24.11
/// libpmix.so.2: judged from the plugin's own strings), and a healthy --mpi=pmix step runs silently.
#[test]
fn an_srun_through_a_missing_pmix_plugin_or_library_is_named() {
    let _g = lock();
    plugstack("mode=warn");
    let types = mpi_types();
    let missing = if types.iter().any(|t| t == "pmix") {
        "pmix_v99"
    } else {
        "pmix"
    };
    for (env, args) in [
        (vec![], vec![format!("--mpi={missing}")]),
        (vec![("SLURM_MPI_TYPE", missing)], vec![]),
    ] {
        let mut argv: Vec<&str> = vec!["srun"];
        argv.extend(args.iter().map(String::as_str));
        argv.extend(["-n1", "true"]);
        let r = run(As::User, &env, &argv);
        assert_ne!(r.code, 0, "{r:#?}");
        let f = r.findings();
        assert_eq!(f.len(), 1, "{r:#?}");
        assert!(
            f[0].starts_with("launchguard: launch.pmix: ")
                && f[0].contains(&format!(
                    "asks for Slurm's mpi/{missing} plugin, which is not in"
                ))
                && f[0].contains("this node offers: "),
            "{r:#?}"
        );
        assert!(
            r.stderr
                .contains(&format!("Invalid MPI type '{missing}', --mpi=list")),
            "Slurm's own line: {r:#?}"
        );
    }
    // MpiDefault in srun's slurm.conf (a copy that says MpiDefault=<missing>).
    let conf = format!("{}/mpidefault.conf", launchguard_tests::SCRATCH);
    let real = std::fs::read_to_string(launchguard_tests::host_path("/etc/slurm/slurm.conf"))
        .expect("slurm.conf");
    let text: String = real
        .lines()
        .map(|l| {
            if l.starts_with("MpiDefault") {
                format!("MpiDefault={missing}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(launchguard_tests::host_path(&conf), text).expect("write conf");
    let r = run(As::User, &[("SLURM_CONF", &conf)], &["srun", "-n1", "true"]);
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(
        r.findings().iter().any(|l| l.starts_with(&format!(
            "launchguard: launch.pmix: MpiDefault={missing} (slurm.conf) asks for"
        ))),
        "{r:#?}"
    );
    // enforce mode stops it before Slurm's loader does
    plugstack("mode=enforce");
    let r = srun(As::User, &[&format!("--mpi={missing}"), "-n1", "true"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("stopped by the site's policy"), "{r:#?}");
    plugstack("mode=warn");
    if missing == "pmix" {
        return;
    }
    // Where this cluster keeps the PMIx library Slurm's plugin opens (by architecture).
    let has_lib = |d: &&str| {
        std::fs::read_dir(launchguard_tests::host_path(d))
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("libpmix.so"))
            })
            .unwrap_or(false)
    };
    let Some(libdir) = [
        "/usr/lib/x86_64-linux-gnu/pmix2/lib",
        "/usr/lib/aarch64-linux-gnu/pmix2/lib",
    ]
    .into_iter()
    .find(|d| has_lib(d)) else {
        // Slurm's pmix plugin without its PMIx library (the emulated arm64 node): the real case.
        let r = srun(As::User, &["--mpi=pmix", "-n1", "true"]);
        assert_ne!(r.code, 0, "{r:#?}");
        assert!(
            r.findings().iter().any(|l| l
                .starts_with("launchguard: launch.pmix: srun --mpi=pmix: Slurm's ")
                && l.contains("is here but the PMIx library it opens is not")),
            "{r:#?}"
        );
        return;
    };
    // A healthy pmix step: it runs, nothing said.
    let r = srun(As::User, &["--mpi=pmix", "-n2", "printenv", "PMIX_RANK"]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_silent(&r);
    // The PMIx library hidden from srun (a private mount namespace): Slurm's own words and ours.
    // The namespace is made outside the chroot (its root is no mount point, so unshare cannot
    // make it private from inside); the tmpfs covers the chroot's directory.
    let rootfs = launchguard_tests::rootfs();
    let enter = if rootfs.is_empty() {
        String::new()
    } else {
        format!("chroot {rootfs} ")
    };
    let script = format!(
        "mount -t tmpfs none {rootfs}{libdir} && cd /tmp && {enter}runuser -u lgtest -- sh -c 'cd /tmp && srun --mpi=pmix -n1 true'"
    );
    let out = std::process::Command::new("timeout")
        .args(["60", "unshare", "--mount", "--", "sh", "-c", &script])
        .current_dir("/tmp")
        .output()
        .expect("spawn");
    let r = launchguard_tests::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_ne!(r.code, 0, "{r:#?}");
    let f = r.findings();
    assert_eq!(f.len(), 1, "{r:#?}");
    assert!(
        f[0].starts_with("launchguard: launch.pmix: srun --mpi=pmix: Slurm's ")
            && f[0].contains(&format!(
                "is here but the PMIx library it opens is not (looked for {libdir}/libpmix.so"
            ))
            && f[0].contains("install "),
        "{r:#?}"
    );
    assert!(
        r.stderr.contains("can not load PMIx library"),
        "Slurm's own line: {r:#?}"
    );
}

/// Issue 24 (slurm.conf `Include`): `MpiDefault` set in an included file, two levels down, in a
/// subdirectory. srun reads it (its own `Invalid MPI type` line proves which file it took);
/// `launch.pmix` must read the same file. Where a nested relative name is looked up differs by
/// release (22.05: beside the including file; 23.02+: beside slurm.conf), so each candidate holds
/// a different value and only the one Slurm reads names the missing plugin. Smallest input:
/// slurm.conf with `Include conf.d/mpi.conf`, that file `Include default.conf`. Before: srun
/// failed with Slurm's line alone (launchguard read no includes).
#[test]
fn mpi_default_from_an_included_file_is_judged_as_srun_reads_it() {
    let _g = lock();
    plugstack("mode=warn");
    let missing = if mpi_types().iter().any(|t| t == "pmix") {
        "pmix_v99"
    } else {
        "pmix"
    };
    let dir = format!("{}/include-conf", launchguard_tests::SCRATCH);
    let host = launchguard_tests::host_path(&dir);
    let _ = std::fs::remove_dir_all(&host);
    std::fs::create_dir_all(format!("{host}/conf.d")).expect("mkdir");
    let real = std::fs::read_to_string(launchguard_tests::host_path("/etc/slurm/slurm.conf"))
        .expect("slurm.conf");
    let mut text: String = real
        .lines()
        .filter(|l| {
            !l.trim_start()
                .to_ascii_lowercase()
                .starts_with("mpidefault")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str("Include conf.d/mpi.conf\n");
    std::fs::write(format!("{host}/slurm.conf"), text).expect("write conf");
    std::fs::write(format!("{host}/conf.d/mpi.conf"), "Include default.conf\n").expect("write");
    let (beside_includer, beside_conf) = if release() < (23, 2) {
        (missing, "none")
    } else {
        ("none", missing)
    };
    std::fs::write(
        format!("{host}/conf.d/default.conf"),
        format!("MpiDefault={beside_includer}\n"),
    )
    .expect("write");
    std::fs::write(
        format!("{host}/default.conf"),
        format!("MpiDefault={beside_conf}\n"),
    )
    .expect("write");
    let conf = format!("{dir}/slurm.conf");
    let r = run(As::User, &[("SLURM_CONF", &conf)], &["srun", "-n1", "true"]);
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(
        r.stderr
            .contains(&format!("Invalid MPI type '{missing}', --mpi=list")),
        "Slurm's own line (it read the included file): {r:#?}"
    );
    assert!(
        r.findings().iter().any(|l| l.starts_with(&format!(
            "launchguard: launch.pmix: MpiDefault={missing} (slurm.conf) asks for"
        ))),
        "{r:#?}"
    );
    // An include the user cannot read (a missing one would cost Slurm's 60 s of stat retries):
    // srun refuses the configuration; launchguard adds nothing false (no launch.pmix line about a
    // value it could not read).
    {
        use std::os::unix::fs::PermissionsExt;
        // The file this release reads (the one that names `missing`, above).
        let p = if release() < (23, 2) {
            format!("{host}/conf.d/default.conf")
        } else {
            format!("{host}/default.conf")
        };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let r = run(As::User, &[("SLURM_CONF", &conf)], &["srun", "-n1", "true"]);
    assert!(r.stderr.contains("Permission denied"), "{r:#?}");
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(
        !r.findings().iter().any(|l| l.contains("launch.pmix")),
        "{r:#?}"
    );
    let _ = std::fs::remove_dir_all(&host);
}
