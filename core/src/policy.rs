//! The plugstack arguments: what an admin writes after the .so path in `plugstack.conf`.
//!
//! ```text
//! required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so mode=warn cpus_per_task=enforce
//! ```
//!
//! Rules (documented in docs/plugstack.md):
//! - `mode=enforce|warn|off` is the default for every check (default `warn`);
//! - `<check>=enforce|warn|off` overrides one check (`cpus_per_task`, `export_all`, `export_split`);
//! - `gpu_steps_only=yes|no` (default `yes`) applies the CPU rule only to steps that get GPUs;
//! - `min_cpus_per_task=N|auto` (default `auto`: the node's CPUs divided by its GPUs);
//! - `enroot_repair=yes|no` (default `yes`), `enroot_conf=PATH` (default `/etc/enroot/enroot.conf`),
//!   `enroot_runtime_path=PATH` (default: from enroot.conf, else `/run/enroot`);
//! - `devices=/dev/a,/dev/b` adds devices every step must see (`devices=enforce|warn|off` sets the
//!   mode of `launch.devices` instead);
//! - `fabric=efa|ib|auto` (default `auto`: the drivers behind `/sys/class/infiniband`);
//! - `nccl_rules=PATH` (default `/etc/launchguard/nccl-rules.conf` when it exists) adds NCCL rules;
//! - `profile=NAME` (default none) names the node's SKU profile
//!   ([`crate::checks::nccl_env::profiles`], e.g. `gb300-mnnvl`): settings it makes deliberate are not
//!   flagged, and its CPUs per task is the `-c` advice when the node's size is unknown.
//!
//! A bad argument never makes the plugin fail a job: it is reported as an [`ArgProblem`] and that
//! argument keeps its safe default. `launchguard check-args` prints the same problems and exits 2.

use crate::finding::CheckKind;
use std::collections::BTreeMap;
use std::fmt;

/// Splits one plugstack.conf line the way Slurm does (`_plugin_stack_parse_line` in Slurm's
/// `src/common/spank.c`): everything from the first `#` on is a comment, even inside a word, and
/// words are separated by spaces, tabs and newlines only (no quoting). Returns the words: the first
/// is `required|optional|include`, the second the plugin's path, the rest its arguments.
pub fn plugstack_line_words(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or("");
    line.split([' ', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .collect()
}

/// What a check does with its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Error findings stop the launch (the plugin must be listed `required`); warnings print.
    Enforce,
    /// Every finding prints one line; the launch goes on.
    Warn,
    /// Silence.
    Off,
}

impl Mode {
    /// Parses `enforce`, `warn` or `off` (case-insensitive).
    pub fn parse(s: &str) -> Option<Mode> {
        match s.to_ascii_lowercase().as_str() {
            "enforce" => Some(Mode::Enforce),
            "warn" => Some(Mode::Warn),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }

    /// The spelling used in plugstack arguments.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Warn => "warn",
            Mode::Off => "off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `min_cpus_per_task=N|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinCpus {
    /// The node's CPUs divided by its GPUs (e.g. 192 / 8 = 24), when both are known.
    Auto,
    /// A fixed number of CPUs per task for GPU steps.
    Fixed(u32),
}

/// `fabric=efa|ib|auto`. Not [`crate::fabric::Fabric`]: `auto` is a policy (detect the fabric from
/// the node's HCA drivers at each launch), not a fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricChoice {
    /// Detect from `/sys/class/infiniband/*/device/driver`.
    Auto,
    /// AWS EFA.
    Efa,
    /// InfiniBand / RoCE.
    Ib,
}

/// Default `enroot_conf`.
pub const DEFAULT_ENROOT_CONF: &str = "/etc/enroot/enroot.conf";
/// Default `nccl_rules` (used only when the file exists).
pub const DEFAULT_NCCL_RULES: &str = "/etc/launchguard/nccl-rules.conf";

/// The effective policy after parsing the plugstack arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Default mode for every check (`mode=`).
    pub mode: Mode,
    /// Per-check overrides (`cpus_per_task=enforce`, …).
    pub overrides: BTreeMap<CheckKind, Mode>,
    /// `gpu_steps_only=yes|no`.
    pub gpu_steps_only: bool,
    /// `min_cpus_per_task=N|auto`.
    pub min_cpus_per_task: MinCpus,
    /// `enroot_repair=yes|no`: create or fix the runtime directory as root instead of reporting it.
    pub enroot_repair: bool,
    /// `enroot_conf=PATH`.
    pub enroot_conf: String,
    /// `enroot_runtime_path=PATH`: overrides `ENROOT_RUNTIME_PATH` from enroot.conf.
    pub enroot_runtime_path: Option<String>,
    /// `devices=/dev/a,/dev/b`: devices every step must see.
    pub devices: Vec<String>,
    /// `fabric=efa|ib|auto`.
    pub fabric: FabricChoice,
    /// `nccl_rules=PATH`: the admin's extra NCCL rules.
    pub nccl_rules: String,
    /// `timing=yes|no`: log each callback's duration in µs (srun's stderr, slurmd's log), for
    /// `scripts/bench-launch.py --timing`.
    pub timing: bool,
    /// `agent_socket=PATH|none`: where each launch's verdict is reported to `launchguard agent`
    /// (default `/run/launchguard/agent.sock`; `none` disables reports). Fail-open: a missing or busy
    /// agent never delays or fails a launch.
    pub agent_socket: Option<String>,
    /// `profile=NAME`: the node's SKU profile (a name from [`crate::checks::nccl_env::profiles`]).
    pub profile: Option<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            mode: Mode::Warn,
            overrides: BTreeMap::new(),
            gpu_steps_only: true,
            min_cpus_per_task: MinCpus::Auto,
            enroot_repair: true,
            enroot_conf: DEFAULT_ENROOT_CONF.into(),
            enroot_runtime_path: None,
            devices: vec![],
            fabric: FabricChoice::Auto,
            nccl_rules: DEFAULT_NCCL_RULES.into(),
            timing: false,
            agent_socket: Some(crate::protocol::DEFAULT_SOCKET.into()),
            profile: None,
        }
    }
}

