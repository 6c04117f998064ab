//! `node.imex.*`: what multi-node NVLink (MNNVL: GB200/GB300 NVL72 racks, where the GPUs of up to 18
//! compute trays share one NVLink domain) needs on each node, from NVIDIA's *IMEX Service for NVLink
//! Networks User's Guide* (docs.nvidia.com/multi-node-nvlink-systems/imex-guide):
//!
//! - "Getting Started with IMEX": the IMEX daemon runs as the systemd service `nvidia-imex`, and
//!   must be up before CUDA applications start ("Deployment Models"); without it, memory exported
//!   by a GPU on one node cannot be imported on another, so NCCL cannot use NVLink across nodes.
//! - "IMEX Service Config Options" / "Deployment Models": `/etc/nvidia-imex/config.cfg` names the
//!   node list (`IMEX_NODE_CONFIG_FILE`, default `/etc/nvidia-imex/nodes_config.cfg`) with one IP
//!   address per node of the domain; the daemon waits for a quorum of those nodes.
//! - "IMEX Channels": the driver registers the character device `nvidia-caps-imex-channels` (its
//!   major number is in `/proc/devices` and can differ between nodes); the administrator creates
//!   `/dev/nvidia-caps-imex-channels/channelN` with `mknod` (not persistent across reboots), and
//!   without a channel the CUDA calls that import fabric memory fail with a permission error.
//!
//! Which nodes are judged: a current NVIDIA driver registers `nvidia-caps-imex-channels` on every
//! GPU node (an H100 or H200 without NVSwitch has it too), so the driver's device alone does not make
//! a node an MNNVL node. The checks judge a node only when it is one: its GPUs completed their NVLink
//! fabric registration into a multi-node domain (NVML's GPU fabric info: a non-zero cluster UUID, the
//! rule NCCL follows, [`super::gpu::mnnvl`]), or the site runs IMEX on it (an `nvidia-imex` process,
//! or its service enabled). The IMEX package and its `config.cfg` are installed on many nodes that are
//! no MNNVL nodes (driver containers and images ship them with the service off), so they are no sign. Every other node passes and says why in the `imex` fact
//! ([`scope`]). Gathering: `node-agent/src/gather/imex.rs` (root paths configurable for fixture trees).

use super::gpu::Mnnvl;
use super::{Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.imex.service",
        "where the NVIDIA driver offers IMEX channels (multi-node NVLink), the nvidia-imex daemon runs",
    ),
    (
        "node.imex.nodes_config",
        "the IMEX node list (IMEX_NODE_CONFIG_FILE of /etc/nvidia-imex/config.cfg) exists and names nodes",
    ),
    (
        "node.imex.channel",
        "/dev/nvidia-caps-imex-channels/channel0 exists with the driver's major number",
    ),
];

/// The default IMEX configuration file (IMEX guide, "IMEX Service Config Options").
pub const CONFIG_FILE: &str = "/etc/nvidia-imex/config.cfg";
/// The default node list when the configuration names none.
pub const DEFAULT_NODES_FILE: &str = "/etc/nvidia-imex/nodes_config.cfg";
/// The directory of IMEX channel device files.
pub const CHANNEL_DIR: &str = "/dev/nvidia-caps-imex-channels";

/// One file in [`CHANNEL_DIR`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// File name, e.g. `channel0`.
    pub name: String,
    /// `(major, minor)` when it is a character device; `None` for anything else.
    pub dev: Option<(u32, u32)>,
}

/// The node list the IMEX configuration points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodesFile {
    /// Its path (as named by `IMEX_NODE_CONFIG_FILE`, or the default).
    pub path: String,
    /// Node entries (non-empty, non-comment lines); `Err` when the file cannot be read.
    pub nodes: Result<usize, String>,
}

/// Everything the IMEX family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImexFacts {
    /// Major number of `nvidia-caps-imex-channels` in `/proc/devices`; `None`: the loaded driver
    /// offers no IMEX channels (not an MNNVL node, or no NVIDIA driver), and every check passes.
    pub major: Option<u32>,
    /// The files in [`CHANNEL_DIR`] (empty when it is missing).
    pub channels: Vec<Channel>,
    /// PIDs of running `nvidia-imex` processes (from `/proc/<pid>/comm`).
    pub daemons: Vec<u32>,
    /// Whether [`CONFIG_FILE`] exists.
    pub config_present: bool,
    /// Whether the `nvidia-imex` systemd service is enabled (a `*.wants/nvidia-imex.service` link
    /// under `/etc/systemd/system`). The package (and its config) is installed on many nodes that are
    /// no MNNVL nodes, with the service left off, so the config alone is no sign.
    pub service_enabled: bool,
    /// The node list, when the configuration exists.
    pub nodes: Option<NodesFile>,
    /// Whether NVML puts this node's GPUs in a multi-node NVLink domain.
    pub mnnvl: Mnnvl,
}

