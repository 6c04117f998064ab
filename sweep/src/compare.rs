//! Values that must be identical on every node, compared across the nodes that answered: the value
//! most nodes hold is the expected one, the others are named. A tie (no value held by more nodes than
//! any other) names every group, since there is no majority to trust.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::finding::{Finding, Severity};
use crate::report::NodeReport;

/// A fact that must be the same cluster-wide, with what a difference means and how to fix it.
pub struct Rule {
    /// Key in the check's `facts`.
    pub fact: &'static str,
    /// How serious a difference is.
    pub severity: Severity,
    /// What it is, for the message.
    pub what: &'static str,
    /// Why a difference matters.
    pub why: &'static str,
    /// The fix; `{good}` is replaced by a node holding the expected value, `{nodes}` by the others.
    pub fix: &'static str,
}

/// Every cluster-wide rule, in report order.
pub const RULES: &[Rule] = &[
    Rule {
        fact: "munge_key_digest",
        severity: Severity::Critical,
        what: "munge key (/etc/munge/munge.key)",
        why: "a node whose key differs rejects every credential: its steps fail with 'Zero Bytes were transmitted or received' or authentication errors, at the latest at its next munged restart",
        fix: "copy /etc/munge/munge.key from {good} to {nodes} (owner munge, mode 0400) and restart munged there",
    },
    Rule {
        fact: "slurm_conf_digest",
        severity: Severity::Critical,
        what: "slurm.conf",
        why: "Slurm daemons with different configurations disagree about nodes, partitions and plugins (slurmctld logs 'appears to have a different slurm.conf')",
        fix: "install the slurm.conf of {good} on {nodes} (or run configless: SlurmctldParameters=enable_configless) and run scontrol reconfigure",
    },
    Rule {
        fact: "plugstack_digest",
        severity: Severity::Critical,
        what: "plugstack.conf contents",
        why: "SPANK plugins (Pyxis, launchguard) then run on some nodes and not others, so the same srun behaves differently per node",
        fix: "copy plugstack.conf and plugstack.conf.d/ from {good} to {nodes}; it takes effect at the next srun",
    },
    Rule {
        fact: "slurm_version",
        severity: Severity::Critical,
        what: "Slurm version",
        why: "SPANK plugins are built for one Slurm release and refuse to load on another, and mixed slurmd releases beyond what slurmctld supports fail to register",
        fix: "install the Slurm release of {good} on {nodes} and restart slurmd there",
    },
    Rule {
        fact: "launchguard_version",
        severity: Severity::Warning,
        what: "launchguard version",
        why: "nodes running another launchguard judge the same launch differently",
        fix: "install the launchguard of {good} on {nodes}",
    },
    Rule {
        fact: "enroot_conf_digest",
        severity: Severity::Warning,
        what: "enroot.conf",
        why: "containers started through Pyxis get different runtime paths, mounts and environment depending on the node",
        fix: "copy /etc/enroot/enroot.conf from {good} to {nodes}",
    },
    Rule {
        fact: "nccl_env_digest",
        severity: Severity::Warning,
        what: "node-wide NCCL environment (/etc/nccl.conf and friends)",
        why: "ranks on different nodes then run NCCL with different settings, which shows up as slow or hanging collectives",
        fix: "copy the node-wide NCCL environment files from {good} to {nodes}",
    },
    Rule {
        fact: "gpu_driver_version",
        severity: Severity::Warning,
        what: "NVIDIA driver version (NVML)",
        why: "GPU nodes on different drivers give a job spanning them different CUDA and NVML behaviour, and Fabric Manager and IMEX must match the driver on every node of an NVLink domain",
        fix: "install the NVIDIA driver of {good} on {nodes} (drain, upgrade, reboot)",
    },
];

/// One value and the nodes that hold it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Holding {
    /// The value (a digest, a version, or `absent`).
    pub value: String,
    /// Nodes holding it.
    pub nodes: Vec<String>,
}

/// A fact that is not the same everywhere.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// Fact key.
    pub fact: String,
    /// The majority value, when there is one.
    pub expected: Option<Holding>,
    /// Every other value, largest group first.
    pub differing: Vec<Holding>,
    /// Nodes that did not report the fact, or reported it unreadable (`unknown: …`).
    pub missing: Vec<String>,
}