impl Policy {
    /// The mode in force for one check.
    pub fn mode_for(&self, check: CheckKind) -> Mode {
        self.overrides.get(&check).copied().unwrap_or(self.mode)
    }

    /// Whether every check is off (the plugin can return at once).
    pub fn all_off(&self) -> bool {
        CheckKind::ALL
            .into_iter()
            .all(|c| self.mode_for(c) == Mode::Off)
    }

    /// The effective policy as `key=value` words, one per line, in plugstack syntax.
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![format!("mode={}", self.mode)];
        for c in CheckKind::ALL {
            let src = if self.overrides.contains_key(&c) {
                ""
            } else {
                " (from mode)"
            };
            out.push(format!("{}={}{}", c.key(), self.mode_for(c), src));
        }
        out.push(format!(
            "gpu_steps_only={}",
            if self.gpu_steps_only { "yes" } else { "no" }
        ));
        out.push(match self.min_cpus_per_task {
            MinCpus::Auto => "min_cpus_per_task=auto".to_string(),
            MinCpus::Fixed(n) => format!("min_cpus_per_task={n}"),
        });
        out.push(format!(
            "enroot_repair={}",
            if self.enroot_repair { "yes" } else { "no" }
        ));
        out.push(format!("enroot_conf={}", self.enroot_conf));
        out.push(match &self.enroot_runtime_path {
            Some(p) => format!("enroot_runtime_path={p}"),
            None => "enroot_runtime_path=(from enroot_conf, else /run/enroot)".to_string(),
        });
        if !self.devices.is_empty() {
            out.push(format!("devices={} (device list)", self.devices.join(",")));
        }
        out.push(format!(
            "fabric={}",
            match self.fabric {
                FabricChoice::Auto => "auto",
                FabricChoice::Efa => "efa",
                FabricChoice::Ib => "ib",
            }
        ));
        out.push(format!("nccl_rules={}", self.nccl_rules));
        out.push(format!(
            "agent_socket={}",
            self.agent_socket.as_deref().unwrap_or("none")
        ));
        out.push(format!(
            "profile={}",
            self.profile.as_deref().unwrap_or("none")
        ));
        out
    }
}

