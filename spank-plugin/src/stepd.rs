//! slurmstepd (remote context): judges the step as Slurm built it.
//!
//! - `user_init` (once per step on each node, before the tasks fork) judges CPUs per task from
//!   `S_STEP_CPUS_PER_TASK` (the truth) and the step's GPUs, and the NCCL environment of the job
//!   (`launch.nccl_env`, GPU steps only under `gpu_steps_only=yes`). Findings print there, on node 0
//!   only, so a multi-node step shows each finding once, and before any task exists, so a rejection's
//!   line comes before Slurm's `task 0: Exited with exit code 1`. When srun sends the step's output to
//!   a file (`srun -o FILE`, told by srun's plugin in [`OUTPUT_VAR`]), the user's terminal would see
//!   none of it: `task_init_privileged` then also sends a rejection to srun with `scontrol notify`
//!   (Slurm relays it as `srun: <line>`; bounded to 2 s).
//! - `task_init_privileged` (each task, root, before any other plugin's `task_init`) stops every task
//!   of a step rejected in `user_init`; it is the first remote callback whose failure reaches srun's exit
//!   code (exit 1) — a failing `user_init` only gives `task 0 launch failed` and exit 0 on 22.05
//!   (docs: Slurm's spank(8) and the measurements in docs/pyxis.md). user_init printed the reason.
//!   It also makes sure enroot's runtime directory exists (`launch.enroot_runtime`, repaired as root
//!   before Pyxis's `task_init` needs it) and gathers the host facts `task_init` needs.
//! - `task_init` (each task, as the user, just before execve; inside the container when launchguard
//!   is listed after Pyxis) judges what the program will really get: a missing `PATH`, hidden or
//!   denied devices and extra active RDMA devices next to EFA (`launch.devices`, with `access(2)`),
//!   an aws-ofi-nccl plugin in the task's view while `NCCL_NET` is unpinned (`launch.nccl_env`).
//!
//! What srun's plugin already reported (`SLURM_LAUNCHGUARD_SRUN`) is not repeated.

use crate::ffi::{self, NumItem, Spank};
use crate::gather;
use crate::host::{self, HostFacts};
use launchguard_core::checks::cpus_per_task::{self, StepCpus};
use launchguard_core::checks::devices::{self, Access, Probe, Role, StepDevices};
use launchguard_core::checks::export::{self, StepEnv};
use launchguard_core::checks::gpus::step_gpu_count;
use launchguard_core::checks::imex::{self, StepImex};
use launchguard_core::checks::marker::{self, SrunMarker};
use launchguard_core::checks::memlock::{self, TaskMemlock};
use launchguard_core::checks::nccl_env::{self, Fabric};
use launchguard_core::checks::pmix::{self as pmix_check, TaskPmix};
use launchguard_core::checks::{judge, NodeFacts, Verdict};
use launchguard_core::policy::parse_args;
use launchguard_core::policy::FabricChoice;
use launchguard_core::{CheckKind, Mode, Policy};
use std::sync::OnceLock;

/// The line after the findings of a launch that enforce mode stops, so that Slurm's own error lines
/// that follow are not read as a crash.
pub const STOPPED: &str = crate::srun::STOPPED;

/// Step ids from here up are Slurm's special steps (batch, extern, interactive, pending…); their
/// environment is the allocation's, not a launch's.
const FIRST_SPECIAL_STEP: u64 = 0xffff_fff0;

/// What `user_init` learnt, inherited by the forked task children.
struct StepState {
    policy: Policy,
    label: String,
    job: u64,
    step: u64,
    uid: u32,
    marker: Option<SrunMarker>,
    /// The verdict of `user_init`'s checks (CPUs per task, NCCL environment), enforced in
    /// `task_init_privileged`.
    cpus: Verdict,
    /// srun's plugin already printed the rejected finding (its marker says so): do not print it twice.
    cpus_quiet: bool,
    /// Node facts for `task_init`'s checks, gathered once here (before the tasks fork).
    host: Option<HostFacts>,
}

static STATE: OnceLock<Option<StepState>> = OnceLock::new();

/// This task's mount namespace at `task_init_privileged`, before Pyxis's `task_init` (a different one
/// at `task_init` means the task now runs in a container).
static TIP_MNT_NS: OnceLock<Option<String>> = OnceLock::new();

