//! `node.imex.*` on fixture trees: the gatherer reads a temporary `/proc`, `/dev` and `/etc` laid out
//! like a GB300 node's (the `nvidia-caps-imex-channels` line in `/proc/devices`, a real character
//! device node for channel 0 made with mknod, `nvidia-imex` in a `/proc/<pid>/comm`, the IMEX config
//! and node list), and each fault is made by changing one file. What NVML says of the node's NVLink
//! domain is canned (a GB300 in a domain unless a test says otherwise). Needs root (mknod), as the
//! agent does.

use launchguard::gather::imex::{gather_at, Roots};
use launchguard_core::node::gpu::Mnnvl;
use launchguard_core::node::imex::judge;
use launchguard_core::node::Status;
use nix::sys::stat::{makedev, mknod, Mode, SFlag};
use std::fs;
use std::path::{Path, PathBuf};

struct Tree(PathBuf, Mnnvl);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("lg-imex-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in [
            "proc/4242",
            "proc/4243",
            "proc/self",
            "dev/nvidia-caps-imex-channels",
            "etc/nvidia-imex",
        ] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        let t = Tree(root, Mnnvl::Member(DOMAIN.into()));
        t.write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-caps-imex-channels\n235 nvidia-caps\n\nBlock devices:\n  8 sd\n");
        t.write("proc/4242/comm", "nvidia-imex\n");
        t.write("proc/4243/comm", "nvidia-imex-ctl\n");
        t.write("etc/nvidia-imex/config.cfg", "# IMEX config\nIMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\nSERVER_PORT=50000\n");
        t.write(
            "etc/nvidia-imex/nodes_config.cfg",
            "10.1.0.1\n10.1.0.2\n10.1.0.3\n",
        );
        t.channel("channel0", 234, 0);
        t
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        fs::write(self.p(rel), text).unwrap();
    }

    fn channel(&self, name: &str, major: u64, minor: u64) {
        let p = self.p("dev/nvidia-caps-imex-channels").join(name);
        let _ = fs::remove_file(&p);
        mknod(
            &p,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(major, minor),
        )
        .expect("mknod (these tests run as root, like the agent)");
    }

    fn roots(&self) -> Roots {
        Roots {
            sys: self.p("sys"),
            proc: self.p("proc"),
            dev: self.p("dev"),
            etc: self.p("etc"),
        }
    }

    fn status(&self) -> Vec<(&'static str, Status, String)> {
        judge(&gather_at(&self.roots(), self.1.clone()))
            .into_iter()
            .map(|o| (o.id, o.status, o.message()))
            .collect()
    }
}

const DOMAIN: &str = "5f1e2d3c4b5a69788796a5b4c3d2e1f0/7";

fn bad(t: &Tree) -> Vec<String> {
    t.status()
        .into_iter()
        .filter(|(_, s, _)| *s != Status::Ok)
        .map(|(_, _, m)| m)
        .collect()
}

#[test]
fn a_healthy_gb300_tree_passes_every_check() {
    let t = Tree::new("healthy");
    let f = gather_at(&t.roots(), t.1.clone());
    assert_eq!(f.major, Some(234));
    assert_eq!(f.daemons, vec![4242], "nvidia-imex-ctl is not the daemon");
    assert_eq!(f.channels.len(), 1);
    assert_eq!(f.channels[0].dev, Some((234, 0)));
    assert!(bad(&t).is_empty(), "{:?}", bad(&t));
}

/// Without the driver's IMEX channels (no `nvidia-caps-imex-channels` in /proc/devices) nothing is
/// judged whether or not nvidia-imex runs, so the gatherer does not visit the process table (every
/// `/proc/<pid>/comm`, the largest cost of a check on a node without IMEX).
#[test]
fn without_imex_channels_the_process_table_is_not_visited_and_nothing_changes() {
    let t = Tree::new("nochannels");
    t.write(
        "proc/devices",
        "Character devices:\n  1 mem\n195 nvidia\n\nBlock devices:\n  8 sd\n",
    );
    let with = gather_at(&t.roots(), t.1.clone());
    assert_eq!(with.major, None);
    assert_eq!(
        with.daemons,
        Vec::<u32>::new(),
        "the process table was visited"
    );
    fs::remove_dir_all(t.p("proc/4242")).unwrap();
    let without = gather_at(&t.roots(), t.1.clone());
    assert_eq!(judge(&with), judge(&without));
    assert!(judge(&with).iter().all(|o| o.status == Status::Ok));
    assert_eq!(
        launchguard_core::node::imex::scope(&with),
        Err("not judged: the NVIDIA driver offers no IMEX channels".into())
    );
}

