//! `launchguard gpu`: what NVML says about this node's GPUs (driver and CUDA versions, each GPU's
//! PCI bus ID and NVLink fabric registration), next to the PCI bus and `/proc/driver/nvidia`, and
//! whether the node is in a multi-node NVLink domain. The facts the `node.gpu.*` and `node.imex.*`
//! checks judge; `--json` prints them as those checks read them (the shape of
//! `launchguard_core::node::gpu::GpuFacts`), which is how the test fixtures of real nodes are made.

use crate::gather::gpu::{gather_at, NvmlSource};
use launchguard_core::host::Roots;
use launchguard_core::node::gpu::{mnnvl, FabricState, Mnnvl, Nvml};
use std::process::ExitCode;

/// `launchguard gpu`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the facts as one JSON object (GpuFacts: nvml, pci, proc_gpus) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `launchguard gpu`. Exit codes: 0 NVML answered or there is no NVIDIA GPU, 3 NVML unusable or
/// timed out where GPUs are.
pub fn run(a: &Args) -> ExitCode {
    let f = gather_at(&Roots::system(), &NvmlSource::System);
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
