//! The GPU and IMEX families on a real H200 node's facts (`tests/fixtures/h200/`, captured with
//! `launchguard gpu --json` and `/proc/devices` on the machine; its README says how): a current
//! driver registers the IMEX channel major on every GPU node, so the IMEX checks must not judge a
//! node whose GPUs are in no multi-node NVLink domain. The same tree with NVML saying the GPU is in a
//! domain (a GB300, canned) must be judged, so the test can fail.

use launchguard::gather::gpu::{gather_at, NvmlSource};
use launchguard_core::host::Roots;
use launchguard_core::node::gpu::{self, FabricInfo, FabricState, GpuFacts, Mnnvl, Nvml};
use launchguard_core::node::{imex, Status};
use std::fs;
use std::path::{Path, PathBuf};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/h200");

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// An NVIDIA 3D controller at `bdf` under `root/sys`, bound to the `nvidia` driver (linked both
/// ways, as sysfs does: the device's `driver`, and the driver's entry named by the address).
fn pci_gpu(root: &Path, bdf: &str) {
    let d = root.join("sys/bus/pci/devices").join(bdf);
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("vendor"), "0x10de\n").unwrap();
    fs::write(d.join("class"), "0x030200\n").unwrap();
    let drv = root.join("sys/bus/pci/drivers/nvidia");
    fs::create_dir_all(&drv).unwrap();
    std::os::unix::fs::symlink(&drv, d.join("driver")).unwrap();
    std::os::unix::fs::symlink(&d, drv.join(bdf)).unwrap();
}

/// The H200 node as a tree: its /proc/devices, its GPU on the PCI bus and in /proc/driver/nvidia.
fn h200_tree(name: &str) -> (Tree, GpuFacts) {
    let facts: GpuFacts =
        serde_json::from_str(&fs::read_to_string(Path::new(FIXTURE).join("gpu.json")).unwrap())
            .unwrap();
    let root = std::env::temp_dir().join(format!("lg-gpu-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for bdf in &facts.pci {
        pci_gpu(&root, bdf);
        fs::create_dir_all(root.join("proc/driver/nvidia/gpus").join(bdf)).unwrap();
    }
    fs::create_dir_all(root.join("dev")).unwrap();
    // The node's kernel log, read by root at the capture, held no Xid (an unreadable one would make
    // node.gpu.xid UNKNOWN).
    fs::write(root.join("dev/kmsg"), "").unwrap();
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::copy(
        Path::new(FIXTURE).join("proc_devices"),
        root.join("proc/devices"),
    )
    .unwrap();
    (Tree(root), facts)
}

fn not_ok(out: &[launchguard_core::node::Outcome]) -> Vec<String> {
    out.iter()
        .filter(|o| o.status != Status::Ok)
        .map(|o| o.message())
        .collect()
}

#[test]
fn the_real_h200_passes_the_gpu_and_imex_checks() {
    let (t, canned) = h200_tree("h200");
    let roots = Roots::under(&t.0);
    let f = gather_at(&roots, &NvmlSource::Canned(canned.nvml.clone()));
    assert_eq!(
        (&f.nvml, &f.pci, &f.proc_gpus),
        (&canned.nvml, &canned.pci, &canned.proc_gpus),
        "the tree reproduces the PCI and /proc facts of the capture"
    );
    assert!(not_ok(&gpu::judge(&f)).is_empty(), "{:?}", gpu::judge(&f));
    let m = gpu::mnnvl(&f);
    assert_eq!(
        m,
        Mnnvl::No("GPU fabric not supported on 1 of 1 GPU(s) (NVIDIA H200)".into())
    );
    let i = launchguard::gather::imex::gather_at(&roots, m);
    assert_eq!(
        i.major,
        Some(242),
        "the H200's driver registers the IMEX major"
    );
    assert!(not_ok(&imex::judge(&i)).is_empty(), "{:?}", imex::judge(&i));
    assert!(imex::scope(&i)
        .unwrap_err()
        .starts_with("not judged: not a multi-node NVLink node"));
    let facts: Vec<_> = gpu::facts(&f);
    assert!(facts.contains(&("gpu_driver_version", "580.159.04".into())));
    assert!(facts.contains(&("gpu_nvlink", "none".into())));
    assert!(facts.contains(&("gpu_count", "1 NVIDIA H200".into())));
    assert!(facts.contains(&("gpu_nvlink_domain", "none".into())));
}

#[test]
fn the_same_node_in_an_nvlink_domain_is_judged_and_fails_without_imex() {
    let (t, mut canned) = h200_tree("gb");
    if let Nvml::Read { gpus, .. } = &mut canned.nvml {
        gpus[0].fabric = Ok(FabricInfo {
            state: FabricState::Completed,
            status: Some(Ok(())),
            cluster_uuid: "5f1e2d3c4b5a69788796a5b4c3d2e1f0".into(),
            clique_id: 3,
        });
    }
    let roots = Roots::under(&t.0);
    let f = gather_at(&roots, &NvmlSource::Canned(canned.nvml));
    let i = launchguard::gather::imex::gather_at(&roots, gpu::mnnvl(&f));
    let bad = not_ok(&imex::judge(&i));
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].starts_with("launchguard: node.imex.service: this node's GPUs are in multi-node NVLink domain 5f1e2d3c4b5a69788796a5b4c3d2e1f0/3 but no nvidia-imex daemon runs and /etc/nvidia-imex/config.cfg is missing; "), "{}", bad[0]);
    assert!(bad[1].contains("mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c 242 0"));
}

