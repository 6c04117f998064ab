//! Facts for `node.gpu.*` (and the IMEX family's multi-node NVLink test): what NVML says about the
//! GPUs (`nvml-wrapper`, which loads `libnvidia-ml.so.1` at run time, so a node or a build without
//! the NVIDIA driver works and says why), the NVIDIA display/3D controllers the driver holds
//! (`/sys/bus/pci/drivers/nvidia/*/{vendor,class}`) and `/proc/driver/nvidia/gpus/`. What each means:
//! `launchguard_core::node::gpu`.
//!
//! NVML can hang on a wedged GPU, so it runs on a thread of its own with a deadline
//! ([`NVML_DEADLINE`]); past it the facts say `TimedOut` (UNKNOWN, never a drain) and no second
//! NVML call starts in this process until the hung one returns (`Stuck`). Across processes (each
//! `launchguard health` is a new one) the thread first takes an exclusive `flock(2)` on
//! `[gpu] nvml_lock` (`/run/launchguard/nvml.lock`) where it can open that file for writing (root):
//! a process stuck in NVML keeps it, so the next ones wait for it only until their deadline and
//! report `Stuck` instead of entering NVML and wedging as well. A thread blocked inside the driver
//! (uninterruptible sleep) still delays its own process's exit until the driver lets go; the lock
//! keeps that to one process. On a node with no NVIDIA device on the PCI bus and no NVIDIA driver,
//! NVML is not asked at all (a CPU node pays nothing), unless `[gpu] nvml_library` names a library.
//!
//! One gathering serves the GPU and IMEX families of a check run: [`gather`] keeps the last facts
//! for [`REUSE`] (the families run at once, each asks).

use super::Ctx;
use launchguard_core::host::Roots;
use launchguard_core::node::gpu::{Gpu, GpuFacts, KernelLog, NvLinks, Nvml, SlurmGpus};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long NVML may take to list the GPUs and their fabric state.
pub const NVML_DEADLINE: Duration = Duration::from_secs(5);

/// How long one gathering is reused by the families of a check run.
pub const REUSE: Duration = Duration::from_secs(2);

/// Where NVML's answer comes from: the running system, or canned facts (fixture trees, tests).
#[derive(Debug, Clone)]
pub enum NvmlSource {
    /// Ask this machine's NVML (`libnvidia-ml.so.1` from the loader's search path) where NVIDIA
    /// devices show, under the default lock.
    System,
    /// Ask the NVML of `[gpu]` in launchguard.toml.
    Configured(NvmlPlace),
    /// Use these facts instead (a test, or a fixture tree where the real NVML would not match).
    Canned(Nvml),
}

/// Which NVML library to load and which lock to hold around its calls (`[gpu]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlPlace {
    /// The library; `None`: `libnvidia-ml.so.1` from the loader's search path, asked only where
    /// NVIDIA devices show. `Some`: loaded from there and asked on every run.
    pub library: Option<PathBuf>,
    /// The cross-process lock file.
    pub lock: PathBuf,
}

impl NvmlPlace {
    /// From the configuration's `[gpu]`.
    pub fn from_config(g: &crate::config::Gpu) -> NvmlPlace {
        NvmlPlace {
            library: g.nvml_library.clone(),
            lock: g.nvml_lock.clone(),
        }
    }
}

impl NvmlSource {
    /// The source a configuration asks for: [`NvmlSource::Configured`] with its `[gpu]`.
    pub fn from_config(g: &crate::config::Gpu) -> NvmlSource {
        NvmlSource::Configured(NvmlPlace::from_config(g))
    }
}

/// Set while an NVML call is running; a call that never returns keeps it set, so no second
/// thread piles up behind a wedged driver.
static NVML_BUSY: AtomicBool = AtomicBool::new(false);

