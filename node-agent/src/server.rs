//! The agent's Unix socket: launch reports from spank_launchguard.so and queries from the CLI, as
//! JSON lines (`launchguard_core::protocol`).
//!
//! A client can never crash the agent, grow its memory without bound, or make it drop other clients'
//! reports uncounted: lines are capped at [`MAX_LINE`] bytes, connections at `reports.max_connections`
//! (more are closed at once and counted), idle clients are cut after `reports.idle_timeout_secs`,
//! non-root uids are rate-limited per uid on every line (garbage and blank lines included), may hold
//! only a share of the connections (the rest is reserved for root) and stay connected at most 60 s,
//! stored reports are clipped and users' reports kept apart from root's, and every refusal increments
//! `launchguard_reports_dropped_total{reason}`. Each report is attributed with `SO_PEERCRED`: the
//! `step` and `task` phases come from slurmstepd as root and are refused from any other uid
//! (`root_phase`); a non-root peer may only send an `srun` report for its own uid, whose job and step
//! are dropped (srun reports before there is a job), and its uid is shown and logged beside it.
//! Text from clients goes through [`launchguard_core::text::printable`] before it is stored, so
//! status output and logs never carry control or bidi/invisible characters as sent.
//!
//! An `srun` report is the user's claim: srun runs as the user, so any process of theirs can send one.
//! The agent therefore takes the node name from itself (never from a report), refuses an srun report
//! naming a finding ID that srun's plugin cannot emit ([`launchguard_core::CheckKind::in_srun`]), a
//! severity other than `error`/`warning`, or an action its findings do not give (`bad_finding`),
//! accepts at most [`CLAIM_BURST`] claims at once and then [`CLAIM_RATE`] per second from one
//! non-root uid (`claim_rate`; the journal gets one "N reports from uid U dropped" line per uid and
//! [`CLAIM_SUMMARY_AFTER`] instead of one per report), counts claims under
//! `launchguard_reports_total{source="user_claim"}` apart from slurmstepd's verdicts, and logs them
//! at notice level ([`crate::reports`]).
//!
//! This module does the socket I/O, admission and rate limits; the wire format and the cleaning of
//! reports are in [`crate::protocol`], the report store and counters in [`crate::reports`].

use crate::config::Reports;
use crate::protocol::{
    clean, decode, read_line_bounded, root_only_phase, sanitize, LineRead, Message, StatusReply,
    Stored,
};
use crate::registry::{NodeReport, Runner};
use crate::reports::ReportStore;
use launchguard_core::protocol::{MAX_LINE, VERSION};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// State shared by the connections and the agent loop.
pub struct Shared {
    /// Launch reports received and their counters.
    pub reports: ReportStore,
    /// Last check run.
    pub last_check: Mutex<Option<NodeReport>>,
    runner: Mutex<Arc<Runner>>,
    limiter: Mutex<HashMap<u32, (f64, Instant)>>,
    /// srun-phase reports (claims) per non-root uid: [`CLAIM_BURST`], then [`CLAIM_RATE`] per second.
    claims: Mutex<HashMap<u32, (f64, Instant)>>,
    /// Claims dropped per uid since that uid's last summary line.
    claim_drops: Mutex<HashMap<u32, u64>>,
    /// This node's name, as the agent's own check runs give it: every stored report carries it.
    node: String,
    /// Open connections per peer uid.
    conns: Mutex<HashMap<u32, usize>>,
    /// The Prometheus textfile (empty: none).
    textfile: Mutex<std::path::PathBuf>,
    /// Each check's status at the last run, to log changes.
    prev: Mutex<HashMap<String, String>>,
    /// Whether the published check run was started by a launch report ([`Shared::refresh_if_contradicted`]),
    /// and whether such a run is under way.
    refresh: Mutex<Refresh>,
    cfg: Reports,
}

