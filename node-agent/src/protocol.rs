//! The agent socket's wire format, as the agent reads it: the requests a client may send (one JSON
//! object per line, `launchguard_core::protocol` for launch reports), the status answer, and how a
//! report from a client is cleaned and clipped before it is kept. No I/O here but reading one
//! bounded line from a stream ([`read_line_bounded`]).

use crate::registry::NodeReport;
use launchguard_core::protocol::Report;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

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
    /// `{action: n}`: slurmstepd's verdicts (the `step` and `task` phases).
    pub reports_total: HashMap<String, u64>,
    /// `{action: n}`: srun-phase reports, the user's own claim (empty in an older agent's answer).
    #[serde(default)]
    pub claims_total: HashMap<String, u64>,
    /// `{reason: n}`.
    pub dropped_total: HashMap<String, u64>,
}

/// Findings kept per stored report; messages and names are clipped too, so the history's memory is
/// bounded whatever clients send (about 2 × history × 5 KB).
pub const MAX_FINDINGS: usize = 8;
pub const MAX_MESSAGE: usize = 512;
pub const MAX_NAME: usize = 128;
/// Control characters (a forged log line's newline, terminal escapes) become spaces, bidi and other
/// invisible characters `<U+XXXX>`; then clipped (the one sanitiser, [`launchguard_core::text`]).
pub fn clean(s: &str, max: usize) -> String {
    launchguard_core::text::printable(s, max)
}

/// Phases only slurmstepd (root) sends.
pub fn root_only_phase(phase: &str) -> bool {
    phase != "srun"
}

/// Clips and cleans a report; a non-root peer's report loses its job and step (an srun report has
/// none: it is sent before allocation), so nothing a user sends reads as a job's verdict.
pub fn sanitize(mut r: Report, peer_uid: u32) -> Report {
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

/// What reading one line gave.
pub enum LineRead {
    Line,
    TooLong,
    Eof,
    /// End of stream after part of a line (a client that died or gave up mid-send).
    Partial,
}

/// Reads up to a newline into `buf` (newline excluded), never holding more than `max` bytes; a longer
/// line is consumed and discarded.
pub async fn read_line_bounded<R: AsyncBufRead + Unpin>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

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