/// The GPU facts of this node, from the cache of this check run when fresh.
pub fn gather(ctx: &Ctx) -> GpuFacts {
    let mut cache = ctx.gpu_cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((t, f)) = cache.as_ref() {
        if t.elapsed() < REUSE {
            return f.clone();
        }
    }
    let mut f = gather_at(&ctx.roots, &ctx.nvml);
    f.slurm = slurm_gpus(ctx);
    f.in_step = std::env::var_os("SLURM_JOB_ID").is_some();
    *cache = Some((Instant::now(), f.clone()));
    *ctx.gpu_last.lock().unwrap_or_else(|p| p.into_inner()) = Some(f.clone());
    f
}

/// Gathers the facts under `roots` with NVML from `source`.
pub fn gather_at(roots: &Roots, source: &NvmlSource) -> GpuFacts {
    let pci = pci_gpus(&roots.sys);
    let proc_gpus = proc_gpus(&roots.proc);
    let place = match source {
        NvmlSource::Canned(_) => None,
        NvmlSource::System => Some(NvmlPlace::from_config(&crate::config::Gpu::default())),
        NvmlSource::Configured(p) => Some(p.clone()),
    };
    let nvml = match (source, place) {
        (NvmlSource::Canned(n), _) => n.clone(),
        (_, Some(p))
            if p.library.is_none()
                && pci.is_empty()
                && proc_gpus.is_none()
                && !roots.dev.join("nvidiactl").exists() =>
        {
            Nvml::NotAsked
        }
        (_, Some(p)) => read_nvml(&p, NVML_DEADLINE),
        (_, None) => Nvml::NotAsked,
    };
    let gpus_here = !pci.is_empty() || proc_gpus.is_some() || matches!(nvml, Nvml::Read { .. });
    GpuFacts {
        kernel: if gpus_here {
            kernel_log(roots)
        } else {
            KernelLog::NotAsked
        },
        nvml,
        pci,
        proc_gpus,
        slurm: None,
        in_step: false,
    }
}

/// Most kernel log bytes read (the ring buffer is a few MiB at most).
const KMSG_MAX_BYTES: usize = 16 << 20;
/// Most Xid records kept.
const MAX_XIDS: usize = 256;

/// The NVIDIA driver's Xid records of this boot from `<dev>/kmsg`, read without blocking (one
/// record per read on `/dev/kmsg`; a fixture file gives many lines per read), and the uptime.
pub fn kernel_log(roots: &Roots) -> KernelLog {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let uptime_s = super::util::read_text(&roots.proc.join("uptime"))
        .ok()
        .and_then(|t| t.split('.').next().and_then(|s| s.trim().parse().ok()))
        .unwrap_or(0);
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits() | nix::fcntl::OFlag::O_NOCTTY.bits())
        .open(roots.dev.join("kmsg"))
    {
        Ok(f) => f,
        Err(e) => return KernelLog::Unreadable(e.to_string()),
    };
    let mut xids = vec![];
    let mut buf = vec![0u8; 64 << 10];
    let mut carry = Vec::new();
    let mut total = 0usize;
    while total < KMSG_MAX_BYTES {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // EPIPE: a record was overwritten while reading; the next read goes on.
            Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // EAGAIN: the end of the buffer.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return KernelLog::Unreadable(e.to_string()),
        };
        total += n;
        carry.extend_from_slice(&buf[..n]);
        let mut start = 0;
        while let Some(i) = carry[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&carry[start..start + i]);
            // Continuation lines (` KEY=value`) carry no message.
            if !line.starts_with(' ') && xids.len() < MAX_XIDS {
                if let Some(x) = launchguard_core::node::gpu::parse_xid_record(&line) {
                    xids.push(x);
                }
            }
            start += i + 1;
        }
        carry.drain(..start);
    }
    KernelLog::Read { uptime_s, xids }
}

