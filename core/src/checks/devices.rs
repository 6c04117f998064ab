//! `launch.devices`: the devices a step needs are visible and usable inside it.
//!
//! `docs/field-rules.md`, "GPUs and RDMA devices visible inside the step" (cgroup.conf(5)): cgroup device
//! isolation (`ConstrainDevices`) and enroot's `ENROOT_RESTRICT_DEV` can hide the GPUs or the EFA/IB
//! verbs devices from the job, and NCCL then fails or quietly falls back to TCP. Accessibility is judged
//! with `access(2)`, which the kernel filters through the devices cgroup (EPERM when denied) without
//! opening the device (docs/spank.md, "Devices").

use crate::finding::{clip, CheckKind, Finding, Severity};

/// What `stat` + `access(R_OK|W_OK)` said about one device path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A character device the task may read and write.
    Ok,
    /// No such file in this view of `/dev` (ENOENT).
    Missing,
    /// The path exists but is not a character device (a placeholder file, a directory…).
    NotDevice,
    /// The devices cgroup denies it (EPERM).
    Denied,
    /// File permissions deny it (EACCES).
    NoPermission,
    /// Another errno.
    Other(i32),
}

/// Why a device is expected in the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// One of the node's GPU device files.
    Gpu,
    /// The verbs device of an active RDMA NIC of the node's fabric (`/sys/class/infiniband/<hca>`).
    Fabric { hca: String },
    /// `/dev/gdrdrv`, present on the host (GPUDirect RDMA copy driver).
    GdrCopy,
    /// Listed by the admin (`devices=` plugstack argument).
    Admin,
}

/// One device path and what the task sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Path as seen by the task.
    pub path: String,
    /// Why it is expected.
    pub role: Role,
    /// What the task sees.
    pub access: Access,
}

/// Everything the devices check judges, gathered in the task just before execve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepDevices {
    /// Node name, for multi-node messages.
    pub node: String,
    /// `SLURM_STEP_GPUS` as given (the GPUs this task was given), for the message.
    pub step_gpus: String,
    /// Number of entries in `SLURM_STEP_GPUS`.
    pub allocated_gpus: u32,
    /// Every GPU device file of the node (gres.conf `File=`, else `/dev/nvidiaN`). Slurm's GPU indexes
    /// do not reliably map to files (AutoDetect sorts by PCI bus, MIG), so the check counts usable files
    /// instead of naming one; empty when the count cannot be trusted (MIG), which skips the GPU part.
    pub gpus: Vec<Probe>,
    /// Verbs devices of the node's active fabric NICs, minus those gres.conf hands out as GRES.
    pub fabric: Vec<Probe>,
    /// `/dev/gdrdrv` and the admin's devices: each must be usable.
    pub others: Vec<Probe>,
    /// Whether the task runs in a container's mount namespace (Pyxis/enroot), which changes the fix.
    pub in_container: bool,
}

fn cause(a: Access, in_container: bool) -> String {
    match a {
        Access::Denied => "denied by the devices cgroup (EPERM)".into(),
        Access::Missing if in_container => "not visible inside the container".into(),
        Access::Missing => "missing from the step's /dev".into(),
        Access::NotDevice => "not a character device in the step's /dev".into(),
        Access::NoPermission => "not readable and writable by the user (EACCES)".into(),
        Access::Other(e) => format!("not accessible (errno {e})"),
        Access::Ok => "usable".into(),
    }
}

/// Problem probes, the telling ones first: with `ConstrainDevices=yes` the GPUs a task was not given
/// are always denied, so a missing or placeholder device explains more than an EPERM.
fn telling_first(mut probes: Vec<&Probe>) -> Vec<&Probe> {
    probes.sort_by_key(|p| p.access == Access::Denied);
    probes
}

fn dominant(probes: &[&Probe]) -> Access {
    probes.first().map(|p| p.access).unwrap_or(Access::Missing)
}

fn listing(probes: &[&Probe], in_container: bool) -> String {
    let mut parts: Vec<String> = probes
        .iter()
        .take(4)
        .map(|p| format!("'{}' {}", clip(&p.path, 60), cause(p.access, in_container)))
        .collect();
    if probes.len() > 4 {
        parts.push(format!("and {} more", probes.len() - 4));
    }
    parts.join(", ")
}

