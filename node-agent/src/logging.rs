//! Logging: journald with structured fields (`tracing-journald`) when journald's socket exists,
//! else plain lines on stderr (containers, this test VM, `launchguard agent` in a terminal).

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

/// Installs the global subscriber. `stderr` forces stderr even when journald is present.
pub fn init(level: LevelFilter, stderr: bool) -> &'static str {
    let journald = if stderr {
        None
    } else {
        tracing_journald::layer().ok()
    };
    match journald {
        Some(j) => {
            let j = j.with_syslog_identifier("launchguard".into());
            let _ = tracing_subscriber::registry()
                .with(j.with_filter(level))
                .try_init();
            "journald"
        }
        None => {
            let fmt = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_target(false);
            let _ = tracing_subscriber::registry()
                .with(fmt.with_filter(level))
                .try_init();
            "stderr"
        }
    }
}