static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// The state of the refresh that launch reports start ([`Shared::refresh_if_contradicted`]).
#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct Refresh {
    /// The last published check run was started by a launch report.
    published_by_report: bool,
    /// A run started by a launch report is under way (not yet published).
    running: bool,
}

/// Whether a launch report from slurmstepd should start a check run now: the last run's verdict is
/// one launches disprove ([`crate::reports::disprovable`]), that run was not itself started by a
/// launch report (a refresh that kept the verdict saw the same plugstack: no second one until another
/// run, periodic, SIGHUP or `--refresh`, publishes it again), and no run is under way. So at most one
/// refresh follows each published run, however many launches arrive.
fn should_refresh(disproved_verdict: bool, state: Refresh, runner_busy: bool) -> bool {
    disproved_verdict && !state.published_by_report && !state.running && !runner_busy
}
/// srun-phase reports one non-root uid may have accepted at once.
pub const CLAIM_BURST: f64 = 20.0;
/// srun-phase reports per second one non-root uid may have accepted after a burst (an srun takes
/// longer than a second to launch anything, so one user's real sruns stay under it).
pub const CLAIM_RATE: f64 = 1.0;
/// How long after a uid's first dropped claim its summary line is logged (one line per uid and period).
pub const CLAIM_SUMMARY_AFTER: Duration = Duration::from_secs(5);

/// Takes `cost` tokens from `uid`'s bucket in `m` (`rate` per second, at most `burst`); forgets
/// buckets idle for a minute once there are many.
fn take(
    m: &Mutex<HashMap<u32, (f64, Instant)>>,
    uid: u32,
    rate: f64,
    burst: f64,
    cost: f64,
) -> bool {
    let mut m = m.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    if m.len() > 10_000 {
        m.retain(|_, (_, t)| now.duration_since(*t) < Duration::from_secs(60));
    }
    let (tokens, last) = m.entry(uid).or_insert((burst, now));
    *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * rate).min(burst);
    *last = now;
    if *tokens >= cost {
        *tokens -= cost;
        true
    } else {
        false
    }
}

/// Why an srun-phase report cannot be what srun's plugin sent, if it cannot: a finding ID of a check
/// srun does not run, a severity other than `error`/`warning`, or an action that its findings do not
/// give (`rejected` needs an error finding, `warned` a finding; srun reports only launches it
/// spoke about).
pub fn forged_claim(r: &launchguard_core::protocol::Report) -> Option<String> {
    for f in &r.findings {
        if !launchguard_core::CheckKind::srun_ids().any(|id| id == f.id) {
            return Some(format!(
                "finding '{}' is not one srun's plugin reports",
                clean(&f.id, 60)
            ));
        }
        if f.severity != "error" && f.severity != "warning" {
            return Some(format!("severity '{}'", clean(&f.severity, 16)));
        }
    }
    let errors = r.findings.iter().any(|f| f.severity == "error");
    match r.action.as_str() {
        "rejected" if !errors => Some("rejected without an error finding".into()),
        "warned" | "allowed" if r.findings.is_empty() => {
            Some("an srun report without findings".into())
        }
        _ => None,
    }
}

/// Longest a non-root client may stay connected, sending or not.
const USER_CONN_LIFETIME: Duration = Duration::from_secs(60);
/// Deadline for writing an answer to a client that does not read it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

impl Shared {
    /// New shared state.
    pub fn new(cfg: Reports, runner: Arc<Runner>) -> Arc<Shared> {
        STARTED.get_or_init(Instant::now);
        Arc::new(Shared {
            reports: ReportStore::new(&cfg),
            last_check: Mutex::new(None),
            runner: Mutex::new(runner),
            limiter: Mutex::new(HashMap::new()),
            claims: Mutex::new(HashMap::new()),
            claim_drops: Mutex::new(HashMap::new()),
            node: crate::gather::node_name(),
            conns: Mutex::new(HashMap::new()),
            textfile: Mutex::new(std::path::PathBuf::new()),
            prev: Mutex::new(HashMap::new()),
            refresh: Mutex::new(Refresh::default()),
            cfg,
        })
    }

