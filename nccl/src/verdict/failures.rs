//! Test failures the log reports outright: nccl-tests' `Test NCCL failure` / `Test failure` lines,
//! torch `check` failures, a network plugin that failed to initialise, and NCCL WARN lines.

use super::{hosts_phrase, Finding, Severity};
use crate::parse::Parsed;

pub(super) fn check_failures(q: &str, p: &Parsed, plugin_reported: bool, f: &mut Vec<Finding>) {
    let facts = &p.facts;
    let net_init_failed = facts
        .warns
        .iter()
        .any(|w| w.contains(crate::log::NET_INIT_FAILED_WARN));
    if net_init_failed {
        let tried = if facts.net_plugin_failures.is_empty() {
            String::new()
        } else {
            format!(" (failed: {})", facts.net_plugin_failures.join(", "))
        };
        let ib = if facts.ib_no_device {
            "; NET/IB found no device"
        } else {
            ""
        };
        f.push(Finding {
            id: "nccl.net_init_failed",
            severity: Severity::NoGo,
            what: format!("{q}: NCCL could not initialise any network plugin{tried}{ib}"),
            why: "a forced network the hosts lack (NCCL_NET=IB on EFA or on hosts without HCAs) fails NCCL init instead of falling back".into(),
            fix: "remove NCCL_NET and NCCL_IB_* from the job environment and keep NCCL_NET_PLUGIN at the image default (ofi on EFA) (NCCL docs: NCCL_NET, NCCL_NET_PLUGIN)".into(),
        });
    }
    let test_failed = facts.test_failures.first();
    if let Some(first) = test_failed {
        f.push(Finding {
            id: "nccl.test_failed",
            severity: Severity::NoGo,
            what: format!("{q}: nccl-tests failed: {first}"),
            why: "the collective did not complete, so the run proves neither bandwidth nor correctness".into(),
            fix: "fix the first NCCL WARN in the log (rerun with NCCL_DEBUG=INFO if there is none), then rerun the test".into(),
        });
    }
    {
        // Each WARN a rule explains gives that rule's finding (once per rule), also next to a
        // failed nccl-tests run (the WARN names why it failed); the generic nccl.warn is left for
        // WARNs nothing here explains, and not repeated after a failed test.
        let mut seen: Vec<&str> = vec![];
        let mut unexplained = vec![];
        for w in &facts.warns {
            match crate::warn_causes::explain(w) {
                Some(r) if !seen.contains(&r.id) => {
                    seen.push(r.id);
                    f.push(Finding {
                        id: r.id,
                        severity: r.severity,
                        what: format!(
                            "{q}: {}: {}",
                            r.what,
                            launchguard_core::finding::clip(w, 200)
                        ),
                        why: r.why.into(),
                        fix: with_checks(r),
                    });
                }
                Some(_) => {}
                None => unexplained.push(w.as_str()),
            }
        }
        // A WARN that only relays an earlier failure, or NCCL's own consistency check, adds
        // nothing next to a WARN a cause rule explains.
        if seen
            .iter()
            .any(|id| !crate::warn_rules::RELAYS.contains(id))
        {
            f.retain(|x| !crate::warn_rules::RELAYS.contains(&x.id));
        }
        // WARNs the findings above already explain.
        let known = |w: &str| {
            (!seen.is_empty() && crate::warn_rules::is_follow_on(w))
                || w.contains(crate::log::NET_INIT_FAILED_WARN)
                || crate::log::is_no_socket_interface_warn(w)
                || (plugin_reported && crate::log::is_net_plugin_warn(w))
        };
        let rest: Vec<&str> = unexplained.into_iter().filter(|w| !known(w)).collect();
        let more_than_kept = facts.warn_count > facts.warns.len() as u64 && seen.is_empty();
        if test_failed.is_none()
            && (!rest.is_empty() || (more_than_kept && !net_init_failed && !plugin_reported))
        {
            warn_finding(q, facts, rest.first().copied(), f);
        }
    }
    if facts.no_socket_interface {
        socket_interface_finding(q, facts, f);
    }
    if let Some(first) = facts.torch_check_failures.first() {
        f.push(Finding {
            id: "nccl.wrong",
            severity: Severity::NoGo,
            what: format!("{q}: the PyTorch correctness check failed: {first}"),
            why: "the collective returned wrong data: a failure regardless of bandwidth".into(),
            fix: format!(
                "take {} out of service and check GPU/NIC/memory before rerunning",
                hosts_phrase(p)
            ),
        });
    }
}

