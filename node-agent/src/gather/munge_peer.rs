//! Facts for `node.munge.peer_key`: a client request from this node to slurmctld
//! (`scontrol show config` as root, with this node's slurm.conf and munged, 5 s deadline) and the
//! `Munge decode failed` lines in slurmd's own log (`SlurmdLogFile`, `%n`/`%h` expanded as
//! slurm.conf(5) says), counted from slurmd's last start, read only when the request failed.
//!
//! Staleness: only an answered request is kept ([`disk_cache`], at most [`TTL`], 10 minutes, old), under a key
//! naming everything on this node the answer depends on: slurm.conf's stat, the munge key file's
//! stat, munged's pid and start time and its socket (and the boot, as every entry). A new key
//! file, a restarted munged or another slurm.conf is a miss, so a cached answer never hides a key
//! changed here; a refusal or an unreachable controller is never kept, so a cache cannot invent
//! one. What the cache cannot see is the controller's key changing: that is seen within [`TTL`].

use super::disk_cache;
use super::util;
use super::Ctx;
use launchguard_core::node::munge::{
    classify_client_error, Daemon, DecodeFailures, PeerKey, PeerProbe,
};
use launchguard_core::slurm_conf::SlurmConf;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Longest an answered request is reused (as the PlugStackConfig answer of the same command: the
/// agent checks every minute on every node, the controller is asked at most this often per node).
pub const TTL: Duration = Duration::from_secs(600);

/// The client's deadline.
const DEADLINE: Duration = Duration::from_secs(5);

/// Most of slurmd's log read (its end).
const LOG_TAIL: u64 = 1 << 20;

/// Gathers `node.munge.peer_key`'s facts; `daemon` is munged as the munge family found it and
/// `local_ok` whether its own round trip worked (the request is made only then).
pub fn gather(ctx: &Ctx, daemon: &Daemon, local_ok: bool) -> PeerKey {
    let (conf_path, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let controller = conf
        .as_ref()
        .and_then(|c| c.get("SlurmctldHost").or_else(|| c.get("ControlMachine")))
        .map(|h| h.split('(').next().unwrap_or(h).trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "the controller".into());
    let probe = if local_ok {
        probe(ctx, &conf_path, daemon)
    } else {
        PeerProbe::NotAsked("this node's own munge round trip fails".into())
    };
    // slurmd's log is evidence only beside a request that failed (the judge quotes it then): a
    // node whose request was answered, the usual case, does not read up to 1 MiB of log each run.
    let failed = matches!(
        probe,
        PeerProbe::Refused(_) | PeerProbe::Unreachable(_) | PeerProbe::Other(_)
    );
    let decode_failures = if failed {
        conf.as_ref().and_then(|c| decode_failures(ctx, c))
    } else {
        None
    };
    PeerKey {
        controller,
        probe,
        decode_failures,
    }
}

fn probe(ctx: &Ctx, conf_path: &Path, daemon: &Daemon) -> PeerProbe {
    let Daemon::Running { pid, started } = daemon else {
        return PeerProbe::NotAsked("munged is not running on this node".into());
    };
    // Inside a job step on this node, slurmd decoded slurmctld's job credential to start it.
    let var = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if var("SLURM_JOB_ID") && var("SLURM_STEP_ID") && var("SLURMD_NODENAME") {
        return PeerProbe::InStep;
    }
    let m = &ctx.cfg.munge;
    let key = match (
        disk_cache::stat_key(conf_path),
        disk_cache::stat_key(&m.key),
    ) {
        (Some(c), Some(k)) => Some(format!(
            "{c} | {k} | munged {pid} {started:?} {}",
            m.socket.display()
        )),
        _ => None,
    };
    if key
        .as_deref()
        .and_then(|k| disk_cache::get("munge-peer", k, Some(TTL)))
        .is_some_and(|v| v == "answered")
    {
        return PeerProbe::Answered { cached: true };
    }
    let mut c = Command::new("scontrol");
    c.args(["show", "config"]).env("SLURM_CONF", conf_path);
    match util::run(c, None, DEADLINE) {
        Ok(o) if o.ok => {
            if let Some(k) = key {
                disk_cache::put("munge-peer", &k, "answered");
            }
            PeerProbe::Answered { cached: false }
        }
        Ok(o) => classify_client_error(&o.stderr),
        Err(e) if e.contains("did not finish") => {
            PeerProbe::Unreachable(format!("no answer within {} s", DEADLINE.as_secs()))
        }
        Err(e) => PeerProbe::NotAsked(format!("scontrol: {e}")),
    }
}

/// `Munge decode failed` lines after slurmd's last start in the end of its log; `None` when there
/// is no log file (syslog) or none.
fn decode_failures(ctx: &Ctx, conf: &SlurmConf) -> Option<DecodeFailures> {
    let node = ctx.slurm_node_name(Some(conf));
    let log = conf
        .get("SlurmdLogFile")?
        .replace("%n", &node)
        .replace("%h", &ctx.short_hostname());
    let mut f = util::open_regular(Path::new(&log), true).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL))).ok()?;
    let mut b = Vec::new();
    f.take(LOG_TAIL).read_to_end(&mut b).ok()?;
    let text = String::from_utf8_lossy(&b);
    let since = text
        .rfind("slurmd version ")
        .map(|i| text[..i].rfind('\n').map_or(0, |n| n + 1))
        .unwrap_or(0);
    let lines: Vec<&str> = text[since..]
        .lines()
        .filter(|l| l.contains("Munge decode failed"))
        .collect();
    let last = lines.last()?;
    Some(DecodeFailures {
        log,
        count: lines.len(),
        last: last.trim().to_string(),
    })
}
