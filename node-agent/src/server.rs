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

use crate::config::Reports;
use crate::registry::{NodeReport, Runner};
use launchguard_core::protocol::{Report, MAX_LINE, VERSION};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// Why something was refused (the `reason` label).
pub const DROP_REASONS: &[&str] = &[
    "too_long",
    "bad_json",
    "bad_version",
    "uid_mismatch",
    "rate",
    "connections",
    "idle",
    "not_root",
    "truncated",
    "root_phase",
];
/// Report actions counted.
pub const ACTIONS: &[&str] = &["allowed", "warned", "rejected", "other"];

/// Counters, lock-free.
#[derive(Default)]
pub struct Counters {
    accepted: [AtomicU64; 4],
    dropped: [AtomicU64; 10],
}

impl Counters {
    /// Counts a refusal.
    pub fn drop_one(&self, reason: &str) {
        if let Some(i) = DROP_REASONS.iter().position(|r| *r == reason) {
            self.dropped[i].fetch_add(1, Ordering::Relaxed);
        }
    }
    fn accept(&self, action: &str) {
        let i = ACTIONS.iter().position(|a| *a == action).unwrap_or(3);
        self.accepted[i].fetch_add(1, Ordering::Relaxed);
    }
    /// Takes back one count of an action (a launch judged again later, counted under its worst verdict).
    fn unaccept(&self, action: &str) {
        let i = ACTIONS.iter().position(|a| *a == action).unwrap_or(3);
        let _ = self.accepted[i].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some(n.saturating_sub(1))
        });
    }
    /// `(action, count)`.
    pub fn accepted(&self) -> Vec<(&'static str, u64)> {
        ACTIONS
            .iter()
            .zip(&self.accepted)
            .map(|(a, n)| (*a, n.load(Ordering::Relaxed)))
            .collect()
    }
    /// `(reason, count)`.
    pub fn dropped(&self) -> Vec<(&'static str, u64)> {
        DROP_REASONS
            .iter()
            .zip(&self.dropped)
            .map(|(a, n)| (*a, n.load(Ordering::Relaxed)))
            .collect()
    }
}

/// A stored report with who sent it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    /// Arrival order (for merging root's and users' rings).
    #[serde(default)]
    pub seq: u64,
    /// Seconds since the epoch when received.
    pub received: u64,
    /// Peer uid (SO_PEERCRED).
    pub peer_uid: u32,
    /// Peer pid.
    pub peer_pid: Option<i32>,
    /// The report.
    pub report: Report,
}

/// State shared by the connections and the agent loop.
pub struct Shared {
    /// Recent reports from root peers (slurmstepd), oldest first, at most `reports.history`.
    pub history: Mutex<VecDeque<Stored>>,
    /// Recent reports from non-root peers (srun, the task phase), in their own ring so that a user
    /// cannot push slurmstepd's reports out.
    pub user_history: Mutex<VecDeque<Stored>>,
    /// Counters.
    pub counters: Counters,
    /// Last check run.
    pub last_check: Mutex<Option<NodeReport>>,
    runner: Mutex<Arc<Runner>>,
    limiter: Mutex<HashMap<u32, (f64, Instant)>>,
    /// Open connections per peer uid.
    conns: Mutex<HashMap<u32, usize>>,
    /// The Prometheus textfile (empty: none).
    textfile: Mutex<std::path::PathBuf>,
    /// Each check's status at the last run, to log changes.
    prev: Mutex<HashMap<String, String>>,
    /// The action each launch is counted under, by `(node, job, step)`: slurmstepd reports a step in
    /// its root phase (`step`, always) and again in its task phase (`task`, with findings), and the
    /// launch must be counted once, under its worst action. Cleared when it reaches [`LAUNCH_KEYS`].
    counted: Mutex<HashMap<(String, u64, u64), &'static str>>,
    cfg: Reports,
}

/// Most launches remembered for counting (about 100 bytes each).
const LAUNCH_KEYS: usize = 16_384;