/// Slurm's view of this node's GPUs: `Gres=gpu:N` of its slurm.conf line, gres.conf's `AutoDetect`,
/// and whether PluginDir has `gpu_nvml.so`; `None` when slurm.conf cannot be read.
pub fn slurm_gpus(ctx: &Ctx) -> Option<SlurmGpus> {
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok()?;
    let node = ctx.slurm_node_name(Some(&conf));
    let gres = conf
        .node(&node)
        .and_then(|l| l.get("Gres"))
        .unwrap_or("")
        .to_string();
    let gres_gpus = launchguard_core::node::slurm_conf::gres_gpu_count(&gres);
    // MIG profile names as GRES types: `gpu:1g.10gb:7`, `gpu:3g.40gb:2`.
    let mig_types = gres.split(',').any(|g| {
        g.split(':')
            .nth(1)
            .is_some_and(|t| t.contains("g.") && t.ends_with("gb"))
    });
    let gres_conf = super::util::read_text(&ctx.slurm_dir().join("gres.conf")).unwrap_or_default();
    let dirs = super::pmix::plugin_dirs(ctx, Some(&conf));
    Some(SlurmGpus {
        autodetect: launchguard_core::gres::autodetect(&gres_conf, &node),
        gpu_nvml_plugin: dirs.iter().any(|d| d.join("gpu_nvml.so").exists()),
        plugin_dir: dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        gres_gpus,
        mig_types,
        node,
    })
}

/// PCI addresses of NVIDIA (vendor `0x10de`) VGA (`0x0300xx`) and 3D (`0x0302xx`) controllers bound
/// to the `nvidia` driver: the device links in the driver's directory, `/sys/bus/pci/drivers/nvidia/`
/// (the driver core links each device it binds there, beside the driver's `bind`, `new_id`, `module`…
/// entries: the kernel's driver-model documentation, "Driver Binding"), whose `vendor` and `class`
/// say GPU.
///
/// The driver's directory, not every entry of `/sys/bus/pci/devices/`: a GPU server has hundreds
/// of PCI functions (bridges, NICs, NVMe) and each `vendor` read walks a sysfs symlink; the driver's
/// directory names only its own devices, and a node without the driver has no such directory (one
/// failed open). Same answer as reading each device's `driver` link: the driver core makes both
/// links when it binds a device and removes both when it unbinds it.
pub fn pci_gpus(sys: &Path) -> Vec<String> {
    let drv = sys.join("bus/pci/drivers/nvidia");
    let Ok(rd) = std::fs::read_dir(&drv) else {
        return vec![];
    };
    let read = |p: &Path| {
        super::util::read_bytes(p, 64)
            .map(|b| String::from_utf8_lossy(&b).trim().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let mut v: Vec<String> = rd
        .flatten()
        // Device links are addresses (`0000:18:00.0`); the driver's own entries have no ':'.
        .filter(|e| e.file_name().to_string_lossy().contains(':'))
        .filter(|e| {
            let dev = e.path();
            read(&dev.join("vendor")) == "0x10de" && {
                let class = read(&dev.join("class"));
                class.starts_with("0x0300") || class.starts_with("0x0302")
            }
        })
        .map(|e| e.file_name().to_string_lossy().to_ascii_lowercase())
        .collect();
    v.sort();
    v
}

/// Entries of `/proc/driver/nvidia/gpus/` (bus IDs), or `None` when the directory is absent.
pub fn proc_gpus(proc: &Path) -> Option<Vec<String>> {
    let rd = std::fs::read_dir(proc.join("driver/nvidia/gpus")).ok()?;
    let mut v: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Some(v)
}

/// Where the NVML thread is: waiting for the cross-process lock, or in NVML.
const WAITING_FOR_LOCK: u8 = 0;
const IN_NVML: u8 = 1;

/// Opens `[gpu] nvml_lock` for the cross-process lock: created `0644` where this process may
/// (root, in root's `/run/launchguard`), never through a symlink. `None` where it cannot be opened
/// for writing (a user's `launchguard check`: it neither takes nor waits for root's lock, so a user
/// can never hold root's runs off NVML).
fn open_lock(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_file()))
}

