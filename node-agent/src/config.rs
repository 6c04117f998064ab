//! `/etc/launchguard/launchguard.toml`: the agent's and the CLI's configuration.
//!
//! Every key is optional; the defaults are safe on a stock Debian/RHEL Slurm node. Unknown keys are an
//! error (a typo must not silently fall back to a default), reported with the file, line and column.
//! The documented default file is `packaging/launchguard.toml`.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Longest `check_timeout_secs`: below half of the unit's `WatchdogSec=30`, whose ping comes from
/// the loop that waits for the checks.
pub const MAX_CHECK_TIMEOUT: u64 = 14;

/// Largest config file read (bytes): the documented default file is 4 KiB.
pub const MAX_CONFIG: u64 = 1 << 20;

/// Longest line of a TOML error shown (characters): toml quotes the offending source line, which may
/// be megabytes long.
const MAX_ERROR_LINE: usize = 200;

/// Clips each line of a parse error to [`MAX_ERROR_LINE`] characters and the whole to 12 lines,
/// neutralising control and invisible characters on the way.
fn clip_error(e: &str) -> String {
    let mut out: Vec<String> = e
        .lines()
        .take(12)
        .map(|l| launchguard_core::text::printable(l, MAX_ERROR_LINE))
        .collect();
    if e.lines().nth(12).is_some() {
        out.push("…".into());
    }
    out.join("\n")
}

/// Where the config is read from when `--config` is not given.
pub const DEFAULT_PATH: &str = "/etc/launchguard/launchguard.toml";

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Seconds between check runs in the agent (default 300; 0 = only at start and on demand).
    pub interval_secs: u64,
    /// Seconds a check family may run before it is reported UNKNOWN (default 10).
    pub check_timeout_secs: u64,
    /// Check IDs or families (`node.munge`, `node.munge.shared_copy`) not to run.
    pub disabled: Vec<String>,
    /// slurm.conf (default: `$SLURM_CONF`, else `/etc/slurm/slurm.conf`).
    pub slurm_conf: Option<PathBuf>,
    /// Slurm's PluginDir (default: slurm.conf's `PluginDir`, else the distribution's directory).
    pub plugin_dir: Option<PathBuf>,
    /// This node's NodeName (default: `$SLURMD_NODENAME`, else the slurm.conf node whose NodeName or
    /// NodeHostname is the short hostname, else the short hostname). Set it when slurmd runs with -N.
    pub node_name: Option<String>,
    /// The agent's socket.
    pub socket: PathBuf,
    /// Prometheus textfile (written only when its directory exists; "" disables).
    pub textfile: PathBuf,
    /// munge.
    pub munge: Munge,
    /// enroot.
    pub enroot: Enroot,
    /// Node-wide environment files.
    pub nccl_env: NcclEnv,
    /// Plugin reports.
    pub reports: Reports,
    /// `launchguard health`.
    pub health: Health,
    /// The GPU checks' NVML.
    pub gpu: Gpu,
}

/// `[gpu]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gpu {
    /// NVML's library (default: `libnvidia-ml.so.1` from the dynamic loader's search path, asked
    /// only where an NVIDIA device or driver shows). When set, that file is loaded and asked on every
    /// run, devices seen or not (a driver container's `/run/nvidia/driver/usr/lib/…`).
    pub nvml_library: Option<PathBuf>,
    /// The lock every root launchguard process takes around its NVML calls (default
    /// `/run/launchguard/nvml.lock`), so a process stuck in NVML on a wedged GPU makes the next
    /// ones (each `launchguard health` is a new process) report UNKNOWN instead of wedging too.
    /// Taken only where the process can create or write it.
    pub nvml_lock: PathBuf,
}

impl Default for Gpu {
    fn default() -> Self {
        Gpu {
            nvml_library: None,
            nvml_lock: "/run/launchguard/nvml.lock".into(),
        }
    }
}

/// `[munge]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Munge {
    /// The key (default `/etc/munge/munge.key`).
    pub key: PathBuf,
    /// munged's socket (default `/run/munge/munge.socket.2`).
    pub socket: PathBuf,
    /// munged's pid file (default `/run/munge/munged.pid`).
    pub pid_file: PathBuf,
    /// Shared filesystems to search for stray copies of the key (default none), e.g. `["/fsx"]`.
    pub shared_paths: Vec<PathBuf>,
    /// How deep to search them (default 3 levels).
    pub shared_depth: usize,
}

/// `[enroot]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Enroot {
    /// enroot.conf (default `/etc/enroot/enroot.conf`).
    pub conf: PathBuf,
}

/// `[nccl_env]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NcclEnv {
    /// Files (a `*` in the last component is a glob) judged for NCCL_/FI_ variables.
    pub files: Vec<String>,
    /// The admin's extra NCCL rules (same file as the plugin's `nccl_rules=`).
    pub rules: PathBuf,
    /// `efa`, `ib` or `auto` (from /sys/class/infiniband).
    pub fabric: String,
}