fn fix_for(role: &Role, access: Access, in_container: bool, path: &str) -> String {
    match (role, access) {
        (Role::Gpu, Access::Denied) => "check gres.conf (File= or AutoDetect) for this node: with ConstrainDevices=yes Slurm allows only the device files it maps to the allocated GPUs, then restart slurmd".into(),
        (Role::Gpu, _) if in_container => "keep enroot's nvidia hook enabled and do not override NVIDIA_VISIBLE_DEVICES in the image, or pass --container-mounts for the GPU devices".into(),
        (Role::Gpu, _) => "check the GPU driver on this node and gres.conf's File= entries".into(),
        (_, Access::Denied) => format!(
            "if gres.conf lists '{0}' (File=), request that GRES (e.g. --gres=nic:1) or drop it from gres.conf; otherwise allow it in the site's device cgroup rules",
            clip(path, 60)
        ),
        (_, Access::Missing | Access::NotDevice) if in_container => format!(
            "set ENROOT_RESTRICT_DEV n in /etc/enroot/enroot.conf, or add --container-mounts={0}:{0}",
            clip(parent_dir(path), 60)
        ),
        (_, Access::NoPermission) => format!("make '{}' mode 0666 (udev rule) as the driver's install guide says", clip(path, 60)),
        _ => "load the device's driver on this node and check the step's mount namespace".into(),
    }
}

fn parent_dir(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | Some(("/dev", _)) | None => path,
        Some((dir, _)) => dir,
    }
}

/// Judges the devices of a task on one node:
/// - GPUs: at least as many usable GPU device files as `SLURM_STEP_GPUS` entries (error);
/// - fabric: no usable verbs device at all is an error (NCCL falls back to TCP or fails), some
///   missing a warning;
/// - `/dev/gdrdrv` (warning) and the admin's devices (error): each must be usable.
pub fn check(s: &StepDevices) -> Vec<Finding> {
    let mut out = vec![];
    let node = clip(&s.node, 40);
    let usable_gpus = s.gpus.iter().filter(|p| p.access == Access::Ok).count() as u32;
    if !s.gpus.is_empty() && s.allocated_gpus > 0 && usable_gpus < s.allocated_gpus {
        let bad = telling_first(s.gpus.iter().filter(|p| p.access != Access::Ok).collect());
        let dom = dominant(&bad);
        out.push(Finding {
            check: CheckKind::Devices,
            severity: Severity::Error,
            what: format!(
                "this task was given {} GPU{} (SLURM_STEP_GPUS={}) but only {usable_gpus} GPU device file{} usable on {node}: {}",
                s.allocated_gpus,
                if s.allocated_gpus == 1 { "" } else { "s" },
                clip(&s.step_gpus, 40),
                if usable_gpus == 1 { " is" } else { "s are" },
                listing(&bad, s.in_container)
            ),
            why: "CUDA sees fewer GPUs than Slurm allocated, so the job fails or runs on fewer GPUs".into(),
            fix: fix_for(&Role::Gpu, dom, s.in_container, ""),
        });
    }
    let bad_fabric = telling_first(s.fabric.iter().filter(|p| p.access != Access::Ok).collect());
    if !bad_fabric.is_empty() {
        let none = bad_fabric.len() == s.fabric.len();
        let dom = dominant(&bad_fabric);
        out.push(Finding {
            check: CheckKind::Devices,
            severity: if none { Severity::Error } else { Severity::Warning },
            what: format!(
                "{} of the node's {} RDMA verbs device{} usable in the step on {node}: {}",
                if none { "none".to_string() } else { format!("{} out", s.fabric.len() - bad_fabric.len()) },
                s.fabric.len(),
                if s.fabric.len() == 1 { " is" } else { "s are" },
                listing(&bad_fabric, s.in_container)
            ),
            why: if none {
                "NCCL cannot use the EFA/InfiniBand NICs and falls back to TCP sockets (a fraction of the bandwidth) or fails to initialise".into()
            } else {
                "NCCL uses fewer NICs than the node has, which lowers its bandwidth".into()
            },
            fix: fix_for(&bad_fabric[0].role, dom, s.in_container, &bad_fabric[0].path),
        });
    }
    for p in s.others.iter().filter(|p| p.access != Access::Ok) {
        let (name, why, severity) = match p.role {
            Role::GdrCopy => (
                format!("'{}'", clip(&p.path, 60)),
                "GPUDirect RDMA copies (gdrcopy) are unavailable, which slows NCCL's small-message path",
                Severity::Warning,
            ),
            _ => (
                format!("'{}' (required by the admin)", clip(&p.path, 60)),
                "the site marks this device as required by its jobs",
                Severity::Error,
            ),
        };
        out.push(Finding {
            check: CheckKind::Devices,
            severity,
            what: format!("{name} is {} on {node}", cause(p.access, s.in_container)),
            why: why.into(),
            fix: fix_for(&p.role, p.access, s.in_container, &p.path),
        });
    }
    out
}