/// One plugstack argument that could not be used. Its `Display` is the one line logged by the plugin
/// and printed by `launchguard check-args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgProblem {
    /// The argument as written (clipped to 80 characters).
    pub arg: String,
    /// What is wrong with it and which default applies instead.
    pub problem: String,
}

impl fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "launchguard: plugstack argument '{}': {}",
            self.arg, self.problem
        )
    }
}

/// One plugstack argument other than the check modes, for `docs/reference/plugstack-arguments.md`
/// (written by `launchguard generate-docs --reference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argument {
    /// The key, e.g. `gpu_steps_only`.
    pub key: &'static str,
    /// Accepted values, e.g. `yes|no`.
    pub values: &'static str,
    /// The default, as [`Policy::default`] has it.
    pub default: &'static str,
    /// What it does.
    pub meaning: &'static str,
}

/// Every key of [`KNOWN_KEYS`] except `mode` and the per-check keys ([`CheckKind::key`]), which
/// the reference lists from [`CheckKind::ALL`]. A unit test keeps the three in step.
pub const ARGUMENTS: &[Argument] = &[
    Argument {
        key: "gpu_steps_only",
        values: "yes|no",
        default: "yes",
        meaning: "apply the CPU rule and the NCCL rules only to steps that get GPUs",
    },
    Argument {
        key: "min_cpus_per_task",
        values: "N|auto",
        default: "auto",
        meaning: "CPUs per task to advise and the floor for the \"too few\" warning; auto = the node's CPUs / GPUs, omitted when unknown, when the partition's nodes differ, or below 2",
    },
    Argument {
        key: "enroot_repair",
        values: "yes|no",
        default: "yes",
        meaning: "create or fix enroot's runtime directory as root (mode 1777, owner root) and log it for the admin, instead of reporting it",
    },
    Argument {
        key: "enroot_conf",
        values: "PATH",
        default: DEFAULT_ENROOT_CONF,
        meaning: "where ENROOT_RUNTIME_PATH is read; the enroot check runs only where enroot is installed (this file or /usr/bin/enroot exists)",
    },
    Argument {
        key: "enroot_runtime_path",
        values: "PATH",
        default: "from enroot_conf",
        meaning: "overrides the runtime path; write a per-user last component as $UID, not $(id -u): only the shared directory above it is checked and repaired",
    },
    Argument {
        key: "devices",
        values: "enforce|warn|off, or /dev/a,/dev/b",
        default: "mode; no device list",
        meaning: "with a mode: the mode of launch.devices; with absolute paths: devices every step must see",
    },
    Argument {
        key: "fabric",
        values: "efa|ib|auto",
        default: "auto",
        meaning: "the fabric the NCCL rules judge against; auto reads the drivers behind /sys/class/infiniband/*/device/driver (efa wins; rxe/siw or no NIC: no fabric rules)",
    },
    Argument {
        key: "nccl_rules",
        values: "PATH",
        default: DEFAULT_NCCL_RULES,
        meaning: "the admin's extra NCCL rules, when the file exists (at most 256 rules)",
    },
    Argument {
        key: "profile",
        values: "NAME|none",
        default: "none",
        meaning: "the nodes' SKU profile (gb300-mnnvl): its deliberate NCCL settings are not flagged and its own rules apply",
    },
    Argument {
        key: "timing",
        values: "yes|no",
        default: "no",
        meaning: "log each callback's duration in microseconds (srun's stderr, slurmd's log), for benchmarking",
    },
    Argument {
        key: "agent_socket",
        values: "PATH|none",
        default: crate::protocol::DEFAULT_SOCKET,
        meaning: "where each launch's verdict is reported to launchguard agent (none: no reports); fail-open, never delays a launch",
    },
];

