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
pub mod munge_peer;
pub mod munge_socket;
pub mod nccl_env;
pub mod netlink_addrs;
pub mod nofollow;
mod nvml_fabric;
pub mod plugstack;
pub mod pmix;
pub mod slurm_conf;
pub mod slurmd;
pub mod slurmd_version;
pub mod util;
pub mod view;

use crate::config::Config;
use launchguard_core::host::{short_hostname, Roots};
use launchguard_core::node::gpu::{GpuFacts, Nvml};
use launchguard_core::node::plugstack::PlugstackFacts;
use launchguard_core::node::slurm_conf::ConfReadError;
use launchguard_core::slurm_conf::SlurmConf;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

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
    /// What the families of the current run share ([`RunMemo`]): set by [`Ctx::begin_run`],
    /// dropped by [`Ctx::end_run`]; `None` outside a run, where every read is made afresh.
    run: Mutex<Option<Arc<RunMemo>>>,
}

/// Files every family of one check run reads, read once per run and shared: slurm.conf with its
/// includes (eight families consult it), the hostname, the `munge` user's uid (from the user
/// database: files, LDAP or sssd, as nsswitch.conf says; the munge family asks it, and its
/// directory checks ask it again when munged is not running; a failed lookup holds for the run),
/// plugstack.conf with its includes and plugins (the plugstack family judges it, the enroot family
/// reads launchguard's line), and the node's and this process's mount
/// tables (four families ask whether a path is hidden from the agent; the kernel formats a mount
/// table anew on each read, which made these reads the largest cost of a run).
///
/// Lifetime: one run. [`crate::registry::Runner::run`] calls [`Ctx::begin_run`] before it starts
/// any family and [`Ctx::end_run`] when it has its report, so a run sees the files as they are
/// when it starts and an edit between two runs is seen by the next one; nothing here outlives a
/// run or reaches the disk. Outside a run (a gatherer called on its own, as tests do) nothing is
/// kept. A family of an earlier run that is still hung keeps that run's memo.
#[derive(Default)]
pub struct RunMemo {
    slurm_conf: OnceLock<(PathBuf, Result<SlurmConf, ConfReadError>)>,
    mount_tables: OnceLock<Option<Arc<(String, String)>>>,
    hostname: OnceLock<String>,
    munge_uid: OnceLock<Option<u32>>,
    plugstack: OnceLock<Arc<PlugstackFacts>>,
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
            run: Mutex::new(None),
        }
    }

    /// Starts a check run: its families share one [`RunMemo`], new for this run.
    pub fn begin_run(&self) {
        *self.run.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::default());
    }

    /// Ends a check run: its [`RunMemo`] is dropped (a hung family keeps its own reference).
    pub fn end_run(&self) {
        *self.run.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The current run's memo (a fresh, unshared one outside a run).
    fn memo(&self) -> Arc<RunMemo> {
        self.run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_default()
    }

    /// The `munge` user's uid from the user database (`getpwnam(3)`: `None` when there is no
    /// such user or the lookup fails), looked up once per run.
    pub fn munge_uid(&self) -> Option<u32> {
        *self.memo().munge_uid.get_or_init(|| {
            nix::unistd::User::from_name("munge")
                .ok()
                .flatten()
                .map(|u| u.uid.as_raw())
        })
    }

    /// The short hostname ([`short_hostname`] under [`Ctx::roots`]), read once per run.
    pub fn short_hostname(&self) -> String {
        self.memo()
            .hostname
            .get_or_init(|| short_hostname(&self.roots))
            .clone()
    }

    /// The node's and this process's mount tables when they can differ ([`view::tables`]), read
    /// once per run.
    pub fn mount_tables(&self) -> Option<Arc<(String, String)>> {
        self.memo()
            .mount_tables
            .get_or_init(|| view::tables(self).map(Arc::new))
            .clone()
    }

    /// slurm.conf, parsed with its includes (`Err`: the main file unreadable), read once per run
    /// ([`RunMemo`]).
    pub fn slurm_conf(&self) -> (PathBuf, Result<SlurmConf, ConfReadError>) {
        self.memo()
            .slurm_conf
            .get_or_init(|| {
                let path = self.cfg.slurm_conf_path();
                (path.clone(), slurm_conf::read(self, &path))
            })
            .clone()
    }

    /// plugstack.conf with its includes and plugins ([`plugstack::gather_now`]), gathered once per
    /// run ([`RunMemo`]); a family that asks while another is gathering it waits for that answer.
    pub fn plugstack(&self) -> Arc<PlugstackFacts> {
        self.memo()
            .plugstack
            .get_or_init(|| Arc::new(plugstack::gather_now(self)))
            .clone()
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
        let host = self.short_hostname();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Within a run every family sees one slurm.conf (read once); the next run, and any read
    /// outside a run, sees the file as it is now.
    #[test]
    fn slurm_conf_is_read_once_per_run_and_afresh_outside_one() {
        let d = std::env::temp_dir().join(format!("lg-runmemo-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let conf = d.join("slurm.conf");
        let cfg = Config {
            slurm_conf: Some(conf.clone()),
            ..Config::default()
        };
        let ctx = Ctx::new(cfg);
        let cluster = |ctx: &Ctx| {
            ctx.slurm_conf()
                .1
                .ok()
                .and_then(|c| c.get("ClusterName").map(String::from))
        };
        std::fs::write(&conf, "ClusterName=one\n").unwrap();
        ctx.begin_run();
        assert_eq!(cluster(&ctx).as_deref(), Some("one"));
        std::fs::write(&conf, "ClusterName=two\n").unwrap();
        assert_eq!(cluster(&ctx).as_deref(), Some("one"), "one read per run");
        ctx.end_run();
        assert_eq!(cluster(&ctx).as_deref(), Some("two"), "outside a run");
        ctx.begin_run();
        assert_eq!(cluster(&ctx).as_deref(), Some("two"), "the next run");
        ctx.end_run();
        let _ = std::fs::remove_dir_all(&d);
    }
}
