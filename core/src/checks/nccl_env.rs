//! `launch.nccl_env`: the NCCL/libfabric environment a step runs with, judged per fabric.
//!
//! The rules are data: [`builtin_rules`] is the documented table (docs/user-findings.md, "NCCL environment rules"),
//! and admins add their own in a file ([`parse_rules`]). Unknown `NCCL_*` variables are never flagged.
//! A rule can be limited to GPU steps (NCCL runs only there; `gpu_steps_only=yes` also keeps every rule
//! off CPU-only steps), to one fabric, and to or away from a SKU profile ([`profiles`]): GB300 racks
//! with multi-node NVLink set `NCCL_SHM_DISABLE=1` on purpose.
//!
//! Sources: NCCL documentation, "Environment Variables" (NCCL_NET, NCCL_IB_HCA prefix and `=` exact
//! semantics, NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_NVLS_ENABLE, NCCL_MNNVL_ENABLE,
//! NCCL_NET_GDR_C2C, NCCL_NET_PLUGIN, NCCL_SOCKET_IFNAME); the AWS EFA user guide and aws-ofi-nccl
//! documentation (FI_PROVIDER, plugin name `Libfabric`); UCX documentation (UCX_NET_DEVICES); the
//! NVIDIA Container Toolkit documentation (NVIDIA_VISIBLE_DEVICES: indices, UUIDs, `all`, `none`,
//! `void`).

pub use crate::fabric::Fabric;
use crate::finding::{clip, CheckKind, Finding, Severity};
pub use crate::profile::{profile, profiles, Profile};

/// The fabric behind `/sys/class/infiniband/*`, from each HCA's driver name (`device/driver` link):
/// EFA if any HCA is `efa` (EFA nodes can also show an unrelated link-down RDMA device), IB if
/// any other hardware RDMA driver, `None` with no HCA. Software RDMA (`rxe`, `siw`, or no driver link)
/// is no fabric: those nodes are Ethernet.
pub fn detect_fabric<S: AsRef<str>>(drivers: &[S]) -> Option<Fabric> {
    let hw = || {
        drivers
            .iter()
            .map(AsRef::as_ref)
            .filter(|d| !d.is_empty() && !d.starts_with("rdma_rxe") && *d != "rxe" && *d != "siw")
    };
    if hw().any(|d| d == "efa") {
        Some(Fabric::Efa)
    } else if hw().next().is_some() {
        Some(Fabric::Ib)
    } else {
        None
    }
}

/// When a rule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cond {
    /// The variable is set (for a `PREFIX*` variable: any variable with that prefix).
    Set,
    /// The variable is set to one of these values (case-insensitive).
    Is(Vec<String>),
    /// The variable is set to none of these values (case-insensitive; a value ending in `*` is a
    /// prefix, one starting with `*` a substring).
    Not(Vec<String>),
    /// `NCCL_SOCKET_IFNAME` names no interface of this node, or a loopback/container bridge one.
    Interface,
    /// `NCCL_IB_HCA` names no RDMA device of the node, or a bare prefix selects more devices than it
    /// names (`mlx5` also selects `mlx5_bond_0`, `mlx5_1` also `mlx5_10`): NCCL reads each entry as a
    /// prefix unless the list starts with `=`.
    IbHca,
    /// `UCX_NET_DEVICES` names a device (`mlx5_0:1`, `eth0`) the node does not have.
    UcxDevices,
    /// `NVIDIA_VISIBLE_DEVICES` in a Slurm GPU step is `void`/`none`/empty, or lists host GPU indices
    /// (an index at or above the step's GPU count, `SLURM_STEP_GPUS`): enroot's nvidia hook then
    /// exposes no GPU or fails with `unknown device` (NVIDIA/enroot issue 207).
    NvidiaVisible,
    /// The variable is unset while the task can see an aws-ofi-nccl (OFI) net plugin: NCCL then picks
    /// a transport on its own and falls back silently.
    UnsetWithOfiPlugin,
}

/// One rule of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Short stable name shown in the finding, e.g. `efa.nccl_net`.
    pub name: String,
    /// The fabric it applies to; `None` for every node.
    pub fabric: Option<Fabric>,
    /// Variable name, or a prefix ending in `*` (`NCCL_IB_*`).
    pub var: String,
    /// When it fires.
    pub cond: Cond,
    /// Error (enforce rejects) or warning.
    pub severity: Severity,
    /// Why it matters.
    pub why: String,
    /// The exact fix.
    pub fix: String,
    /// Where the rule comes from (a public document by name, or the admin's file and line).
    pub source: String,
    /// Only judged in steps that get GPUs (NCCL is not used in the others).
    pub gpu_only: bool,
    /// Only judged under this SKU profile (`profile=`).
    pub profile: Option<String>,
    /// Not judged under these SKU profiles (they set the variable deliberately).
    pub unless_profile: Vec<String>,
}

#[allow(clippy::too_many_arguments)] // one row of the table, positionally, reads like the table
fn rule(
    name: &str,
    fabric: Option<Fabric>,
    var: &str,
    cond: Cond,
    severity: Severity,
    why: &str,
    fix: &str,
    source: &str,
) -> Rule {
    Rule {
        name: name.into(),
        fabric,
        var: var.into(),
        cond,
        severity,
        why: why.into(),
        fix: fix.into(),
        source: source.into(),
        gpu_only: false,
        profile: None,
        unless_profile: vec![],
    }
}

impl Rule {
    fn gpu(mut self) -> Rule {
        self.gpu_only = true;
        self
    }
    fn only_in(mut self, profile: &str) -> Rule {
        self.profile = Some(profile.into());
        self
    }
    fn unless(mut self, profile: &str) -> Rule {
        self.unless_profile.push(profile.into());
        self
    }
}

