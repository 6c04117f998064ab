//! `launch.devices`: the devices a step needs are visible and usable inside it.
//!
//! Seed 000 (Step 3, troubleshooting "/dev/infiniband not visible inside the container"): cgroup device
//! isolation (`ConstrainDevices`) and enroot's `ENROOT_RESTRICT_DEV` can hide the GPUs or the EFA/IB
//! verbs devices from the job, and NCCL then fails or quietly falls back to TCP. Accessibility is judged
//! with `access(2)`, which the kernel filters through the devices cgroup (EPERM when denied) without
//! opening the device (spank-facts.md, "Testing device access without opening the device").

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
    /// One of the step's allocated GPUs (`SLURM_STEP_GPUS` index → gres.conf `File=`).
    Gpu { index: u32 },
    /// The verbs device of an RDMA NIC the host has (`/sys/class/infiniband/<hca>`).
    Fabric { hca: String },
    /// `/dev/gdrdrv`, present on the host (GPUDirect RDMA copy driver).
    GdrCopy,
    /// Listed by the admin (`devices=` plugstack argument).
    Admin,
}

/// One device the step should see.
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
    /// GPUs allocated to the step on this node (`SLURM_STEP_GPUS`).
    pub allocated_gpus: u32,
    /// The allocated GPUs whose device files are known (from gres.conf or `/dev/nvidiaN`).
    pub probes: Vec<Probe>,
    /// Whether the task runs in a container's mount namespace (Pyxis/enroot), which changes the fix.
    pub in_container: bool,
}

fn cause_and_fix(p: &Probe, in_container: bool) -> (String, String) {
    let what = match p.access {
        Access::Denied => "is denied by the step's devices cgroup (EPERM)".to_string(),
        Access::Missing if in_container => "is not visible inside the container".to_string(),
        Access::Missing => "does not exist in the step's /dev".to_string(),
        Access::NotDevice => "is not a character device in the step's /dev".to_string(),
        Access::NoPermission => "is not readable and writable by the user (EACCES)".to_string(),
        Access::Other(e) => format!("cannot be accessed (errno {e})"),
        Access::Ok => "is accessible".to_string(),
    };
    let fix = match (&p.role, p.access) {
        (Role::Gpu { .. }, Access::Denied) => {
            "make gres.conf's File= list this node's GPU device files in the order Slurm numbers them (ConstrainDevices=yes in cgroup.conf allows only the allocated files), then restart slurmd".to_string()
        }
        (Role::Gpu { .. }, _) if in_container => {
            "keep enroot's nvidia hook enabled and do not override NVIDIA_VISIBLE_DEVICES in the image, or pass --container-mounts for the device".to_string()
        }
        (Role::Gpu { .. }, _) => "check the GPU driver on this node and gres.conf's File= entries".to_string(),
        (_, Access::Denied) => format!(
            "allow '{}' in the devices cgroup: remove it from gres.conf (ConstrainDevices=yes denies GRES files the step was not given) or from the site's cgroup rules",
            clip(&p.path, 60)
        ),
        (_, Access::Missing | Access::NotDevice) if in_container => format!(
            "set ENROOT_RESTRICT_DEV n in /etc/enroot/enroot.conf, or add --container-mounts={0}:{0}",
            clip(parent_dir(&p.path), 60)
        ),
        (_, Access::NoPermission) => format!("make '{}' mode 0666 (udev rule) as the driver's install guide says", clip(&p.path, 60)),
        _ => "load the device's driver on this node and check the step's mount namespace".to_string(),
    };
    (what, fix)
}

fn parent_dir(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => path,
        Some(("/dev", _)) => path,
        Some((dir, _)) => dir,
    }
}

/// Judges the devices of a step on one node: every expected device must be an accessible character
/// device; one finding per problem device (error severity: NCCL or CUDA will fail or fall back).
pub fn check(s: &StepDevices) -> Vec<Finding> {
    let mut out = vec![];
    for p in &s.probes {
        if p.access == Access::Ok {
            continue;
        }
        let (what, fix) = cause_and_fix(p, s.in_container);
        let (name, why) = match &p.role {
            Role::Gpu { index } => (
                format!("allocated GPU {index} ('{}')", clip(&p.path, 60)),
                format!(
                    "the step was given {} GPU{} on {} but CUDA cannot use this one, so the job fails or runs on fewer GPUs",
                    s.allocated_gpus,
                    if s.allocated_gpus == 1 { "" } else { "s" },
                    clip(&s.node, 40)
                ),
            ),
            Role::Fabric { hca } => (
                format!("'{}' of RDMA NIC {}", clip(&p.path, 60), clip(hca, 20)),
                "NCCL cannot use the EFA/InfiniBand NIC and falls back to TCP sockets (a fraction of the bandwidth) or fails to initialise".to_string(),
            ),
            Role::GdrCopy => (
                format!("'{}'", clip(&p.path, 60)),
                "GPUDirect RDMA copies (gdrcopy) are unavailable, which slows NCCL's small-message path".to_string(),
            ),
            Role::Admin => (
                format!("'{}' (required by the admin)", clip(&p.path, 60)),
                "the site marks this device as required by its jobs".to_string(),
            ),
        };
        out.push(Finding {
            check: CheckKind::Devices,
            severity: if p.role == Role::GdrCopy {
                Severity::Warning
            } else {
                Severity::Error
            },
            what: format!("{name} {what} on {}", clip(&s.node, 40)),
            why,
            fix,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(probes: Vec<Probe>, in_container: bool) -> StepDevices {
        StepDevices {
            node: "vm".into(),
            allocated_gpus: 1,
            probes,
            in_container,
        }
    }

    #[test]
    fn accessible_devices_pass() {
        let s = step(
            vec![Probe {
                path: "/dev/nvidia0".into(),
                role: Role::Gpu { index: 0 },
                access: Access::Ok,
            }],
            false,
        );
        assert!(check(&s).is_empty());
    }

    #[test]
    fn each_cause_names_its_fix() {
        let gpu_denied = Probe {
            path: "/dev/nvidia0".into(),
            role: Role::Gpu { index: 0 },
            access: Access::Denied,
        };
        let f = check(&step(vec![gpu_denied], false));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].what.contains("denied by the step's devices cgroup"),
            "{}",
            f[0].what
        );
        assert!(f[0].fix.contains("gres.conf's File="), "{}", f[0].fix);

        let ib_hidden = Probe {
            path: "/dev/infiniband/uverbs0".into(),
            role: Role::Fabric {
                hca: "mlx5_0".into(),
            },
            access: Access::Missing,
        };
        let f = check(&step(vec![ib_hidden.clone()], true));
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.devices: '/dev/infiniband/uverbs0' of RDMA NIC mlx5_0 is not visible inside the container on vm; \
             NCCL cannot use the EFA/InfiniBand NIC and falls back to TCP sockets (a fraction of the bandwidth) or fails to initialise; \
             set ENROOT_RESTRICT_DEV n in /etc/enroot/enroot.conf, or add --container-mounts=/dev/infiniband:/dev/infiniband"
        );
        let f = check(&step(vec![ib_hidden], false));
        assert!(
            f[0].what.contains("does not exist in the step's /dev"),
            "{}",
            f[0].what
        );

        let gdr = Probe {
            path: "/dev/gdrdrv".into(),
            role: Role::GdrCopy,
            access: Access::Missing,
        };
        assert_eq!(check(&step(vec![gdr], true))[0].severity, Severity::Warning);
    }
}
