//! `NCCL_X set by environment to V` lines judged against a rule table kept as data ([`RULES`]).
//!
//! NCCL logs every NCCL_* variable it reads from the environment; a variable left over in a
//! `.bashrc`, an sbatch script or a container image changes what the run measured. Each rule says
//! which values matter, how serious they are in which context, why (from the NCCL documentation,
//! "Environment Variables") and the fix.

use crate::model::{CheckOptions, Fabric, Finding, Severity};
use crate::parse::Parsed;

/// When a rule applies and how serious it is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Always, at the rule's severity.
    Always,
    /// Only when NCCL used Socket and the run spanned nodes (or may have): the variable then
    /// forced or allowed TCP between nodes.
    SocketBetweenNodes,
    /// As [`Context::SocketBetweenNodes`], but not on EFA (aws-ofi-nccl lines in the log), where
    /// the variable is the usual setting and a Socket fallback has another cause.
    SocketBetweenNodesNotEfa,
    /// The rule's severity on an InfiniBand fabric (`--fabric ib`), nothing otherwise.
    IbFabric,
    /// The rule's severity unless the log shows multi-node NVLink (`MNNVL 1`), where the setting is
    /// a deliberate part of the platform's recipe: info then.
    NotMnnvl,
}

/// One rule of the table.
#[derive(Debug, Clone, Copy)]
pub struct EnvRule {
    /// Variable name.
    pub name: &'static str,
    /// Values that trigger the rule (compared case-insensitively); empty: any value.
    pub values: &'static [&'static str],
    /// Finding ID.
    pub id: &'static str,
    /// Severity where the context applies.
    pub severity: Severity,
    /// Where it applies.
    pub context: Context,
    /// Why it matters.
    pub why: &'static str,
    /// The fix (`{name}` is replaced by the variable's name).
    pub fix: &'static str,
}

const REMOVE: &str = "remove {name} from the job environment (check ~/.bashrc, the sbatch script, the container image and any module file that sets it), then rerun";

