//! Test failures the log reports outright: nccl-tests' `Test NCCL failure` / `Test failure` lines,
//! torch `check` failures, a network plugin that failed to initialise, and NCCL WARN lines.

use super::{hosts_phrase, Finding, Severity};
use crate::parse::Parsed;

pub(super) fn check_failures(q: &str, p: &Parsed, plugin_reported: bool, f: &mut Vec<Finding>) {
    let facts = &p.facts;
    let net_init_failed = facts
        .warns
        .iter()
        .any(|w| w.contains("Failed to initialize any NET plugin"));
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
    if let Some(first) = facts.test_failures.first() {
        f.push(Finding {
            id: "nccl.test_failed",
            severity: Severity::NoGo,
            what: format!("{q}: nccl-tests failed: {first}"),
            why: "the collective did not complete, so the run proves neither bandwidth nor correctness".into(),
            fix: "fix the first NCCL WARN in the log (rerun with NCCL_DEBUG=INFO if there is none), then rerun the test".into(),
        });
    } else if facts.warn_count > 0 && !net_init_failed && !plugin_reported {
        warn_finding(q, facts, f);
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

fn warn_finding(q: &str, facts: &crate::log::LogFacts, f: &mut Vec<Finding>) {
    f.push(Finding {
            id: "nccl.warn",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} NCCL WARN line(s), first: {}",
                facts.warn_count,
                facts.warns.first().map(String::as_str).unwrap_or("")
            ),
            why: "NCCL warns about fabric or setup problems that can slow or break training (NCCL docs, Troubleshooting)".into(),
            fix: "read the WARN lines in the log and fix their cause before training".into(),
        });
}
