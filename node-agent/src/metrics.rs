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
    let _ = writeln!(o, "# HELP launchguard_reports_total Launch reports received from spank_launchguard.so, by source (slurmstepd: its verdict on a step; user_claim: what a user's srun sent, unverified) and action.");
    let _ = writeln!(o, "# TYPE launchguard_reports_total counter");
    for (source, action, n) in counters.accepted() {
        let _ = writeln!(
            o,
            "launchguard_reports_total{{source=\"{source}\",action=\"{action}\"}} {n}"
        );
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