/// The rule table. Sources: NCCL documentation, "Environment Variables" (`NCCL_P2P_DISABLE`,
/// `NCCL_P2P_LEVEL`, `NCCL_SHM_DISABLE`, `NCCL_NET_GDR_LEVEL`, `NCCL_IB_DISABLE`, `NCCL_NET`,
/// `NCCL_NVLS_ENABLE`, `NCCL_ALGO`, `NCCL_PROTO`).
pub const RULES: &[EnvRule] = &[
    EnvRule {
        name: "NCCL_P2P_DISABLE",
        values: &["1"],
        id: "nccl.env.p2p_disabled",
        severity: Severity::Warning,
        context: Context::Always,
        why: "GPUs of one node then exchange data through host shared memory or the network instead of NVLink/PCIe peer access, at a fraction of the bandwidth (NCCL docs: NCCL_P2P_DISABLE), so the run does not measure what training will get",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_P2P_LEVEL",
        values: &["LOC", "0"],
        id: "nccl.env.p2p_disabled",
        severity: Severity::Warning,
        context: Context::Always,
        why: "LOC (0) disables peer-to-peer between GPUs of a node, the same as NCCL_P2P_DISABLE=1 (NCCL docs: NCCL_P2P_LEVEL)",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_SHM_DISABLE",
        values: &["1"],
        id: "nccl.env.shm_disabled",
        severity: Severity::Warning,
        context: Context::NotMnnvl,
        why: "traffic between GPUs of a node that cannot use P2P then goes through the network transport instead of shared memory (NCCL docs: NCCL_SHM_DISABLE)",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_NET_GDR_LEVEL",
        values: &["LOC", "0"],
        id: "nccl.env.gdr_disabled",
        severity: Severity::Warning,
        context: Context::Always,
        why: "LOC (0) turns GPUDirect RDMA off, so every network transfer is staged through host memory (NCCL docs: NCCL_NET_GDR_LEVEL)",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_IB_DISABLE",
        values: &["1"],
        id: "nccl.env.ib_disabled",
        severity: Severity::NoGo,
        context: Context::IbFabric,
        why: "it turns NCCL's InfiniBand/RoCE transport off, so an IB fabric is not used (NCCL docs: NCCL_IB_DISABLE)",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_IB_DISABLE",
        values: &["1"],
        id: "nccl.env.ib_disabled",
        severity: Severity::Warning,
        context: Context::SocketBetweenNodesNotEfa,
        why: "with IB off and no other network plugin, NCCL carries traffic between nodes over TCP sockets (NCCL docs: NCCL_IB_DISABLE)",
        fix: "if the nodes have InfiniBand/RoCE HCAs, remove NCCL_IB_DISABLE from the job environment",
    },
    EnvRule {
        name: "NCCL_NET",
        values: &["Socket"],
        id: "nccl.env.net_socket",
        severity: Severity::Warning,
        context: Context::SocketBetweenNodes,
        why: "it forces NCCL's TCP transport between nodes even where EFA or InfiniBand is present (NCCL docs: NCCL_NET)",
        fix: REMOVE,
    },
    EnvRule {
        name: "NCCL_NVLS_ENABLE",
        values: &["0"],
        id: "nccl.env.nvls_disabled",
        severity: Severity::Info,
        context: Context::Always,
        why: "NVLink SHARP is off, so all-reduce on NVSwitch systems runs below what the default reaches (NCCL docs: NCCL_NVLS_ENABLE)",
        fix: "compare busbw against a baseline measured with the same setting, or remove NCCL_NVLS_ENABLE where the system supports NVLS",
    },
    EnvRule {
        name: "NCCL_ALGO",
        values: &[],
        id: "nccl.env.tuning",
        severity: Severity::Info,
        context: Context::Always,
        why: "a forced algorithm measures that algorithm, not what NCCL would pick for training (NCCL docs: NCCL_ALGO)",
        fix: "rerun without NCCL_ALGO to validate the defaults training will use",
    },
    EnvRule {
        name: "NCCL_PROTO",
        values: &[],
        id: "nccl.env.tuning",
        severity: Severity::Info,
        context: Context::Always,
        why: "a forced protocol measures that protocol, not what NCCL would pick for training (NCCL docs: NCCL_PROTO)",
        fix: "rerun without NCCL_PROTO to validate the defaults training will use",
    },
];

/// Adds one finding per environment override a rule matches (one per variable).
pub fn check(q: &str, p: &Parsed, opts: &CheckOptions, f: &mut Vec<Finding>) {
    let facts = &p.facts;
    let socket_between_nodes =
        facts.networks.iter().any(|n| n == "Socket") && facts.inter_node() != Some(false);
    for e in &facts.env {
        let value = e.value.trim();
        for r in RULES.iter().filter(|r| r.name == e.name) {
            if !r.values.is_empty() && !r.values.iter().any(|v| v.eq_ignore_ascii_case(value)) {
                continue;
            }
            let severity = match r.context {
                Context::Always => Some(r.severity),
                Context::SocketBetweenNodes => socket_between_nodes.then_some(r.severity),
                Context::SocketBetweenNodesNotEfa => {
                    (socket_between_nodes && facts.ofi_version.is_none()).then_some(r.severity)
                }
                Context::IbFabric => (opts.fabric == Some(Fabric::Ib)).then_some(r.severity),
                Context::NotMnnvl => Some(if facts.mnnvl {
                    Severity::Info
                } else {
                    r.severity
                }),
            };
            let Some(severity) = severity else { continue };
            f.push(Finding {
                id: r.id,
                severity,
                what: format!(
                    "{q}: {} set by environment to {value} (NCCL logged it)",
                    e.name
                ),
                why: r.why.to_string(),
                fix: r.fix.replace("{name}", &e.name),
            });
            break;
        }
    }
}