/// Whether the IMEX checks judge this node: `Ok(why)` when they do, `Err(why not)` when it passes
/// unjudged. Judged: the driver offers IMEX channels and either NVML puts the GPUs in a multi-node
/// NVLink domain or the site runs IMEX here (daemon running or service enabled).
pub fn scope(f: &ImexFacts) -> Result<String, String> {
    let Some(major) = f.major else {
        return Err("not judged: the NVIDIA driver offers no IMEX channels".into());
    };
    if let Mnnvl::Member(d) = &f.mnnvl {
        return Ok(format!(
            "judged: the GPUs are in multi-node NVLink domain {d} (NVML fabric info)"
        ));
    }
    if !f.daemons.is_empty() || f.service_enabled {
        return Ok(format!(
            "judged: the site runs IMEX here ({}), driver major {major}",
            if f.daemons.is_empty() {
                "nvidia-imex.service is enabled"
            } else {
                "nvidia-imex runs"
            }
        ));
    }
    Err(match &f.mnnvl {
        Mnnvl::No(why) => format!(
            "not judged: not a multi-node NVLink node ({why}){}",
            if f.config_present {
                ", and nvidia-imex is installed but not enabled"
            } else {
                ""
            }
        ),
        Mnnvl::Pending(st) => format!(
            "not judged: NVLink fabric registration {st} (node.gpu.fabric) and no IMEX set up"
        ),
        Mnnvl::Unknown(why) => {
            format!("not judged: no IMEX set up and NVML cannot say whether this is a multi-node NVLink node ({why})")
        }
        Mnnvl::Member(_) => unreachable!("handled above"),
    })
}

/// `IMEX_NODE_CONFIG_FILE=…` of an IMEX `config.cfg` (`KEY=VALUE` lines, `#` comments), or
/// [`DEFAULT_NODES_FILE`].
pub fn nodes_file_of(config: &str) -> String {
    config
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == "IMEX_NODE_CONFIG_FILE")
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .rfind(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_NODES_FILE.to_string())
}

/// Node entries of an IMEX node list: one IP address (or host name) per line, `#` comments.
pub fn count_nodes(text: &str) -> usize {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .count()
}

/// The major number of `name` in the text of `/proc/devices` (`<major> <name>` lines).
pub fn major_of(proc_devices: &str, name: &str) -> Option<u32> {
    proc_devices.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let major = it.next()?.parse().ok()?;
        (it.next()? == name && it.next().is_none()).then_some(major)
    })
}

fn mknod_fix(major: u32) -> String {
    format!(
        "as root: mkdir -p {CHANNEL_DIR} && mknod -m 666 {CHANNEL_DIR}/channel0 c {major} 0 \
         (major {major} is nvidia-caps-imex-channels in /proc/devices; the IMEX guide, \"IMEX Channels\"), \
         and recreate it at every boot"
    )
}