/// One RDMA device of the node (`/sys/class/infiniband/<name>`) and whether the task can use its verbs
/// device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaNic {
    /// `rdmap16s27`, `mlx5_0`, …
    pub name: String,
    /// Kernel driver (`efa`, `mlx5_core`, …).
    pub driver: String,
    /// Whether a port is `ACTIVE` (`ports/*/state`).
    pub active: bool,
    /// Whether the task can read and write one of its `/dev/infiniband/uverbsN`.
    pub exposed: bool,
}

/// Other RDMA devices next to EFA. A link-down extra device is harmless (NCCL keeps using EFA: nothing
/// is said); active non-EFA verbs devices exposed to the step can make libfabric's EFA provider
/// discovery fail (`fi_info -p efa` returns -61, no data available) and NCCL fall back to TCP sockets,
/// as reported against aws-ofi-nccl on nodes with extra Mellanox NICs: a warning, never a rejection.
pub fn extra_rdma_next_to_efa(nics: &[RdmaNic]) -> Vec<Finding> {
    let software = |d: &str| d.is_empty() || d == "rxe" || d == "siw" || d.starts_with("rdma_rxe");
    if !nics.iter().any(|n| n.driver == "efa") {
        return vec![];
    }
    let extra: Vec<String> = nics
        .iter()
        .filter(|n| n.driver != "efa" && !software(&n.driver) && n.active && n.exposed)
        .map(|n| format!("{} ({})", n.name, n.driver))
        .collect();
    if extra.is_empty() {
        return vec![];
    }
    vec![Finding {
        check: CheckKind::Devices,
        severity: Severity::Warning,
        what: format!(
            "active non-EFA RDMA device{} {} {} usable in this EFA step",
            if extra.len() == 1 { "" } else { "s" },
            clip(&extra.join(", "), 80),
            if extra.len() == 1 { "is" } else { "are" }
        ),
        why: "libfabric can then fail to open the EFA provider (fi_info -p efa: -61) and NCCL falls back to TCP sockets at a fraction of the bandwidth".into(),
        fix: "hide the extra devices from EFA jobs (gres.conf File= with ConstrainDevices=yes, or ENROOT_RESTRICT_DEV) and keep FI_PROVIDER=efa; check the NCCL log for 'Selected provider is efa'".into(),
    }]
}

#[cfg(test)]
#[rustfmt::skip]
mod tests {
    use super::*;

    fn p(path: &str, role: Role, access: Access) -> Probe {
        Probe { path: path.into(), role, access }
    }

    fn gpus(access: &[Access]) -> Vec<Probe> {
        access.iter().enumerate().map(|(i, a)| p(&format!("/dev/nvidia{i}"), Role::Gpu, *a)).collect()
    }

    fn step(allocated: u32, g: Vec<Probe>) -> StepDevices {
        StepDevices { node: "vm".into(), step_gpus: "0".into(), allocated_gpus: allocated, gpus: g, ..Default::default() }
    }

