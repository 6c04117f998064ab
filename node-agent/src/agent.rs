//! `launchguard agent`: the per-node daemon (systemd `Type=notify`, see
//! `systemd/launchguard-agent.service`).
//!
//! Start: read the config (a bad file: a clear error naming the line, exit 2, nothing started), bind
//! the socket, run every check once, write the textfile, then `READY=1`. After that: checks every
//! `interval_secs`, on SIGHUP (which also re-reads the config's check settings; a bad file keeps the
//! old one and logs why) and on a client's `check` request; `WATCHDOG=1` every half of
//! `WATCHDOG_USEC` from the main loop (so a wedged loop gets restarted); SIGTERM/SIGINT stop it,
//! removing the socket.

use crate::config::Config;
use crate::gather::Ctx;
use crate::registry::Runner;
use crate::server::{self, Shared};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tracing_subscriber::filter::LevelFilter;

// `launchguard agent`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
// The journal fields' help is built with the deferred arguments: only when `agent` is invoked.
#[derive(Debug, clap::Args)]
#[command(after_long_help = crate::logging::journal_help())]
pub struct Args {
    /// Config file (default /etc/launchguard/launchguard.toml; missing there = defaults).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Log to stderr even when journald is available.
    #[arg(long)]
    pub stderr: bool,
    /// Log level: error, warn, info, debug.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub log_level: LevelFilter,
    /// Override the socket path from the config.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// The settings whose value differs between two configurations (top-level keys and sections, as
/// named in launchguard.toml), for the reload log line.
pub(crate) fn changed_settings(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut v = vec![];
    macro_rules! cmp {
        ($($f:ident),*) => {$(
            if format!("{:?}", old.$f) != format!("{:?}", new.$f) {
                v.push(stringify!($f));
            }
        )*};
    }
    cmp!(
        interval_secs,
        check_timeout_secs,
        disabled,
        slurm_conf,
        plugin_dir,
        node_name,
        socket,
        textfile,
        munge,
        enroot,
        nccl_env,
        reports,
        health
    );
    v
}

/// Runs the agent until SIGTERM/SIGINT.
pub fn run(a: &Args) -> ExitCode {
    let cfg = match Config::load(a.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("launchguard agent: config: {e}; the agent does not start");
            return ExitCode::from(2);
        }
    };
    let sink = crate::logging::init(a.log_level, a.stderr);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("launchguard agent: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = rt.block_on(main_loop(cfg, a, sink));
    rt.shutdown_background();
    code
}

async fn main_loop(mut cfg: Config, a: &Args, sink: &str) -> ExitCode {
    let socket = a.socket.clone().unwrap_or_else(|| cfg.socket.clone());
    let listener = match server::bind(&socket, cfg.reports.socket_mode) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{e}; the agent does not start");
            eprintln!("launchguard agent: {e}; the agent does not start");
            return ExitCode::from(2);
        }
    };
    let mut runner = Arc::new(Runner::new(Ctx::new(cfg.clone())));
    let sh = Shared::new(cfg.reports.clone(), runner.clone());
    tokio::spawn(server::serve(listener, sh.clone()));

    let rep = runner.run(&[]).await;
    let first = format!("{} in {:.1} ms", rep.status, rep.duration_ms);
    sh.set_textfile(&cfg.textfile);
    sh.publish(rep);
    tracing::info!(
        message_id = crate::logging::message_id::STARTED,
        launchguard.socket = %socket.display(),
        launchguard.interval_secs = cfg.interval_secs,
        "launchguard agent {} ready (logs: {sink}): first check run {first}, then every {} s",
        env!("CARGO_PKG_VERSION"),
        cfg.interval_secs
    );
    // READY=1 only now: `systemctl start` returns, and the unit is `active`, once the first check
    // run is done and its findings are logged.
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);

    let mut wd_usec = 0u64;
    let watchdog = sd_notify::watchdog_enabled(false, &mut wd_usec) && wd_usec > 0;
    let wd_period = Duration::from_micros((wd_usec / 2).max(100_000));
    let mut wd = tokio::time::interval(if watchdog {
        wd_period
    } else {
        Duration::from_secs(3600)
    });
    let period = Duration::from_secs(if cfg.interval_secs == 0 {
        365 * 86400
    } else {
        cfg.interval_secs
    });
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let (Ok(mut hup), Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    loop {
        tokio::select! {
            _ = wd.tick(), if watchdog => { let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]); }
            _ = tick.tick() => {
                let rep = runner.run(&[]).await;
                sh.publish(rep);
            }
            _ = hup.recv() => {
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Reloading]);
                match Config::load(a.config.as_deref()) {
                    Ok(c) => {
                        let changed = changed_settings(&cfg, &c).join(",");
                        tracing::info!(
                            message_id = crate::logging::message_id::RELOADED,
                            launchguard.interval_secs = c.interval_secs,
                            launchguard.changed = changed.as_str(),
                            "configuration re-read: checks every {} s; changed: {} (socket and report limits apply at the next start)",
                            c.interval_secs,
                            if changed.is_empty() { "nothing" } else { changed.as_str() }
                        );
                        cfg = c;
                        runner = Arc::new(Runner::new(Ctx::new(cfg.clone())));
                        sh.set_runner(runner.clone());
                        sh.set_textfile(&cfg.textfile);
                        let period = Duration::from_secs(if cfg.interval_secs == 0 { 365 * 86400 } else { cfg.interval_secs });
                        tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
                    }
                    Err(e) => tracing::error!(
                        message_id = crate::logging::message_id::RELOADED,
                        "config: {e}; keeping the previous configuration"
                    ),
                }
                let rep = runner.run(&[]).await;
                sh.publish(rep);
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
    let _ = std::fs::remove_file(&socket);
    tracing::info!(
        message_id = crate::logging::message_id::STOPPED,
        "launchguard agent stopped; {} removed",
        socket.display()
    );
    ExitCode::SUCCESS
}