fn vals(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The built-in rules.
pub fn builtin_rules() -> Vec<Rule> {
    use Fabric::{Efa, Ib};
    use Severity::{Error, Warning};
    const EFA_GUIDE: &str = "AWS EFA user guide (NCCL with EFA) and aws-ofi-nccl documentation";
    const OFI_TUNING: &str =
        "aws-ofi-nccl documentation, tuning (the plugin's tuner picks algorithms)";
    const NCCL_IB_DOC: &str = "NCCL documentation, Environment Variables (InfiniBand)";
    const NCCL: &str = "NCCL documentation, Environment Variables";
    const UCX: &str = "UCX documentation, UCX_NET_DEVICES";
    const NVCT: &str = "NVIDIA Container Toolkit documentation, NVIDIA_VISIBLE_DEVICES";
    const GB300: &str = "Azure ND GB300 v6 nccl-tests configuration (MNNVL)";
    let mut v = vec![
        rule("efa.nccl_net_ib", Some(Efa), "NCCL_NET", Cond::Is(vals(&["IB"])), Error,
             "on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation",
             "set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET", EFA_GUIDE),
        rule("efa.nccl_net_socket", Some(Efa), "NCCL_NET", Cond::Is(vals(&["Socket"])), Warning,
             "on EFA, NCCL_NET=Socket makes NCCL send everything over TCP sockets at a fraction of EFA's bandwidth, with no error",
             "set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET", EFA_GUIDE),
        rule("efa.nccl_net_old_name", Some(Efa), "NCCL_NET", Cond::Is(vals(&["AWS Libfabric"])), Warning,
             "on EFA, 'AWS Libfabric' is the name older aws-ofi-nccl releases registered; the validated plugin registers 'Libfabric', and with it this name gave no communication results",
             "set NCCL_NET=Libfabric or unset NCCL_NET", EFA_GUIDE),
        rule("efa.nccl_net", Some(Efa), "NCCL_NET", Cond::Not(vals(&["Libfabric", "IB", "Socket", "AWS Libfabric"])), Warning,
             "on EFA, NCCL_NET names a network that neither NCCL nor aws-ofi-nccl provides here, so NCCL stops at initialisation ('network … not found')",
             "set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET", EFA_GUIDE),
        rule("efa.nccl_net_plugin", Some(Efa), "NCCL_NET_PLUGIN", Cond::Not(vals(&["*ofi", "*libnccl-net.so"])), Warning,
             "a network plugin other than aws-ofi-nccl leaves the EFA path (IB plugin or TCP fallback)",
             "unset NCCL_NET_PLUGIN to keep the image default ofi", EFA_GUIDE),
        rule("efa.nccl_ib", Some(Efa), "NCCL_IB_*", Cond::Set, Warning,
             "InfiniBand settings carried over from an IB cluster are not used on EFA and signal an IB-era environment that drops to TCP or fails",
             "remove the NCCL_IB_* variables from the job script, the image or /etc/environment", EFA_GUIDE),
        rule("efa.fi_provider", Some(Efa), "FI_PROVIDER", Cond::Not(vals(&["efa"])), Warning,
             "libfabric uses another provider than EFA, so NCCL traffic leaves the EFA NICs",
             "unset FI_PROVIDER or set FI_PROVIDER=efa", EFA_GUIDE),
        rule("efa.tree_threshold", Some(Efa), "NCCL_TREE_THRESHOLD", Cond::Is(vals(&["0"])), Warning,
             "it disables NCCL's tree algorithm and lowers all-reduce bandwidth on EFA",
             "unset NCCL_TREE_THRESHOLD (the aws-ofi-nccl tuner picks algorithms)", OFI_TUNING),
        rule("efa.algo", Some(Efa), "NCCL_ALGO", Cond::Is(vals(&["Ring,Tree"])), Warning,
             "forcing NCCL_ALGO overrides the aws-ofi-nccl tuner and can lower bandwidth",
             "unset NCCL_ALGO", OFI_TUNING),
        rule("efa.proto", Some(Efa), "NCCL_PROTO", Cond::Is(vals(&["Simple"])), Warning,
             "forcing NCCL_PROTO=Simple disables LL/LL128 and slows small and medium messages",
             "unset NCCL_PROTO", OFI_TUNING),
        rule("ib.nccl_net_libfabric", Some(Ib), "NCCL_NET", Cond::Is(vals(&["Libfabric", "AWS Libfabric", "OFI"])), Error,
             "on InfiniBand, NCCL_NET=Libfabric/OFI selects the aws-ofi-nccl plugin for EFA, which finds no EFA device and fails NCCL initialisation",
             "unset NCCL_NET or set NCCL_NET=IB", NCCL_IB_DOC),
        rule("ib.nccl_net_socket", Some(Ib), "NCCL_NET", Cond::Is(vals(&["Socket"])), Warning,
             "on InfiniBand, NCCL_NET=Socket falls back to TCP at a fraction of the bandwidth",
             "unset NCCL_NET or set NCCL_NET=IB", NCCL_IB_DOC),
        rule("ib.nccl_net_plugin", Some(Ib), "NCCL_NET_PLUGIN", Cond::Is(vals(&["ofi", "aws-ofi"])), Warning,
             "the aws-ofi-nccl plugin is for EFA; on InfiniBand it fails or falls back to TCP",
             "unset NCCL_NET_PLUGIN", NCCL_IB_DOC),
        rule("ib.fi_provider", Some(Ib), "FI_PROVIDER", Cond::Is(vals(&["efa"])), Warning,
             "an EFA-only libfabric setting on an InfiniBand node points at an EFA-era environment",
             "remove FI_PROVIDER=efa from the job environment", NCCL_IB_DOC),
        rule("ib.fi_efa", Some(Ib), "FI_EFA_*", Cond::Set, Warning,
             "EFA-only libfabric settings have no effect on InfiniBand and point at an EFA-era environment",
             "remove the FI_EFA_* variables from the job environment", NCCL_IB_DOC),
        rule("any.socket_ifname", None, "NCCL_SOCKET_IFNAME", Cond::Interface, Warning,
             "NCCL bootstraps over this interface, so a name the node lacks fails initialisation and a loopback or container bridge breaks multi-node jobs",
             "unset NCCL_SOCKET_IFNAME or name the node's data interface (see 'ip -br link')", NCCL),
    ];
    v.extend([
        rule("efa.nccl_net_unpinned", Some(Efa), "NCCL_NET", Cond::UnsetWithOfiPlugin, Warning,
             "with NCCL_NET unset, an aws-ofi-nccl plugin that fails to load or initialise makes NCCL fall back to TCP sockets without an error",
             "export NCCL_NET=Libfabric so that NCCL stops with an error instead of falling back", NCCL),
        rule("ib.nccl_net_unpinned", Some(Ib), "NCCL_NET", Cond::UnsetWithOfiPlugin, Warning,
             "the task sees an aws-ofi-nccl plugin: with NCCL_NET unset NCCL may load it and run over libfabric instead of its own InfiniBand transport",
             "export NCCL_NET=IB (or remove the OFI plugin from the image)", NCCL),
        rule("any.p2p_disable", None, "NCCL_P2P_DISABLE", Cond::Is(vals(&["1", "true", "yes"])), Warning,
             "NCCL stops using NVLink/PCIe peer-to-peer between the GPUs of a node and copies through host memory, which cuts intra-node bandwidth several-fold",
             "unset NCCL_P2P_DISABLE (keep it only as a documented workaround for broken P2P, e.g. a VM without ACS/IOMMU support)", NCCL).gpu(),
        rule("any.nvls_disable", None, "NCCL_NVLS_ENABLE", Cond::Is(vals(&["0", "false", "no"])), Warning,
             "it turns off NVLink SHARP, which on NVSwitch systems offloads all-reduce to the switch",
             "unset NCCL_NVLS_ENABLE (NCCL enables NVLS where the hardware supports it)", NCCL).gpu(),
        rule("any.shm_disable", None, "NCCL_SHM_DISABLE", Cond::Is(vals(&["1", "true", "yes"])), Warning,
             "ranks of one node that cannot use P2P then talk through the network instead of shared memory",
             "unset NCCL_SHM_DISABLE (only multi-node NVLink systems set it on purpose: profile=gb300-mnnvl)", NCCL)
            .gpu().unless("gb300-mnnvl"),
        rule("any.ld_preload_net_plugin", None, "LD_PRELOAD", Cond::Is(vals(&["*nccl-net"])), Warning,
             "a preloaded NCCL net plugin is forced into every process of the step (also ones that use another NCCL or none) and is not how NCCL loads plugins",
             "remove the plugin from LD_PRELOAD and set NCCL_NET_PLUGIN to its name or path (NCCL loads it with dlopen)", NCCL),
        rule("any.nvidia_visible_devices", None, "NVIDIA_VISIBLE_DEVICES", Cond::NvidiaVisible, Error,
             "Slurm gave this step its own GPUs; enroot's nvidia hook then exposes a different set: none for void/none, 'unknown device' or the wrong GPUs for host indices",
             "unset NVIDIA_VISIBLE_DEVICES in the job and the image (Slurm's GPU allocation decides; request GPUs with --gpus or --gres)", NVCT).gpu(),
        rule("any.nccl_ib_hca", None, "NCCL_IB_HCA", Cond::IbHca, Warning,
             "NCCL reads each NCCL_IB_HCA entry as a prefix unless the list starts with '=', so it selects other devices than the ones named, or none",
             "name the node's devices exactly with a leading '=' (e.g. NCCL_IB_HCA==mlx5_0,mlx5_1; see 'ibv_devices'), or unset NCCL_IB_HCA", NCCL_IB_DOC),
        rule("any.ucx_net_devices", None, "UCX_NET_DEVICES", Cond::UcxDevices, Warning,
             "UCX uses only the devices listed, so a name the node lacks leaves UCX (and MPI/NCCL over UCX) without that network or on TCP",
             "list this node's devices as DEV:PORT or interface names (see 'ucx_info -d' or 'ibv_devices'), or unset UCX_NET_DEVICES", UCX),
        rule("gb300.mnnvl_off", None, "NCCL_MNNVL_ENABLE", Cond::Is(vals(&["0", "false", "no"])), Warning,
             "on a GB300 rack NCCL_MNNVL_ENABLE=0 sends traffic between the rack's nodes over InfiniBand instead of multi-node NVLink (about 200 instead of about 900 GB/s busbw)",
             "set NCCL_MNNVL_ENABLE=1 (with NCCL_NVLS_ENABLE=1)", GB300).gpu().only_in("gb300-mnnvl"),
        rule("gb300.gdr_c2c_off", None, "NCCL_NET_GDR_C2C", Cond::Is(vals(&["0", "false", "no"])), Warning,
             "on Grace-Blackwell, GPUDirect RDMA through the C2C link is off, so network traffic is staged through host memory",
             "set NCCL_NET_GDR_C2C=1", GB300).gpu().only_in("gb300-mnnvl"),
    ]);
    v
}

/// Most rules read from the admin's file. Every launch parses the file and checks each rule
/// against the step's `NCCL_*`/`FI_*` variables (slurmstepd, before the tasks start), so a 60,000-rule
/// file doubled the cost of `srun -n1 true`; the builtin rules are about 20.
pub const MAX_RULES: usize = 256;

/// Most problem lines reported for one file (then one line counts the rest): each goes to slurmd's
/// log on every launch.
pub const MAX_PROBLEMS: usize = 10;

/// Parses the admin's rules file: one rule per line,
/// `<efa|ib|any> <VAR|PREFIX*> <set | is V[,V…] | not V[,V…]> <error|warn> | <why> | <fix>`,
/// `#` comments. Returns the rules and one message per bad line (`<file>:<line>: <problem>`); bad
/// lines are skipped. At most [`MAX_RULES`] rules are kept: the rest of the file is not read, and a
/// problem line says from which line on; at most [`MAX_PROBLEMS`] bad lines are named, then counted.
pub fn parse_rules(text: &str, file: &str) -> (Vec<Rule>, Vec<String>) {
    let mut rules = vec![];
    let mut problems = vec![];
    let mut bad_lines = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let lno = i + 1;
        if rules.len() == MAX_RULES {
            problems.push(format!(
                "{file}:{lno}: more than {MAX_RULES} rules; this line and the rest are ignored (every launch checks every rule: keep the file short)"
            ));
            break;
        }
        let mut bad = |p: &str| {
            bad_lines += 1;
            if bad_lines <= MAX_PROBLEMS {
                problems.push(format!(
                    "{file}:{lno}: {p}: '{}' (line skipped)",
                    clip(line, 80)
                ))
            }
        };
        let mut parts = line.splitn(3, '|');
        let head = parts.next().unwrap_or("");
        let (Some(why), Some(fix)) = (parts.next(), parts.next()) else {
            bad("expected '<fabric> <VAR> <condition> <error|warn> | <why> | <fix>'");
            continue;
        };
        let words: Vec<&str> = head.split_whitespace().collect();
        let (fabric, var, cond, sev) = match words.as_slice() {
            [f, v, "set", s] => (*f, *v, Cond::Set, *s),
            [f, v, "is", list, s] => (*f, *v, Cond::Is(split_vals(list)), *s),
            [f, v, "not", list, s] => (*f, *v, Cond::Not(split_vals(list)), *s),
            _ => {
                bad("expected '<efa|ib|any> <VAR> <set|is V,…|not V,…> <error|warn>' before the first '|'");
                continue;
            }
        };
        let fabric = match fabric {
            "efa" => Some(Fabric::Efa),
            "ib" => Some(Fabric::Ib),
            "any" => None,
            _ => {
                bad("fabric must be efa, ib or any");
                continue;
            }
        };
        let severity = match sev {
            "error" => Severity::Error,
            "warn" | "warning" => Severity::Warning,
            _ => {
                bad("severity must be error or warn");
                continue;
            }
        };
        let valid_var = !var.is_empty()
            && var
                .trim_end_matches('*')
                .chars()
                .all(|c| c == '_' || c.is_ascii_alphanumeric());
        if !valid_var {
            bad("variable must be a name or a PREFIX*");
            continue;
        }
        rules.push(Rule {
            name: format!("site.{}", var.trim_end_matches('*').to_ascii_lowercase()),
            fabric,
            var: var.into(),
            cond,
            severity,
            why: why.trim().into(),
            fix: fix.trim().into(),
            source: format!("{file}:{lno}"),
            gpu_only: false,
            profile: None,
            unless_profile: vec![],
        });
    }
    if bad_lines > MAX_PROBLEMS {
        problems.push(format!(
            "{file}: {} more bad lines not named",
            bad_lines - MAX_PROBLEMS
        ));
    }
    (rules, problems)
}