/// Judges the IMEX family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &ImexFacts) -> Vec<Outcome> {
    let (Some(major), Ok(_)) = (f.major, scope(f)) else {
        return CHECKS.iter().map(|(id, _)| Outcome::ok(id)).collect();
    };
    let member = match &f.mnnvl {
        Mnnvl::Member(d) => format!("this node's GPUs are in multi-node NVLink domain {d}"),
        _ => "IMEX is set up on this node".to_string(),
    };
    const WHY_SERVICE: &str =
        "GPU memory cannot be shared across nodes, so NCCL cannot use multi-node NVLink \
         and jobs spanning nodes fail at CUDA/NCCL init or fall back to the network";
    let service = if !f.daemons.is_empty() {
        Outcome::ok("node.imex.service")
    } else if !f.config_present {
        Outcome::new(
            "node.imex.service",
            Status::Critical,
            format!("{member} but no nvidia-imex daemon runs and {CONFIG_FILE} is missing"),
            WHY_SERVICE,
            "install the nvidia-imex package matching the driver, list the rack's node IPs in /etc/nvidia-imex/nodes_config.cfg, then systemctl enable --now nvidia-imex",
        )
    } else {
        Outcome::new(
            "node.imex.service",
            Status::Critical,
            format!("{member} but no nvidia-imex daemon runs"),
            WHY_SERVICE,
            "systemctl enable --now nvidia-imex, then check it with nvidia-imex-ctl -q (READY) and journalctl -u nvidia-imex",
        )
    };
    let nodes = match &f.nodes {
        Some(NodesFile { path, nodes }) if !matches!(nodes, Ok(n) if *n > 0) => Outcome::new(
            "node.imex.nodes_config",
            Status::Critical,
            match nodes {
                Ok(_) => format!("the IMEX node list {} names no nodes", super::quote(path)),
                Err(e) => format!("the IMEX node list {} cannot be read ({e})", super::quote(path)),
            },
            "nvidia-imex never reaches quorum with the other nodes of the NVLink domain, so multi-node NVLink jobs fail",
            format!(
                "write one IP address per node of this NVLink domain (the same list on every node) into {path}, then systemctl restart nvidia-imex"
            ),
        ),
        _ => Outcome::ok("node.imex.nodes_config"),
    };
    let ch0 = f.channels.iter().find(|c| c.name == "channel0");
    let why_channel =
        "CUDA calls that import multi-node NVLink memory fail with a permission error \
                       (CUDA_ERROR_NOT_PERMITTED), so NCCL cannot use NVLink across nodes";
    let channel = match ch0.map(|c| c.dev) {
        Some(Some((ma, 0))) if ma == major => Outcome::ok("node.imex.channel"),
        None => Outcome::new(
            "node.imex.channel",
            Status::Critical,
            format!("{CHANNEL_DIR}/channel0 is missing (the driver's IMEX channels have major {major})"),
            why_channel,
            mknod_fix(major),
        ),
        Some(None) => Outcome::new(
            "node.imex.channel",
            Status::Critical,
            format!("{CHANNEL_DIR}/channel0 is not a character device"),
            why_channel,
            format!("rm {CHANNEL_DIR}/channel0, then {}", mknod_fix(major)),
        ),
        Some(Some((ma, mi))) => Outcome::new(
            "node.imex.channel",
            Status::Critical,
            format!(
                "{CHANNEL_DIR}/channel0 is device {ma}:{mi}, but the driver's IMEX channel 0 is {major}:0 (a stale node from another driver load)"
            ),
            why_channel,
            format!("rm {CHANNEL_DIR}/channel0, then {}", mknod_fix(major)),
        ),
    };
    vec![service, nodes, channel]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> ImexFacts {
        ImexFacts {
            major: Some(234),
            channels: vec![Channel {
                name: "channel0".into(),
                dev: Some((234, 0)),
            }],
            daemons: vec![4242],
            config_present: true,
            service_enabled: true,
            nodes: Some(NodesFile {
                path: DEFAULT_NODES_FILE.into(),
                nodes: Ok(18),
            }),
            mnnvl: Mnnvl::Member("5f1e2d3c4b5a69788796a5b4c3d2e1f0/7".into()),
        }
    }

    /// An H100/H200 without NVSwitch and a current driver: the IMEX major is registered, nothing
    /// else of IMEX exists, NVML says the GPU fabric is not supported.
    fn h200() -> ImexFacts {
        ImexFacts {
            major: Some(242),
            channels: vec![],
            daemons: vec![],
            config_present: false,
            service_enabled: false,
            nodes: None,
            mnnvl: Mnnvl::No("GPU fabric not supported on 1 of 1 GPU(s) (NVIDIA H200)".into()),
        }
    }

    #[test]
    fn an_h200_with_the_imex_major_but_no_nvlink_domain_is_not_judged() {
        let f = h200();
        assert!(
            judge(&f).iter().all(|o| o.status == Status::Ok),
            "{:?}",
            judge(&f)
        );
        let why = scope(&f).unwrap_err();
        assert!(why.contains("not a multi-node NVLink node"), "{why}");
        // NVML unavailable and nothing of IMEX set up: not judged either (node.gpu.nvml says why).
        let f = ImexFacts {
            mnnvl: Mnnvl::Unknown("NVML unavailable".into()),
            ..h200()
        };
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
    }

    #[test]
    fn a_gb300_in_an_nvlink_domain_without_imex_is_critical() {
        let f = ImexFacts {
            mnnvl: Mnnvl::Member("5f1e2d3c4b5a69788796a5b4c3d2e1f0/7".into()),
            ..h200()
        };
        let out = judge(&f);
        assert_eq!(status(&out, "node.imex.service"), Status::Critical);
        assert_eq!(status(&out, "node.imex.channel"), Status::Critical);
        assert!(
            out[0].what.contains("multi-node NVLink domain 5f1e"),
            "{}",
            out[0].what
        );
        assert!(scope(&f).unwrap().starts_with("judged"));
    }

    #[test]
    fn a_node_where_the_site_set_imex_up_is_judged_whatever_nvml_says() {
        // The package installed (config.cfg) with its service off: not a sign (driver containers and
        // images ship it everywhere).
        let f = ImexFacts {
            config_present: true,
            ..h200()
        };
        assert!(
            judge(&f).iter().all(|o| o.status == Status::Ok),
            "{:?}",
            judge(&f)
        );
        assert!(scope(&f).unwrap_err().contains("installed but not enabled"));
        let f = ImexFacts {
            config_present: true,
            service_enabled: true,
            nodes: Some(NodesFile {
                path: DEFAULT_NODES_FILE.into(),
                nodes: Ok(0),
            }),
            ..h200()
        };
        let out = judge(&f);
        assert_eq!(status(&out, "node.imex.nodes_config"), Status::Critical);
        assert_eq!(status(&out, "node.imex.service"), Status::Critical);
    }

    fn status(out: &[Outcome], id: &str) -> Status {
        out.iter().find(|o| o.id == id).expect(id).status
    }

    #[test]
    fn one_outcome_per_id_and_a_healthy_node_passes() {
        let out = judge(&healthy());
        let ids: Vec<_> = out.iter().map(|o| o.id).collect();
        let want: Vec<_> = CHECKS.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, want);
        assert!(out.iter().all(|o| o.status == Status::Ok), "{out:?}");
    }

    #[test]
    fn a_node_without_imex_in_its_driver_is_not_judged() {
        let f = ImexFacts {
            major: None,
            channels: vec![],
            daemons: vec![],
            config_present: false,
            service_enabled: false,
            nodes: None,
            mnnvl: Mnnvl::Member("x/1".into()),
        };
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
    }

    #[test]
    fn a_stopped_daemon_is_critical_with_the_systemctl_fix() {
        let mut f = healthy();
        f.daemons.clear();
        let out = judge(&f);
        assert_eq!(status(&out, "node.imex.service"), Status::Critical);
        let m = out[0].message();
        assert!(m.starts_with("launchguard: node.imex.service: "), "{m}");
        assert!(m.contains("systemctl enable --now nvidia-imex"), "{m}");
        f.config_present = false;
        assert!(judge(&f)[0].what.contains("config.cfg is missing"));
    }

    #[test]
    fn a_missing_channel_names_the_mknod_with_this_nodes_major() {
        let mut f = healthy();
        f.major = Some(511);
        f.channels.clear();
        let out = judge(&f);
        assert_eq!(status(&out, "node.imex.channel"), Status::Critical);
        assert!(
            out[2]
                .fix
                .contains("mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c 511 0"),
            "{}",
            out[2].fix
        );
    }

    #[test]
    fn a_stale_or_wrong_channel_file_is_critical() {
        let mut f = healthy();
        f.channels[0].dev = Some((235, 0));
        assert!(judge(&f)[2].what.contains("is device 235:0"));
        f.channels[0].dev = None;
        assert!(judge(&f)[2].what.contains("not a character device"));
        // Other channels alone do not replace channel 0 (the one the container runtimes default to).
        f.channels = vec![Channel {
            name: "channel7".into(),
            dev: Some((234, 7)),
        }];
        assert_eq!(status(&judge(&f), "node.imex.channel"), Status::Critical);
    }

    #[test]
    fn an_empty_or_unreadable_node_list_is_critical() {
        let mut f = healthy();
        f.nodes = Some(NodesFile {
            path: "/etc/nvidia-imex/nodes_config.cfg".into(),
            nodes: Ok(0),
        });
        assert_eq!(
            status(&judge(&f), "node.imex.nodes_config"),
            Status::Critical
        );
        f.nodes = Some(NodesFile {
            path: "/x".into(),
            nodes: Err("No such file or directory".into()),
        });
        assert!(judge(&f)[1].what.contains("cannot be read"));
    }

    #[test]
    fn parsers_read_proc_devices_config_and_node_lists() {
        let devices = "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-caps-imex-channels\n235 nvidia-caps\n\nBlock devices:\n  8 sd\n";
        assert_eq!(major_of(devices, "nvidia-caps-imex-channels"), Some(234));
        assert_eq!(major_of(devices, "nvidia-caps"), Some(235));
        assert_eq!(major_of(devices, "nvidia-uvm"), None);
        assert_eq!(
            nodes_file_of("# c\nIMEX_NODE_CONFIG_FILE=/shared/imex/nodes.cfg\nSERVER_PORT=50000\n"),
            "/shared/imex/nodes.cfg"
        );
        assert_eq!(
            nodes_file_of("#IMEX_NODE_CONFIG_FILE=/x\n"),
            DEFAULT_NODES_FILE
        );
        assert_eq!(count_nodes("# rack 1\n10.0.0.1\n\n10.0.0.2 # tray 2\n"), 2);
    }
}