/// The step's variables that `launch.nccl_env` reads (`nccl_env::VAR_PREFIXES`) at `task_init_privileged`, before Pyxis's `task_init` imports
/// the container's environment into the step (Pyxis `spank_import_container_env`): at `task_init`,
/// a variable that is new or changed came from the image.
static TIP_NCCL_ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();

fn mnt_ns() -> Option<String> {
    std::fs::read_link("/proc/self/ns/mnt")
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Judges the step's CPUs; prints warnings (node 0). Always lets `user_init` succeed.
pub fn user_init(sp: &Spank) -> bool {
    let state = STATE.get_or_init(|| gather_state(sp));
    if let Some(st) = state {
        for f in &st.cpus.shown {
            ffi::log_info(&format!("{f} ({})", st.label));
        }
        let node_id = sp.get_number(NumItem::NodeId).unwrap_or(0);
        if node_id == 0 {
            let already = |f: &launchguard_core::Finding| {
                // srun showed the same line already: NCCL warnings it reported, or the CPU line of a
                // launch it could not stop itself (an `optional` line in srun). The marker only
                // saves the repeat; the verdict above is the step's own.
                (f.check == CheckKind::NcclEnv
                    && !st.cpus.reject
                    && st.marker.as_ref().is_some_and(|m| m.reported(f.id())))
                    || (f.check == CheckKind::CpusPerTask && st.cpus_quiet)
            };
            let lines: Vec<String> = st
                .cpus
                .shown
                .iter()
                .filter(|f| !already(f))
                .map(|f| f.to_string())
                .collect();
            crate::user_lines::show(lines, IN_SLURMD_LOG);
            if st.cpus.reject {
                ffi::log_user(STOPPED);
            }
        }
    }
    true
}

pub use crate::srun::OUTPUT_VAR;

/// `scontrol` beside this slurmstepd (`…/sbin/slurmstepd` → `…/bin/scontrol`), else in the usual places.
fn scontrol_path() -> Option<std::path::PathBuf> {
    let mut cands = vec![];
    if let Ok(exe) = std::fs::read_link("/proc/self/exe") {
        if let Some(prefix) = exe.parent().and_then(|d| d.parent()) {
            cands.push(prefix.join("bin/scontrol"));
        }
    }
    cands.extend(
        [
            "/usr/bin/scontrol",
            "/usr/local/bin/scontrol",
            "/opt/slurm/bin/scontrol",
        ]
        .map(Into::into),
    );
    cands.into_iter().find(|p| p.is_file())
}

/// Sends the rejection's lines to the job's srun (`scontrol notify JOBID MSG`, relayed by slurmctld
/// and printed by srun as `srun: <line>`), so that a user whose step output goes to a file still sees
/// why the step stopped. Bounded to 2 s, then waits 300 ms so that slurmctld can relay it before the
/// tasks exit and srun leaves. Runs as root in the task child (`task_init_privileged`).
fn notify_srun(job: u64, lines: &[String]) {
    let Some(scontrol) = scontrol_path() else {
        return;
    };
    let mut msg: String = lines.iter().take(4).cloned().collect::<Vec<_>>().join("\n");
    msg.push('\n');
    msg.push_str(STOPPED);
    let job = job.to_string();
    let prog = scontrol.to_string_lossy().into_owned();
    let sent = gather::run_bounded(
        &[&prog, "notify", &job, &msg],
        std::time::Duration::from_secs(2),
    );
    ffi::log_info(&format!(
        "launchguard: the step's stderr is a file: rejection relayed to srun with scontrol notify: {} (job {job})",
        if sent.is_some() { "sent" } else { "failed" }
    ));
    if sent.is_some() {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

fn gather_state(sp: &Spank) -> Option<StepState> {
    let (policy, problems) = parse_args(sp.args());
    let job = sp.get_number(NumItem::JobId).unwrap_or(0);
    let step = sp.get_number(NumItem::StepId).unwrap_or(0);
    let uid = sp.get_number(NumItem::Uid).unwrap_or(u64::MAX);
    let label = format!("job {job}.{step} uid {uid}");
    for p in &problems {
        // slurm_info from slurmstepd reaches slurmd's log, not the user's terminal (srun already
        // showed the same line there).
        ffi::log_info(&format!("{p} ({label})"));
    }
    if policy.all_off() || step >= FIRST_SPECIAL_STEP {
        return None;
    }
    let env = |n: &str| sp.getenv(n);
    let release = gather::release(sp);
    let marker = sp.getenv(marker::VAR).and_then(|v| SrunMarker::decode(&v));
    let mut cpus = (Verdict::default(), false);
    if policy.mode_for(CheckKind::CpusPerTask) != Mode::Off {
        let gpus = step_gpu_count(&env);
        let facts = StepCpus {
            cpus_per_task: sp
                .get_number(NumItem::StepCpusPerTask)
                .and_then(|n| u32::try_from(n).ok()),
            gpus,
            job_cpus_per_task: sp.getenv("SLURM_CPUS_PER_TASK"),
            overcommit: sp.getenv("SLURM_OVERCOMMIT").is_some_and(|v| v == "1"),
            exempt: sp
                .getenv("SLURM_CPU_BIND")
                .is_some_and(|v| cpus_per_task::cpu_bind_is_none(&v))
                || sp.getenv("SLURM_PTY_PORT").is_some()
                || sp
                    .getenv("SLURM_CPUS_PER_GPU")
                    .is_some_and(|v| !v.is_empty()),
            overlap: sp.getenv("SLURM_OVERLAP").is_some(),
            local_tasks: sp
                .get_number(NumItem::LocalTaskCount)
                .and_then(|n| u32::try_from(n).ok()),
            node_cpus: sp
                .get_number(NumItem::JobNcpus)
                .and_then(|n| u32::try_from(n).ok()),
            bound: sp
                .getenv("SLURM_CPU_BIND")
                .is_some_and(|v| cpus_per_task::cpu_bind_binds(&v)),
        };
        // The marker only saves printing a line twice; the verdict is the step's.
        cpus = cpus_per_task::step_verdict(
            release,
            &facts,
            marker.as_ref(),
            || step_node_facts(sp, gpus),
            &policy,
        );
    }
    let needs_host = policy.mode_for(CheckKind::Devices) != Mode::Off
        || policy.mode_for(CheckKind::NcclEnv) != Mode::Off
        || policy.mode_for(CheckKind::ImexChannel) != Mode::Off;
    let step_has_gpus = sp
        .getenv("SLURM_STEP_GPUS")
        .is_some_and(|l| launchguard_core::checks::gpus::count_list(&l) > 0);
    let host = needs_host.then(|| {
        host::gather(
            &launchguard_core::host::Roots::system(),
            &policy,
            &label,
            step_has_gpus,
        )
    });
    let nccl_judged = policy.mode_for(CheckKind::NcclEnv) != Mode::Off
        && (step_has_gpus || !policy.gpu_steps_only);
    if let (Some(h), true) = (host.as_ref(), nccl_judged) {
        // Judged here, before any task exists, so the line comes before Slurm's task exit lines.
        let vars = sp.job_env_with_prefixes(nccl_env::VAR_PREFIXES);
        let hcas: Vec<String> = h.hcas.iter().map(|x| x.name.clone()).collect();
        let step_gpus = sp.getenv("SLURM_STEP_GPUS");
        let ctx = nccl_env::Context {
            fabric: node_fabric(&policy, h),
            interfaces: Some(&h.interfaces),
            hcas: Some(&hcas),
            gpu_step: Some(step_has_gpus),
            step_gpus: step_gpus.as_deref(),
            ofi_plugin: None,
            profile: policy.profile.as_deref(),
            from_image: &[],
        };
        let nccl = judge(nccl_env::check_in(&vars, &ctx, &h.nccl_rules), &policy);
        cpus.0.shown.extend(nccl.shown);
        cpus.0.reject |= nccl.reject;
    }
    Some(StepState {
        policy,
        label,
        job,
        step,
        uid: u32::try_from(uid).unwrap_or(u32::MAX),
        marker,
        cpus: cpus.0,
        cpus_quiet: cpus.1,
        host,
    })
}

/// Where every finding of a step is, when the terminal shows only the first
/// [`crate::user_lines::MAX_LINES`].
const IN_SLURMD_LOG: &str = "; slurmd's log on this node has every one";

/// Prints a verdict's findings from one task only and logs them; returns whether the task may go on.
/// The findings shown are added to `seen` for the agent report.
fn speak(
    sp: &Spank,
    st: &StepState,
    findings: Vec<launchguard_core::Finding>,
    per_node: bool,
    seen: &mut Vec<launchguard_core::Finding>,
) -> bool {
    if findings.is_empty() {
        return true;
    }
    let v = judge(findings, &st.policy);
    seen.extend(v.shown.iter().cloned());
    let me = if per_node {
        sp.get_number(NumItem::TaskLocalId)
    } else {
        sp.get_number(NumItem::TaskGlobalId)
    };
    if me == Some(0) {
        for f in &v.shown {
            ffi::log_info(&format!("{f} ({})", st.label));
        }
        crate::user_lines::show(v.shown.iter().map(|f| f.to_string()), IN_SLURMD_LOG);
        if v.reject {
            ffi::log_user(STOPPED);
        }
    }
    !v.reject
}

/// Stops every task of a step rejected in `user_init` (task 0 prints the reasons); checks enroot's
/// runtime directory as root; gathers the host facts for `task_init`.
pub fn task_init_privileged(sp: &Spank) -> bool {
    let Some(Some(st)) = STATE.get() else {
        return true;
    };
    let local0 = sp.get_number(NumItem::TaskLocalId) == Some(0);
    if st.cpus.reject {
        // user_init printed the reasons (node 0) before any task existed; when task 0's stderr is a
        // file (`srun -o FILE`) they never reach the terminal that way, so they are relayed.
        if sp.get_number(NumItem::TaskGlobalId) == Some(0) {
            if sp.getenv(OUTPUT_VAR).is_some_and(|v| v == "file") {
                let lines: Vec<String> = st.cpus.shown.iter().map(|f| f.to_string()).collect();
                notify_srun(st.job, &lines);
            } else {
                // slurmstepd's I/O thread forwards user_init's lines to srun on its own schedule,
                // while the task's exit goes to srun at once: wait a little (rejections only) so
                // that srun prints our line before its `task 0: Exited with exit code 1`.
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        }
        if local0 {
            report(st, "step", &st.cpus.shown, true);
        }
        return false;
    }
    let _ = TIP_MNT_NS.set(mnt_ns());
    if st.policy.mode_for(CheckKind::NcclEnv) != Mode::Off {
        let _ = TIP_NCCL_ENV.set(sp.job_env_with_prefixes(nccl_env::VAR_PREFIXES));
    }
    let mut ok = true;
    let mut seen = st.cpus.shown.clone();
    if st.policy.mode_for(CheckKind::EnrootRuntime) != Mode::Off {
        let container = st.marker.as_ref().map(|m| m.container);
        let (findings, repaired) = crate::enroot::check(&st.policy, container);
        if let Some(line) = repaired {
            ffi::log_info(&format!("{line} ({})", st.label));
        }
        ok &= speak(sp, st, findings, true, &mut seen);
    }
    if local0 {
        report(st, "step", &seen, !ok);
    }
    ok
}

/// The step's verdict on this node, to the agent (root phase: every step; user phase: only findings).
fn report(st: &StepState, phase: &str, shown: &[launchguard_core::Finding], reject: bool) {
    if st.policy.agent_socket.is_none() {
        return;
    }
    let v = crate::agent_client::Verdict {
        phase,
        job: Some(st.job),
        step: Some(st.step),
        uid: st.uid,
        shown,
        reject,
    };
    send_report(st, phase, &crate::agent_client::report_line(&st.policy, &v));
}

/// Sends one report line: from the root phase on a new connection kept for the task phase, from the
/// task phase on that kept connection (or the socket path when there is none).
fn send_report(st: &StepState, phase: &str, line: &str) {
    let Some(path) = st.policy.agent_socket.as_deref() else {
        return;
    };
    // The root phase connects and keeps the socket for the task phase: by then a Pyxis task runs in
    // the container's mount namespace, where the agent's socket path does not exist.
    if phase == "step" {
        if let Ok(s) = crate::agent_client::connect(path) {
            let _ = crate::agent_client::send_on(&s, line);
            let _ = AGENT_CONN.set(s);
        }
    } else {
        let kept = AGENT_CONN
            .get()
            .map(|s| crate::agent_client::send_on(s, line).is_ok());
        if kept != Some(true) {
            // No kept connection, or the agent cut it (a long container import): try the path.
            let _ = crate::agent_client::send_line(path, line);
        }
    }
}

/// A container step whose `task_init` runs before Pyxis entered the container (launchguard listed
/// before Pyxis): the image's environment and the container's `/dev` cannot be judged from here, and
/// no later SPANK callback runs in the task before `execve` (slurmstepd calls `task_post_fork` before
/// it releases the task, then nothing until `task_exit`). Says so once per step and node, in
/// slurmd's log and to the agent; not to the user, who cannot change the plugstack.
fn blind_step(st: &StepState) {
    let line = launchguard_core::finding::render_line(
        "node.plugstack.order",
        &format!(
            "job {}.{} runs in a Pyxis container but launchguard is listed before Pyxis",
            st.job, st.step
        ),
        "its task_init ran before Pyxis entered the container, so the image's NCCL/FI variables and the container's devices were not judged",
        "name launchguard's drop-in /etc/slurm/plugstack.conf.d/zz-launchguard.conf so it sorts after pyxis.conf",
    );
    ffi::log_info(&format!("{line} ({})", st.label));
    send_report(
        st,
        "task",
        &crate::agent_client::notice_line(
            &st.policy,
            st.job,
            st.step,
            st.uid,
            "node.plugstack.order",
            &line,
        ),
    );
}

/// The agent connection opened as root in `task_init_privileged` (local task 0), reused by
/// `task_init`; closed at exec (close-on-exec).
static AGENT_CONN: OnceLock<socket2::Socket> = OnceLock::new();

/// Judges what the task's program will get; stops every task on a rejection (the first task of each
/// node prints device findings, global task 0 the others).
pub fn task_init(sp: &Spank) -> bool {
    let Some(Some(st)) = STATE.get() else {
        return true;
    };
    let mut findings = vec![];
    let mut seen = vec![];
    let container = st.marker.as_ref().is_some_and(|m| m.container);
    let before = TIP_MNT_NS.get().cloned().flatten();
    let entered = before.is_some() && mnt_ns() != before;
    if container && !entered && sp.get_number(NumItem::TaskLocalId) == Some(0) {
        blind_step(st);
    }
    let mut export_reject = false;
    if st.policy.mode_for(CheckKind::ExportAll) != Mode::Off {
        let step_env = StepEnv {
            has_path: sp.getenv("PATH").is_some(),
            argv0: sp.job_argv0(),
            container: st.marker.as_ref().is_some_and(|m| m.container),
        };
        // What srun showed is not printed twice; its verdict stands (a marker never lifts it).
        let f = export::check_step(&step_env, false);
        if st
            .marker
            .as_ref()
            .is_some_and(|m| m.reported(CheckKind::ExportAll.id()))
        {
            let v = judge(f, &st.policy);
            export_reject = v.reject;
            if v.reject {
                seen.extend(v.shown);
            }
        } else {
            findings.extend(f);
        }
    }
    let mut ok = !export_reject;
    if let Some(h) = st.host.as_ref() {
        let step_has_gpus = sp
            .getenv("SLURM_STEP_GPUS")
            .is_some_and(|l| launchguard_core::checks::gpus::count_list(&l) > 0);
        if st.policy.mode_for(CheckKind::NcclEnv) != Mode::Off
            && (step_has_gpus || !st.policy.gpu_steps_only)
        {
            // Only the rule about the task's own view (an OFI plugin in the image); the others were
            // judged in user_init.
            let ofi = find_ofi_plugin(sp);
            let rules: Vec<nccl_env::Rule> = h
                .nccl_rules
                .iter()
                .filter(|r| r.cond == nccl_env::Cond::UnsetWithOfiPlugin)
                .cloned()
                .collect();
            let vars = sp.job_env_with_prefixes(&["NCCL_NET"]);
            let ctx = nccl_env::Context {
                fabric: node_fabric(&st.policy, h),
                gpu_step: Some(step_has_gpus),
                ofi_plugin: ofi.as_deref(),
                profile: st.policy.profile.as_deref(),
                ..nccl_env::Context::default()
            };
            findings.extend(nccl_env::check_in(&vars, &ctx, &rules));
            // The image's own variables: user_init judged the job's environment before any container
            // existed, so what Pyxis imported from the image (its ENV, its /etc/environment) is judged
            // here, attributed to the image, with a fix the user can apply (docs/spank.md, "Next to
            // Pyxis").
            let all = sp.job_env_with_prefixes(nccl_env::VAR_PREFIXES);
            let from_image = match TIP_NCCL_ENV.get() {
                Some(before) if container && entered => nccl_env::image_vars(before, &all),
                _ => vec![],
            };
            if !from_image.is_empty() {
                let image_set: Vec<(String, String)> = all
                    .iter()
                    .filter(|(k, _)| from_image.contains(k))
                    .cloned()
                    .collect();
                let hcas: Vec<String> = h.hcas.iter().map(|x| x.name.clone()).collect();
                let step_gpus = sp.getenv("SLURM_STEP_GPUS");
                let others: Vec<nccl_env::Rule> = h
                    .nccl_rules
                    .iter()
                    .filter(|r| r.cond != nccl_env::Cond::UnsetWithOfiPlugin)
                    .cloned()
                    .collect();
                let ctx = nccl_env::Context {
                    interfaces: Some(&h.interfaces),
                    hcas: Some(&hcas),
                    step_gpus: step_gpus.as_deref(),
                    ofi_plugin: None,
                    from_image: &from_image,
                    ..ctx
                };
                findings.extend(nccl_env::check_in(&image_set, &ctx, &others));
            }
        }
        if st.policy.mode_for(CheckKind::Devices) != Mode::Off {
            let mut found = devices::check(&step_devices(sp, st, h));
            if node_fabric(&st.policy, h) == Some(Fabric::Efa) {
                let nics: Vec<devices::RdmaNic> = h
                    .hcas
                    .iter()
                    .map(|x| devices::RdmaNic {
                        name: x.name.clone(),
                        driver: x.driver.clone(),
                        active: x.active,
                        exposed: x.uverbs.iter().any(|u| probe(u) == Access::Ok),
                    })
                    .collect();
                found.extend(devices::extra_rdma_next_to_efa(&nics));
            }
            ok &= speak(sp, st, found, true, &mut seen);
        }
        if st.policy.mode_for(CheckKind::ImexChannel) != Mode::Off && h.imex_major.is_some() {
            ok &= speak(sp, st, imex::check(&step_imex(sp, st, h)), true, &mut seen);
        }
        if st.policy.mode_for(CheckKind::Memlock) != Mode::Off
            && step_has_gpus
            && !h.hcas.is_empty()
        {
            if let Some(t) = task_memlock(sp, h) {
                ok &= speak(sp, st, memlock::check(&t), true, &mut seen);
            }
        }
    }
    // Slurm's PMIx server as a container task sees it (only inside the container: listed after Pyxis).
    if container && entered && st.policy.mode_for(CheckKind::Pmix) != Mode::Off {
        if let Some(t) = task_pmix(sp) {
            ok &= speak(sp, st, pmix_check::check_task(&t), true, &mut seen);
        }
    }
    ok &= speak(sp, st, findings, false, &mut seen);
    if !seen.is_empty() && sp.get_number(NumItem::TaskLocalId) == Some(0) {
        report(st, "task", &seen, !ok);
    }
    ok
}

/// munged's socket as libmunge finds it by default (`/run/munge/munge.socket.2`, or under
/// `/var/run` on older builds).
const MUNGE_SOCKETS: &[&str] = &["/run/munge/munge.socket.2", "/var/run/munge/munge.socket.2"];

/// What the task sees of Slurm's PMIx server, when the step runs under mpi/pmix (the task's
/// environment has `PMIX_SERVER_TMPDIR`, which OpenPMIx's `PMIx_server_setup_fork` exports).
fn task_pmix(sp: &Spank) -> Option<TaskPmix> {
    let server_tmpdir = sp.getenv("PMIX_SERVER_TMPDIR")?;
    let visible = |p: &str| p.starts_with('/') && std::path::Path::new(p).exists();
    let munge = MUNGE_SOCKETS.iter().find(|p| visible(p));
    Some(TaskPmix {
        tmpdir_visible: visible(&server_tmpdir),
        server_tmpdir,
        gds_module: sp.getenv("PMIX_GDS_MODULE"),
        mca_gds: sp.getenv("PMIX_MCA_gds"),
        security_mode: sp.getenv("PMIX_SECURITY_MODE"),
        mca_psec: sp.getenv("PMIX_MCA_psec"),
        munge_socket: munge.unwrap_or(&MUNGE_SOCKETS[0]).to_string(),
        munge_visible: munge.is_some(),
    })
}

/// The task's own locked-memory limits (`/proc/self/limits`: `task_init` runs in the task after
/// slurmstepd set the propagated limits) for `launch.memlock`, on a step of several nodes; `None` for
/// a one-node step or an unreadable file.
fn task_memlock(sp: &Spank, h: &HostFacts) -> Option<TaskMemlock> {
    let step_nodes: u32 = sp.getenv("SLURM_STEP_NUM_NODES")?.trim().parse().ok()?;
    if step_nodes < 2 {
        return None;
    }
    let text = gather::read_small(std::path::Path::new("/proc/self/limits"), 8 << 10)?;
    let (soft, hard) = launchguard_core::node::memlock::parse_limits(&text)?;
    Some(TaskMemlock {
        soft,
        hard,
        rdma_nics: h.hcas.iter().map(|x| x.name.clone()).collect(),
        step_nodes,
        gpu_step: true,
    })
}

/// The node's fabric: the admin's `fabric=`, else the drivers behind `/sys/class/infiniband`.
fn node_fabric(policy: &Policy, h: &HostFacts) -> Option<Fabric> {
    match policy.fabric {
        FabricChoice::Efa => Some(Fabric::Efa),
        FabricChoice::Ib => Some(Fabric::Ib),
        FabricChoice::Auto => {
            let drivers: Vec<&str> = h.hcas.iter().map(|x| x.driver.as_str()).collect();
            nccl_env::detect_fabric(&drivers)
        }
    }
}

/// An aws-ofi-nccl plugin the task can load (in its own view: inside the container when listed after
/// Pyxis): `NCCL_NET_PLUGIN` when it is a path, the job's `LD_LIBRARY_PATH` directories (at most 16)
/// and the usual install directories. At most 2,048 entries are read per directory.
fn find_ofi_plugin(sp: &Spank) -> Option<String> {
    if let Some(p) = sp.getenv("NCCL_NET_PLUGIN").filter(|p| p.starts_with('/')) {
        if nccl_env::is_ofi_plugin(&p) && std::path::Path::new(&p).is_file() {
            return Some(p);
        }
    }
    let mut dirs: Vec<String> = sp
        .getenv("LD_LIBRARY_PATH")
        .map(|l| {
            l.split(':')
                .filter(|d| d.starts_with('/'))
                .take(16)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    dirs.extend(
        [
            "/opt/amazon/ofi-nccl/lib",
            "/opt/amazon/ofi-nccl/lib64",
            "/opt/aws-ofi-nccl/lib",
            "/usr/local/lib",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
        ]
        .map(str::to_string),
    );
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(Result::ok).take(2048) {
            let path = format!("{d}/{}", e.file_name().to_string_lossy());
            if nccl_env::is_ofi_plugin(&path) {
                return Some(path);
            }
        }
    }
    None
}

fn probe(path: &str) -> Access {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Access::Missing,
        Err(e) => return Access::Other(e.raw_os_error().unwrap_or(0)),
        Ok(m) if !m.file_type().is_char_device() => return Access::NotDevice,
        Ok(_) => {}
    }
    match ffi::access_rw(path) {
        Ok(()) => Access::Ok,
        Err(libc::EPERM) => Access::Denied, // the devices cgroup
        Err(libc::EACCES) => Access::NoPermission, // file mode
        Err(libc::ENOENT) => Access::Missing,
        Err(e) => Access::Other(e),
    }
}

/// The devices this task must see: as many usable GPU device files as `SLURM_STEP_GPUS` entries, the
/// verbs devices of the node's active fabric NICs (minus those gres.conf hands out as GRES),
/// `/dev/gdrdrv` when the host has it, and the admin's list.
fn step_devices(sp: &Spank, st: &StepState, h: &HostFacts) -> StepDevices {
    let step_gpus = sp.getenv("SLURM_STEP_GPUS").unwrap_or_default();
    let allocated = launchguard_core::checks::gpus::count_list(&step_gpus);
    let mig = h.mig
        || sp
            .getenv("CUDA_VISIBLE_DEVICES")
            .is_some_and(|v| v.contains("MIG-"));
    let gpus = if allocated == 0 || mig {
        vec![]
    } else {
        h.gpu_files
            .iter()
            .take(1024)
            .map(|path| Probe {
                path: path.clone(),
                role: Role::Gpu,
                access: probe(path),
            })
            .collect()
    };
    let efa = h.hcas.iter().any(|x| x.driver == "efa");
    let fabric = h
        .hcas
        .iter()
        .filter(|x| x.active && (!efa || x.driver == "efa"))
        .flat_map(|x| {
            x.uverbs
                .iter()
                .filter(|u| !h.gres_files.contains(u))
                .map(|u| Probe {
                    path: u.clone(),
                    role: Role::Fabric {
                        hca: x.name.clone(),
                    },
                    access: probe(u),
                })
        })
        .collect();
    let mut others = vec![];
    if h.gdrdrv {
        others.push(Probe {
            path: "/dev/gdrdrv".into(),
            role: Role::GdrCopy,
            access: probe("/dev/gdrdrv"),
        });
    }
    for d in &st.policy.devices {
        others.push(Probe {
            path: d.clone(),
            role: Role::Admin,
            access: probe(d),
        });
    }
    let before = TIP_MNT_NS.get().cloned().flatten();
    StepDevices {
        node: host::hostname(),
        step_gpus,
        allocated_gpus: allocated,
        gpus,
        fabric,
        others,
        in_container: st.marker.as_ref().is_some_and(|m| m.container)
            || (before.is_some() && mnt_ns() != before),
    }
}

/// What the task sees of IMEX (multi-node NVLink): the channel files in its own `/dev` (inside the
/// container when launchguard runs after Pyxis), probed with `access(2)`, and the variables that
/// decide whether the step uses MNNVL.
fn step_imex(sp: &Spank, st: &StepState, h: &HostFacts) -> StepImex {
    let mut paths: Vec<String> = std::fs::read_dir(imex::CHANNEL_DIR)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .take(64)
                .map(|e| format!("{}/{}", imex::CHANNEL_DIR, e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    let visible = paths
        .into_iter()
        .map(|p| {
            let a = probe(&p);
            (p, a)
        })
        .collect();
    let count = |v: Option<String>| v.and_then(|v| launchguard_core::checks::env::parse_count(&v));
    let before = TIP_MNT_NS.get().cloned().flatten();
    StepImex {
        node: host::hostname(),
        major: h.imex_major,
        host_channels: h.imex_channels.clone(),
        visible,
        gpus: launchguard_core::checks::gpus::count_list(
            &sp.getenv("SLURM_STEP_GPUS").unwrap_or_default(),
        ),
        nnodes: count(sp.getenv("SLURM_STEP_NUM_NODES"))
            .or_else(|| count(sp.getenv("SLURM_NNODES")))
            .unwrap_or(1),
        mnnvl_enable: sp.getenv("NCCL_MNNVL_ENABLE"),
        imex_channels_env: sp.getenv("NVIDIA_IMEX_CHANNELS"),
        in_container: st.marker.as_ref().is_some_and(|m| m.container)
            || (before.is_some() && mnt_ns() != before),
        imex_enabled: h.imex_enabled,
    }
}

/// The node's CPUs per GPU for advice: this machine's CPUs and NVIDIA GPU files; without GPU files
/// (containers, fake devices), the allocation on this node (`S_JOB_NCPUS`, `SLURM_GPUS_ON_NODE`).
fn step_node_facts(sp: &Spank, step_gpus: u32) -> NodeFacts {
    let files = gather::nvidia_files().len() as u32;
    if files > 0 {
        return NodeFacts {
            cpus: gather::node_cpus(),
            gpus: Some(files),
        };
    }
    let gpus = sp
        .getenv("SLURM_GPUS_ON_NODE")
        .and_then(|v| launchguard_core::checks::env::parse_count(&v))
        .or((step_gpus > 0).then_some(step_gpus));
    NodeFacts {
        cpus: sp
            .get_number(NumItem::JobNcpus)
            .and_then(|n| u32::try_from(n).ok()),
        gpus,
    }
}