    /// Sets the textfile path; says once when its directory is missing (no metrics then).
    pub fn set_textfile(&self, p: &std::path::Path) {
        if !p.as_os_str().is_empty() && !p.parent().is_some_and(|d| d.is_dir()) {
            tracing::info!(
                "no Prometheus textfile: {} does not exist (create it, or set textfile in launchguard.toml)",
                p.parent().map(|d| d.display().to_string()).unwrap_or_default()
            );
        }
        *self.textfile.lock().unwrap_or_else(|e| e.into_inner()) = p.to_path_buf();
    }

    /// Takes a check run: logs what changed, keeps it for `status`, rewrites the textfile.
    pub fn publish(&self, rep: NodeReport) {
        self.publish_run(rep, false);
    }

    /// [`Shared::publish`], noting whether a launch report started the run.
    fn publish_run(&self, rep: NodeReport, by_report: bool) {
        {
            let mut r = self.refresh.lock().unwrap_or_else(|e| e.into_inner());
            r.published_by_report = by_report;
            if by_report {
                r.running = false;
            }
        }
        crate::logging::log_changes(
            &mut self.prev.lock().unwrap_or_else(|e| e.into_inner()),
            &rep,
        );
        let gpus = self.runner().gpu_facts();
        let text = crate::metrics::render(Some(&rep), &self.reports.counters, gpus.as_ref());
        *self.last_check.lock().unwrap_or_else(|e| e.into_inner()) = Some(rep);
        let path = self
            .textfile
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Err(e) = crate::metrics::write_atomic(&path, &text) {
            tracing::warn!(
                "cannot write the Prometheus textfile {}: {e}",
                path.display()
            );
        }
    }

