//! `launch.imex_channel`: a GPU step that uses multi-node NVLink (MNNVL: GB200/GB300 NVL72 racks)
//! must see an IMEX channel.
//!
//! Sources:
//! - NVIDIA, *IMEX Service for NVLink Networks User's Guide*, "IMEX Channels": the driver registers
//!   the character device `nvidia-caps-imex-channels`; the channels
//!   `/dev/nvidia-caps-imex-channels/channelN` are created by the administrator (`mknod`, not
//!   persistent across reboots), and without one the CUDA calls that share memory across nodes fail
//!   with an insufficient-permission error (`CUDA_ERROR_NOT_PERMITTED` from `cuMemCreate` with a
//!   fabric handle), which NCCL hits when it sets up MNNVL.
//! - NVIDIA libnvidia-container (the library enroot's and Docker's nvidia hooks call): a container
//!   gets only the channels listed in `NVIDIA_IMEX_CHANNELS` (e.g. `0`); without that variable it
//!   gets none, even when the host has them (nvidia-container-toolkit, "Fix NVIDIA_IMEX_CHANNELS
//!   handling on legacy images").
//! - NCCL environment variables, `NCCL_MNNVL_ENABLE`: `0` off, `1` on, unset/`2` automatic (used
//!   when the GPUs of several nodes share an NVLink domain).
//!
//! The check applies only on a node whose driver registers `nvidia-caps-imex-channels`, to a step
//! with GPUs that wants MNNVL: `NCCL_MNNVL_ENABLE=1`, or the automatic setting on a step of several
//! nodes of a node where the site runs IMEX (the `nvidia-imex` service enabled). A current driver
//! registers the IMEX major on every GPU node (an H200 without NVSwitch has it), the IMEX package and
//! its config are installed on many nodes with the service off, and a driver option can create
//! channel 0 everywhere; NCCL's automatic setting uses MNNVL only where the GPUs share a multi-node
//! NVLink domain, so a plain multi-node step on such a node is not judged. `NCCL_MNNVL_ENABLE=0` turns the
//! check off for that step.
//! The node side (daemon, node list, channel file) is `node.imex.*`.

use super::devices::Access;
use crate::finding::{clip, CheckKind, Finding, Severity};

/// The directory of IMEX channel device files (same as `node::imex::CHANNEL_DIR`).
pub const CHANNEL_DIR: &str = "/dev/nvidia-caps-imex-channels";

/// What the task of a step sees of IMEX, gathered just before execve (in the container, if any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepImex {
    /// Node name, for the message.
    pub node: String,
    /// Major number of `nvidia-caps-imex-channels` in `/proc/devices`; `None`: the driver offers no
    /// IMEX channels (not an MNNVL node) and nothing is judged.
    pub major: Option<u32>,
    /// Channel files (`channelN`) in the host's `/dev/nvidia-caps-imex-channels`, before any container.
    pub host_channels: Vec<String>,
    /// `(path, access)` of each channel file the task sees (in its container, if any).
    pub visible: Vec<(String, Access)>,
    /// GPUs of this task (`SLURM_STEP_GPUS` entries); 0: not a GPU step, not judged.
    pub gpus: u32,
    /// Nodes of the step (`SLURM_STEP_NUM_NODES`, else the job's).
    pub nnodes: u32,
    /// `NCCL_MNNVL_ENABLE` in the step's environment.
    pub mnnvl_enable: Option<String>,
    /// `NVIDIA_IMEX_CHANNELS` in the step's environment.
    pub imex_channels_env: Option<String>,
    /// Whether the task runs in a container's mount namespace (Pyxis/enroot).
    pub in_container: bool,
    /// Whether the site runs IMEX on the host: the `nvidia-imex` service is enabled
    /// (`/etc/systemd/system/*.wants/nvidia-imex.service`).
    pub imex_enabled: bool,
}

