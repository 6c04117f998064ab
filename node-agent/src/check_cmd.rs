//! `launchguard check` and `launchguard list-checks`: the node checks run once in this process.

use crate::config::Config;
use crate::gather::Ctx;
use crate::registry::{NodeReport, Runner};
use launchguard_core::node::{all_checks, Status};
use std::path::PathBuf;
use std::process::ExitCode;

/// `launchguard check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Print one JSON object (schema 1: node, status, exit_code, checks[], facts{}) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run only these checks: IDs or families, e.g. `--only node.munge --only node.hostname.link_local`.
    #[arg(long, value_name = "ID")]
    pub only: Vec<String>,
    /// Show passing checks too (the table shows only problems by default).
    #[arg(long, short)]
    pub verbose: bool,
    /// Config file (default /etc/launchguard/launchguard.toml; missing there = defaults).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// `launchguard list-checks`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Config file, to show which checks are disabled (default /etc/launchguard/launchguard.toml).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// JSON array of {id, family, enabled, description}.
    #[arg(long)]
    pub json: bool,
}

/// Loads the config or prints the error; `Err(exit code 3)` for monitoring's UNKNOWN.
pub fn load_config(path: Option<&std::path::Path>) -> Result<Config, ExitCode> {
    Config::load(path).map_err(|e| {
        eprintln!("launchguard: config: {e}");
        ExitCode::from(3)
    })
}

/// Runs the checks once on a current-thread runtime.
pub fn run_once(cfg: Config, only: &[String]) -> NodeReport {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let runner = Runner::new(Ctx::new(cfg));
    let rep = rt.block_on(runner.run(only));
    // A family that timed out may still be blocked in the kernel: do not wait for its thread.
    rt.shutdown_background();
    rep
}

/// Prints a report as a table: problems first (or every check with `verbose`), then a summary line.
pub fn print_table(rep: &NodeReport, verbose: bool) {
    for c in &rep.checks {
        let st = c.status;
        if st == Status::Ok && !verbose {
            continue;
        }
        // The ID is in its own column: show the message without its `launchguard: <id>: ` prefix.
        let prefix = format!("launchguard: {}: ", c.id);
        let msg = if c.message.is_empty() {
            String::new()
        } else {
            format!(
                "  {}",
                c.message.strip_prefix(&prefix).unwrap_or(&c.message)
            )
        };
        println!("{:<8} {:<28}{msg}", c.status.as_str().to_uppercase(), c.id);
    }
    let count = |s: Status| rep.checks.iter().filter(|c| c.status == s).count();
    println!(
        "{}: {} — {} checks: {} ok, {} warning, {} critical, {} unknown ({:.1} ms)",
        rep.node,
        rep.status.as_str().to_uppercase(),
        rep.checks.len(),
        count(Status::Ok),
        count(Status::Warning),
        count(Status::Critical),
        count(Status::Unknown),
        rep.duration_ms
    );
}

/// `launchguard check`: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
pub fn check(a: &CheckArgs) -> ExitCode {
    let cfg = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let known = all_checks();
    for o in &a.only {
        let ok = known
            .iter()
            .any(|c| launchguard_core::node::id_matches(c.id, o));
        if !ok {
            let hint = known
                .iter()
                .find(|c| c.family == o.as_str() || c.id.ends_with(&format!(".{o}")))
                .map(|c| {
                    if c.family == o.as_str() {
                        format!("node.{}", c.family)
                    } else {
                        c.id.to_string()
                    }
                })
                .unwrap_or_else(|| "node.munge".into());
            eprintln!(
                "launchguard: --only {o}: no such check or family; did you mean {hint}? (launchguard list-checks lists them)"
            );
            return ExitCode::from(3);
        }
    }
    let rep = run_once(cfg, &a.only);
    if a.json {
        println!("{}", serde_json::to_string(&rep).unwrap_or_default());
    } else {
        print_table(&rep, a.verbose);
    }
    ExitCode::from(rep.exit_code)
}

/// `launchguard list-checks`.
pub fn list(a: &ListArgs) -> ExitCode {
    let cfg = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let all = all_checks();
    if a.json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|c| {
                serde_json::json!({"id": c.id, "family": c.family, "enabled": !cfg.is_disabled(c.id), "description": c.describe})
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return ExitCode::SUCCESS;
    }
    for c in all {
        let on = if cfg.is_disabled(c.id) {
            "disabled"
        } else {
            "enabled"
        };
        println!("{:<30} {:<9} {}", c.id, on, c.describe);
    }
    for k in launchguard_core::CheckKind::ALL {
        println!(
            "{:<30} {:<9} {} (spank_launchguard.so; plugstack {}=)",
            k.id(),
            "plugin",
            k.describe(),
            k.key()
        );
    }
    ExitCode::SUCCESS
}