    /// A step or task report from slurmstepd (root) proves that this node's plugstack loads the
    /// plugin. When the last check run says otherwise (`node.plugstack.order`: "spank_launchguard.so
    /// is not listed", typically because the agent ran before the plugstack line was added), that
    /// verdict is stale, and `status` would show "launches on this node are not checked" right above
    /// the launches it checked: run the checks again now rather than at the next interval. At most
    /// once per published run ([`should_refresh`]): a refresh that keeps the verdict (the agent reads
    /// another plugstack file than slurmd) starts no further runs, but when a later periodic run
    /// brings the verdict back (the line was removed and added again), the next launch refreshes
    /// again. Skipped while a check run is going on (it publishes a fresh verdict anyway).
    pub fn refresh_if_contradicted(self: &Arc<Self>) {
        let disproved = self
            .last_check
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|r| r.checks.iter().any(crate::reports::disprovable));
        let runner = self.runner();
        {
            let mut st = self.refresh.lock().unwrap_or_else(|e| e.into_inner());
            if !should_refresh(disproved, *st, runner.busy()) {
                return;
            }
            st.running = true;
        }
        let sh = self.clone();
        tokio::spawn(async move {
            tracing::info!(
                "a launch report from slurmstepd contradicts node.plugstack.order; checking again"
            );
            let rep = runner.run(&[]).await;
            sh.publish_run(rep, true);
        });
    }

    /// The status answer: the last `limit` reports (at most `history`).
    pub fn status(&self, limit: usize) -> StatusReply {
        StatusReply {
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_secs: STARTED.get().map(|s| s.elapsed().as_secs()).unwrap_or(0),
            last_check: self
                .last_check
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            reports: self.reports.recent(limit),
            reports_total: self.totals(crate::reports::SOURCES[0]),
            claims_total: self.totals(crate::reports::SOURCES[1]),
            dropped_total: self
                .reports
                .counters
                .dropped()
                .into_iter()
                .map(|(a, n)| (a.to_string(), n))
                .collect(),
        }
    }

    /// `{action: n}` of one report source.
    fn totals(&self, source: &str) -> HashMap<String, u64> {
        self.reports
            .counters
            .accepted()
            .into_iter()
            .filter(|(s, _, _)| *s == source)
            .map(|(_, a, n)| (a.to_string(), n))
            .collect()
    }

    /// The current check runner (replaced on SIGHUP).
    pub fn runner(&self) -> Arc<Runner> {
        self.runner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the check runner (a new configuration).
    pub fn set_runner(&self, r: Arc<Runner>) {
        *self.runner.lock().unwrap_or_else(|p| p.into_inner()) = r;
    }

    /// Takes `cost` tokens from a non-root uid's bucket (`per_uid_rate` per second, bursts of twice
    /// that); root is not limited.
    fn allow(&self, uid: u32, cost: f64) -> bool {
        if uid == 0 {
            return true;
        }
        let rate = self.cfg.per_uid_rate as f64;
        take(&self.limiter, uid, rate, rate * 2.0, cost)
    }

    /// Whether a non-root uid may have one more srun-phase report (claim) accepted now; when not,
    /// the drop is counted (`claim_rate`) and summed into that uid's next summary line.
    fn allow_claim(self: &Arc<Self>, uid: u32) -> bool {
        if uid == 0 || take(&self.claims, uid, CLAIM_RATE, CLAIM_BURST, 1.0) {
            return true;
        }
        self.reports.counters.drop_one("claim_rate");
        let first = {
            let mut m = self.claim_drops.lock().unwrap_or_else(|p| p.into_inner());
            let n = m.entry(uid).or_insert(0);
            *n += 1;
            *n == 1
        };
        if first {
            let sh = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(CLAIM_SUMMARY_AFTER).await;
                let n = sh
                    .claim_drops
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&uid)
                    .unwrap_or(0);
                tracing::warn!(
                    launchguard.peer_uid = uid,
                    launchguard.dropped = n,
                    "{n} reports from uid {uid} dropped in {} s: more srun reports than {} at once and {} per second from one user (srun reports are the user's own claim; counted in launchguard_reports_dropped_total{{reason=\"claim_rate\"}})",
                    CLAIM_SUMMARY_AFTER.as_secs(),
                    CLAIM_BURST,
                    CLAIM_RATE
                );
            });
        }
        false
    }

    /// Admits a new connection from `uid`: root may use every slot; non-root peers share all but a
    /// reserve kept for root (slurmstepd's reports, `status`), and one uid may hold at most a
    /// sixteenth of the slots, so no user can lock the others or root out.
    fn admit(&self, uid: u32) -> bool {
        let max = self.cfg.max_connections;
        let reserve = (max / 8).max(4);
        let per_uid = (max / 16).max(4);
        let mut c = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        let total: usize = c.values().sum();
        let users: usize = c.iter().filter(|(u, _)| **u != 0).map(|(_, n)| *n).sum();
        let mine = c.get(&uid).copied().unwrap_or(0);
        let ok = total < max && (uid == 0 || (users < max - reserve && mine < per_uid));
        if ok {
            *c.entry(uid).or_insert(0) += 1;
        }
        ok
    }

    fn release(&self, uid: u32) {
        let mut c = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = c.get_mut(&uid) {
            *n -= 1;
            if *n == 0 {
                c.remove(&uid);
            }
        }
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

async fn reply(wr: &mut tokio::net::unix::OwnedWriteHalf, line: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, wr.write_all(line)).await,
        Ok(Ok(()))
    )
}

