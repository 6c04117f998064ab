//! slurmstepd (remote context): judges the step as Slurm built it.
//!
//! - `user_init` (once per step on each node, before the tasks fork) judges CPUs per task from
//!   `S_STEP_CPUS_PER_TASK` (the truth) and the step's GPUs. Warnings print there, on node 0 only, so a
//!   multi-node step shows each finding once.
//! - `task_init_privileged` (each task, root, before any other plugin's `task_init`) stops every task
//!   of a step rejected in `user_init`; it is the first remote callback whose failure reaches srun's exit
//!   code (exit 1) — a failing `user_init` only gives `task 0 launch failed` and exit 0 on 22.05
//!   (spank-facts.md). Task 0 prints the reason.
//!   It also makes sure enroot's runtime directory exists (`launch.enroot_runtime`, repaired as root
//!   before Pyxis's `task_init` needs it) and gathers the host facts `task_init` needs.
//! - `task_init` (each task, as the user, just before execve; inside the container when launchguard
//!   is listed after Pyxis) judges what the program will really get: a missing `PATH`, hidden or
//!   denied devices (`launch.devices`, with `access(2)`), the NCCL environment (`launch.nccl_env`).
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
use launchguard_core::checks::nccl_env::{self, Fabric};
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
    cpus: Verdict,
    /// Node facts for `task_init`'s checks, gathered once here (before the tasks fork).
    host: Option<HostFacts>,
}

static STATE: OnceLock<Option<StepState>> = OnceLock::new();

/// This task's mount namespace at `task_init_privileged`, before Pyxis's `task_init` (a different one
/// at `task_init` means the task now runs in a container).
static TIP_MNT_NS: OnceLock<Option<String>> = OnceLock::new();

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
        if !st.cpus.reject && node_id == 0 {
            for f in &st.cpus.shown {
                ffi::log_user(&f.to_string());
            }
        }
    }
    true
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
    let mut findings = vec![];
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
                || sp.getenv("SLURM_PTY_PORT").is_some(),
        };
        findings.extend(cpus_per_task::check_step(
            release,
            &facts,
            marker.as_ref(),
            || step_node_facts(sp, gpus),
            &policy,
        ));
    }
    let cpus = judge(findings, &policy);
    let needs_host = policy.mode_for(CheckKind::Devices) != Mode::Off
        || policy.mode_for(CheckKind::NcclEnv) != Mode::Off
        || policy.mode_for(CheckKind::ImexChannel) != Mode::Off;
    let step_has_gpus = sp
        .getenv("SLURM_STEP_GPUS")
        .is_some_and(|l| launchguard_core::checks::gpus::count_list(&l) > 0);
    let host = needs_host.then(|| host::gather(&policy, &label, step_has_gpus));
    Some(StepState {
        policy,
        label,
        job,
        step,
        uid: u32::try_from(uid).unwrap_or(u32::MAX),
        marker,
        cpus,
        host,
    })
}

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
            ffi::log_user(&f.to_string());
        }
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
        if sp.get_number(NumItem::TaskGlobalId) == Some(0) {
            for f in &st.cpus.shown {
                ffi::log_user(&f.to_string());
            }
            ffi::log_user(STOPPED);
        }
        if local0 {
            report(st, "step", &st.cpus.shown, true);
        }
        return false;
    }
    let _ = TIP_MNT_NS.set(mnt_ns());
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
    let Some(path) = st.policy.agent_socket.as_deref() else {
        return;
    };
    let v = crate::agent_client::Verdict {
        phase,
        job: Some(st.job),
        step: Some(st.step),
        uid: st.uid,
        shown,
        reject,
    };
    let line = crate::agent_client::report_line(&st.policy, &v);
    // The root phase connects and keeps the socket for the task phase: by then a Pyxis task runs in
    // the container's mount namespace, where the agent's socket path does not exist.
    if phase == "step" {
        if let Ok(s) = crate::agent_client::connect(path) {
            let _ = crate::agent_client::send_on(&s, &line);
            let _ = AGENT_CONN.set(s);
        }
    } else {
        let kept = AGENT_CONN
            .get()
            .map(|s| crate::agent_client::send_on(s, &line).is_ok());
        if kept != Some(true) {
            // No kept connection, or the agent cut it (a long container import): try the path.
            let _ = crate::agent_client::send_line(path, &line);
        }
    }
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
    if st.policy.mode_for(CheckKind::ExportAll) != Mode::Off {
        let step_env = StepEnv {
            has_path: sp.getenv("PATH").is_some(),
            argv0: sp.job_argv0(),
            container: st.marker.as_ref().is_some_and(|m| m.container),
        };
        let already = st
            .marker
            .as_ref()
            .is_some_and(|m| m.reported(CheckKind::ExportAll.id()));
        findings.extend(export::check_step(&step_env, already));
    }
    let mut ok = true;
    if let Some(h) = st.host.as_ref() {
        if st.policy.mode_for(CheckKind::NcclEnv) != Mode::Off {
            let fabric = match st.policy.fabric {
                FabricChoice::Efa => Some(Fabric::Efa),
                FabricChoice::Ib => Some(Fabric::Ib),
                FabricChoice::Auto => {
                    let drivers: Vec<&str> = h.hcas.iter().map(|x| x.driver.as_str()).collect();
                    nccl_env::detect_fabric(&drivers)
                }
            };
            let vars = sp.job_env_with_prefixes(&["NCCL_", "FI_"]);
            findings.extend(nccl_env::check(
                &vars,
                fabric,
                Some(&h.interfaces),
                &h.nccl_rules,
            ));
        }
        if st.policy.mode_for(CheckKind::Devices) != Mode::Off {
            ok &= speak(
                sp,
                st,
                devices::check(&step_devices(sp, st, h)),
                true,
                &mut seen,
            );
        }
        if st.policy.mode_for(CheckKind::ImexChannel) != Mode::Off && h.imex_major.is_some() {
            ok &= speak(sp, st, imex::check(&step_imex(sp, st, h)), true, &mut seen);
        }
    }
    ok &= speak(sp, st, findings, false, &mut seen);
    if !seen.is_empty() && sp.get_number(NumItem::TaskLocalId) == Some(0) {
        report(st, "task", &seen, !ok);
    }
    ok
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
