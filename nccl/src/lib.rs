//! nccl-tests output and NCCL_DEBUG=INFO log analysis: the `launchguard nccl` subcommands.
//!
//! Runs wherever an admin or a CI job reads result files (login node, laptop); touches no cluster
//! state. Modules, one concern each:
//! - [`parsed`]: what reading a file yields ([`parsed::Parsed`], [`parsed::ParseError`]) and the size
//!   limits, shared by the two readers;
//! - [`parse`]: one file in, [`parse::Parsed`] out (streaming line scanner, JSON detection);
//! - [`parallel`]: one big file scanned in pieces on every core, joined to the same result;
//! - [`table`]: nccl-tests result tables (current and older layouts, `N/A`, footer);
//! - [`json`]: nccl-tests `-J` JSON output;
//! - [`log`]: facts from NCCL_DEBUG=INFO lines (versions, network, provider/fabric, NICs, GDRDMA,
//!   ranks and hosts);
//! - [`model`]: severities, verdicts, [`model::Finding`] and the check options the rules share;
//! - [`verdict`]: the go/no-go rules, one finding per reason, one file per rule family (failures,
//!   bandwidth, network, versions); with [`plugin`] (a network plugin that failed, as the cause of
//!   a Socket fallback), [`interfaces`] (the Socket interface list) and [`env_rules`] (NCCL_*
//!   overrides NCCL logged, as a rule table) and [`warn_rules`] (causes of NCCL WARN lines, as data,
//!   with aws-ofi-nccl's own WARNs in [`ofi_rules`], both asked through [`warn_causes`]);
//! - [`baseline`]: per-SKU busbw/algbw baselines (built-in reference table or a file);
//! - [`outliers`]: the busbw outlier job over many result files and the bad-node ranking;
//! - [`output`]: readable, CSV and JSON rendering;
//! - [`generate`]: synthetic multi-node files with known busbw (marked GENERATED);
//! - [`cli`]: clap definitions and the entry point the `launchguard` binary calls.
//!
//! Units everywhere: sizes in bytes, times in microseconds (us), busbw/algbw in GB/s (10^9 B/s).
#![forbid(unsafe_code)]

pub mod baseline;
pub mod cli;
pub mod env_rules;
pub mod file;
pub mod generate;
pub mod html;
pub mod interfaces;
pub mod json;
pub mod log;
pub mod model;
pub mod ofi_rules;
pub mod outliers;
pub mod output;
pub mod parallel;
pub mod parse;
pub mod parsed;
pub mod plugin;
pub mod table;
pub mod units;
pub mod verdict;
pub mod warn_causes;
pub mod warn_rules;

pub use file::parse_path;
pub use parse::{parse_bytes, parse_reader, ParseError, Parsed};