/// Handles one client until it closes, idles out, outlives its lifetime or misbehaves.
async fn client(stream: UnixStream, uid: u32, pid: Option<i32>, sh: Arc<Shared>) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(4 * 1024, rd);
    let mut buf = Vec::new();
    let idle = Duration::from_secs(sh.cfg.idle_timeout_secs.max(1));
    let start = tokio::time::Instant::now();
    let mut deadline = start + idle;
    loop {
        if buf.capacity() > 16 * 1024 {
            // Do not keep a 64 KiB buffer per idle connection after one big line.
            buf = Vec::new();
        }
        if uid != 0 {
            deadline = deadline.min(start + USER_CONN_LIFETIME);
        }
        let r =
            match tokio::time::timeout_at(deadline, read_line_bounded(&mut rd, &mut buf, MAX_LINE))
                .await
            {
                Err(_) => {
                    sh.reports.counters.drop_one("idle");
                    return;
                }
                Ok(Err(_)) | Ok(Ok(LineRead::Eof)) => return,
                Ok(Ok(LineRead::Partial)) => {
                    sh.reports.counters.drop_one("truncated");
                    return;
                }
                Ok(Ok(LineRead::TooLong)) => {
                    sh.reports.counters.drop_one("too_long");
                    if !sh.allow(uid, (MAX_LINE / 4096) as f64) {
                        sh.reports.counters.drop_one("rate");
                        return;
                    }
                    continue;
                }
                Ok(Ok(LineRead::Line)) => &buf,
            };
        // Every line costs a user tokens, decodable or not, blank or not: a flood of garbage or of
        // keep-alive newlines is cut like a flood of reports. Blank lines do not extend the deadline.
        if !sh.allow(uid, 1.0 + (r.len() / 4096) as f64) {
            sh.reports.counters.drop_one("rate");
            return;
        }
        if r.iter().all(u8::is_ascii_whitespace) {
            continue;
        }

        deadline = tokio::time::Instant::now() + idle;
        let msg = match decode(r) {
            Ok(m) => m,
            Err(e) => {
                if serde_json::from_slice::<serde_json::Value>(r)
                    .ok()
                    .and_then(|v| v.get("v").and_then(|v| v.as_u64()))
                    .is_some_and(|v| v != VERSION as u64)
                {
                    sh.reports.counters.drop_one("bad_version");
                } else {
                    tracing::debug!(
                        launchguard.peer_uid = uid,
                        "undecodable line: {}",
                        clean(&e.to_string(), 200)
                    );
                    sh.reports.counters.drop_one("bad_json");
                }
                continue;
            }
        };
        match msg {
            Message::Launch(report) => {
                if report.v != VERSION {
                    sh.reports.counters.drop_one("bad_version");
                } else if !crate::reports::ACTIONS.contains(&report.action.as_str()) {
                    tracing::debug!(
                        launchguard.peer_uid = uid,
                        "report refused: action '{}' is not allowed, warned or rejected",
                        clean(&report.action, 16)
                    );
                    sh.reports.counters.drop_one("bad_action");
                } else if uid != 0 && root_only_phase(&report.phase) {
                    tracing::warn!(
                        peer_uid = uid,
                        claimed_uid = report.uid,
                        claimed_job = report.job.unwrap_or(0),
                        phase = clean(&report.phase, 16).as_str(),
                        "report refused: only slurmstepd (root) sends step and task reports"
                    );
                    sh.reports.counters.drop_one("root_phase");
                } else if uid != 0 && report.uid != uid {
                    tracing::warn!(
                        launchguard.peer_uid = uid,
                        launchguard.claimed_uid = report.uid,
                        "report refused: a non-root client claimed another uid"
                    );
                    sh.reports.counters.drop_one("uid_mismatch");
                } else if let Some(why) = (!root_only_phase(&report.phase))
                    .then(|| forged_claim(&report))
                    .flatten()
                {
                    tracing::debug!(launchguard.peer_uid = uid, "srun report refused: {why}");
                    sh.reports.counters.drop_one("bad_finding");
                } else if !root_only_phase(&report.phase) && !sh.allow_claim(uid) {
                    // Counted and summed into the uid's summary line by allow_claim.
                } else {
                    let mut report = report;
                    // The node is this one, whatever the sender wrote.
                    report.node.clone_from(&sh.node);
                    let from_slurmstepd = uid == 0 && root_only_phase(&report.phase);
                    let received = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0);
                    sh.reports.store(Stored {
                        seq: SEQ.fetch_add(1, Ordering::Relaxed),
                        received,
                        peer_uid: uid,
                        peer_pid: pid,
                        report: sanitize(report, uid),
                    });
                    if from_slurmstepd {
                        sh.refresh_if_contradicted();
                    }
                }
            }
            Message::Status { .. } | Message::Check if uid != 0 => {
                // A query, not a report: logged, never counted as a dropped report.
                tracing::info!(
                    launchguard.peer_uid = uid,
                    "status query refused: uid {uid} is not root (reports name other users' jobs)"
                );
                let _ = reply(&mut wr, b"{\"error\":\"launchguard status is for root\"}\n").await;
                return;
            }
            Message::Status { limit } => {
                let st = sh.status(limit.unwrap_or(20));
                let mut line = serde_json::to_vec(&st).unwrap_or_default();
                line.push(b'\n');
                if !reply(&mut wr, &line).await {
                    return;
                }
            }
            Message::Check => {
                let rep = sh.runner().run(&[]).await;
                sh.publish(rep.clone());
                let mut line = serde_json::to_vec(&rep).unwrap_or_default();
                line.push(b'\n');
                if !reply(&mut wr, &line).await {
                    return;
                }
            }
        }
    }
}

