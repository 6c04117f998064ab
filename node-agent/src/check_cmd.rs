//! `launchguard check` and `launchguard list-checks`: the node checks run once in this process.

use crate::config::Config;
use crate::gather::Ctx;
use crate::registry::{NodeReport, Runner};
use launchguard_core::node::{all_checks, Status};
use std::path::PathBuf;
use std::process::ExitCode;

// `launchguard check`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
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

// `launchguard list-checks`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
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
    print!("{}", table(rep, verbose, &[]));
}

/// The UNKNOWN checks of a run as a non-root user that need root: in each family where a check is
/// UNKNOWN because a read was refused (`Permission denied`, `Operation not permitted`), every UNKNOWN
/// check of that family, since the others follow from what could not be read (`node.munge.key_mode`:
/// "no key to inspect" when `/etc/munge` is closed to the user). IDs in report order.
pub fn need_root(rep: &NodeReport) -> Vec<String> {
    let family = |id: &str| {
        id.rsplit_once('.')
            .map(|(f, _)| f.to_string())
            .unwrap_or_default()
    };
    let refused: Vec<String> = rep
        .checks
        .iter()
        .filter(|c| c.status == Status::Unknown)
        .filter(|c| {
            c.message.contains("Permission denied") || c.message.contains("Operation not permitted")
        })
        .map(|c| family(&c.id))
        .collect();
    rep.checks
        .iter()
        .filter(|c| c.status == Status::Unknown && refused.contains(&family(&c.id)))
        .map(|c| c.id.clone())
        .collect()
}

/// `node.munge.key_present, key_owner, key_mode`: IDs with a family named once.
fn id_list(ids: &[String]) -> String {
    let mut out: Vec<String> = vec![];
    let mut last_family = "";
    for id in ids {
        match id.rsplit_once('.') {
            Some((f, name)) if f == last_family => out.push(name.to_string()),
            Some((f, _)) => {
                last_family = f;
                out.push(id.clone());
            }
            None => out.push(id.clone()),
        }
    }
    out.join(", ")
}

/// The table `check` and `status` print: one row per problem (every check with `verbose`), the
/// checks in `need_root` folded into one row that says to run as root, then the summary line.
pub fn table(rep: &NodeReport, verbose: bool, need_root: &[String]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for c in &rep.checks {
        let st = c.status;
        if (st == Status::Ok && !verbose) || need_root.contains(&c.id) {
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
        let _ = writeln!(
            o,
            "{:<8} {:<28}{msg}",
            c.status.as_str().to_uppercase(),
            c.id
        );
    }
    if !need_root.is_empty() {
        let _ = writeln!(
            o,
            "{:<8} {}: not judged: this user may not read what they check (Permission denied), so they say nothing about the node; run `sudo launchguard check` to judge them",
            "ROOT",
            id_list(need_root)
        );
    }
    let count = |s: Status| {
        rep.checks
            .iter()
            .filter(|c| c.status == s && !need_root.contains(&c.id))
            .count()
    };
    let root = if need_root.is_empty() {
        String::new()
    } else {
        format!(", {} need root", need_root.len())
    };
    let _ = writeln!(
        o,
        "{}: {} — {} checks: {} ok, {} warning, {} critical, {} unknown{root} ({:.1} ms)",
        rep.node,
        rep.status.as_str().to_uppercase(),
        rep.checks.len(),
        count(Status::Ok),
        count(Status::Warning),
        count(Status::Critical),
        count(Status::Unknown),
        rep.duration_ms
    );
    o
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
        // As a user, the checks that could not read what they judge are one line that says to run as
        // root, not one UNKNOWN line each; the exit code is the run's (UNKNOWN stays UNKNOWN).
        let need = if nix::unistd::geteuid().is_root() {
            vec![]
        } else {
            need_root(&rep)
        };
        print!("{}", table(&rep, a.verbose, &need));
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

#[cfg(test)]
mod tests {
    use super::*;
    use launchguard_core::report::CheckLine;

    fn line(id: &str, status: Status, message: &str) -> CheckLine {
        CheckLine {
            id: id.into(),
            status,
            message: message.into(),
            duration_ms: 0.1,
            user_controlled: None,
        }
    }

    /// What `launchguard check` gathered as user lgtest on the test cluster (/etc/munge is 0700 munge).
    fn as_user() -> NodeReport {
        NodeReport {
            schema: 1,
            node: "vm".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Unknown,
            exit_code: 3,
            duration_ms: 8.0,
            timestamp: 0,
            checks: vec![
                line("node.munge.key_present", Status::Unknown, "launchguard: node.munge.key_present: cannot stat '/etc/munge/munge.key': Permission denied (os error 13); the check could not judge, …"),
                line("node.munge.key_owner", Status::Unknown, "launchguard: node.munge.key_owner: no key to inspect; the check could not judge, …"),
                line("node.munge.key_mode", Status::Unknown, "launchguard: node.munge.key_mode: no key to inspect; …"),
                line("node.munge.daemon", Status::Ok, ""),
                line("node.munge.roundtrip", Status::Ok, ""),
                line("node.munge.key_stale", Status::Unknown, "launchguard: node.munge.key_stale: needs both the key and a running munged; …"),
                line("node.munge.key_digest", Status::Unknown, "launchguard: node.munge.key_digest: cannot read '/etc/munge/munge.key': Permission denied (os error 13); …"),
                line("node.hostname.resolves", Status::Unknown, "launchguard: node.hostname.resolves: resolving vm failed for now (EAI_AGAIN); …"),
                line("node.devices.constrain", Status::Warning, "launchguard: node.devices.constrain: cgroup.conf …"),
            ],
            facts: Default::default(),
        }
    }

    #[test]
    fn a_user_gets_one_run_as_root_line_instead_of_unknown_lines() {
        let rep = as_user();
        let need = need_root(&rep);
        assert_eq!(
            need,
            [
                "node.munge.key_present",
                "node.munge.key_owner",
                "node.munge.key_mode",
                "node.munge.key_stale",
                "node.munge.key_digest"
            ]
        );
        let t = table(&rep, false, &need);
        let lines: Vec<&str> = t.lines().collect();
        // The warning, the unrelated UNKNOWN (a resolver outage is not about root), one ROOT line, the summary.
        assert_eq!(lines.len(), 4, "{t}");
        assert!(!t.contains("no key to inspect"), "{t}");
        assert!(
            lines[0].starts_with("UNKNOWN  node.hostname.resolves"),
            "{t}"
        );
        assert!(
            lines[1].starts_with("WARNING  node.devices.constrain"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("ROOT     node.munge.key_present, key_owner, key_mode, key_stale, key_digest: not judged"),
            "{t}"
        );
        assert!(lines[2].contains("sudo launchguard check"), "{t}");
        assert_eq!(
            lines[3],
            "vm: UNKNOWN — 9 checks: 2 ok, 1 warning, 0 critical, 1 unknown, 5 need root (8.0 ms)"
        );
        // As root (or with nothing refused) the table is unchanged: one row per problem.
        let t = table(&rep, false, &[]);
        assert_eq!(t.lines().count(), 8, "{t}");
    }
}