/// A rule's fix, naming the node or launch checks that find its cause before a job runs.
fn with_checks(r: &crate::warn_rules::WarnRule) -> String {
    if r.checks.is_empty() {
        return r.fix.to_string();
    }
    let list: Vec<String> = r.checks.iter().map(|c| format!("`{c}`")).collect();
    format!(
        "{} (before a job runs, `launchguard check` finds this cause as {})",
        r.fix,
        list.join(", ")
    )
}

fn warn_finding(q: &str, facts: &crate::log::LogFacts, first: Option<&str>, f: &mut Vec<Finding>) {
    f.push(Finding {
            id: "nccl.warn",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} NCCL WARN line(s), first: {}",
                facts.warn_count,
                launchguard_core::finding::clip(
                    first
                        .or(facts.warns.first().map(String::as_str))
                        .unwrap_or(""),
                    200
                )
            ),
            why: "NCCL warns about fabric or setup problems that can slow or break training (NCCL docs, Troubleshooting)".into(),
            fix: "read the WARN lines in the log and fix their cause before training".into(),
        });
}

/// NCCL found no interface for its bootstrap or Socket transport: `NCCL_SOCKET_IFNAME` (comma list of
/// prefixes, `=` for exact names, `^` to exclude; NCCL docs, NCCL_SOCKET_IFNAME) matched nothing, or
/// no interface is up with an address. The communicator is never created: every rank fails at init.
fn socket_interface_finding(q: &str, facts: &crate::log::LogFacts, f: &mut Vec<Finding>) {
    let set = facts.env.iter().find(|e| e.name == "NCCL_SOCKET_IFNAME");
    let what = match set {
        Some(e) => format!(
            "{q}: NCCL found no network interface for its sockets: NCCL_SOCKET_IFNAME={} matches none of the host's interfaces that are up with an address",
            launchguard_core::finding::clip(&e.value, 60).replace(';', ",")
        ),
        None => format!(
            "{q}: NCCL found no network interface for its sockets (NCCL_SOCKET_IFNAME, if set, matches none; else no interface is up with an address)"
        ),
    };
    f.push(Finding {
        id: "nccl.socket_ifname_nomatch",
        severity: Severity::NoGo,
        what,
        why: "NCCL cannot open its bootstrap socket, so the communicator is never created and every rank fails at init (NCCL docs: NCCL_SOCKET_IFNAME)".into(),
        fix: "set NCCL_SOCKET_IFNAME to interfaces that exist and are up on every node (`ip -br addr` there: a prefix like eth, =eth0 for one exact name, ^docker,lo to exclude), or unset it so NCCL picks one".into(),
    });
}

/// The application reported an NCCL error (it died of it) and no other rule named a cause: the
/// first such line, as `nccl.system_error` for NCCL's system errors (a socket, verbs or shared-memory
/// call failed) and `nccl.job_failed` otherwise.
pub(super) fn check_job_failure(q: &str, p: &Parsed, f: &mut Vec<Finding>) {
    let Some(first) = p.facts.job_errors.first() else {
        return;
    };
    if f.iter().any(|x| x.severity == Severity::NoGo) {
        return;
    }
    let line = launchguard_core::finding::clip(first, 200);
    let system = p
        .facts
        .job_errors
        .iter()
        .any(|e| e.contains("unhandled system error") || e.contains("ncclSystemError"));
    f.push(if system {
        Finding {
            id: "nccl.system_error",
            severity: Severity::NoGo,
            what: format!("{q}: NCCL failed on a system call and the job stopped: {line}"),
            why: "a network interface is unreachable or firewalled, /dev/shm is too small, or a device is missing in the container (NCCL docs, Troubleshooting)".into(),
            fix: "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: the NCCL WARN line before the error names the call that failed".into(),
        }
    } else {
        Finding {
            id: "nccl.job_failed",
            severity: Severity::NoGo,
            what: format!("{q}: an NCCL call failed and the job stopped: {line}"),
            why: "NCCL returned an error to the application; the cause is in NCCL's own WARN lines, which this log does not show".into(),
            fix: "rerun with NCCL_DEBUG=WARN (or INFO with NCCL_DEBUG_SUBSYS=INIT,NET) and read the first NCCL WARN, or run `launchguard explain` on that output".into(),
        }
    });
}