/// `[reports]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reports {
    /// Reports kept for `launchguard status` (default 1000).
    pub history: usize,
    /// Clients connected at once (default 128); more are refused and counted.
    pub max_connections: usize,
    /// Reports per second per non-root uid (default 200; bursts of twice that).
    pub per_uid_rate: u32,
    /// Seconds a client may stay connected without sending a line (default 5).
    pub idle_timeout_secs: u64,
    /// Socket mode (default 0o666: any user's srun may report; the agent attributes by SO_PEERCRED).
    pub socket_mode: u32,
}

/// `[health]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Health {
    /// Drain on CRITICAL (default true); false only prints.
    pub drain: bool,
    /// `scontrol` to run (default `scontrol` from PATH).
    pub scontrol: PathBuf,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            interval_secs: 300,
            check_timeout_secs: 10,
            disabled: vec![],
            slurm_conf: None,
            plugin_dir: None,
            node_name: None,
            socket: launchguard_core::protocol::DEFAULT_SOCKET.into(),
            textfile: "/var/lib/prometheus/node-exporter/launchguard.prom".into(),
            munge: Munge::default(),
            enroot: Enroot::default(),
            nccl_env: NcclEnv::default(),
            reports: Reports::default(),
            health: Health::default(),
            gpu: Gpu::default(),
        }
    }
}

impl Default for Munge {
    fn default() -> Self {
        Munge {
            key: "/etc/munge/munge.key".into(),
            socket: "/run/munge/munge.socket.2".into(),
            pid_file: "/run/munge/munged.pid".into(),
            shared_paths: vec![],
            shared_depth: 3,
        }
    }
}

impl Default for Enroot {
    fn default() -> Self {
        Enroot {
            conf: "/etc/enroot/enroot.conf".into(),
        }
    }
}

impl Default for NcclEnv {
    fn default() -> Self {
        NcclEnv {
            files: vec![
                "/etc/environment".into(),
                "/etc/profile.d/*.sh".into(),
                "/etc/enroot/environ.d/*.env".into(),
            ],
            rules: "/etc/launchguard/nccl-rules.conf".into(),
            fabric: "auto".into(),
        }
    }
}

impl Default for Reports {
    fn default() -> Self {
        Reports {
            history: 1000,
            max_connections: 128,
            per_uid_rate: 200,
            idle_timeout_secs: 5,
            socket_mode: 0o666,
        }
    }
}

impl Default for Health {
    fn default() -> Self {
        Health {
            drain: true,
            scontrol: "scontrol".into(),
        }
    }
}

/// A config file that could not be used.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read.
    Read(PathBuf, std::io::Error),
    /// TOML syntax, a wrong type or an unknown key; the message names line and column.
    Parse(PathBuf, String),
    /// A value out of range.
    Invalid(PathBuf, String),
}