fn split_vals(list: &str) -> Vec<String> {
    list.split(',').map(|v| v.to_string()).collect()
}

fn matches_value(pattern: &str, value: &str) -> bool {
    if let Some(p) = pattern.strip_prefix('*') {
        value.to_ascii_lowercase().contains(&p.to_ascii_lowercase())
    } else if let Some(p) = pattern.strip_suffix('*') {
        value
            .to_ascii_lowercase()
            .starts_with(&p.to_ascii_lowercase())
    } else {
        value.eq_ignore_ascii_case(pattern)
    }
}

/// Interfaces NCCL should never bootstrap over on a multi-node job.
fn unsuitable_interface(name: &str) -> bool {
    name == "lo"
        || ["docker", "veth", "virbr", "br-", "cni", "flannel"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// What is wrong with `NCCL_SOCKET_IFNAME` on a node with `interfaces`, if anything, and whether it
/// is fatal. NCCL reads the value as a comma-separated list of name prefixes; a leading `=` makes the
/// whole list exact names and a leading `^` makes it an exclusion list (NCCL environment variables
/// documentation). When nothing is left to use, NCCL's bootstrap finds no socket interface and every
/// rank fails at init (fatal); when only loopback or container bridges are left, single-node runs
/// work and multi-node ones cannot connect (a warning).
fn interface_problem(value: &str, interfaces: &[String]) -> Option<(String, bool)> {
    // NCCL reads the variable only when it is longer than one character.
    if value.len() <= 1 {
        return None;
    }
    let value = value.trim();
    let (exclude, value) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (exact, list) = match value.strip_prefix('=') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    // `name:port` entries: NCCL keeps the name and matches the port separately.
    let wanted: Vec<&str> = list
        .split(',')
        .map(|e| e.split(':').next().unwrap_or("").trim())
        .filter(|e| !e.is_empty())
        .collect();
    if wanted.is_empty() || interfaces.is_empty() {
        return None;
    }
    let named = |i: &String| {
        wanted.iter().any(|w| {
            if exact {
                i.as_str() == *w
            } else {
                i.starts_with(w)
            }
        })
    };
    let matched: Vec<&String> = interfaces.iter().filter(|i| named(i) != exclude).collect();
    if matched.is_empty() {
        return Some((
            format!(
                "{} no interface of this node (it has {}): NCCL's bootstrap finds no socket interface and every rank fails at init",
                if exclude { "leaves" } else { "names" },
                clip(&interfaces.join(", "), 80)
            ),
            true,
        ));
    }
    if !exclude && matched.iter().all(|i| unsuitable_interface(i)) {
        return Some((
            format!(
                "selects only a loopback or container bridge interface ({})",
                clip(
                    &matched
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    60
                )
            ),
            false,
        ));
    }
    None
}

/// What a rule is judged against besides the variables: the node and the step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The node's fabric (`None`: no RDMA fabric, or unknown).
    pub fabric: Option<Fabric>,
    /// The node's network interfaces; `None` when unknown (interface rules are skipped).
    pub interfaces: Option<&'a [String]>,
    /// The node's RDMA device names (`/sys/class/infiniband`); `None` when unknown (`NCCL_IB_HCA` and
    /// `UCX_NET_DEVICES` rules are skipped).
    pub hcas: Option<&'a [String]>,
    /// Whether the step has GPUs: `Some(false)` skips GPU-only rules, `None` (unknown, or a node-wide
    /// file every job inherits) judges them.
    pub gpu_step: Option<bool>,
    /// The step's GPUs as Slurm gave them (`SLURM_STEP_GPUS`, e.g. `0,1`); `None` when unknown.
    pub step_gpus: Option<&'a str>,
    /// Path of an aws-ofi-nccl plugin the task can load, if one was found; `None` when none was or the
    /// question was not asked.
    pub ofi_plugin: Option<&'a str>,
    /// The SKU profile (`profile=`), lower-case.
    pub profile: Option<&'a str>,
    /// Variables the container image set (see [`image_vars`]); empty outside containers.
    pub from_image: &'a [String],
}

/// Judges a step's environment (`vars`: every `NAME=value` of the job) on a node with `fabric` and
/// network `interfaces` (`None` when unknown: the interface rule is skipped). One finding per rule
/// that fires, in table order. Shorthand for [`check_in`] with only those facts.
pub fn check(
    vars: &[(String, String)],
    fabric: Option<Fabric>,
    interfaces: Option<&[String]>,
    rules: &[Rule],
) -> Vec<Finding> {
    check_in(
        vars,
        &Context {
            fabric,
            interfaces,
            ..Context::default()
        },
        rules,
    )
}

/// NCCL_IB_HCA's problem on a node with RDMA devices `hcas`, if any. Entries are `[^][=]name[:port]`.
fn ib_hca_problem(value: &str, hcas: &[String]) -> Option<String> {
    let v = value.trim();
    if v.is_empty() || v.starts_with('^') || hcas.is_empty() {
        return None; // an exclusion list only removes devices
    }
    let (exact, list) = match v.strip_prefix('=') {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    let mut unknown = vec![];
    let mut surprises = vec![];
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let name = entry.split(':').next().unwrap_or(entry);
        let hit: Vec<&String> = hcas
            .iter()
            .filter(|h| {
                if exact {
                    *h == name
                } else {
                    h.starts_with(name)
                }
            })
            .collect();
        if hit.is_empty() {
            unknown.push(name.to_string());
            continue;
        }
        if exact {
            continue;
        }
        // `mlx5` selecting mlx5_0, mlx5_1 is what the user meant; `mlx5` selecting mlx5_bond_0, or
        // `mlx5_1` (a full device name) also selecting mlx5_10, is not.
        let names_a_device = hcas.iter().any(|h| h == name);
        for h in hit {
            let rest = &h[name.len()..];
            let plain_index = {
                let r = rest.strip_prefix('_').unwrap_or(rest);
                !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())
            };
            if !rest.is_empty() && (names_a_device || !plain_index) {
                surprises.push(format!("'{name}' also selects {h}"));
            }
        }
    }
    if !unknown.is_empty() {
        return Some(format!(
            "names no RDMA device of this node: {} (it has {})",
            clip(&unknown.join(", "), 60),
            clip(&hcas.join(", "), 80)
        ));
    }
    (!surprises.is_empty()).then(|| clip(&surprises.join(", "), 100))
}

