//! `launch.nccl_env`: the NCCL/libfabric environment a step runs with, judged per fabric.
//!
//! The rules are data: [`builtin_rules`] is the documented table (README, "NCCL environment rules"),
//! and admins add their own in a file ([`parse_rules`]). Unknown `NCCL_*` variables are never flagged.
//! Sources: seed 000 "Environment variables (EFA + NCCL)" and troubleshooting; seed 002 "DO NOT set
//! the following variables"; seed 004 (IB settings are right on IB fabrics).

use crate::finding::{clip, CheckKind, Finding, Severity};

/// The node's RDMA fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fabric {
    /// AWS Elastic Fabric Adapter (driver `efa`), used through aws-ofi-nccl / libfabric.
    Efa,
    /// InfiniBand / RoCE (drivers such as `mlx5_core`), used through NCCL's IB transport.
    Ib,
}

impl Fabric {
    /// `efa` or `ib`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fabric::Efa => "efa",
            Fabric::Ib => "ib",
        }
    }
}

/// The fabric behind `/sys/class/infiniband/*`, from each HCA's driver name (`device/driver` link):
/// EFA if any HCA is `efa` (EFA nodes can also show an unrelated link-down RDMA device, seed 000), IB if
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
    /// Where the rule comes from (a seed, a doc, the admin's file and line).
    pub source: String,
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
    }
}