/// Keys accepted by [`parse_args`]; listed in problems about unknown keys.
pub const KNOWN_KEYS: &[&str] = &[
    "mode",
    "cpus_per_task",
    "export_all",
    "export_split",
    "enroot_runtime",
    "devices",
    "nccl_env",
    "imex_channel",
    "memlock",
    "gpu_options",
    "pmix",
    "gpu_steps_only",
    "min_cpus_per_task",
    "enroot_repair",
    "enroot_conf",
    "enroot_runtime_path",
    "fabric",
    "nccl_rules",
    "timing",
    "agent_socket",
    "profile",
];

/// An absolute path without whitespace or control characters (plugstack splits on whitespace).
fn valid_path(p: &str) -> bool {
    p.starts_with('/') && p.len() <= 4096 && !p.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Parses plugstack arguments (each a `key=value` word) into a [`Policy`].
///
/// Never fails: every unusable argument becomes an [`ArgProblem`] and keeps its default. Later
/// arguments override earlier ones.
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> (Policy, Vec<ArgProblem>) {
    let mut policy = Policy::default();
    let mut problems = Vec::new();
    for raw in args {
        let raw = raw.as_ref();
        let shown = crate::finding::clip(raw, 80);
        let mut problem = |p: String| {
            problems.push(ArgProblem {
                arg: shown.clone(),
                problem: p,
            })
        };
        let Some((key, value)) = raw.split_once('=') else {
            if raw.ends_with(')') {
                // `enroot_runtime_path=/run/enroot/user-$(id -u)` was split at its space.
                problem(
                    "plugstack arguments are split at spaces, so '$(id -u)' cannot be written here; \
                     write the per-user part as $UID (enroot_runtime_path=/run/enroot/user-$UID): only the \
                     shared directory above it is checked; ignored"
                        .into(),
                );
                continue;
            }
            problem(format!(
                "expected key=value (known keys: {}); ignored",
                KNOWN_KEYS.join(", ")
            ));
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        match key {
            "mode" => match Mode::parse(value) {
                Some(m) => policy.mode = m,
                None => problem(format!(
                    "'{}' is not enforce|warn|off; using the default mode=warn",
                    crate::finding::clip(value, 40)
                )),
            },
            "gpu_steps_only" | "timing" | "enroot_repair" => {
                let (slot, default) = match key {
                    "gpu_steps_only" => (&mut policy.gpu_steps_only, "yes"),
                    "timing" => (&mut policy.timing, "no"),
                    _ => (&mut policy.enroot_repair, "yes"),
                };
                match parse_bool(value) {
                    Some(b) => *slot = b,
                    None => problem(format!(
                        "'{}' is not yes|no; using the default {key}={default}",
                        crate::finding::clip(value, 40)
                    )),
                }
            }
            "agent_socket" if value.eq_ignore_ascii_case("none") => policy.agent_socket = None,
            "enroot_conf" | "enroot_runtime_path" | "nccl_rules" | "agent_socket" => {
                if !valid_path(value) {
                    problem(format!(
                        "'{}' is not an absolute path; using the default",
                        crate::finding::clip(value, 40)
                    ));
                } else if key == "enroot_conf" {
                    policy.enroot_conf = value.into();
                } else if key == "nccl_rules" {
                    policy.nccl_rules = value.into();
                } else if key == "agent_socket" {
                    policy.agent_socket = Some(value.into());
                } else {
                    policy.enroot_runtime_path = Some(value.into());
                }
            }
            "profile" => {
                let v = value.to_ascii_lowercase();
                if v == "none" {
                    policy.profile = None;
                } else if crate::profile::profile(&v).is_some() {
                    policy.profile = Some(v);
                } else {
                    problem(format!(
                        "'{}' is not a known profile ({}, none); using no profile",
                        crate::finding::clip(value, 40),
                        crate::profile::profiles()
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            "fabric" => match value.to_ascii_lowercase().as_str() {
                "auto" => policy.fabric = FabricChoice::Auto,
                "efa" => policy.fabric = FabricChoice::Efa,
                "ib" => policy.fabric = FabricChoice::Ib,
                _ => problem(format!(
                    "'{}' is not efa|ib|auto; using the default fabric=auto",
                    crate::finding::clip(value, 40)
                )),
            },
            "devices" if Mode::parse(value).is_none() => {
                let paths: Vec<&str> = value.split(',').filter(|p| !p.is_empty()).collect();
                match paths.iter().find(|p| !valid_path(p)) {
                    Some(bad) => problem(format!(
                        "'{}' is not an absolute device path (expected devices=/dev/a,/dev/b or devices=enforce|warn|off); ignored",
                        crate::finding::clip(bad, 40)
                    )),
                    None => policy.devices = paths.iter().map(|p| p.to_string()).collect(),
                }
            }
            "min_cpus_per_task" => {
                if value.eq_ignore_ascii_case("auto") {
                    policy.min_cpus_per_task = MinCpus::Auto;
                } else {
                    match value.parse::<u32>() {
                        Ok(n) if (1..=4096).contains(&n) => {
                            policy.min_cpus_per_task = MinCpus::Fixed(n)
                        }
                        _ => problem(format!(
                            "'{}' is not a number from 1 to 4096 or auto; using the default min_cpus_per_task=auto",
                            crate::finding::clip(value, 40)
                        )),
                    }
                }
            }
            _ => match CheckKind::from_key(key) {
                Some(check) => match Mode::parse(value) {
                    Some(m) => {
                        policy.overrides.insert(check, m);
                    }
                    None => problem(format!(
                        "'{}' is not enforce|warn|off; {} follows mode= instead",
                        crate::finding::clip(value, 40),
                        check.key()
                    )),
                },
                None => problem(format!(
                    "unknown key '{}' (known keys: {}); ignored",
                    crate::finding::clip(key, 40),
                    KNOWN_KEYS.join(", ")
                )),
            },
        }
    }
    (policy, problems)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" | "true" | "1" | "on" => Some(true),
        "no" | "false" | "0" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_a_known_sku_profile() {
        let (p, probs) = parse_args(&["profile=GB300-MNNVL"]);
        assert!(probs.is_empty(), "{probs:?}");
        assert_eq!(p.profile.as_deref(), Some("gb300-mnnvl"));
        let (p, probs) = parse_args(&["profile=gb200"]);
        assert_eq!(p.profile, None);
        assert_eq!(probs.len(), 1);
        assert!(probs[0].problem.contains("gb300-mnnvl"), "{}", probs[0]);
    }

    #[test]
    fn defaults_are_warn_gpu_only_auto() {
        let (p, probs) = parse_args::<&str>(&[]);
        assert!(probs.is_empty());
        assert_eq!(p, Policy::default());
        assert_eq!(p.mode_for(CheckKind::CpusPerTask), Mode::Warn);
    }

    #[test]
    fn per_check_override_beats_mode_in_any_order() {
        let (p, probs) = parse_args(&["cpus_per_task=enforce", "mode=off"]);
        assert!(probs.is_empty());
        assert_eq!(p.mode_for(CheckKind::CpusPerTask), Mode::Enforce);
        assert_eq!(p.mode_for(CheckKind::ExportAll), Mode::Off);
        assert!(!p.all_off());
    }

    #[test]
    fn plugstack_lines_split_like_slurm() {
        assert_eq!(
            plugstack_line_words("required /x.so mode=warn # site default\tfoo"),
            vec!["required", "/x.so", "mode=warn"]
        );
        assert_eq!(
            plugstack_line_words("optional\t/x.so a=b#c d=e"),
            vec!["optional", "/x.so", "a=b"]
        );
        assert!(plugstack_line_words("   # only a comment").is_empty());
        // the $(id -u) trap gets its own explanation
        let (_, probs) = parse_args(&["enroot_runtime_path=/run/enroot/user-$(id", "-u)"]);
        assert_eq!(probs.len(), 1, "{probs:?}");
        assert!(probs[0].problem.contains("$UID"), "{probs:?}");
    }

    #[test]
    fn bad_arguments_keep_safe_defaults_and_are_named() {
        let table: &[(&str, &str)] = &[
            ("mode=wran", "'wran' is not enforce|warn|off"),
            ("colour=red", "unknown key 'colour'"),
            ("justaword", "expected key=value"),
            ("min_cpus_per_task=0", "not a number from 1 to 4096"),
            ("min_cpus_per_task=-1", "not a number from 1 to 4096"),
            (
                "min_cpus_per_task=99999999999",
                "not a number from 1 to 4096",
            ),
            ("gpu_steps_only=maybe", "not yes|no"),
            ("export_all=loud", "export_all follows mode="),
        ];
        for (arg, want) in table {
            let (p, probs) = parse_args(&[*arg]);
            assert_eq!(probs.len(), 1, "{arg}");
            assert_eq!(probs[0].arg, *arg);
            assert!(
                probs[0].problem.contains(want),
                "{arg}: {}",
                probs[0].problem
            );
            assert_eq!(p, Policy::default(), "{arg} must leave the defaults");
        }
    }

    #[test]
    fn values_parse_case_insensitively() {
        let (p, probs) = parse_args(&[
            "mode=ENFORCE",
            "gpu_steps_only=No",
            "min_cpus_per_task=24",
            "launch.export_split=off",
        ]);
        assert!(probs.is_empty(), "{probs:?}");
        assert_eq!(p.mode, Mode::Enforce);
        assert!(!p.gpu_steps_only);
        assert_eq!(p.min_cpus_per_task, MinCpus::Fixed(24));
        assert_eq!(p.mode_for(CheckKind::ExportSplit), Mode::Off);
    }

    #[test]
    fn next_to_pyxis_arguments() {
        let (p, probs) = parse_args(&[
            "devices=/dev/infiniband/uverbs0,/dev/gdrdrv",
            "devices=warn",
            "fabric=EFA",
            "enroot_repair=no",
            "enroot_conf=/etc/enroot/enroot.conf",
            "enroot_runtime_path=/run/enroot",
            "nccl_rules=/etc/launchguard/x.conf",
            "launch.nccl_env=off",
        ]);
        assert!(probs.is_empty(), "{probs:?}");
        assert_eq!(p.devices, vec!["/dev/infiniband/uverbs0", "/dev/gdrdrv"]);
        assert_eq!(p.mode_for(CheckKind::Devices), Mode::Warn);
        assert_eq!(p.fabric, FabricChoice::Efa);
        assert!(!p.enroot_repair);
        assert_eq!(p.enroot_runtime_path.as_deref(), Some("/run/enroot"));
        assert_eq!(p.mode_for(CheckKind::NcclEnv), Mode::Off);
        for bad in [
            "devices=dev/x",
            "fabric=roce",
            "enroot_conf=relative",
            "enroot_repair=perhaps",
        ] {
            let (p, probs) = parse_args(&[bad]);
            assert_eq!(probs.len(), 1, "{bad}");
            assert_eq!(p, Policy::default(), "{bad}");
        }
    }

    #[test]
    fn describe_lists_every_check() {
        let (p, _) = parse_args(&["cpus_per_task=enforce"]);
        let d = p.describe();
        assert!(d.contains(&"cpus_per_task=enforce".to_string()));
        assert!(d.contains(&"export_all=warn (from mode)".to_string()));
    }

    #[test]
    fn every_known_key_is_documented_once() {
        let mut documented: Vec<&str> = vec!["mode"];
        documented.extend(CheckKind::ALL.iter().map(|c| c.key()));
        documented.extend(ARGUMENTS.iter().map(|a| a.key).filter(|k| *k != "devices"));
        let mut known = KNOWN_KEYS.to_vec();
        known.sort_unstable();
        documented.sort_unstable();
        assert_eq!(
            known, documented,
            "policy::ARGUMENTS and CheckKind::ALL must list every KNOWN_KEYS entry once"
        );
        assert!(ARGUMENTS.iter().all(|a| KNOWN_KEYS.contains(&a.key)));
    }
}