/// Why the step is taken to use MNNVL, or `None` when it does not.
fn mnnvl_reason(s: &StepImex) -> Option<String> {
    if s.major.is_none() || s.gpus == 0 {
        return None;
    }
    match s.mnnvl_enable.as_deref().map(str::trim) {
        Some("0") => None,
        Some("1") => Some("NCCL_MNNVL_ENABLE=1".into()),
        _ if s.nnodes > 1 && s.imex_enabled => Some(format!(
            "it spans {} nodes with NCCL_MNNVL_ENABLE {}",
            s.nnodes,
            if s.mnnvl_enable.is_some() {
                "automatic"
            } else {
                "unset (automatic)"
            }
        )),
        _ => None,
    }
}

/// Judges one task: no usable IMEX channel in a step that uses MNNVL is an error.
pub fn check(s: &StepImex) -> Vec<Finding> {
    let Some(reason) = mnnvl_reason(s) else {
        return vec![];
    };
    if s.visible.iter().any(|(_, a)| *a == Access::Ok) {
        return vec![];
    }
    let major = s.major.unwrap_or_default();
    let node = clip(&s.node, 40);
    let why = "CUDA cannot share GPU memory across nodes without an IMEX channel (CUDA_ERROR_NOT_PERMITTED), \
               so NCCL fails to initialise multi-node NVLink or falls back to the network at a fraction of the bandwidth";
    let (what, fix) = if s.host_channels.is_empty() {
        (
            format!("this multi-node NVLink step ({reason}) runs on {node}, which has no IMEX channel ({CHANNEL_DIR}/channel0 is missing)"),
            format!(
                "ask the admin to create it on every node of the rack: mknod -m 666 {CHANNEL_DIR}/channel0 c {major} 0 \
                 (NVIDIA IMEX guide, \"IMEX Channels\"; `launchguard check --only node.imex` shows it)"
            ),
        )
    } else if let Some((path, access)) = s.visible.iter().find(|(_, a)| *a != Access::Missing) {
        let cause = match access {
            Access::Denied => "denied by the devices cgroup (EPERM)".to_string(),
            Access::NoPermission => "not readable and writable by the user (EACCES)".to_string(),
            Access::NotDevice => "not a character device".to_string(),
            Access::Other(e) => format!("not accessible (errno {e})"),
            Access::Ok | Access::Missing => "not usable".to_string(),
        };
        (
            format!("this multi-node NVLink step ({reason}) cannot use the IMEX channel '{}' on {node}: {cause}", clip(path, 60)),
            format!(
                "make the channel files mode 0666 root (mknod -m 666 … c {major} N) and allow character major {major} in the site's device cgroup rules"
            ),
        )
    } else if s.in_container {
        let have = clip(&s.host_channels.join(","), 40);
        (
            format!(
                "this multi-node NVLink step ({reason}) sees no IMEX channel inside its container on {node}, though the node has {have}{}",
                match &s.imex_channels_env {
                    Some(v) => format!(" (NVIDIA_IMEX_CHANNELS={})", clip(v, 20)),
                    None => " (NVIDIA_IMEX_CHANNELS is unset)".to_string(),
                }
            ),
            format!(
                "export NVIDIA_IMEX_CHANNELS=0 before srun (the container's nvidia hook adds only the channels it names), \
                 or add --container-mounts={CHANNEL_DIR}"
            ),
        )
    } else {
        (
            format!("this multi-node NVLink step ({reason}) sees no IMEX channel in its /dev on {node}, though the node has one"),
            "check the step's mount namespace: another SPANK plugin or prolog hides /dev/nvidia-caps-imex-channels".to_string(),
        )
    };
    vec![Finding {
        check: CheckKind::ImexChannel,
        severity: Severity::Error,
        what,
        why: why.into(),
        fix,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GB300 step of 2 nodes x 4 GPUs in a container on a node whose driver registers IMEX channels.
    fn gb300() -> StepImex {
        StepImex {
            node: "gb-r1-n01".into(),
            major: Some(234),
            host_channels: vec!["channel0".into()],
            visible: vec![(format!("{CHANNEL_DIR}/channel0"), Access::Ok)],
            gpus: 4,
            nnodes: 2,
            mnnvl_enable: Some("1".into()),
            imex_channels_env: Some("0".into()),
            in_container: true,
            imex_enabled: true,
        }
    }

    /// A 2-node step on H200s with a current driver: the IMEX major is registered, maybe a channel 0
    /// the driver made on its own, no IMEX service.
    #[test]
    fn a_multi_node_step_on_a_node_without_imex_set_up_is_not_judged() {
        let s = StepImex {
            node: "h200-n01".into(),
            major: Some(242),
            host_channels: vec![],
            visible: vec![],
            gpus: 8,
            nnodes: 2,
            mnnvl_enable: None,
            imex_channels_env: None,
            in_container: false,
            imex_enabled: false,
        };
        assert!(check(&s).is_empty(), "{:?}", check(&s));
        // The site's enabled IMEX service makes it an MNNVL node: the same step is judged.
        let s = StepImex {
            imex_enabled: true,
            ..s
        };
        assert_eq!(check(&s).len(), 1);
        // Asking for MNNVL explicitly is judged wherever the driver offers IMEX.
        let s = StepImex {
            imex_enabled: false,
            mnnvl_enable: Some("1".into()),
            ..s
        };
        assert_eq!(check(&s).len(), 1);
    }

    #[test]
    fn a_step_that_sees_its_channel_passes() {
        assert!(check(&gb300()).is_empty());
    }

    #[test]
    fn a_container_without_the_channel_gets_one_line_with_the_fix() {
        let mut s = gb300();
        s.visible.clear();
        s.imex_channels_env = None;
        let f = check(&s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        let line = f[0].to_string();
        assert!(line.starts_with("launchguard: launch.imex_channel: this multi-node NVLink step (NCCL_MNNVL_ENABLE=1) sees no IMEX channel inside its container on gb-r1-n01, though the node has channel0 (NVIDIA_IMEX_CHANNELS is unset); "), "{line}");
        assert!(line.ends_with("export NVIDIA_IMEX_CHANNELS=0 before srun (the container's nvidia hook adds only the channels it names), or add --container-mounts=/dev/nvidia-caps-imex-channels"), "{line}");
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn a_node_without_any_channel_names_the_mknod() {
        let mut s = gb300();
        s.visible.clear();
        s.host_channels.clear();
        s.in_container = false;
        let f = check(&s);
        assert!(f[0].what.contains("channel0 is missing"), "{:?}", f[0]);
        assert!(f[0]
            .fix
            .contains("mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c 234 0"));
    }

    #[test]
    fn a_denied_channel_says_so() {
        let mut s = gb300();
        s.visible = vec![(format!("{CHANNEL_DIR}/channel0"), Access::Denied)];
        let f = check(&s);
        assert!(
            f[0].what.contains("denied by the devices cgroup"),
            "{:?}",
            f[0]
        );
        assert!(f[0].fix.contains("major 234"));
    }

    #[test]
    fn automatic_mnnvl_counts_only_for_multi_node_steps() {
        let mut s = gb300();
        s.visible.clear();
        s.mnnvl_enable = None;
        assert!(check(&s)[0]
            .what
            .contains("spans 2 nodes with NCCL_MNNVL_ENABLE unset"));
        s.mnnvl_enable = Some("2".into());
        assert!(check(&s)[0].what.contains("NCCL_MNNVL_ENABLE automatic"));
        s.nnodes = 1;
        assert!(
            check(&s).is_empty(),
            "one node: NVLink within the tray, no IMEX"
        );
    }

    #[test]
    fn steps_that_do_not_use_mnnvl_are_not_judged() {
        let mut s = gb300();
        s.visible.clear();
        s.mnnvl_enable = Some("0".into());
        assert!(check(&s).is_empty(), "NCCL_MNNVL_ENABLE=0");
        let mut s = gb300();
        s.visible.clear();
        s.major = None;
        assert!(
            check(&s).is_empty(),
            "a driver without IMEX channels (not GB200/GB300)"
        );
        let mut s = gb300();
        s.visible.clear();
        s.gpus = 0;
        assert!(check(&s).is_empty(), "no GPUs");
    }
}