/// The counting decision for one report of launch `key`: `(count to take back, count to add)`.
fn tally(
    m: &mut HashMap<(String, u64, u64), &'static str>,
    key: (String, u64, u64),
    action: &'static str,
) -> (Option<&'static str>, Option<&'static str>) {
    if m.len() >= LAUNCH_KEYS {
        m.clear();
    }
    match m.get(&key).copied() {
        None => {
            m.insert(key, action);
            (None, Some(action))
        }
        Some(prev) if gravity(action) > gravity(prev) => {
            m.insert(key, action);
            (Some(prev), Some(action))
        }
        Some(_) => (None, None),
    }
}

/// Order of actions by gravity (`other` never replaces a counted action).
fn gravity(action: &str) -> u8 {
    match action {
        "rejected" => 3,
        "warned" => 2,
        "allowed" => 1,
        _ => 0,
    }
}

/// Requests a client may send (one JSON object per line, selected by `"kind"`).
#[derive(Debug)]
pub enum Message {
    /// A launch report.
    Launch(Report),
    /// `{"v":1,"kind":"status","limit":N}`: last check run, recent reports, counters (root only).
    Status {
        /// How many recent reports to return.
        limit: Option<usize>,
    },
    /// `{"v":1,"kind":"check"}`: run the checks now and answer with the report (root only).
    Check,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
struct StatusReq {
    #[serde(default)]
    limit: Option<usize>,
}

/// Decodes one line (without its newline). Errors: not JSON, an unknown `kind`, missing fields.
/// Two passes instead of serde's internally tagged enum, which would first copy the whole object
/// into a buffer tree: a 64 KiB line of thousands of findings must cost no more than the line.
pub fn decode(line: &[u8]) -> Result<Message, serde_json::Error> {
    let head: Head = serde_json::from_slice(line)?;
    match head.kind.as_ref() {
        "launch" => serde_json::from_slice(line).map(Message::Launch),
        "status" => {
            serde_json::from_slice::<StatusReq>(line).map(|s| Message::Status { limit: s.limit })
        }
        "check" => Ok(Message::Check),
        other => Err(serde::de::Error::custom(format!(
            "unknown kind '{}'",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

/// The answer to a status query.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusReply {
    /// Agent version.
    pub version: String,
    /// Seconds the agent has run.
    pub uptime_secs: u64,
    /// Last check run.
    pub last_check: Option<NodeReport>,
    /// Most recent reports (root's and users' merged by arrival), newest last.
    pub reports: Vec<Stored>,
    /// `{action: n}`.
    pub reports_total: HashMap<String, u64>,
    /// `{reason: n}`.
    pub dropped_total: HashMap<String, u64>,
}

static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Findings kept per stored report; messages and names are clipped too, so the history's memory is
/// bounded whatever clients send (about 2 × history × 5 KB).
const MAX_FINDINGS: usize = 8;
const MAX_MESSAGE: usize = 512;
const MAX_NAME: usize = 128;
/// Longest a non-root client may stay connected, sending or not.
const USER_CONN_LIFETIME: Duration = Duration::from_secs(60);
/// Deadline for writing an answer to a client that does not read it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Control characters (a forged log line's newline, terminal escapes) become spaces, bidi and other
/// invisible characters `<U+XXXX>`; then clipped (the one sanitiser, [`launchguard_core::text`]).
fn clean(s: &str, max: usize) -> String {
    launchguard_core::text::printable(s, max)
}

/// Phases only slurmstepd (root) sends.
fn root_only_phase(phase: &str) -> bool {
    phase != "srun"
}

/// Clips and cleans a report; a non-root peer's report loses its job and step (an srun report has
/// none: it is sent before allocation), so nothing a user sends reads as a job's verdict.
fn sanitize(mut r: Report, peer_uid: u32) -> Report {
    if peer_uid != 0 {
        r.job = None;
        r.step = None;
    }
    r.findings.truncate(MAX_FINDINGS);
    for f in &mut r.findings {
        f.id = clean(&f.id, MAX_NAME);
        f.severity = clean(&f.severity, 16);
        f.message = clean(&f.message, MAX_MESSAGE);
    }
    r.phase = clean(&r.phase, 16);
    r.node = clean(&r.node, MAX_NAME);
    r.mode = clean(&r.mode, 16);
    r.action = clean(&r.action, 16);
    r
}

impl Shared {
    /// New shared state.
    pub fn new(cfg: Reports, runner: Arc<Runner>) -> Arc<Shared> {
        STARTED.get_or_init(Instant::now);
        Arc::new(Shared {
            history: Mutex::new(VecDeque::with_capacity(cfg.history.min(4096))),
            user_history: Mutex::new(VecDeque::with_capacity(cfg.history.min(4096))),
            counters: Counters::default(),
            last_check: Mutex::new(None),
            runner: Mutex::new(runner),
            limiter: Mutex::new(HashMap::new()),
            conns: Mutex::new(HashMap::new()),
            textfile: Mutex::new(std::path::PathBuf::new()),
            prev: Mutex::new(HashMap::new()),
            counted: Mutex::new(HashMap::new()),
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
        crate::agent::log_changes(
            &mut self.prev.lock().unwrap_or_else(|e| e.into_inner()),
            &rep,
        );
        let text = crate::metrics::render(Some(&rep), &self.counters);
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
        let burst = rate * 2.0;
        let mut m = self.limiter.lock().unwrap_or_else(|p| p.into_inner());
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

    fn store(&self, s: Stored) {
        let r = &s.report;
        let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
        let ids = ids.join(",");
        let job = r.job.map(|j| j.to_string()).unwrap_or_default();
        let step = r.step.map(|j| j.to_string()).unwrap_or_default();
        let severity = r
            .findings
            .first()
            .map(|f| f.severity.as_str())
            .unwrap_or("");
        let first = r.findings.first().map(|f| f.message.as_str()).unwrap_or("");
        // Journal: MESSAGE_ID LAUNCH and LAUNCHGUARD_* fields (crate::logging); a launch with an
        // error-severity finding (one enforce mode rejects) at priority 2, a warning at 4.
        macro_rules! launch {
            ($lvl:ident $(, target: $t:expr)?) => {
                tracing::$lvl!(
                    $(target: $t,)?
                    message_id = crate::logging::message_id::LAUNCH,
                    launchguard.peer_uid = s.peer_uid,
                    launchguard.job = job.as_str(),
                    launchguard.step = step.as_str(),
                    launchguard.uid = r.uid,
                    launchguard.node = r.node.as_str(),
                    launchguard.phase = r.phase.as_str(),
                    launchguard.action = r.action.as_str(),
                    launchguard.findings = ids.as_str(),
                    launchguard.severity = severity,
                    "launch {}{}{}",
                    r.action,
                    if first.is_empty() { "" } else { ": " },
                    first
                )
            };
        }
        if r.action == "allowed" && r.findings.is_empty() {
            launch!(info);
        } else if r.findings.iter().any(|f| f.severity == "error") {
            launch!(error, target: crate::logging::CRITICAL);
        } else {
            launch!(warn);
        }
        self.count(r);
        let ring = if s.peer_uid == 0 {
            &self.history
        } else {
            &self.user_history
        };
        let mut h = ring.lock().unwrap_or_else(|p| p.into_inner());
        while h.len() >= self.cfg.history {
            h.pop_front();
        }
        h.push_back(s);
    }

    /// Counts a report: once per launch (`node`, `job`, `step`) under its worst action, so that a step
    /// allowed in the root phase and rejected in the task phase counts as one rejection.
    fn count(&self, r: &Report) {
        let (Some(job), Some(step), true) =
            (r.job, r.step, matches!(r.phase.as_str(), "step" | "task"))
        else {
            self.counters.accept(&r.action);
            return;
        };
        let action: &'static str = ACTIONS
            .iter()
            .find(|a| **a == r.action)
            .copied()
            .unwrap_or("other");
        let mut m = self.counted.lock().unwrap_or_else(|p| p.into_inner());
        let (take_back, add) = tally(&mut m, (r.node.clone(), job, step), action);
        if let Some(a) = take_back {
            self.counters.unaccept(a);
        }
        if let Some(a) = add {
            self.counters.accept(a);
        }
    }

    /// The status answer: the last `limit` reports (at most `history`).
    pub fn status(&self, limit: usize) -> StatusReply {
        let limit = limit.min(self.cfg.history);
        let mut all: Vec<Stored> = {
            let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            let u = self.user_history.lock().unwrap_or_else(|p| p.into_inner());
            h.iter()
                .rev()
                .take(limit)
                .chain(u.iter().rev().take(limit))
                .cloned()
                .collect()
        };
        all.sort_by_key(|s| s.seq);
        let skip = all.len().saturating_sub(limit);
        StatusReply {
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_secs: STARTED.get().map(|s| s.elapsed().as_secs()).unwrap_or(0),
            last_check: self
                .last_check
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            reports: all.into_iter().skip(skip).collect(),
            reports_total: self
                .counters
                .accepted()
                .into_iter()
                .map(|(a, n)| (a.to_string(), n))
                .collect(),
            dropped_total: self
                .counters
                .dropped()
                .into_iter()
                .map(|(a, n)| (a.to_string(), n))
                .collect(),
        }
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What reading one line gave.
enum LineRead {
    Line,
    TooLong,
    Eof,
    /// End of stream after part of a line (a client that died or gave up mid-send).
    Partial,
}

/// Reads up to a newline into `buf` (newline excluded), never holding more than `max` bytes; a longer
/// line is consumed and discarded.
async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(if buf.is_empty() && !too_long {
                LineRead::Eof
            } else {
                LineRead::Partial
            });
        }
        let (chunk, found) = match avail.iter().position(|b| *b == b'\n') {
            Some(i) => (&avail[..i], Some(i + 1)),
            None => (avail, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let n = found.unwrap_or(avail.len());
        r.consume(n);
        if found.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

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
                    sh.counters.drop_one("idle");
                    return;
                }
                Ok(Err(_)) | Ok(Ok(LineRead::Eof)) => return,
                Ok(Ok(LineRead::Partial)) => {
                    sh.counters.drop_one("truncated");
                    return;
                }
                Ok(Ok(LineRead::TooLong)) => {
                    sh.counters.drop_one("too_long");
                    if !sh.allow(uid, (MAX_LINE / 4096) as f64) {
                        sh.counters.drop_one("rate");
                        return;
                    }
                    continue;
                }
                Ok(Ok(LineRead::Line)) => &buf,
            };
        // Every line costs a user tokens, decodable or not, blank or not: a flood of garbage or of
        // keep-alive newlines is cut like a flood of reports. Blank lines do not extend the deadline.
        if !sh.allow(uid, 1.0 + (r.len() / 4096) as f64) {
            sh.counters.drop_one("rate");
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
                    sh.counters.drop_one("bad_version");
                } else {
                    tracing::debug!(
                        launchguard.peer_uid = uid,
                        "undecodable line: {}",
                        clean(&e.to_string(), 200)
                    );
                    sh.counters.drop_one("bad_json");
                }
                continue;
            }
        };
        match msg {
            Message::Launch(report) => {
                if report.v != VERSION {
                    sh.counters.drop_one("bad_version");
                } else if uid != 0 && root_only_phase(&report.phase) {
                    tracing::warn!(
                        peer_uid = uid,
                        claimed_uid = report.uid,
                        claimed_job = report.job.unwrap_or(0),
                        phase = clean(&report.phase, 16).as_str(),
                        "report refused: only slurmstepd (root) sends step and task reports"
                    );
                    sh.counters.drop_one("root_phase");
                } else if uid != 0 && report.uid != uid {
                    tracing::warn!(
                        launchguard.peer_uid = uid,
                        launchguard.claimed_uid = report.uid,
                        "report refused: a non-root client claimed another uid"
                    );
                    sh.counters.drop_one("uid_mismatch");
                } else {
                    let received = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0);
                    sh.store(Stored {
                        seq: SEQ.fetch_add(1, Ordering::Relaxed),
                        received,
                        peer_uid: uid,
                        peer_pid: pid,
                        report: sanitize(report, uid),
                    });
                }
            }
            Message::Status { .. } | Message::Check if uid != 0 => {
                sh.counters.drop_one("not_root");
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
            sh.counters.drop_one("connections");
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
                "another agent is listening on {}; stop it first (systemctl stop launchguard-agent) or give this one --socket",
                path.display()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_str(s: &str) -> Result<Message, serde_json::Error> {
        decode(s.as_bytes())
    }

    #[test]
    fn thousands_of_findings_decode_to_the_first_eight() {
        let f = r#"{"id":"x","severity":"error","message":"m"}"#;
        let line = format!(
            r#"{{"v":1,"kind":"launch","phase":"step","uid":0,"node":"n","mode":"warn","action":"warned","findings":[{}]}}"#,
            vec![f; 1000].join(",")
        );
        match decode_str(&line).unwrap() {
            Message::Launch(r) => assert_eq!(r.findings.len(), 8),
            m => panic!("{m:?}"),
        }
        assert!(decode_str(r#"{"v":1,"kind":"nope"}"#).is_err());
        assert!(decode_str(r#"{"v":1}"#).is_err());
    }

    #[tokio::test]
    async fn long_lines_are_discarded_and_the_next_line_still_reads() {
        let data = format!("{}\nshort\n", "x".repeat(100));
        let mut r = BufReader::with_capacity(8, data.as_bytes());
        let mut buf = vec![];
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::TooLong
        ));
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(buf, b"short");
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::Eof
        ));
    }

    #[test]
    fn a_launch_is_counted_once_under_its_worst_action() {
        let mut m = HashMap::new();
        let k = |j: u64| ("n".to_string(), j, 0);
        // root phase allowed, task phase rejected: one rejection
        assert_eq!(tally(&mut m, k(1), "allowed"), (None, Some("allowed")));
        assert_eq!(
            tally(&mut m, k(1), "rejected"),
            (Some("allowed"), Some("rejected"))
        );
        // warned twice (root and task phase): one warning
        assert_eq!(tally(&mut m, k(2), "warned"), (None, Some("warned")));
        assert_eq!(tally(&mut m, k(2), "warned"), (None, None));
        // a later, milder report changes nothing
        assert_eq!(tally(&mut m, k(1), "allowed"), (None, None));
        // another node's report of the same step is its own launch
        assert_eq!(
            tally(&mut m, ("m".to_string(), 1, 0), "allowed"),
            (None, Some("allowed"))
        );
    }

    #[test]
    fn messages_decode_by_kind() {
        let m: Message = decode_str(
            r#"{"v":1,"kind":"launch","phase":"step","job":5,"step":0,"uid":1000,"node":"n","mode":"warn","action":"warned","findings":[],"future":1}"#,
        )
        .unwrap();
        assert!(matches!(m, Message::Launch(r) if r.job == Some(5)));
        let m: Message = decode_str(r#"{"v":1,"kind":"status","limit":3}"#).unwrap();
        assert!(matches!(m, Message::Status { limit: Some(3) }));
        assert!(decode_str(r#"{"v":1,"kind":"nope"}"#).is_err());
    }

    #[test]
    fn encoder_and_decoder_agree() {
        let r = Report {
            v: 1,
            phase: "srun".into(),
            job: None,
            step: Some(3),
            uid: 7,
            node: "a\"b\n".into(),
            mode: "enforce".into(),
            action: "rejected".into(),
            findings: vec![launchguard_core::protocol::ReportFinding {
                id: "launch.export_all".into(),
                severity: "error".into(),
                message: "x\u{1}é".into(),
            }],
        };
        match decode_str(&r.to_json_line()).unwrap() {
            Message::Launch(back) => assert_eq!(back, r),
            m => panic!("{m:?}"),
        }
    }
}