/// Compares every rule's fact across `reports`.
pub fn compare(reports: &[NodeReport]) -> Vec<Divergence> {
    let mut out = Vec::new();
    for rule in RULES {
        let mut by_value: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut missing = Vec::new();
        for r in reports {
            match r.facts.get(rule.fact) {
                // A value the node could not read (`unknown: …`, e.g. `slurmd -V` past its
                // timeout) is no evidence of a difference: counted with the missing, never named.
                Some(v) if !v.starts_with("unknown") => {
                    by_value.entry(v).or_default().push(r.node.clone())
                }
                _ => missing.push(r.node.clone()),
            }
        }
        if by_value.len() <= 1 {
            // Missing facts alone are not a divergence: an older check may not report them.
            continue;
        }
        let mut groups: Vec<Holding> = by_value
            .into_iter()
            .map(|(v, nodes)| Holding {
                value: v.to_string(),
                nodes,
            })
            .collect();
        groups.sort_by(|a, b| {
            b.nodes
                .len()
                .cmp(&a.nodes.len())
                .then(a.value.cmp(&b.value))
        });
        let expected = if groups[0].nodes.len() > groups[1].nodes.len() {
            Some(groups.remove(0))
        } else {
            None
        };
        out.push(Divergence {
            fact: rule.fact.to_string(),
            expected,
            differing: groups,
            missing,
        });
    }
    out
}

/// `cluster.gpu_nvlink_clique`: the nodes whose GPUs registered into one multi-node NVLink domain
/// (the same cluster UUID in the fact `gpu_nvlink_domain`, `<cluster uuid>/<clique id>`) should be in
/// one clique. NCCL joins GPUs over multi-node NVLink only within one cluster UUID and clique (NCCL
/// source, `mnnvl.cc`; NVML's `nvmlGpuFabricInfo_t`), so a job spanning two cliques runs its
/// collectives over the network at a fraction of NVLink's bandwidth. The clique most nodes of the
/// domain hold is the expected one; the others are named (a WARNING: NVLink partitions split a
/// domain on purpose, and then Slurm's topology blocks should follow them). Nodes reporting no
/// domain (`none`, `pending (…)`, `unknown…`) are not compared here: `node.gpu.fabric` judges them.
pub fn nvlink_cliques(reports: &[NodeReport]) -> Vec<Finding> {
    let mut domains: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    for r in reports {
        let Some((uuid, clique)) = r
            .facts
            .get("gpu_nvlink_domain")
            .and_then(|v| v.split_once('/'))
            .filter(|(u, c)| {
                u.len() == 32 && u.bytes().all(|b| b.is_ascii_hexdigit()) && !c.is_empty()
            })
        else {
            continue;
        };
        domains
            .entry(uuid)
            .or_default()
            .entry(clique)
            .or_default()
            .push(r.node.clone());
    }
    let mut out = vec![];
    for (uuid, cliques) in domains {
        if cliques.len() < 2 {
            continue;
        }
        let mut groups: Vec<(&str, Vec<String>)> = cliques.into_iter().collect();
        groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        let majority = groups[0].1.len() > groups[1].1.len();
        let (expected, odd) = if majority {
            (Some(groups.remove(0)), groups)
        } else {
            (None, groups)
        };
        let nodes: Vec<String> = odd.iter().flat_map(|(_, n)| n.clone()).collect();
        let listed = odd
            .iter()
            .map(|(c, n)| format!("clique {c} on {}", n.join(",")))
            .collect::<Vec<_>>()
            .join(", ");
        let what = match &expected {
            Some((c, n)) => format!(
                "NVLink domain {uuid} is split: {listed}, while {} node(s) are in clique {c}",
                n.len()
            ),
            None => format!("NVLink domain {uuid} is split with no majority clique: {listed}"),
        };
        out.push(Finding::new(
            "cluster.gpu_nvlink_clique",
            Severity::Warning,
            nodes,
            &what,
            "NCCL uses multi-node NVLink only between GPUs of one clique: a job spanning these nodes runs its collectives over the network at a fraction of NVLink bandwidth, with no error",
            "if the split is not an NVLink partition you made, check the NVLink switch trays and nvidia-imex/Fabric Manager on the odd nodes (nvidia-smi -q | grep -A4 Fabric shows ClusterUUID and CliqueId) and re-register them (reboot or reset their GPUs); if it is, make Slurm's topology blocks (topology.conf BlockName=) follow the cliques",
        ));
    }
    out
}