#[test]
fn an_xid_in_the_kernel_log_is_a_warning_with_nvidias_action() {
    let (t, canned) = h200_tree("xid");
    fs::write(t.0.join("proc/uptime"), "90000.00 1.00\n").unwrap();
    fs::write(
        t.0.join("dev/kmsg"),
        "6,1,1000,-;Linux version 6.18\n4,900,82800000000,-;NVRM: Xid (PCI:0000:00:06): 95, pid=4242, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No\n",
    )
    .unwrap();
    let f = gather_at(&Roots::under(&t.0), &NvmlSource::Canned(canned.nvml));
    let bad = not_ok(&gpu::judge(&f));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("launchguard: node.gpu.xid: the NVIDIA driver logged Xid 95 on GPU 0000:00:06 2 h 0 min ago: an uncontained ECC error; "), "{}", bad[0]);
    assert_eq!(
        gpu::judge(&f)
            .iter()
            .find(|o| o.id == "node.gpu.xid")
            .unwrap()
            .status,
        Status::Warning
    );
}

#[test]
fn a_gpu_the_driver_lost_shows_against_the_pci_bus() {
    let (t, canned) = h200_tree("lost");
    // A second H200 on the bus that NVML does not list (fallen off the bus).
    pci_gpu(&t.0, "0000:00:07.0");
    let f = gather_at(&Roots::under(&t.0), &NvmlSource::Canned(canned.nvml));
    let bad = not_ok(&gpu::judge(&f));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("launchguard: node.gpu.count: 2 NVIDIA GPU(s) on the PCI bus but the driver lists 1: missing 0000:00:07.0; "), "{}", bad[0]);
}

/// The H200's facts with one GPU edited (a fault the real GPU does not have), judged on the tree.
fn judged_with(name: &str, edit: impl FnOnce(&mut gpu::Gpu)) -> Vec<String> {
    let (t, mut canned) = h200_tree(name);
    if let Nvml::Read { gpus, .. } = &mut canned.nvml {
        edit(&mut gpus[0]);
    }
    let f = gather_at(&Roots::under(&t.0), &NvmlSource::Canned(canned.nvml));
    not_ok(&gpu::judge(&f))
}

