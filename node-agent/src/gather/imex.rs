//! Facts for `node.imex.*` (multi-node NVLink on GB200/GB300 racks): the major number of
//! `nvidia-caps-imex-channels` in `/proc/devices`, the files of `/dev/nvidia-caps-imex-channels/`,
//! running `nvidia-imex` processes (`/proc/<pid>/comm`), and `/etc/nvidia-imex/config.cfg` with the
//! node list it names. What each means: `launchguard_core::node::imex`.
//!
//! [`gather_at`] takes the `/proc`, `/dev` and `/etc` roots, so tests run it on fixture trees; the
//! agent calls [`gather`], which uses the context's ([`Ctx::roots`]).

use super::Ctx;
use launchguard_core::node::gpu::Mnnvl;
use launchguard_core::node::imex::{
    count_nodes, major_of, nodes_file_of, Channel, ImexFacts, NodesFile, CHANNEL_DIR, CONFIG_FILE,
};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Where the gatherer looks (only `proc`, `dev` and `etc` are read).
pub use launchguard_core::host::Roots;

/// Gathers the IMEX family's facts from this node.
pub fn gather(ctx: &Ctx) -> ImexFacts {
    let mnnvl = launchguard_core::node::gpu::mnnvl(&super::gpu::gather(ctx));
    gather_at(&ctx.roots, mnnvl)
}

/// The Linux device number's major and minor (glibc's `gnu_dev_major`/`gnu_dev_minor` encoding).
fn split_dev(rdev: u64) -> (u32, u32) {
    let major = ((rdev >> 32) & 0xffff_f000) | ((rdev >> 8) & 0x0000_0fff);
    let minor = ((rdev >> 12) & 0xffff_ff00) | (rdev & 0x0000_00ff);
    (major as u32, minor as u32)
}

/// Gathers the IMEX family's facts under `roots`; `mnnvl` is what NVML says of the node's NVLink
/// domain ([`launchguard_core::node::gpu::mnnvl`]).
pub fn gather_at(roots: &Roots, mnnvl: Mnnvl) -> ImexFacts {
    let devices = super::util::read_text(&roots.proc.join("devices")).unwrap_or_default();
    let major = major_of(&devices, "nvidia-caps-imex-channels");
    let mut channels: Vec<Channel> = std::fs::read_dir(roots.map(CHANNEL_DIR))
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let dev = std::fs::symlink_metadata(e.path())
                        .ok()
                        .filter(|m| m.file_type().is_char_device())
                        .map(|m| split_dev(m.rdev()));
                    Channel {
                        name: e.file_name().to_string_lossy().into_owned(),
                        dev,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    let config = roots.map(CONFIG_FILE);
    let config_text = super::util::read_optional(&config).ok().flatten();
    let nodes = config_text.as_deref().map(|text| {
        let path = nodes_file_of(text);
        let nodes = super::util::read_text(&roots.map(&path))
            .map(|t| count_nodes(&t))
            .map_err(|e| e.to_string());
        NodesFile { path, nodes }
    });
    ImexFacts {
        major,
        channels,
        // Without the driver's IMEX channels nothing here is judged, whoever runs
        // (`launchguard_core::node::imex::scope`): the process table is not visited.
        daemons: if major.is_some() {
            daemons(&roots.proc)
        } else {
            vec![]
        },
        config_present: config_text.is_some() || config.exists(),
        service_enabled: launchguard_core::host::systemd_unit_enabled(roots, "nvidia-imex.service"),
        nodes,
        mnnvl,
    }
}

/// PIDs whose `comm` is `nvidia-imex` (the daemon; `nvidia-imex-ctl` is a different name).
///
/// This visits every process (thousands on a large node, most of them kernel threads), so each `comm` costs three system calls (open, one read, close)
/// rather than the bounded reader's six: `/proc/<pid>/comm` is a kernel file of at most 16 bytes
/// (`TASK_COMM_LEN`, proc(5)) that one read returns whole, and no FIFO or device can stand there.
fn daemons(proc: &Path) -> Vec<u32> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(rd) = std::fs::read_dir(proc) else {
        return vec![];
    };
    let mut buf = [0u8; 64];
    let mut path = proc.to_path_buf();
    let mut v: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            path.push(pid.to_string());
            path.push("comm");
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
                .open(&path);
            path.pop();
            path.pop();
            f.and_then(|mut f| f.read(&mut buf))
                .is_ok_and(|n| buf[..n].trim_ascii_end() == b"nvidia-imex")
        })
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_split_like_glibc() {
        assert_eq!(split_dev((234 << 8) | 5), (234, 5));
        // Majors above 255 and minors above 255 use the high bits.
        let rdev = ((511u64 & 0xfff) << 8) | (2047 & 0xff) | ((2047u64 & !0xff) << 12);
        assert_eq!(split_dev(rdev), (511, 2047));
    }
}