#[test]
fn a_stopped_daemon_is_one_line_with_the_fix() {
    let t = Tree::new("stopped");
    fs::remove_dir_all(t.p("proc/4242")).unwrap();
    assert_eq!(
        bad(&t),
        vec!["launchguard: node.imex.service: this node's GPUs are in multi-node NVLink domain 5f1e2d3c4b5a69788796a5b4c3d2e1f0/7 but no nvidia-imex daemon runs; \
              GPU memory cannot be shared across nodes, so NCCL cannot use multi-node NVLink and jobs spanning nodes fail at CUDA/NCCL init or fall back to the network; \
              systemctl enable --now nvidia-imex, then check it with nvidia-imex-ctl -q (READY) and journalctl -u nvidia-imex"
            .to_string()]
    );
}

#[test]
fn channel_faults_name_the_mknod_with_this_nodes_major() {
    let t = Tree::new("channel");
    fs::remove_file(t.p("dev/nvidia-caps-imex-channels/channel0")).unwrap();
    let b = bad(&t);
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(b[0].starts_with("launchguard: node.imex.channel: /dev/nvidia-caps-imex-channels/channel0 is missing (the driver's IMEX channels have major 234); "), "{}", b[0]);
    assert!(
        b[0].contains("mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c 234 0"),
        "{}",
        b[0]
    );
    // A node left from an earlier driver load (another major).
    t.channel("channel0", 511, 0);
    assert!(bad(&t)[0].contains("is device 511:0, but the driver's IMEX channel 0 is 234:0"));
    // A plain file where the device should be.
    fs::remove_file(t.p("dev/nvidia-caps-imex-channels/channel0")).unwrap();
    t.write("dev/nvidia-caps-imex-channels/channel0", "");
    assert!(bad(&t)[0].contains("is not a character device"));
    // The whole directory gone (not recreated after a reboot).
    fs::remove_dir_all(t.p("dev/nvidia-caps-imex-channels")).unwrap();
    assert!(bad(&t)[0].contains("channel0 is missing"));
}

#[test]
fn node_list_faults_are_critical() {
    let t = Tree::new("nodes");
    t.write("etc/nvidia-imex/nodes_config.cfg", "# nobody yet\n\n");
    let s = t.status();
    assert_eq!(s[1].0, "node.imex.nodes_config");
    assert_eq!(s[1].1, Status::Critical);
    assert!(s[1].2.contains("names no nodes"), "{}", s[1].2);
    // config.cfg naming a list elsewhere that is missing.
    t.write(
        "etc/nvidia-imex/config.cfg",
        "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/rack7.cfg\n",
    );
    let s = t.status();
    assert!(
        s[1].2
            .contains("'/etc/nvidia-imex/rack7.cfg' cannot be read"),
        "{}",
        s[1].2
    );
    // No config at all: the daemon check says so, the node-list check has nothing to read.
    fs::remove_dir_all(t.p("etc/nvidia-imex")).unwrap();
    fs::remove_dir_all(t.p("proc/4242")).unwrap();
    let s = t.status();
    assert!(
        s[0].2.contains("/etc/nvidia-imex/config.cfg is missing"),
        "{}",
        s[0].2
    );
    assert_eq!(s[1].1, Status::Ok);
}

#[test]
fn a_node_whose_driver_offers_no_imex_is_not_judged() {
    let t = Tree::new("noimex");
    t.write("proc/devices", "Character devices:\n195 nvidia\n");
    fs::remove_dir_all(t.p("proc/4242")).unwrap();
    fs::remove_dir_all(t.p("dev/nvidia-caps-imex-channels")).unwrap();
    assert!(bad(&t).is_empty());
    assert!(Path::new(&t.p("proc")).exists());
}

#[test]
fn a_node_outside_any_nvlink_domain_is_not_judged_even_with_the_imex_major() {
    // What a current driver shows on an H100/H200 without NVSwitch: the IMEX channel major in
    // /proc/devices and nothing else of IMEX.
    let mut t = Tree::new("h200");
    t.1 = Mnnvl::No("GPU fabric not supported on 1 of 1 GPU(s) (NVIDIA H200)".into());
    t.write(
        "proc/devices",
        "Character devices:\n195 nvidia\n242 nvidia-caps-imex-channels\n",
    );
    fs::remove_dir_all(t.p("proc/4242")).unwrap();
    fs::remove_dir_all(t.p("dev/nvidia-caps-imex-channels")).unwrap();
    fs::remove_dir_all(t.p("etc/nvidia-imex")).unwrap();
    assert!(bad(&t).is_empty(), "{:?}", bad(&t));
    // The same node once NVML puts its GPUs in a domain: both faults are seen.
    t.1 = Mnnvl::Member(DOMAIN.into());
    assert_eq!(bad(&t).len(), 2, "{:?}", bad(&t));
}