/// Asks NVML on a thread of its own, waiting at most `deadline` (the lock wait included).
pub fn read_nvml(place: &NvmlPlace, deadline: Duration) -> Nvml {
    if NVML_BUSY.swap(true, Ordering::AcqRel) {
        return Nvml::Stuck(
            "an earlier NVML call of this launchguard process has not returned".into(),
        );
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let phase = Arc::new(AtomicU8::new(WAITING_FOR_LOCK));
    let (thread_phase, thread_place) = (phase.clone(), place.clone());
    let spawned = std::thread::Builder::new()
        .name("nvml".into())
        .spawn(move || {
            // Held until NVML returns; dropped (unlocked) with the thread's stack.
            let _lock = open_lock(&thread_place.lock).map(|f| {
                nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| e)
            });
            thread_phase.store(IN_NVML, Ordering::Release);
            let r = std::panic::catch_unwind(|| read_nvml_now(thread_place.library.as_deref()))
                .unwrap_or_else(|_| {
                    Nvml::Unavailable("NVML panicked (a bug: please report it)".into())
                });
            NVML_BUSY.store(false, Ordering::Release);
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        NVML_BUSY.store(false, Ordering::Release);
        return Nvml::Unavailable(format!("cannot start a thread for NVML: {e}"));
    }
    rx.recv_timeout(deadline).unwrap_or_else(|_| {
        if phase.load(Ordering::Acquire) == WAITING_FOR_LOCK {
            Nvml::Stuck(format!(
                "another launchguard process has held {} for over {} s (it waits for NVML: a wedged GPU or driver)",
                place.lock.display(),
                deadline.as_secs()
            ))
        } else {
            Nvml::TimedOut(deadline.as_secs())
        }
    })
}

/// NVLink links NVML answers for (`0..NVML_NVLINK_MAX_LINKS`), with the inactive ones; `None` when
/// it answers for none.
fn nvlinks(dev: &nvml_wrapper::Device<'_>) -> Option<NvLinks> {
    let mut links = 0;
    let mut down = vec![];
    for l in 0..nvml_wrapper_sys::bindings::NVML_NVLINK_MAX_LINKS {
        match dev.link_wrapper_for(l).is_active() {
            Ok(true) => links += 1,
            Ok(false) => {
                links += 1;
                down.push(l);
            }
            // NOT_SUPPORTED / INVALID_ARGUMENT: the GPU has no such link.
            Err(_) => {}
        }
    }
    (links > 0).then_some(NvLinks { links, down })
}

/// The NVML calls themselves (blocking), with the library at `library` or the default one.
fn read_nvml_now(library: Option<&Path>) -> Nvml {
    let init = match library {
        Some(p) => nvml_wrapper::Nvml::builder().lib_path(p.as_os_str()).init(),
        None => nvml_wrapper::Nvml::init(),
    };
    let nvml = match init {
        Ok(n) => n,
        Err(e) => return Nvml::Unavailable(e.to_string()),
    };
    let driver_version = match nvml.sys_driver_version() {
        Ok(v) => v,
        Err(e) => return Nvml::Unavailable(format!("nvmlSystemGetDriverVersion: {e}")),
    };
    let cuda_driver_version = nvml.sys_cuda_driver_version().ok().map(|v| {
        format!(
            "{}.{}",
            nvml_wrapper::cuda_driver_version_major(v),
            nvml_wrapper::cuda_driver_version_minor(v)
        )
    });
    let count = match nvml.device_count() {
        Ok(c) => c,
        Err(e) => return Nvml::Unavailable(format!("nvmlDeviceGetCount: {e}")),
    };
    let mut gpus = vec![];
    for index in 0..count {
        let dev = match nvml.device_by_index(index) {
            Ok(d) => d,
            // A GPU NVML counts but cannot open: left out, so node.gpu.count names its bus ID.
            Err(_) => continue,
        };
        gpus.push(Gpu {
            index,
            name: dev.name().unwrap_or_else(|e| format!("unknown ({e})")),
            uuid: dev.uuid().unwrap_or_default(),
            pci_bus_id: dev.pci_info().map(|p| p.bus_id).unwrap_or_default(),
            fabric: super::nvml_fabric::fabric_info(&nvml, &dev),
            ecc_uncorrected: dev
                .total_ecc_errors(
                    nvml_wrapper::enum_wrappers::device::MemoryError::Uncorrected,
                    nvml_wrapper::enum_wrappers::device::EccCounter::Volatile,
                )
                .ok(),
            pcie_width: dev
                .current_pcie_link_width()
                .and_then(|c| dev.max_pcie_link_width().map(|m| (c, m)))
                .ok(),
            mig: dev.mig_mode().ok().map(|m| m.current == 1),
            nvlink: nvlinks(&dev),
            row_remap: super::nvml_fabric::remapped_rows(&nvml, &dev).ok(),
            retired_pages_pending: dev.are_pages_pending_retired().ok(),
            persistence: dev.is_in_persistent_mode().ok(),
        });
    }
    Nvml::Read {
        driver_version,
        cuda_driver_version,
        gpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_scan_finds_nvidia_display_and_3d_controllers_only() {
        let base = std::env::temp_dir().join(format!("lg-gpu-pci-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let drivers = base.join("sys/bus/pci/drivers");
        let dev = |bdf: &str, vendor: &str, class: &str, driver: &str| {
            let d = base.join("sys/bus/pci/devices").join(bdf);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
            std::fs::write(d.join("class"), format!("{class}\n")).unwrap();
            if !driver.is_empty() {
                // As sysfs: the device's `driver` link, and the driver's link to the device.
                std::fs::create_dir_all(drivers.join(driver)).unwrap();
                std::os::unix::fs::symlink(drivers.join(driver), d.join("driver")).unwrap();
                std::os::unix::fs::symlink(&d, drivers.join(driver).join(bdf)).unwrap();
            }
        };
        dev("0000:18:00.0", "0x10de", "0x030200", "nvidia"); // H100/H200 SXM: 3D controller
        dev("0000:3b:00.0", "0x10de", "0x030000", "nvidia"); // a VGA-class NVIDIA GPU
        dev("0000:40:00.0", "0x10de", "0x068000", "nvidia-nvswitch"); // NVSwitch: not a GPU
        dev("0000:50:00.0", "0x15b3", "0x020700", "mlx5_core"); // a ConnectX NIC
        dev("0000:60:00.0", "0x10de", "0x030200", "vfio-pci"); // passed to a VM: not the driver's
        dev("0000:61:00.0", "0x10de", "0x030200", ""); // unbound (excluded): not the driver's
        dev("0000:62:00.0", "0x10de", "0x068000", "nvidia"); // the driver's, but a bridge: no GPU

        // The driver's own entries beside its device links.
        std::fs::write(drivers.join("nvidia/bind"), "").unwrap();
        std::fs::write(drivers.join("nvidia/uevent"), "DRIVER=nvidia\n").unwrap();
        let roots = Roots::under(&base);
        assert_eq!(pci_gpus(&roots.sys), vec!["0000:18:00.0", "0000:3b:00.0"]);
        assert_eq!(proc_gpus(&roots.proc), None);
        let f = gather_at(&roots, &NvmlSource::Canned(Nvml::NotAsked));
        assert_eq!(f.pci.len(), 2);
        // GPUs here: the kernel log is read (a fixture file in place of /dev/kmsg).
        assert!(
            matches!(f.kernel, KernelLog::Unreadable(_)),
            "{:?}",
            f.kernel
        );
        std::fs::create_dir_all(base.join("dev")).unwrap();
        std::fs::create_dir_all(base.join("proc")).unwrap();
        std::fs::write(base.join("proc/uptime"), "7200.51 14000.00\n").unwrap();
        std::fs::write(
            base.join("dev/kmsg"),
            "6,1,5,-;Linux version 6.1\n SUBSYSTEM=x\n4,77,3600000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=9, DBE (0x1) detected\n",
        )
        .unwrap();
        let f = gather_at(&roots, &NvmlSource::Canned(Nvml::NotAsked));
        let KernelLog::Read { uptime_s, xids } = &f.kernel else {
            panic!("{:?}", f.kernel)
        };
        assert_eq!((*uptime_s, xids.len(), xids[0].code), (7200, 1, 48));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_node_without_nvidia_devices_never_asks_nvml() {
        let base = std::env::temp_dir().join(format!("lg-gpu-none-{}", std::process::id()));
        std::fs::create_dir_all(base.join("sys/bus/pci/devices")).unwrap();
        let f = gather_at(&Roots::under(&base), &NvmlSource::System);
        assert_eq!(f.nvml, Nvml::NotAsked);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