/// Shortens a digest for tables and messages (`sha256:0123456789ab`).
pub fn short(v: &str) -> String {
    match v.split_once(':') {
        Some((alg, hex)) if hex.len() > 12 => format!("{alg}:{}", &hex[..12]),
        _ => v.to_string(),
    }
}

/// One finding per divergence.
pub fn findings(divs: &[Divergence]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in divs {
        let Some(rule) = RULES.iter().find(|r| r.fact == d.fact) else {
            continue;
        };
        let odd: Vec<String> = d.differing.iter().flat_map(|h| h.nodes.clone()).collect();
        let values = d
            .differing
            .iter()
            .map(|h| format!("{} on {}", short(&h.value), h.nodes.join(",")))
            .collect::<Vec<_>>()
            .join(", ");
        let (what, good) = match &d.expected {
            Some(e) => (
                format!(
                    "{} differs on {}: {values}, while {} of {} nodes have {}",
                    rule.what,
                    odd.join(","),
                    e.nodes.len(),
                    e.nodes.len() + odd.len(),
                    short(&e.value)
                ),
                e.nodes[0].clone(),
            ),
            None => (
                format!(
                    "{} is not the same on all nodes and no value has a majority: {values}",
                    rule.what
                ),
                "the node you trust".to_string(),
            ),
        };
        let fix = rule
            .fix
            .replace("{good}", &good)
            .replace("{nodes}", &odd.join(","));
        out.push(Finding::new(
            &format!("cluster.{}", d.fact),
            rule.severity,
            odd,
            &what,
            rule.why,
            &fix,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, facts: &[(&str, &str)]) -> NodeReport {
        NodeReport {
            node: name.into(),
            reported_name: None,
            status: Severity::Ok,
            failures: vec![],
            checks: 0,
            facts: facts
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            duration_ms: None,
        }
    }

    const U1: &str = "5f1e2d3c4b5a69788796a5b4c3d2e1f0";
    const U2: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn nodes_of_one_nvlink_domain_in_another_clique_are_named() {
        let dom = |u: &str, c: u32| format!("{u}/{c}");
        let (a, b) = (dom(U1, 3), dom(U1, 4));
        let reps = vec![
            node("nvl-01", &[("gpu_nvlink_domain", &a)]),
            node("nvl-02", &[("gpu_nvlink_domain", &a)]),
            node("nvl-03", &[("gpu_nvlink_domain", &a)]),
            node("nvl-04", &[("gpu_nvlink_domain", &b)]),
            // Another rack (domain): its own clique is no disagreement.
            node("nvl-20", &[("gpu_nvlink_domain", &dom(U2, 9))]),
            // No domain: judged on the node (node.gpu.fabric), not here.
            node("h200-1", &[("gpu_nvlink_domain", "none")]),
            node("gb-9", &[("gpu_nvlink_domain", "pending (in progress)")]),
        ];
        let f = nvlink_cliques(&reps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "cluster.gpu_nvlink_clique");
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].nodes, vec!["nvl-04"]);
        assert!(
            f[0].line.starts_with(&format!("launchguard: cluster.gpu_nvlink_clique: NVLink domain {U1} is split: clique 4 on nvl-04, while 3 node(s) are in clique 3; ")),
            "{}",
            f[0].line
        );
        // All in one clique: nothing.
        assert!(nvlink_cliques(&reps[..3]).is_empty());
    }

    #[test]
    fn a_gpu_node_on_another_driver_is_named_and_cpu_nodes_are_not() {
        let r = vec![
            node("g1", &[("gpu_driver_version", "580.159.04")]),
            node("g2", &[("gpu_driver_version", "580.159.04")]),
            node("g3", &[("gpu_driver_version", "570.133.20")]),
            node("cpu1", &[]),
        ];
        let d = compare(&r);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].fact, "gpu_driver_version");
        assert_eq!(d[0].differing[0].nodes, vec!["g3"]);
        assert_eq!(d[0].expected.as_ref().unwrap().nodes, vec!["g1", "g2"]);
        assert_eq!(d[0].missing, vec!["cpu1"]);
    }

    #[test]
    fn the_minority_node_is_named_and_the_majority_is_expected() {
        let r = vec![
            node(
                "a",
                &[
                    ("munge_key_digest", "sha256:1111111111111111"),
                    ("slurm_version", "22.05.8"),
                ],
            ),
            node(
                "b",
                &[
                    ("munge_key_digest", "sha256:2222222222222222"),
                    ("slurm_version", "22.05.8"),
                ],
            ),
            node(
                "c",
                &[
                    ("munge_key_digest", "sha256:1111111111111111"),
                    ("slurm_version", "22.05.8"),
                ],
            ),
        ];
        let d = compare(&r);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].fact, "munge_key_digest");
        assert_eq!(d[0].expected.as_ref().unwrap().nodes, vec!["a", "c"]);
        assert_eq!(d[0].differing[0].nodes, vec!["b"]);
        let f = findings(&d);
        assert_eq!(f[0].id, "cluster.munge_key_digest");
        assert_eq!(f[0].nodes, vec!["b"]);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].line.starts_with("launchguard: cluster.munge_key_digest: munge key (/etc/munge/munge.key) differs on b: sha256:222222222222 on b, while 2 of 3 nodes have sha256:111111111111;"), "{}", f[0].line);
        assert!(f[0].line.ends_with("copy /etc/munge/munge.key from a to b (owner munge, mode 0400) and restart munged there"), "{}", f[0].line);
    }

    /// Smallest input, measured on two emulated VMs at a host load of 20 (scripts/test-vm2.sh):
    /// `slurmd -V` outran its 3 s on gpunode1, whose fact read `unknown: …`, and the healthy pair was
    /// reported as "no value has a majority: 24.11.5 on gpunode2, unknown: … on gpunode1", both named.
    #[test]
    fn a_value_that_could_not_be_read_is_no_divergence_and_names_no_node() {
        let r = vec![
            node(
                "gpunode1",
                &[(
                    "slurm_version",
                    "unknown: \"/usr/sbin/slurmd\" timed out after 3 s",
                )],
            ),
            node("gpunode2", &[("slurm_version", "24.11.5")]),
        ];
        assert!(compare(&r).is_empty(), "{:?}", compare(&r));
        // A real difference beside it is still named, and the unreadable node is not.
        let mut r = r;
        r.push(node("gpunode3", &[("slurm_version", "24.11.5")]));
        r.push(node("gpunode4", &[("slurm_version", "23.11.10")]));
        let d = compare(&r);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].differing.len(), 1, "{d:?}");
        assert_eq!(d[0].differing[0].nodes, vec!["gpunode4"]);
        assert_eq!(d[0].missing, vec!["gpunode1"]);
    }

    #[test]
    fn identical_facts_and_missing_facts_are_no_divergence() {
        let r = vec![
            node("a", &[("plugstack_digest", "x")]),
            node("b", &[("plugstack_digest", "x")]),
            node("c", &[]),
        ];
        assert!(compare(&r).is_empty());
    }

    #[test]
    fn a_tie_has_no_expected_value_and_names_everyone() {
        let r = vec![
            node("a", &[("plugstack_digest", "x")]),
            node("b", &[("plugstack_digest", "y")]),
        ];
        let d = compare(&r);
        assert!(d[0].expected.is_none());
        let f = findings(&d);
        assert_eq!(f[0].nodes, vec!["a", "b"]);
        assert!(
            f[0].line.contains("no value has a majority"),
            "{}",
            f[0].line
        );
    }

    #[test]
    fn version_differences_are_warnings_or_critical_by_rule() {
        let r = vec![
            node("a", &[("launchguard_version", "0.1.0")]),
            node("b", &[("launchguard_version", "0.1.0")]),
            node("c", &[("launchguard_version", "0.2.0")]),
        ];
        let f = findings(&compare(&r));
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("cluster.launchguard_version", Severity::Warning)
        );
    }
}