/// UCX_NET_DEVICES's problem: entries (`mlx5_0:1`, `eth0`, `all`) naming no device of the node.
fn ucx_problem(value: &str, hcas: &[String], interfaces: &[String]) -> Option<String> {
    let missing: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("all"))
        .filter(|e| {
            let name = e.split(':').next().unwrap_or(e);
            !hcas.iter().any(|h| h == name) && !interfaces.iter().any(|i| i == name)
        })
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "names {} that this node does not have (RDMA: {}; interfaces: {})",
            clip(&missing.join(", "), 60),
            clip(&hcas.join(", "), 60),
            clip(&interfaces.join(", "), 60)
        )
    })
}

/// NVIDIA_VISIBLE_DEVICES's problem in a step whose GPUs are `step_gpus` (`SLURM_STEP_GPUS`).
fn nvidia_visible_problem(value: &str, step_gpus: &str) -> Option<String> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("all") {
        return None;
    }
    if v.is_empty() || v.eq_ignore_ascii_case("void") || v.eq_ignore_ascii_case("none") {
        return Some(format!(
            "hides every GPU from the container while Slurm gave this step GPUs {}",
            clip(step_gpus, 40)
        ));
    }
    let want: Vec<&str> = v.split(',').map(str::trim).collect();
    let Some(idx) = want
        .iter()
        .map(|x| x.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()
    else {
        return None; // UUIDs or MIG names: cannot be compared with Slurm's indices here
    };
    // Inside the step the GPUs Slurm gave are the only ones, numbered from 0: an index at or above
    // their count is a host index that enroot's hook cannot find ("unknown device").
    let count = crate::checks::gpus::count_list(step_gpus);
    (count > 0 && idx.iter().any(|i| *i >= count)).then(|| {
        format!(
            "lists host GPU indices while the step has {count} GPU{} ({}), numbered from 0 inside it",
            if count == 1 { "" } else { "s" },
            clip(step_gpus, 40)
        )
    })
}

