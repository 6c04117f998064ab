//! `launchguard gpu`: what NVML says about this node's GPUs (driver and CUDA versions, each GPU's
//! PCI bus ID and NVLink fabric registration), next to the PCI bus and `/proc/driver/nvidia`, and
//! whether the node is in a multi-node NVLink domain. The facts the `node.gpu.*` and `node.imex.*`
//! checks judge; `--json` prints them as those checks read them (the shape of
//! `launchguard_core::node::gpu::GpuFacts`), which is how the test fixtures of real nodes are made.

use crate::gather::gpu::{gather_at, NvmlSource};
use launchguard_core::host::Roots;
use launchguard_core::node::gpu::{mnnvl, FabricState, Mnnvl, Nvml};
use std::process::ExitCode;

// `launchguard gpu`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the facts as one JSON object (GpuFacts: nvml, pci, proc_gpus) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Config file, for its `[gpu]` (default /etc/launchguard/launchguard.toml; missing there =
    /// defaults).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
}

/// `launchguard gpu`. Exit codes: 0 NVML answered or there is no NVIDIA GPU, 3 NVML unusable or
/// timed out where GPUs are.
pub fn run(a: &Args) -> ExitCode {
    let cfg = match crate::check_cmd::load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let f = gather_at(&Roots::system(), &NvmlSource::from_config(&cfg.gpu));
    let code = match f.nvml {
        Nvml::Read { .. } | Nvml::NotAsked => 0,
        _ => 3,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
        return ExitCode::from(code);
    }
    match &f.nvml {
        Nvml::NotAsked => {
            println!("no NVIDIA GPU on the PCI bus and no NVIDIA driver: NVML not asked")
        }
        Nvml::Unavailable(e) => println!("NVML unavailable: {e}"),
        Nvml::TimedOut(s) => println!("NVML did not answer within {s} s"),
        Nvml::Stuck(e) => println!("NVML not asked: {e}"),
        Nvml::Read {
            driver_version,
            cuda_driver_version,
            gpus,
        } => {
            println!(
                "driver {driver_version}, CUDA {}, {} GPU(s) (NVML)",
                cuda_driver_version.as_deref().unwrap_or("unknown"),
                gpus.len()
            );
            for g in gpus {
                let fabric = match &g.fabric {
                    Err(e) => format!("fabric: unknown ({e})"),
                    Ok(i) => match i.state {
                        FabricState::NotSupported => format!("fabric: {}", i.state.name()),
                        FabricState::NotStarted | FabricState::InProgress => {
                            format!("fabric: registration {}", i.state.name())
                        }
                        FabricState::Completed => format!(
                            "fabric: completed ({}), domain {}",
                            match &i.status {
                                Some(Err(e)) => e.as_str(),
                                _ => "success",
                            },
                            i.domain()
                        ),
                    },
                };
                println!(
                    "  {} {} {} {} {fabric}",
                    g.index, g.pci_bus_id, g.name, g.uuid
                );
                let yes_no = |b: Option<bool>, yes: &str, no: &str| match b {
                    Some(true) => yes.to_string(),
                    Some(false) => no.to_string(),
                    None => "n/a".to_string(),
                };
                println!(
                    "    persistence {}, ECC uncorrectable {}, row remap {}, retired pages pending {}, PCIe {}, NVLink {}",
                    yes_no(g.persistence, "on", "off"),
                    g.ecc_uncorrected.map_or("n/a".into(), |n| n.to_string()),
                    g.row_remap.map_or("n/a".into(), |r| format!(
                        "{} correctable/{} uncorrectable rows{}{}",
                        r.correctable,
                        r.uncorrectable,
                        if r.pending { ", PENDING" } else { "" },
                        if r.failed { ", FAILED" } else { "" }
                    )),
                    yes_no(g.retired_pages_pending, "YES", "no"),
                    g.pcie_width
                        .map_or("n/a".into(), |(c, m)| format!("x{c} of x{m}")),
                    g.nvlink.as_ref().map_or("none".into(), |l| format!(
                        "{}/{} active",
                        l.active(),
                        l.links
                    )),
                );
            }
        }
    }
    println!(
        "PCI: {} NVIDIA GPU(s){}; /proc/driver/nvidia/gpus: {}",
        f.pci.len(),
        if f.pci.is_empty() {
            String::new()
        } else {
            format!(" ({})", f.pci.join(", "))
        },
        f.proc_gpus
            .as_ref()
            .map_or("absent".to_string(), |v| v.len().to_string())
    );
    println!(
        "multi-node NVLink: {}",
        match mnnvl(&f) {
            Mnnvl::Member(d) => format!("yes, domain {d}"),
            Mnnvl::Pending(s) => format!("pending: fabric registration {s}"),
            Mnnvl::No(why) => format!("no ({why})"),
            Mnnvl::Unknown(why) => format!("unknown ({why})"),
        }
    );
    ExitCode::from(code)
}