fn vals(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The built-in rules.
pub fn builtin_rules() -> Vec<Rule> {
    use Fabric::{Efa, Ib};
    use Severity::{Error, Warning};
    const S000: &str = "seed 000, Environment variables (EFA + NCCL)";
    const S002: &str = "seed 002, Performance Optimization: DO NOT set";
    const S004: &str = "seed 004, per-SKU InfiniBand settings";
    vec![
        rule("efa.nccl_net_ib", Some(Efa), "NCCL_NET", Cond::Is(vals(&["IB"])), Error,
             "on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation",
             "unset NCCL_NET (the image default NCCL_NET_PLUGIN=ofi selects EFA) or set NCCL_NET=Libfabric", S000),
        rule("efa.nccl_net", Some(Efa), "NCCL_NET", Cond::Not(vals(&["Libfabric", "IB"])), Warning,
             "on EFA, the old name 'AWS Libfabric' gave no communication results with the validated aws-ofi-nccl and Socket falls back to TCP",
             "unset NCCL_NET (the image default NCCL_NET_PLUGIN=ofi selects EFA) or set NCCL_NET=Libfabric", S000),
        rule("efa.nccl_net_plugin", Some(Efa), "NCCL_NET_PLUGIN", Cond::Not(vals(&["*ofi", "*libnccl-net.so"])), Warning,
             "a network plugin other than aws-ofi-nccl leaves the EFA path (IB plugin or TCP fallback)",
             "unset NCCL_NET_PLUGIN to keep the image default ofi", S000),
        rule("efa.nccl_ib", Some(Efa), "NCCL_IB_*", Cond::Set, Warning,
             "InfiniBand settings carried over from an IB cluster are not used on EFA and signal an IB-era environment that drops to TCP or fails",
             "remove the NCCL_IB_* variables from the job script, the image or /etc/environment", S000),
        rule("efa.fi_provider", Some(Efa), "FI_PROVIDER", Cond::Not(vals(&["efa"])), Warning,
             "libfabric uses another provider than EFA, so NCCL traffic leaves the EFA NICs",
             "unset FI_PROVIDER or set FI_PROVIDER=efa", S000),
        rule("efa.tree_threshold", Some(Efa), "NCCL_TREE_THRESHOLD", Cond::Is(vals(&["0"])), Warning,
             "it disables NCCL's tree algorithm and lowers all-reduce bandwidth on EFA",
             "unset NCCL_TREE_THRESHOLD (the aws-ofi-nccl tuner picks algorithms)", S002),
        rule("efa.algo", Some(Efa), "NCCL_ALGO", Cond::Is(vals(&["Ring,Tree"])), Warning,
             "forcing NCCL_ALGO overrides the aws-ofi-nccl tuner and can lower bandwidth",
             "unset NCCL_ALGO", S002),
        rule("efa.proto", Some(Efa), "NCCL_PROTO", Cond::Is(vals(&["Simple"])), Warning,
             "forcing NCCL_PROTO=Simple disables LL/LL128 and slows small and medium messages",
             "unset NCCL_PROTO", S002),
        rule("ib.nccl_net_libfabric", Some(Ib), "NCCL_NET", Cond::Is(vals(&["Libfabric", "AWS Libfabric", "OFI"])), Error,
             "on InfiniBand, NCCL_NET=Libfabric/OFI selects the aws-ofi-nccl plugin for EFA, which finds no EFA device and fails NCCL initialisation",
             "unset NCCL_NET or set NCCL_NET=IB", S004),
        rule("ib.nccl_net_socket", Some(Ib), "NCCL_NET", Cond::Is(vals(&["Socket"])), Warning,
             "on InfiniBand, NCCL_NET=Socket falls back to TCP at a fraction of the bandwidth",
             "unset NCCL_NET or set NCCL_NET=IB", S004),
        rule("ib.nccl_net_plugin", Some(Ib), "NCCL_NET_PLUGIN", Cond::Is(vals(&["ofi", "aws-ofi"])), Warning,
             "the aws-ofi-nccl plugin is for EFA; on InfiniBand it fails or falls back to TCP",
             "unset NCCL_NET_PLUGIN", S004),
        rule("ib.fi_provider", Some(Ib), "FI_PROVIDER", Cond::Is(vals(&["efa"])), Warning,
             "an EFA-only libfabric setting on an InfiniBand node points at an EFA-era environment",
             "remove FI_PROVIDER=efa from the job environment", S004),
        rule("ib.fi_efa", Some(Ib), "FI_EFA_*", Cond::Set, Warning,
             "EFA-only libfabric settings have no effect on InfiniBand and point at an EFA-era environment",
             "remove the FI_EFA_* variables from the job environment", S004),
        rule("any.socket_ifname", None, "NCCL_SOCKET_IFNAME", Cond::Interface, Warning,
             "NCCL bootstraps over this interface, so a name the node lacks fails initialisation and a loopback or container bridge breaks multi-node jobs",
             "unset NCCL_SOCKET_IFNAME or name the node's data interface (see 'ip -br link')", S000),
    ]
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

/// What is wrong with `NCCL_SOCKET_IFNAME` on a node with `interfaces`, if anything. NCCL reads the
/// value as a comma-separated list of name prefixes; a leading `=` makes the whole list exact names and
/// a leading `^` makes it an exclusion list (NCCL environment variables documentation).
fn interface_problem(value: &str, interfaces: &[String]) -> Option<String> {
    let value = value.trim();
    if value.starts_with('^') {
        return None;
    }
    let (exact, list) = match value.strip_prefix('=') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let wanted: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let matched: Vec<&String> = interfaces
        .iter()
        .filter(|i| {
            wanted.iter().any(|w| {
                if exact {
                    i.as_str() == *w
                } else {
                    i.starts_with(w)
                }
            })
        })
        .collect();
    if matched.is_empty() {
        return Some(format!(
            "names no interface of this node (it has {})",
            clip(&interfaces.join(", "), 80)
        ));
    }
    if matched.iter().all(|i| unsuitable_interface(i)) {
        return Some(format!(
            "selects only a loopback or container bridge interface ({})",
            clip(
                &matched
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                60
            )
        ));
    }
    None
}

/// Judges a step's environment (`vars`: every `NAME=value` of the job) on a node with `fabric` and
/// network `interfaces` (`None` when unknown: the interface rule is skipped). One finding per rule
/// that fires, in table order.
pub fn check(
    vars: &[(String, String)],
    fabric: Option<Fabric>,
    interfaces: Option<&[String]>,
    rules: &[Rule],
) -> Vec<Finding> {
    let mut out = vec![];
    for r in rules {
        if r.fabric.is_some() && r.fabric != fabric {
            continue;
        }
        let hits: Vec<&(String, String)> = match r.var.strip_suffix('*') {
            Some(prefix) => vars.iter().filter(|(k, _)| k.starts_with(prefix)).collect(),
            None => vars.iter().filter(|(k, _)| *k == r.var).collect(),
        };
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
            Cond::Interface => interfaces
                .and_then(|ifs| interface_problem(value, ifs))
                .map(|p| format!("{name}={} {p}", clip(value, 40))),
        };
        let Some(problem) = problem else { continue };
        let on = match r.fabric.or(fabric) {
            Some(f) => format!(" on this {} node", f.as_str().to_uppercase()),
            None => String::new(),
        };
        out.push(Finding {
            check: CheckKind::NcclEnv,
            severity: r.severity,
            what: format!("{problem}{on} (rule {})", r.name),
            why: r.why.clone(),
            fix: r.fix.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (&[("NCCL_NET", "AWS Libfabric")], Some(Fabric::Efa), &["efa.nccl_net"]),
            (&[("NCCL_NET", "Socket")], Some(Fabric::Efa), &["efa.nccl_net"]),
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
             unset NCCL_NET (the image default NCCL_NET_PLUGIN=ofi selects EFA) or set NCCL_NET=Libfabric"
        );
        assert_eq!(f[0].severity, Severity::Error);
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
