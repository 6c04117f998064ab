//! The NCCL verdict's data model: severities, the overall verdict, findings and the options a check
//! runs with. Its own module (not in [`crate::verdict`]) so the rule families outside the verdict
//! ([`crate::plugin`], [`crate::interfaces`], [`crate::env_rules`], [`crate::outliers`]) can build
//! findings without importing the module that calls them.
//!
//! [`Finding`] here is a verdict on a log file (go/no-go, exit 2 for no-go), not a node check's
//! outcome (`launchguard_core::node::Outcome`, ok/warning/critical/unknown): the severities and
//! exit codes differ, so the two stay separate types and share only the one-line renderer,
//! [`launchguard_core::finding::Line`].

use std::fmt;

use serde::Serialize;

use crate::baseline::BaselineEntry;
use crate::table::Placement;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Context worth a line; never changes the verdict.
    Info,
    /// Not proven good: look before training (exit 1).
    Warning,
    /// Do not start training on this (exit 2).
    NoGo,
}

/// The overall answer for a file or a set of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Everything the gate asks for is proven (exit 0).
    Go,
    /// Nothing failed, but something is unproven or odd (exit 1).
    Warn,
    /// The file could not be read or parsed (exit 3).
    Unreadable,
    /// A gate rule failed (exit 2).
    NoGo,
}

impl Verdict {
    /// Monitoring-plugin exit code: 0 go, 1 warnings, 2 no-go, 3 could not read/parse.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Go => 0,
            Verdict::Warn => 1,
            Verdict::NoGo => 2,
            Verdict::Unreadable => 3,
        }
    }

    /// `GO`, `WARN`, `NO-GO`, `UNREADABLE`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Go => "GO",
            Verdict::Warn => "WARN",
            Verdict::NoGo => "NO-GO",
            Verdict::Unreadable => "UNREADABLE",
        }
    }

    /// Combines verdicts of several files: no-go outranks unreadable, which outranks a warning.
    pub fn worst(a: Verdict, b: Verdict) -> Verdict {
        a.max(b)
    }
}

/// One problem, rendered as one line: `launchguard: <id>: <what>; <why>; <fix>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable ID (`nccl.wrong`, `nccl.not_efa`, …).
    pub id: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong, naming the file.
    pub what: String,
    /// Why it matters.
    pub why: String,
    /// The exact fix.
    pub fix: String,
}

impl fmt::Display for Finding {
    /// The one line, by core's renderer ([`launchguard_core::finding::Line`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        launchguard_core::finding::Line::new(self.id, &self.what, &self.why, &self.fix).fmt(f)
    }
}

/// The network fabric the run is expected to use (`--fabric`): core's, the same the node check
/// detects.
pub use launchguard_core::fabric::Fabric;

/// What `check` compares against.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// `--expect-nics N`: NICs each host must report (`found N nics`, IB HCAs).
    pub expect_nics: Option<u32>,
    /// `--size`: target message size in bytes; default the largest in each table.
    pub size: Option<u64>,
    /// `--min-busbw`: floor for busbw at the target size, GB/s.
    pub min_busbw: Option<f64>,
    /// `--min-algbw`: floor for algbw at the target size, GB/s.
    pub min_algbw: Option<f64>,
    /// Baseline rows that apply (already narrowed to one SKU).
    pub baseline: Vec<BaselineEntry>,
    /// Fraction below a baseline still accepted (0.10 = 10%, nccl-tests' own `-G` check margin).
    pub tolerance: f64,
    /// `--fabric`: the fabric the run must have used.
    pub fabric: Option<Fabric>,
    /// Which half of the table the bandwidth rules read.
    pub placement: Placement,
    /// `--expect-nccl-version`: prefix the logged NCCL version must start with.
    pub expect_nccl_version: Option<String>,
    /// `--expect-ofi-version`: prefix the logged aws-ofi-nccl version must start with.
    pub expect_ofi_version: Option<String>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            expect_nics: None,
            size: None,
            min_busbw: None,
            min_algbw: None,
            baseline: Vec::new(),
            tolerance: 0.10,
            fabric: None,
            placement: Placement::OutOfPlace,
            expect_nccl_version: None,
            expect_ofi_version: None,
        }
    }
}