use launchguard_core::host::files::shown_path;

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Read(p, e) => write!(f, "cannot read {}: {e}", shown_path(p)),
            ConfigError::Parse(p, e) => write!(f, "{}: {}", shown_path(p), e.trim_end()),
            ConfigError::Invalid(p, e) => write!(f, "{}: {e}", shown_path(p)),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Parses a config text (`path` for messages).
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let c: Config = toml::from_str(text)
            .map_err(|e| ConfigError::Parse(path.into(), clip_error(&e.to_string())))?;
        let bad = |m: &str| Err(ConfigError::Invalid(path.into(), m.into()));
        if c.interval_secs > 7 * 86_400 {
            return bad("interval_secs must be 0..=604800 (0: only at start and on SIGHUP)");
        }
        if c.check_timeout_secs == 0 || c.check_timeout_secs > MAX_CHECK_TIMEOUT {
            return bad("check_timeout_secs must be 1..=14 (the unit's WatchdogSec=30 must see the agent answer while a check hangs)");
        }
        if c.reports.history == 0 || c.reports.history > 10_000 {
            return bad("reports.history must be 1..=10000");
        }
        if c.reports.max_connections < 16 || c.reports.max_connections > 4096 {
            return bad(
                "reports.max_connections must be 16..=4096 (keep it below the unit's LimitNOFILE)",
            );
        }
        if c.reports.per_uid_rate == 0 {
            return bad(
                "reports.per_uid_rate must be at least 1 (0 would refuse every user's report)",
            );
        }
        if c.reports.idle_timeout_secs == 0 || c.reports.idle_timeout_secs > 300 {
            return bad("reports.idle_timeout_secs must be 1..=300");
        }
        if c.reports.socket_mode > 0o777 || c.reports.socket_mode & 0o600 != 0o600 {
            return bad("reports.socket_mode must be a permission mode with owner read+write, such as 0o666 or 0o600");
        }
        let known = launchguard_core::node::all_checks();
        for d in &c.disabled {
            let ok = known
                .iter()
                .any(|k| k.id == d || format!("node.{}", k.family) == *d);
            if !ok {
                return bad(&format!(
                    "disabled: '{d}' is neither a check ID nor a family such as node.munge (see launchguard list-checks)"
                ));
            }
        }
        for (name, p) in [
            ("socket", &c.socket),
            ("munge.key", &c.munge.key),
            ("munge.socket", &c.munge.socket),
            ("munge.pid_file", &c.munge.pid_file),
            ("enroot.conf", &c.enroot.conf),
            ("nccl_env.rules", &c.nccl_env.rules),
            ("gpu.nvml_lock", &c.gpu.nvml_lock),
        ] {
            if !p.is_absolute() {
                return bad(&format!(
                    "{name} must be an absolute path, not '{}'",
                    p.display()
                ));
            }
        }
        if c.gpu
            .nvml_library
            .as_ref()
            .is_some_and(|p| !p.is_absolute())
        {
            return bad("gpu.nvml_library must be an absolute path (a file name alone would be looked up in the loader's search path, which is the default)");
        }
        if !["auto", "efa", "ib"].contains(&c.nccl_env.fabric.as_str()) {
            return bad("nccl_env.fabric must be auto, efa or ib");
        }
        Ok(c)
    }

    /// Loads `path`; a missing file at the default path gives the defaults, anywhere else an error.
    /// The file is read like the other node files: a regular file of at most [`MAX_CONFIG`] bytes,
    /// opened without blocking (a FIFO or device such as `/dev/zero` is refused at once, so neither
    /// `check` nor the agent's SIGHUP reload can hang or grow on it).
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let (p, explicit) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_PATH), false),
        };
        match launchguard_core::host::files::read_whole(&p, MAX_CONFIG) {
            Ok(b) => match String::from_utf8(b) {
                Ok(t) => Config::parse(&t, &p),
                Err(_) => Err(ConfigError::Parse(p, "not UTF-8 text".into())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                Ok(Config::default())
            }
            Err(e) => Err(ConfigError::Read(p, e)),
        }
    }

    /// slurm.conf's path: the config's, else `$SLURM_CONF`, else `/etc/slurm/slurm.conf`, else (a
    /// configless slurmd) the copy slurmd keeps in `/run/slurm/conf/` or its spool's `conf-cache/`.
    pub fn slurm_conf_path(&self) -> PathBuf {
        if let Some(p) = self
            .slurm_conf
            .clone()
            .or_else(|| std::env::var_os("SLURM_CONF").map(PathBuf::from))
        {
            return p;
        }
        [
            "/etc/slurm/slurm.conf",
            "/run/slurm/conf/slurm.conf",
            "/var/spool/slurmd/conf-cache/slurm.conf",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| "/etc/slurm/slurm.conf".into())
    }

    /// Whether a check ID is disabled (by its ID or a prefix family such as `node.munge`).
    pub fn is_disabled(&self, id: &str) -> bool {
        self.disabled
            .iter()
            .any(|d| launchguard_core::node::id_matches(id, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let c = Config::parse("", Path::new("x")).unwrap();
        assert_eq!(c.interval_secs, 300);
        assert_eq!(c.munge.key, PathBuf::from("/etc/munge/munge.key"));
    }

    #[test]
    fn the_shipped_default_file_parses() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../packaging/launchguard.toml"
        ))
        .unwrap();
        Config::parse(&text, Path::new("launchguard.toml")).unwrap();
    }

    #[test]
    fn unknown_key_and_bad_type_name_the_line() {
        let e = Config::parse("interval_secs = 5\nintervl = 3\n", Path::new("/etc/l.toml"))
            .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("/etc/l.toml") && m.contains("line 2") && m.contains("intervl"),
            "{m}"
        );
        let e = Config::parse("[munge]\nkey = 5\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(Config::parse("check_timeout_secs = 0", Path::new("f")).is_err());
    }

    #[test]
    fn endless_fifo_and_huge_configs_are_refused_at_once_and_errors_are_clipped() {
        let dir = std::env::temp_dir().join(format!("lg-config-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // /dev/zero: not a regular file (before: read until memory ran out)
        let t = std::time::Instant::now();
        let e = Config::load(Some(Path::new("/dev/zero"))).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // a FIFO nobody writes: refused at once (before: hung)
        let fifo = dir.join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = Config::load(Some(&fifo)).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        // larger than the cap
        let big = dir.join("big.toml");
        std::fs::write(&big, "#".repeat(MAX_CONFIG as usize + 1)).unwrap();
        let e = Config::load(Some(&big)).unwrap_err();
        assert!(e.to_string().contains("larger than the 1 MiB limit"), "{e}");
        // a 1 MB line with a TOML error: the message quotes at most 200 characters of it
        let long = dir.join("long.toml");
        std::fs::write(
            &long,
            format!("interval_secs = 5{}\n", "x".repeat(1_000_000)),
        )
        .unwrap();
        let e = Config::load(Some(&long)).unwrap_err().to_string();
        assert!(e.len() < 3000, "{} bytes", e.len());
        assert!(e.contains("line 1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn disabled_matches_ids_and_families() {
        let c = Config::parse(
            "disabled = [\"node.munge\", \"node.enroot.storage\"]",
            Path::new("f"),
        )
        .unwrap();
        assert!(c.is_disabled("node.munge.key_mode"));
        assert!(c.is_disabled("node.enroot.storage"));
        assert!(!c.is_disabled("node.enroot.run_dir"));
        assert!(!c.is_disabled("node.mungex.a"));
    }
}