/// Judges a step's environment (`vars`: every `NAME=value` of the job) in `ctx`. One finding per rule
/// that fires, in table order.
pub fn check_in(vars: &[(String, String)], ctx: &Context, rules: &[Rule]) -> Vec<Finding> {
    let fabric = ctx.fabric;
    let mut out = vec![];
    for r in rules {
        if r.fabric.is_some() && r.fabric != fabric {
            continue;
        }
        if r.gpu_only && ctx.gpu_step == Some(false) {
            continue;
        }
        if r.profile.is_some() && r.profile.as_deref() != ctx.profile {
            continue;
        }
        if ctx
            .profile
            .is_some_and(|p| r.unless_profile.iter().any(|u| u == p))
        {
            continue;
        }
        let hits: Vec<&(String, String)> = match r.var.strip_suffix('*') {
            Some(prefix) => vars.iter().filter(|(k, _)| k.starts_with(prefix)).collect(),
            None => vars.iter().filter(|(k, _)| *k == r.var).collect(),
        };
        if r.cond == Cond::UnsetWithOfiPlugin {
            if hits.is_empty() {
                if let Some(plugin) = ctx.ofi_plugin {
                    out.push(finding(
                        r,
                        fabric,
                        format!(
                            "{} is not set while the task can load the aws-ofi-nccl plugin {}",
                            r.var,
                            clip(plugin, 80)
                        ),
                        &[],
                        &[],
                    ));
                }
            }
            continue;
        }
        let Some((name, value)) = hits.last().map(|(k, v)| (k.as_str(), v.as_str())) else {
            continue;
        };
        let problem = match &r.cond {
            Cond::Set => Some(if hits.len() > 1 {
                format!(
                    "{} are set",
                    clip(
                        &hits
                            .iter()
                            .map(|(k, _)| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        80
                    )
                )
            } else {
                format!("{name}={} is set", clip(value, 40))
            }),
            Cond::Is(list) => list
                .iter()
                .any(|p| matches_value(p, value))
                .then(|| format!("{name}={} is set", clip(value, 40))),
            Cond::Not(list) => (!list.iter().any(|p| matches_value(p, value)))
                .then(|| format!("{name}={} is set", clip(value, 40))),
            Cond::Interface => match ctx.interfaces.and_then(|ifs| interface_problem(value, ifs)) {
                Some((p, true)) => {
                    // Surely fails: an error (rejected in enforce mode) on a GPU step, where NCCL
                    // runs; elsewhere the variable may be unused, so it stays a warning.
                    let mut f = finding(
                        r,
                        fabric,
                        format!("{name}={} {p}", clip(value, 40)),
                        &hits,
                        ctx.from_image,
                    );
                    if ctx.gpu_step != Some(false) {
                        f.severity = Severity::Error;
                    }
                    out.push(f);
                    continue;
                }
                Some((p, false)) => Some(format!("{name}={} {p}", clip(value, 40))),
                None => None,
            },
            Cond::IbHca => ctx
                .hcas
                .and_then(|h| ib_hca_problem(value, h))
                .map(|p| format!("{name}={} {p}", clip(value, 40))),
            Cond::UcxDevices => match (ctx.hcas, ctx.interfaces) {
                (Some(h), Some(i)) => ucx_problem(value, h, i),
                _ => None,
            }
            .map(|p| format!("{name}={} {p}", clip(value, 40))),
            Cond::NvidiaVisible => ctx
                .step_gpus
                .filter(|g| !g.trim().is_empty())
                .and_then(|g| nvidia_visible_problem(value, g))
                .map(|p| format!("{name}={} {p}", clip(value, 40))),
            Cond::UnsetWithOfiPlugin => None,
        };
        let Some(problem) = problem else { continue };
        out.push(finding(r, fabric, problem, &hits, ctx.from_image));
    }
    out
}

/// The `NCCL_*`/`FI_*` variables whose value the container set: present in `after` (the job's
/// environment at `task_init`, after Pyxis imported the container's) and absent from or different in
/// `before` (at `task_init_privileged`). Sorted.
pub fn image_vars(before: &[(String, String)], after: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = after
        .iter()
        .filter(|(k, v)| !before.iter().any(|(bk, bv)| bk == k && bv == v))
        .map(|(k, _)| k.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One rule's finding. When the variable that fired came from the container image (`from_image`,
/// see [`image_vars`]), the line says so and gives a fix the user can apply: Pyxis gives the image's
/// value precedence over srun's environment unless the variable is named in `--container-env`
/// (Pyxis README, `--container-env`), so "unset it" alone is no fix there.
fn finding(
    r: &Rule,
    fabric: Option<Fabric>,
    problem: String,
    hits: &[&(String, String)],
    from_image: &[String],
) -> Finding {
    let on = match r.fabric.or(fabric) {
        Some(f) => format!(" on this {} node", f.as_str().to_uppercase()),
        None => String::new(),
    };
    let profile = r
        .profile
        .as_deref()
        .map(|p| format!(" (profile {p})"))
        .unwrap_or_default();
    let image: Vec<&str> = hits
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| from_image.iter().any(|i| i == k))
        .collect();
    let (what, fix) = if image.is_empty() {
        (
            format!("{problem}{on}{profile} (rule {})", r.name),
            r.fix.clone(),
        )
    } else {
        let names = clip(&image.join(","), 80);
        (
            format!("{problem} by the container image{on}{profile} (rule {})", r.name),
            format!(
                "the image's ENV or /etc/environment sets it and Pyxis lets it override srun's value: \
                 export your own value and keep it with srun --container-env={names} ({}), or remove it from the image",
                r.fix
            ),
        )
    };
    Finding {
        check: CheckKind::NcclEnv,
        severity: r.severity,
        what,
        why: r.why.clone(),
        fix,
    }
}

/// Prefixes of the variables the rules read (for gathering them from an environment).
pub const VAR_PREFIXES: &[&str] = &[
    "NCCL_",
    "FI_",
    "UCX_",
    "LD_PRELOAD",
    "NVIDIA_VISIBLE_DEVICES",
];

/// Judges srun's own environment before allocation (srun, local context), so that a variable left in a
/// `.bashrc` stops the launch before it waits for nodes, with launchguard's line first.
///
/// Judged only what srun can know: the step inherits srun's environment (`--export` / `SLURM_EXPORT_ENV`
/// unset or with `ALL`); the step asks for GPUs, unless `gpu_steps_only` is off (srun cannot see the
/// node, so rules about node devices are left to slurmstepd); fabric rules only with a configured
/// `fabric=efa|ib` (`fabric`), as the login node's own devices say nothing about the compute nodes.
#[allow(clippy::too_many_arguments)] // the facts srun has, one by one
pub fn check_srun(
    argv: &crate::argv::ParsedArgv,
    export_env: Option<&str>,
    vars: &[(String, String)],
    fabric: Option<Fabric>,
    gpu_steps_only: bool,
    gpu: bool,
    profile: Option<&str>,
    rules: &[Rule],
) -> Vec<Finding> {
    let export = argv.value("export").or(export_env);
    if export.is_some_and(|e| !crate::checks::export::has_all(e)) {
        return vec![];
    }
    if gpu_steps_only && !gpu {
        return vec![];
    }
    // Without a GPU request srun leaves GPU-only rules to slurmstepd (the step may still get GPUs
    // from the allocation).
    let ctx = Context {
        fabric,
        gpu_step: Some(gpu),
        profile,
        ..Context::default()
    };
    check_in(vars, &ctx, rules)
}

/// Whether `name` looks like an aws-ofi-nccl plugin file (`libnccl-net-ofi.so`, `libnccl-net-aws-ofi.so`,
/// or `libnccl-net.so` under an `ofi` directory such as `/opt/amazon/ofi-nccl/lib`).
pub fn is_ofi_plugin(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.starts_with("libnccl-net")
        && file.contains(".so")
        && (file.contains("ofi") || path.to_ascii_lowercase().contains("ofi"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_from_the_image_says_so_and_how_to_override_it() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        let before = vec![kv("NCCL_DEBUG", "INFO")];
        let after = vec![kv("NCCL_DEBUG", "INFO"), kv("NCCL_NET", "IB")];
        let image = image_vars(&before, &after);
        assert_eq!(image, vec!["NCCL_NET".to_string()]);
        let ctx = Context {
            fabric: Some(Fabric::Efa),
            from_image: &image,
            ..Context::default()
        };
        let f = check_in(&after, &ctx, &builtin_rules());
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.nccl_env: NCCL_NET=IB is set by the container image on this EFA node (rule efa.nccl_net_ib); \
             on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation; \
             the image's ENV or /etc/environment sets it and Pyxis lets it override srun's value: export your own value \
             and keep it with srun --container-env=NCCL_NET (set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) \
             or unset NCCL_NET), or remove it from the image"
        );
        // The same value set by the user: the plain fix.
        let f = check(&after, Some(Fabric::Efa), None, &builtin_rules());
        assert!(
            f[0].fix.starts_with("set NCCL_NET=Libfabric"),
            "{}",
            f[0].fix
        );
        // A value the image changed counts as the image's.
        let changed = vec![kv("NCCL_DEBUG", "WARN")];
        assert_eq!(
            image_vars(&before, &changed),
            vec!["NCCL_DEBUG".to_string()]
        );
    }

    fn env(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    fn names(f: &[Finding]) -> Vec<String> {
        f.iter()
            .map(|f| {
                f.what
                    .split("(rule ")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches(')')
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn huge_rule_files_are_capped_and_bad_lines_counted() {
        // the issue's 60k-rule file: the first MAX_RULES are kept, one line says where it stopped
        let text: String = (0..60_000)
            .map(|i| format!("any NCCL_X{i} set warn | w | f\n"))
            .collect();
        let t = std::time::Instant::now();
        let (rules, problems) = parse_rules(&text, "/r");
        assert_eq!(rules.len(), MAX_RULES);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with(&format!(
            "/r:{}: more than {MAX_RULES} rules",
            MAX_RULES + 1
        )));
        let vars: Vec<(String, String)> = (0..50)
            .map(|i| (format!("NCCL_Y{i}"), "1".into()))
            .collect();
        let mut all = builtin_rules();
        all.extend(rules);
        let _ = check(&vars, None, None, &all);
        assert!(
            t.elapsed() < std::time::Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        // 10,000 bad lines: ten named, the rest counted in one line
        let bad: String = (0..10_000).map(|_| "nonsense\n").collect();
        let (rules, problems) = parse_rules(&bad, "/r");
        assert!(rules.is_empty());
        assert_eq!(problems.len(), MAX_PROBLEMS + 1);
        assert_eq!(problems[MAX_PROBLEMS], "/r: 9990 more bad lines not named");
    }

    #[test]
    #[rustfmt::skip]
    fn rules_fire_per_fabric() {
        let rules = builtin_rules();
        let ifs = vec!["lo".to_string(), "ens5".to_string(), "docker0".to_string()];
        type Row<'a> = (&'a [(&'a str, &'a str)], Option<Fabric>, &'a [&'a str]);
        let table: &[Row] = &[
            (&[("NCCL_NET", "IB")], Some(Fabric::Efa), &["efa.nccl_net_ib"]),
            (&[("NCCL_NET", "AWS Libfabric")], Some(Fabric::Efa), &["efa.nccl_net_old_name"]),
            (&[("NCCL_NET", "Socket")], Some(Fabric::Efa), &["efa.nccl_net_socket"]),
            (&[("NCCL_NET", "socket")], Some(Fabric::Efa), &["efa.nccl_net_socket"]),
            (&[("NCCL_NET", "UCX")], Some(Fabric::Efa), &["efa.nccl_net"]),
            (&[("NCCL_NET", "libfabric")], Some(Fabric::Efa), &[]),
            (&[("NCCL_NET_PLUGIN", "ofi")], Some(Fabric::Efa), &[]),
            (&[("NCCL_NET_PLUGIN", "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so")], Some(Fabric::Efa), &[]),
            (&[("NCCL_NET_PLUGIN", "ib")], Some(Fabric::Efa), &["efa.nccl_net_plugin"]),
            (&[("NCCL_IB_HCA", "mlx5"), ("NCCL_IB_SL", "1")], Some(Fabric::Efa), &["efa.nccl_ib"]),
            (&[("FI_PROVIDER", "tcp")], Some(Fabric::Efa), &["efa.fi_provider"]),
            (&[("FI_PROVIDER", "efa")], Some(Fabric::Efa), &[]),
            (&[("NCCL_TREE_THRESHOLD", "0"), ("NCCL_ALGO", "Ring,Tree"), ("NCCL_PROTO", "Simple")], Some(Fabric::Efa),
             &["efa.tree_threshold", "efa.algo", "efa.proto"]),
            // IB settings are right on IB; EFA settings are not
            (&[("NCCL_IB_HCA", "mlx5"), ("NCCL_NET", "IB")], Some(Fabric::Ib), &[]),
            (&[("NCCL_NET", "Socket")], Some(Fabric::Ib), &["ib.nccl_net_socket"]),
            (&[("NCCL_NET", "Libfabric")], Some(Fabric::Ib), &["ib.nccl_net_libfabric"]),
            (&[("NCCL_NET", "IBext")], Some(Fabric::Ib), &[]),
            (&[("NCCL_NET", "UCX")], Some(Fabric::Ib), &[]),
            (&[("NCCL_NET_PLUGIN", "/usr/lib/x86_64-linux-gnu/libnccl-net.so")], Some(Fabric::Efa), &[]),
            (&[("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1")], Some(Fabric::Ib), &["ib.fi_provider", "ib.fi_efa"]),
            (&[("NCCL_NET_PLUGIN", "ofi")], Some(Fabric::Ib), &["ib.nccl_net_plugin"]),
            // interfaces, on any node
            (&[("NCCL_SOCKET_IFNAME", "eth0")], None, &["any.socket_ifname"]),
            (&[("NCCL_SOCKET_IFNAME", "docker")], None, &["any.socket_ifname"]),
            (&[("NCCL_SOCKET_IFNAME", "ens")], None, &[]),
            (&[("NCCL_SOCKET_IFNAME", "^docker,lo")], None, &[]),
            (&[("NCCL_SOCKET_IFNAME", "=ens5")], None, &[]),
            // unknown NCCL_* variables and a clean environment: nothing
            (&[("NCCL_DEBUG", "INFO"), ("NCCL_FOO", "x"), ("PATH", "/bin")], Some(Fabric::Efa), &[]),
            (&[], Some(Fabric::Efa), &[]),
        ];
        for (vars, fabric, want) in table {
            let got = names(&check(&env(vars), *fabric, Some(&ifs), &rules));
            assert_eq!(got, want.to_vec(), "{vars:?} {fabric:?}");
        }
    }

    /// Issue 24 item 7 / issue 30: a value that leaves NCCL no interface surely fails NCCL's
    /// bootstrap (`Bootstrap : no socket interface found`): an error on a GPU step; one that leaves
    /// only loopback or bridges is a warning.
    #[test]
    fn a_socket_ifname_that_leaves_no_interface_is_an_error_on_gpu_steps() {
        let ifs = vec!["eth0".to_string(), "lo".to_string(), "docker0".to_string()];
        let sev = |v: &str, gpu: Option<bool>| {
            let f = check_in(
                &env(&[("NCCL_SOCKET_IFNAME", v)]),
                &Context {
                    interfaces: Some(&ifs),
                    gpu_step: gpu,
                    ..Context::default()
                },
                &builtin_rules(),
            );
            f.first().map(|f| (f.severity, f.what.clone()))
        };
        for v in ["=nosuchif0", "ib", "^eth,lo,docker"] {
            let (s, what) = sev(v, Some(true)).unwrap();
            assert_eq!(s, Severity::Error, "{v}: {what}");
            assert!(what.contains("every rank fails at init"), "{v}: {what}");
            assert_eq!(sev(v, Some(false)).unwrap().0, Severity::Warning, "{v}");
        }
        assert_eq!(sev("lo", Some(true)).unwrap().0, Severity::Warning);
        // NCCL ignores a one-character value, and `name:port` matches the name.
        assert_eq!(sev("x", Some(true)), None);
        assert_eq!(sev("eth0:5000", Some(true)), None);
        assert_eq!(sev("^=", Some(true)), None);
        assert_eq!(sev("^docker,lo", Some(true)), None);
        assert_eq!(sev("=eth0", Some(true)), None);
    }

    #[test]
    fn finding_line_names_rule_and_source() {
        let f = check(
            &env(&[("NCCL_NET", "IB")]),
            Some(Fabric::Efa),
            None,
            &builtin_rules(),
        );
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.nccl_env: NCCL_NET=IB is set on this EFA node (rule efa.nccl_net_ib); \
             on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation; \
             set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET"
        );
        assert_eq!(f[0].severity, Severity::Error);
    }

    fn ctx<'a>(
        fabric: Option<Fabric>,
        hcas: &'a [String],
        ifs: &'a [String],
        gpu_step: Option<bool>,
        step_gpus: Option<&'a str>,
        ofi: Option<&'a str>,
        profile: Option<&'a str>,
    ) -> Context<'a> {
        Context {
            fabric,
            interfaces: Some(ifs),
            hcas: Some(hcas),
            gpu_step,
            step_gpus,
            ofi_plugin: ofi,
            profile,
            from_image: &[],
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    #[rustfmt::skip]
    fn step_rules_follow_gpus_profile_and_node_devices() {
        let rules = builtin_rules();
        let ib_hcas = s(&["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_bond_0"]);
        let ifs = s(&["lo", "eth0", "ib0"]);
        let ofi = Some("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
        let efa_hcas = s(&["rdmap16s27"]);
        let plain_hcas = s(&["mlx5_0", "mlx5_1"]);
        type Row<'a> = (&'a [(&'a str, &'a str)], Context<'a>, &'a [&'a str]);
        let gpu = Some(true);
        let cpu = Some(false);
        let table: &[Row] = &[
            // GPU-only rules: judged on GPU steps, never on CPU-only ones
            (&[("NCCL_P2P_DISABLE", "1")], ctx(None, &[], &ifs, gpu, None, None, None), &["any.p2p_disable"]),
            (&[("NCCL_P2P_DISABLE", "1")], ctx(None, &[], &ifs, cpu, None, None, None), &[]),
            (&[("NCCL_P2P_DISABLE", "0")], ctx(None, &[], &ifs, gpu, None, None, None), &[]),
            (&[("NCCL_NVLS_ENABLE", "0")], ctx(None, &[], &ifs, gpu, None, None, None), &["any.nvls_disable"]),
            // SHM off is a mistake in general, deliberate on a GB300 MNNVL rack
            (&[("NCCL_SHM_DISABLE", "1")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &["any.shm_disable"]),
            (&[("NCCL_SHM_DISABLE", "1"), ("NCCL_MNNVL_ENABLE", "1"), ("NCCL_NVLS_ENABLE", "1"), ("NCCL_IB_SL", "1"), ("NCCL_NET_GDR_C2C", "1")],
             ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, Some("gb300-mnnvl")), &[]),
            (&[("NCCL_MNNVL_ENABLE", "0"), ("NCCL_NET_GDR_C2C", "0")],
             ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, Some("gb300-mnnvl")), &["gb300.mnnvl_off", "gb300.gdr_c2c_off"]),
            (&[("NCCL_MNNVL_ENABLE", "0")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &[]),
            // a net plugin preloaded instead of loaded by NCCL
            (&[("LD_PRELOAD", "/opt/aws-ofi-nccl/lib/libnccl-net.so")], ctx(Some(Fabric::Efa), &efa_hcas, &ifs, gpu, None, None, None), &["any.ld_preload_net_plugin"]),
            (&[("LD_PRELOAD", "/usr/lib/libjemalloc.so")], ctx(Some(Fabric::Efa), &efa_hcas, &ifs, gpu, None, None, None), &[]),
            // NCCL_NET unpinned while the task sees the OFI plugin, per fabric
            (&[], ctx(Some(Fabric::Efa), &efa_hcas, &ifs, gpu, None, ofi, None), &["efa.nccl_net_unpinned"]),
            (&[("NCCL_NET", "Libfabric")], ctx(Some(Fabric::Efa), &efa_hcas, &ifs, gpu, None, ofi, None), &[]),
            (&[], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, ofi, None), &["ib.nccl_net_unpinned"]),
            (&[("NCCL_NET", "IB")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, ofi, None), &[]),
            (&[], ctx(Some(Fabric::Efa), &efa_hcas, &ifs, gpu, None, None, None), &[]),
            // NVIDIA_VISIBLE_DEVICES against the step's GPUs
            (&[("NVIDIA_VISIBLE_DEVICES", "void")], ctx(None, &[], &ifs, gpu, Some("2,3"), None, None), &["any.nvidia_visible_devices"]),
            (&[("NVIDIA_VISIBLE_DEVICES", "2,3")], ctx(None, &[], &ifs, gpu, Some("2,3"), None, None), &["any.nvidia_visible_devices"]),
            (&[("NVIDIA_VISIBLE_DEVICES", "1,0")], ctx(None, &[], &ifs, gpu, Some("2,3"), None, None), &[]),
            (&[("NVIDIA_VISIBLE_DEVICES", "all")], ctx(None, &[], &ifs, gpu, Some("2,3"), None, None), &[]),
            (&[("NVIDIA_VISIBLE_DEVICES", "GPU-8f0e2c1a")], ctx(None, &[], &ifs, gpu, Some("0"), None, None), &[]),
            (&[("NVIDIA_VISIBLE_DEVICES", "void")], ctx(None, &[], &ifs, cpu, None, None, None), &[]),
            // NCCL_IB_HCA: prefixes select more than they name; '=' is exact; '^' excludes
            (&[("NCCL_IB_HCA", "mlx5")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &["any.nccl_ib_hca"]),
            (&[("NCCL_IB_HCA", "mlx5_1:1")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &["any.nccl_ib_hca"]),
            (&[("NCCL_IB_HCA", "=mlx5_0,mlx5_1")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &[]),
            (&[("NCCL_IB_HCA", "mlx5_bond")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &[]),
            (&[("NCCL_IB_HCA", "^mlx5_bond_0")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &[]),
            (&[("NCCL_IB_HCA", "=mlx5_4")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, gpu, None, None, None), &["any.nccl_ib_hca"]),
            (&[("NCCL_IB_HCA", "mlx5")], ctx(Some(Fabric::Ib), &plain_hcas, &ifs, gpu, None, None, None), &[]),
            // UCX_NET_DEVICES naming devices the node lacks
            (&[("UCX_NET_DEVICES", "mlx5_0:1,ib0")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, cpu, None, None, None), &[]),
            (&[("UCX_NET_DEVICES", "mlx5_4:1")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, cpu, None, None, None), &["any.ucx_net_devices"]),
            (&[("UCX_NET_DEVICES", "all")], ctx(Some(Fabric::Ib), &ib_hcas, &ifs, cpu, None, None, None), &[]),
        ];
        for (vars, c, want) in table {
            let got = names(&check_in(&env(vars), c, &rules));
            assert_eq!(got, want.to_vec(), "{vars:?} {:?} {:?}", c.gpu_step, c.profile);
        }
    }

    #[test]
    fn srun_judges_only_what_it_can_know() {
        use crate::argv::{parse, Tool};
        let rules = builtin_rules();
        let ib = env(&[("NCCL_NET", "IB")]);
        let p = |a: &[&str]| parse(Tool::Srun, &s(a));
        let plain = p(&["srun", "-n1", "hostname"]);
        let gpu = p(&["srun", "--gres=gpu:1", "hostname"]);
        // `NCCL_NET=IB srun -n1 hostname` on fabric=efa: a CPU-only step is left alone
        let f = check_srun(
            &plain,
            None,
            &ib,
            Some(Fabric::Efa),
            true,
            false,
            None,
            &rules,
        );
        assert!(f.is_empty(), "{f:?}");
        // ... unless gpu_steps_only=no
        let f = check_srun(
            &plain,
            None,
            &ib,
            Some(Fabric::Efa),
            false,
            false,
            None,
            &rules,
        );
        assert_eq!(names(&f), vec!["efa.nccl_net_ib"]);
        // a GPU step on fabric=efa is judged before allocation
        let f = check_srun(&gpu, None, &ib, Some(Fabric::Efa), true, true, None, &rules);
        assert_eq!(names(&f), vec!["efa.nccl_net_ib"]);
        assert_eq!(f[0].severity, Severity::Error);
        // fabric=auto: srun cannot see the compute node's fabric
        let f = check_srun(&gpu, None, &ib, None, true, true, None, &rules);
        assert!(f.is_empty(), "{f:?}");
        // the step does not inherit srun's environment
        let none = p(&["srun", "--gres=gpu:1", "--export=NONE", "hostname"]);
        assert!(check_srun(
            &none,
            None,
            &ib,
            Some(Fabric::Efa),
            true,
            true,
            None,
            &rules
        )
        .is_empty());
        assert!(check_srun(
            &gpu,
            Some("NONE"),
            &ib,
            Some(Fabric::Efa),
            true,
            true,
            None,
            &rules
        )
        .is_empty());
        let all = p(&["srun", "--gres=gpu:1", "--export=ALL,X=1", "hostname"]);
        assert_eq!(
            check_srun(&all, None, &ib, Some(Fabric::Efa), true, true, None, &rules).len(),
            1
        );
        // fabric-independent GPU rules need no fabric
        let p2p = env(&[("NCCL_P2P_DISABLE", "1")]);
        assert_eq!(
            names(&check_srun(
                &gpu, None, &p2p, None, true, true, None, &rules
            )),
            vec!["any.p2p_disable"]
        );
    }

    #[test]
    fn ofi_plugin_files_are_recognised() {
        assert!(is_ofi_plugin("/opt/amazon/ofi-nccl/lib/libnccl-net.so"));
        assert!(is_ofi_plugin(
            "/usr/lib/x86_64-linux-gnu/libnccl-net-ofi.so"
        ));
        assert!(is_ofi_plugin(
            "/opt/aws-ofi-nccl/lib/libnccl-net-aws-ofi.so.1"
        ));
        assert!(!is_ofi_plugin(
            "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
        ));
        assert!(!is_ofi_plugin("/usr/lib/libofi.so"));
    }

    #[test]
    fn profiles_are_data_and_their_settings_pass() {
        let p = profile("gb300-mnnvl").unwrap();
        assert_eq!((p.gpus_per_node, p.cpus_per_task), (4, 24));
        let vars: Vec<(String, String)> = p
            .settings
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let hcas = s(&["mlx5_0"]);
        let ifs = s(&["eth0"]);
        let c = ctx(
            Some(Fabric::Ib),
            &hcas,
            &ifs,
            Some(true),
            None,
            None,
            Some(p.name),
        );
        assert!(check_in(&vars, &c, &builtin_rules()).is_empty());
        // without the profile the same settings are flagged
        let c = ctx(Some(Fabric::Ib), &hcas, &ifs, Some(true), None, None, None);
        assert_eq!(
            names(&check_in(&vars, &c, &builtin_rules())),
            vec!["any.shm_disable"]
        );
    }

    #[test]
    fn fabric_detection_prefers_efa() {
        assert_eq!(detect_fabric(&["efa", "efa"]), Some(Fabric::Efa));
        assert_eq!(detect_fabric(&["mlx5_core", "efa"]), Some(Fabric::Efa));
        assert_eq!(detect_fabric(&["mlx5_core"]), Some(Fabric::Ib));
        assert_eq!(detect_fabric::<&str>(&[]), None);
        assert_eq!(detect_fabric(&["", "rxe", "siw"]), None);
    }

    #[test]
    fn admin_rules_extend_the_table_and_bad_lines_are_named() {
        let text = "# site rules\n\
                    efa NCCL_P2P_NET_CHUNKSIZE is 0 warn | chunk size 0 stalls | unset it\n\
                    any MY_* set error | no MY_ vars | unset them\n\
                    mars NCCL_X set warn | a | b\n\
                    efa NCCL_Y sometimes warn | a | b\n\
                    efa NCCL_Z set warn\n";
        let (rules, problems) = parse_rules(text, "/etc/launchguard/nccl-rules.conf");
        assert_eq!(rules.len(), 2);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0]
            .starts_with("/etc/launchguard/nccl-rules.conf:4: fabric must be efa, ib or any"));
        let f = check(&env(&[("MY_A", "1")]), Some(Fabric::Ib), None, &rules);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].what.contains("(rule site.my_)"), "{}", f[0].what);
    }
}
