//! Gathering: the I/O behind each node check family, one file per family (reads `/proc`, `/sys`,
//! `/etc`, munged…). Each `gather` returns the family's facts for the pure evaluators in
//! `launchguard_core::node`; nothing here judges. Facts that rarely change (hardware, the pmix
//! plugin's library directory) are cached in [`Ctx`] and refreshed when their files change.
//!
//! Every gatherer reads `/sys`, `/proc`, `/dev` and `/etc` through [`Ctx::roots`]
//! ([`launchguard_core::host::Roots`]), so a test points them all at a fixture tree at once.

pub mod devices;
pub mod disk_cache;
pub mod enroot;
pub mod gpu;
pub mod hostname;
pub mod imex;
pub mod memlock;
pub mod munge;
pub mod munge_paths;
pub mod munge_socket;
pub mod nccl_env;
pub mod nofollow;
mod nvml_fabric;
pub mod plugstack;
pub mod pmix;
pub mod slurm_conf;
pub mod slurmd;
pub mod util;
pub mod view;

use crate::config::Config;
use launchguard_core::host::{short_hostname, Roots};
use launchguard_core::node::gpu::{GpuFacts, Nvml};
use launchguard_core::node::slurm_conf::ConfReadError;
use launchguard_core::slurm_conf::SlurmConf;
use std::path::PathBuf;
use std::sync::Mutex;

/// A pmix plugin's scan: (path, mtime, size, the library and PMIx directories named in it).
pub type PmixScan = (
    PathBuf,
    i64,
    u64,
    launchguard_core::host::mpi::PluginStrings,
);

/// What every family may need: the config and the caches, shared by the check runs.
pub struct Ctx {
    /// The configuration.
    pub cfg: Config,
    /// Where `/sys`, `/proc`, `/dev` and `/etc` are read ([`Roots::system`] but in tests).
    pub roots: Roots,
    /// The hardware (`slurmd -C`'s facts), read once.
    pub hardware: std::sync::OnceLock<Result<launchguard_core::node::slurm_conf::Hardware, String>>,
    /// pmix plugin scans, keyed by (path, mtime, size).
    pub pmix_cache: Mutex<Vec<PmixScan>>,
    /// The running Slurm's PlugStackConfig (`scontrol show config`) and when it was asked.
    pub scontrol_plugstack: Mutex<Option<(std::time::Instant, Option<String>)>>,
    /// Where the GPU facts' NVML part comes from (the config's `[gpu]` but under a fixture
    /// tree, where it is [`Nvml::NotAsked`] unless a test sets canned facts).
    pub nvml: gpu::NvmlSource,
    /// The last GPU facts and when they were gathered (shared by the GPU and IMEX families).
    pub gpu_cache: Mutex<Option<(std::time::Instant, GpuFacts)>>,
    /// A copy of the last GPU facts, for the textfile: never held while NVML is asked, so the
    /// agent's publishing never waits on a wedged GPU (`gpu_cache` is held during a gathering).
    pub gpu_last: Mutex<Option<GpuFacts>>,
}

impl Ctx {
    /// A context over a config, reading the system's own trees.
    pub fn new(cfg: Config) -> Ctx {
        Ctx::with_roots(cfg, Roots::system())
    }

    /// A context over a config that reads `/sys`, `/proc`, `/dev` and `/etc` under `roots`.
    pub fn with_roots(cfg: Config, roots: Roots) -> Ctx {
        let nvml = if roots == Roots::system() {
            gpu::NvmlSource::from_config(&cfg.gpu)
        } else {
            gpu::NvmlSource::Canned(Nvml::NotAsked)
        };
        Ctx {
            cfg,
            roots: roots.clone(),
            hardware: std::sync::OnceLock::new(),
            pmix_cache: Mutex::new(vec![]),
            scontrol_plugstack: Mutex::new(None),
            nvml,
            gpu_cache: Mutex::new(None),
            gpu_last: Mutex::new(None),
        }
    }

    /// slurm.conf, parsed with its includes (`Err`: the main file unreadable).
    pub fn slurm_conf(&self) -> (PathBuf, Result<SlurmConf, ConfReadError>) {
        let path = self.cfg.slurm_conf_path();
        (path.clone(), slurm_conf::read(&path))
    }

    /// This node's NodeName: the config's `node_name`, else `$SLURMD_NODENAME`, else the slurm.conf
    /// node whose NodeName or NodeHostname is the hostname, else the short hostname.
    pub fn slurm_node_name(&self, conf: Option<&SlurmConf>) -> String {
        if let Some(n) = &self.cfg.node_name {
            return n.clone();
        }
        if let Ok(n) = std::env::var("SLURMD_NODENAME") {
            if !n.is_empty() {
                return n;
            }
        }
        let host = short_hostname(&self.roots);
        conf.and_then(|c| c.node_name_for_host(&host))
            .unwrap_or(host)
    }

    /// The directory of slurm.conf (gres.conf, plugstack.conf and includes live beside it).
    pub fn slurm_dir(&self) -> PathBuf {
        self.cfg
            .slurm_conf_path()
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| "/etc/slurm".into())
    }
}

/// This node's short hostname (what slurmd uses as its NodeName by default), from the system's
/// `/proc` ([`launchguard_core::host::short_hostname`]).
pub fn node_name() -> String {
    short_hostname(&Roots::system())
}