#[test]
fn the_real_h200s_memory_persistence_and_nvlink_facts_are_what_nvidia_smi_said() {
    // nvidia-smi -q on the same machine: Persistence Mode Enabled; Remapped Rows: Correctable
    // Error 46, Uncorrectable Error 0, Pending No, Remapping Failure Occurred No; Retired Pages N/A
    // (Hopper remaps rows instead); `nvidia-smi nvlink -s` printed nothing (the VM's GPU has no
    // NVLink NVML answers for).
    let (_t, canned) = h200_tree("mem");
    let Nvml::Read { gpus, .. } = &canned.nvml else {
        panic!("{:?}", canned.nvml)
    };
    let g = &gpus[0];
    assert_eq!(g.persistence, Some(true));
    assert_eq!(
        g.row_remap,
        Some(gpu::RowRemap {
            correctable: 46,
            uncorrectable: 0,
            pending: false,
            failed: false
        })
    );
    assert_eq!(g.retired_pages_pending, None);
    assert_eq!(g.nvlink, None);
    assert!(gpu::facts(&canned).contains(&("gpu_nvlink", "none".into())));
}

#[test]
fn persistence_mode_off_on_the_h200_is_a_warning() {
    let bad = judged_with("pm", |g| g.persistence = Some(false));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with(
            "launchguard: node.gpu.persistence: persistence mode is off on GPU(s) 0 of 1; "
        ),
        "{}",
        bad[0]
    );
    assert!(bad[0].contains("systemctl enable --now nvidia-persistenced"));
}

#[test]
fn a_pending_row_remap_on_the_h200_is_critical_and_asks_for_a_reset() {
    let bad = judged_with("remap", |g| {
        g.row_remap = Some(gpu::RowRemap {
            correctable: 46,
            uncorrectable: 1,
            pending: true,
            failed: false,
        })
    });
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with(
            "launchguard: node.gpu.row_remap: a memory row remap is pending on GPU(s) 0; "
        ),
        "{}",
        bad[0]
    );
    assert!(bad[0].contains("nvidia-smi -r -i 0"), "{}", bad[0]);
}

#[test]
fn a_failed_row_remap_on_the_h200_is_critical_and_asks_for_service() {
    let bad = judged_with("remapfail", |g| {
        g.row_remap = Some(gpu::RowRemap {
            correctable: 46,
            uncorrectable: 3,
            pending: false,
            failed: true,
        })
    });
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("launchguard: node.gpu.row_remap: row remapping failed on GPU(s) 0; "),
        "{}",
        bad[0]
    );
    assert!(bad[0].contains("serviced"), "{}", bad[0]);
}

#[test]
fn pages_pending_retirement_are_critical() {
    let bad = judged_with("retire", |g| g.retired_pages_pending = Some(true));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("launchguard: node.gpu.retired_pages: memory pages are pending retirement on GPU(s) 0; "), "{}", bad[0]);
}

#[test]
fn nvlink_links_down_on_an_eight_gpu_board_are_named() {
    // The H200 as an 8-GPU HGX board (canned): 18 links each, GPU 5 with links 3 and 11 down.
    let (t, mut canned) = h200_tree("nvl");
    if let Nvml::Read { gpus, .. } = &mut canned.nvml {
        let g0 = gpus[0].clone();
        gpus.clear();
        for i in 0..8u32 {
            let mut g = g0.clone();
            g.index = i;
            g.pci_bus_id = format!("00000000:00:{:02X}.0", 6 + i);
            g.nvlink = Some(gpu::NvLinks {
                links: 18,
                down: if i == 5 { vec![3, 11] } else { vec![] },
            });
            gpus.push(g);
        }
    }
    for i in 1..8u32 {
        pci_gpu(&t.0, &format!("0000:00:{:02x}.0", 6 + i));
    }
    let f = gather_at(&Roots::under(&t.0), &NvmlSource::Canned(canned.nvml));
    let bad = not_ok(&gpu::judge(&f));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("launchguard: node.gpu.nvlink: NVLink links down: GPU 5 16/18 active (down: 3,11), while other GPUs of this node have 18 active; "), "{}", bad[0]);
    assert_eq!(
        gpu::judge(&f)
            .iter()
            .find(|o| o.id == "node.gpu.nvlink")
            .unwrap()
            .status,
        Status::Warning
    );
}