/// Accepts clients forever.
pub async fn serve(listener: UnixListener, sh: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::error!("accept on the agent socket: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let cred = stream.peer_cred().ok();
        let uid = cred.map(|c| c.uid()).unwrap_or(u32::MAX);
        let pid = cred.and_then(|c| c.pid());
        if !sh.admit(uid) {
            sh.reports.counters.drop_one("connections");
            drop(stream);
            continue;
        }
        let sh2 = sh.clone();
        tokio::spawn(async move {
            client(stream, uid, pid, sh2.clone()).await;
            sh2.release(uid);
        });
    }
}

/// Binds the socket: refuses if another agent answers on it, replaces a stale one, sets its mode.
pub fn bind(path: &std::path::Path, mode: u32) -> Result<UnixListener, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        }
    }
    if let Ok(md) = path.symlink_metadata() {
        if !md.file_type().is_socket() {
            return Err(format!(
                "{} exists and is not a socket; remove it",
                path.display()
            ));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(format!(
                "another agent is listening on {}; {}",
                path.display(),
                already_running_hint(crate::logging::systemd_booted())
            ));
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("cannot remove the stale {}: {e}", path.display()))?;
    }
    let l = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))?;
    Ok(l)
}

/// What to do when another agent holds the socket: stop that one the way it was started (systemd's
/// unit where systemd runs the machine; otherwise the process itself), or give
/// this one its own socket.
fn already_running_hint(systemd: bool) -> &'static str {
    if systemd {
        "stop it first (systemctl stop launchguard-agent) or give this one --socket"
    } else {
        "this machine has no systemd: stop that agent first (kill -TERM $(pgrep -f 'launchguard agent'), or scripts/cluster.sh agent-down in a checkout) or give this one --socket"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_follows_each_published_stale_verdict_once() {
        let idle = Refresh::default();
        // A periodic run said "not listed"; a launch report disproves it: refresh.
        assert!(should_refresh(true, idle, false));
        // Not while that refresh (or any run) is under way.
        let running = Refresh {
            running: true,
            ..idle
        };
        assert!(!should_refresh(true, running, false));
        assert!(!should_refresh(true, idle, true));
        // The refresh kept the verdict (the agent reads another plugstack): no second refresh.
        let kept = Refresh {
            published_by_report: true,
            running: false,
        };
        assert!(!should_refresh(true, kept, false));
        // A later periodic run brings the verdict back (publish resets the flag): refresh again.
        assert!(should_refresh(true, idle, false));
        // Nothing to refresh when no verdict is disproved.
        assert!(!should_refresh(false, idle, false));
    }
}
