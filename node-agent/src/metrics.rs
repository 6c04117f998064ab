//! The Prometheus textfile for node_exporter's textfile collector (`--collector.textfile.directory`),
//! written atomically (a temporary file in the same directory, then `rename`), so the collector never
//! reads half a file. Names follow Prometheus conventions: `_total` counters, `_seconds` units.

use crate::registry::NodeReport;
use crate::reports::Counters;
use std::fmt::Write;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition text for the last check run and the report counters.
pub fn render(rep: Option<&NodeReport>, counters: &Counters) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# HELP launchguard_check_status Node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
    let _ = writeln!(o, "# TYPE launchguard_check_status gauge");
    if let Some(r) = rep {
        for c in &r.checks {
            let _ = writeln!(
                o,
                "launchguard_check_status{{check=\"{}\"}} {}",
                esc(&c.id),
                c.status.exit_code()
            );
        }
        let _ = writeln!(o, "# HELP launchguard_node_status Worst node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
        let _ = writeln!(o, "# TYPE launchguard_node_status gauge");
        let _ = writeln!(o, "launchguard_node_status {}", r.exit_code);
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_duration_seconds Wall time of the last check run."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_duration_seconds gauge");
        let _ = writeln!(
            o,
            "launchguard_check_run_duration_seconds {:.6}",
            r.duration_ms / 1e3
        );
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_timestamp_seconds When the last check run finished."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_timestamp_seconds gauge");
        let _ = writeln!(o, "launchguard_check_run_timestamp_seconds {}", r.timestamp);
    }
    let _ = writeln!(o, "# HELP launchguard_reports_total Launch reports received from spank_launchguard.so, by action.");
    let _ = writeln!(o, "# TYPE launchguard_reports_total counter");
    for (action, n) in counters.accepted() {
        let _ = writeln!(o, "launchguard_reports_total{{action=\"{action}\"}} {n}");
    }
    let _ = writeln!(o, "# HELP launchguard_reports_dropped_total Launch reports or connections refused, by reason.");
    let _ = writeln!(o, "# TYPE launchguard_reports_dropped_total counter");
    for (reason, n) in counters.dropped() {
        let _ = writeln!(
            o,
            "launchguard_reports_dropped_total{{reason=\"{reason}\"}} {n}"
        );
    }
    o
}

/// Writes `text` to `path` atomically; does nothing when `path` is empty or its directory is absent.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<bool> {
    let Some(dir) = path.parent() else {
        return Ok(false);
    };
    if path.as_os_str().is_empty() || !dir.is_dir() {
        return Ok(false);
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    // Never write through something planted at the temporary name (a symlink to a root file): remove
    // it, then create the file exclusively (O_CREAT|O_EXCL does not follow symlinks).
    let _ = std::fs::remove_file(&tmp);
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use launchguard_core::node::Status;
    use launchguard_core::report::CheckLine;

    /// The alerting rules the package ships.
    const ALERTS: &str = include_str!("../../packaging/prometheus/launchguard-alerts.yml");

    fn sample() -> String {
        let rep = NodeReport {
            schema: 1,
            node: "gpu1".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Critical,
            exit_code: 2,
            duration_ms: 8.0,
            timestamp: 1_700_000_000,
            checks: vec![CheckLine {
                id: "node.munge.key_mode".into(),
                status: Status::Critical,
                message: "launchguard: node.munge.key_mode: …".into(),
                duration_ms: 0.1,
            }],
            facts: Default::default(),
        };
        render(Some(&rep), &Counters::default())
    }

    /// Every metric the alerting rules use is one the agent writes, with the labels and label
    /// values they select on: renaming a metric without its rules fails here.
    #[test]
    fn the_alert_rules_use_the_metrics_we_write() {
        let text = sample();
        let names = regex::Regex::new(r"\b(launchguard_[a-z_]+)(\{[^}]*\})?").unwrap();
        let mut seen = 0;
        for c in names.captures_iter(ALERTS) {
            let name = &c[1];
            seen += 1;
            assert!(
                text.contains(&format!("# TYPE {name} ")),
                "launchguard-alerts.yml uses {name}, which the textfile does not have:\n{text}"
            );
            if let Some(sel) = c.get(2) {
                for m in sel.as_str().trim_matches(['{', '}']).split(',') {
                    let m = m.trim().replace("=~", "=");
                    assert!(
                        text.lines().any(|l| l.starts_with(name) && l.contains(&m)),
                        "launchguard-alerts.yml selects {name}{{{m}}}, which the textfile never writes"
                    );
                }
            }
        }
        assert!(seen >= 3, "the rules name launchguard's metrics");
    }

    /// Names follow Prometheus's naming guide: the `launchguard_` prefix, base units (`_seconds`),
    /// `_total` exactly on counters, snake_case label names.
    #[test]
    fn names_follow_the_prometheus_naming_guide() {
        let text = sample();
        let ty = regex::Regex::new(r"^# TYPE ([a-z_:][a-z0-9_:]*) (counter|gauge)$").unwrap();
        let mut n = 0;
        for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let c = ty
                .captures(l)
                .unwrap_or_else(|| panic!("bad TYPE line: {l}"));
            let (name, kind) = (&c[1], &c[2]);
            assert!(name.starts_with("launchguard_"), "{name}");
            assert_eq!(
                name.ends_with("_total"),
                kind == "counter",
                "{name} is a {kind}"
            );
            assert!(
                !name.contains("_ms") && !name.contains("milli"),
                "{name}: base units"
            );
            n += 1;
        }
        assert_eq!(n, 6, "{text}");
        let label = regex::Regex::new(r"\{([a-z_]+)=").unwrap();
        for c in label.captures_iter(&text) {
            assert!(!c[1].starts_with("__"), "{}", &c[1]);
        }
    }
}