    #[test]
    fn gpus_are_counted_not_mapped() {
        use Access::*;
        // ConstrainDevices: the allocated GPU usable, the others denied — whatever their order
        assert!(check(&step(1, gpus(&[Denied, Ok, Denied, Denied]))).is_empty());
        assert!(check(&step(2, gpus(&[Ok, Denied, Ok]))).is_empty());
        // fewer usable than allocated
        let f = check(&step(2, gpus(&[Ok, Denied, Denied])));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].what.starts_with("this task was given 2 GPUs (SLURM_STEP_GPUS=0) but only 1 GPU device file is usable on vm: '/dev/nvidia1' denied by the devices cgroup (EPERM)"), "{}", f[0].what);
        assert!(f[0].fix.starts_with("check gres.conf (File= or AutoDetect)"), "{}", f[0].fix);
        // MIG or unknown files: no GPU judgement
        assert!(check(&step(2, vec![])).is_empty());
        // in a container, a placeholder for the given GPU explains more than the denied others
        let mut s = step(1, gpus(&[Denied, NotDevice]));
        s.in_container = true;
        let f = check(&s);
        assert!(f[0].what.ends_with("'/dev/nvidia1' not a character device in the step's /dev, '/dev/nvidia0' denied by the devices cgroup (EPERM)"), "{}", f[0].what);
        assert!(f[0].fix.contains("nvidia hook"), "{}", f[0].fix);
    }

    #[test]
    fn fabric_none_is_an_error_some_a_warning() {
        use Access::*;
        let nic = |i: u32, a| p(&format!("/dev/infiniband/uverbs{i}"), Role::Fabric { hca: format!("rdmap{i}") }, a);
        let mut s = StepDevices { node: "vm".into(), in_container: true, ..Default::default() };
        s.fabric = vec![nic(0, Missing), nic(1, Missing)];
        let f = check(&s);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.devices: none of the node's 2 RDMA verbs devices are usable in the step on vm: \
             '/dev/infiniband/uverbs0' not visible inside the container, '/dev/infiniband/uverbs1' not visible inside the container; \
             NCCL cannot use the EFA/InfiniBand NICs and falls back to TCP sockets (a fraction of the bandwidth) or fails to initialise; \
             set ENROOT_RESTRICT_DEV n in /etc/enroot/enroot.conf, or add --container-mounts=/dev/infiniband:/dev/infiniband"
        );
        assert_eq!(f[0].severity, Severity::Error);
        s.fabric = vec![nic(0, Ok), nic(1, Missing)];
        assert_eq!(check(&s)[0].severity, Severity::Warning);
        s.fabric = vec![nic(0, Ok)];
        assert!(check(&s).is_empty());
    }

    #[test]
    fn admin_and_gdrcopy_devices() {
        let mut s = StepDevices { node: "vm".into(), ..Default::default() };
        s.others = vec![p("/dev/gdrdrv", Role::GdrCopy, Access::Missing), p("/dev/x", Role::Admin, Access::Denied)];
        let f = check(&s);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[1].severity, Severity::Error);
        assert!(f[1].fix.contains("request that GRES (e.g. --gres=nic:1)"), "{}", f[1].fix);
    }

    #[test]
    fn extra_rdma_devices_next_to_efa_warn_only_when_active_and_exposed() {
        let nic = |name: &str, driver: &str, active: bool, exposed: bool| RdmaNic {
            name: name.into(),
            driver: driver.into(),
            active,
            exposed,
        };
        let efa = nic("rdmap16s27", "efa", true, true);
        // link-down mlx5 beside EFA: nothing
        assert!(extra_rdma_next_to_efa(&[efa.clone(), nic("mlx5_0", "mlx5_core", false, true)]).is_empty());
        // active but hidden from the step: nothing
        assert!(extra_rdma_next_to_efa(&[efa.clone(), nic("mlx5_0", "mlx5_core", true, false)]).is_empty());
        // active and exposed: one warning naming them
        let f = extra_rdma_next_to_efa(&[
            efa.clone(),
            nic("mlx5_0", "mlx5_core", true, true),
            nic("mlx5_1", "mlx5_core", true, true),
        ]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].what.contains("mlx5_0 (mlx5_core), mlx5_1 (mlx5_core) are usable"), "{}", f[0].what);
        // no EFA at all (an IB node): not this check's business; software RDMA is ignored
        assert!(extra_rdma_next_to_efa(&[nic("mlx5_0", "mlx5_core", true, true)]).is_empty());
        assert!(extra_rdma_next_to_efa(&[efa, nic("rxe0", "rxe", true, true)]).is_empty());
    }
}
