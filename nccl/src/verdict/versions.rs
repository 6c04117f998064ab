//! The NCCL and aws-ofi-nccl versions the log names against `--expect-nccl-version` and
//! `--expect-ofi-version` (prefix match).

use super::{CheckOptions, Finding, Severity};
use crate::parse::Parsed;

pub(super) fn check_versions(q: &str, p: &Parsed, opts: &CheckOptions, f: &mut Vec<Finding>) {
    let pairs = [
        ("NCCL", &opts.expect_nccl_version, &p.facts.nccl_version),
        (
            "aws-ofi-nccl",
            &opts.expect_ofi_version,
            &p.facts.ofi_version,
        ),
    ];
    for (what, want, got) in pairs {
        let Some(want) = want else { continue };
        if got.as_deref().is_some_and(|g| g.starts_with(want.as_str())) {
            continue;
        }
        f.push(Finding {
            id: "nccl.version",
            severity: Severity::NoGo,
            what: format!(
                "{q}: {what} version is {}, expected {want}",
                got.as_deref().unwrap_or("not logged")
            ),
            why: "the run did not test the library version training will use".into(),
            fix: format!("point LD_LIBRARY_PATH (or the container image) at {what} {want}, rerun with NCCL_DEBUG=INFO"),
        });
    }
}
