//! The plugin → agent report protocol: one JSON object per line over the agent's Unix socket
//! (`/run/launchguard/agent.sock`), versioned by `"v"`.
//!
//! ```json
//! {"v":1,"kind":"launch","phase":"step","job":42,"step":0,"uid":1000,"node":"gpu-01","mode":"enforce",
//!  "action":"rejected","findings":[{"id":"launch.cpus_per_task","severity":"error","message":"launchguard: …"}]}
//! ```
//! - `phase`: `srun` (srun's `init_post_opt`, as the user, before allocation: no job yet, `job`/`step`
//!   absent), `step` (slurmstepd's `task_init_privileged`, as root, local task 0), `task` (slurmstepd's
//!   `task_init`, as the user, local task 0, only when it has findings);
//! - `action`: `allowed` (no findings shown), `warned`, `rejected`;
//! - `mode`: the plugstack mode (`enforce|warn|off`).
//!
//! The plugin encodes with [`Report::to_json_line`] (no serde in the .so); the agent decodes the same
//! struct with serde (feature `serde`). Unknown fields are ignored, so a newer plugin can add fields; a
//! new `v` is rejected by an older agent and counted.

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

/// Default path of the agent's socket.
pub const DEFAULT_SOCKET: &str = "/run/launchguard/agent.sock";

/// Longest line the agent accepts (bytes, newline included); longer lines are dropped and counted.
pub const MAX_LINE: usize = 64 * 1024;

/// One finding in a report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ReportFinding {
    /// Finding ID, e.g. `launch.cpus_per_task`.
    pub id: String,
    /// `error` or `warning`.
    pub severity: String,
    /// The one-line message the user saw.
    pub message: String,
}

/// Longest finding message a report carries, in characters (the agent clips again, shorter).
pub const MAX_MESSAGE: usize = 1000;

impl ReportFinding {
    /// A launch finding as the plugin reports it: its ID, `error`/`warning`, and the line the user
    /// saw ([`Finding`]'s `Display`), at most [`MAX_MESSAGE`] characters. The line is sent as it
    /// is: the values echoed in it had their `;` escaped once when it was made
    /// ([`crate::finding::clip`]), and escaping the rendered line again would turn every `;` of
    /// its `what; why; fix` shape into `\;` in the agent's log and `status`.
    pub fn from_finding(f: &crate::Finding) -> ReportFinding {
        ReportFinding {
            id: f.id().into(),
            severity: match f.severity {
                crate::finding::Severity::Error => "error".into(),
                crate::finding::Severity::Warning => "warning".into(),
            },
            message: crate::finding::shorten(&f.to_string(), MAX_MESSAGE),
        }
    }

    /// A warning the user was not shown (a notice about a step), its message as given, shortened
    /// to [`MAX_MESSAGE`] characters.
    pub fn notice(id: &str, message: &str) -> ReportFinding {
        ReportFinding {
            id: id.into(),
            severity: "warning".into(),
            message: crate::finding::shorten(message, MAX_MESSAGE),
        }
    }
}

/// One launch verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Report {
    /// Protocol version ([`VERSION`]).
    pub v: u32,
    /// `srun`, `step` or `task`.
    pub phase: String,
    /// Slurm job ID (absent at srun before allocation).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub job: Option<u64>,
    /// Step ID.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub step: Option<u64>,
    /// The job's user.
    pub uid: u32,
    /// The node that judged it.
    pub node: String,
    /// Plugstack mode.
    pub mode: String,
    /// `allowed`, `warned` or `rejected`.
    pub action: String,
    /// Findings shown (the agent keeps the first [`MAX_FINDINGS`] and skips the rest while decoding,
    /// without allocating them).
    #[cfg_attr(
        feature = "serde",
        serde(default, deserialize_with = "bounded::findings")
    )]
    pub findings: Vec<ReportFinding>,
}

/// Findings the agent keeps per report.
pub const MAX_FINDINGS: usize = 8;

#[cfg(feature = "serde")]
mod bounded {
    use super::{ReportFinding, MAX_FINDINGS};
    use serde::de::{IgnoredAny, SeqAccess, Visitor};
    use std::fmt;

    /// Decodes at most [`MAX_FINDINGS`] findings; the rest are parsed as `IgnoredAny` (no allocation).
    pub fn findings<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<ReportFinding>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<ReportFinding>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of findings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while out.len() < MAX_FINDINGS {
                    match seq.next_element()? {
                        Some(f) => out.push(f),
                        None => return Ok(out),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Report {
    /// The report as one JSON line (with the trailing `\n`), `{"v":1,"kind":"launch",…}`.
    pub fn to_json_line(&self) -> String {
        let mut o = String::with_capacity(256);
        o.push_str(&format!(
            "{{\"v\":{},\"kind\":\"launch\",\"phase\":",
            self.v
        ));
        push_str(&mut o, &self.phase);
        if let Some(j) = self.job {
            o.push_str(&format!(",\"job\":{j}"));
        }
        if let Some(s) = self.step {
            o.push_str(&format!(",\"step\":{s}"));
        }
        o.push_str(&format!(",\"uid\":{},\"node\":", self.uid));
        push_str(&mut o, &self.node);
        o.push_str(",\"mode\":");
        push_str(&mut o, &self.mode);
        o.push_str(",\"action\":");
        push_str(&mut o, &self.action);
        o.push_str(",\"findings\":[");
        for (i, f) in self.findings.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"id\":");
            push_str(&mut o, &f.id);
            o.push_str(",\"severity\":");
            push_str(&mut o, &f.severity);
            o.push_str(",\"message\":");
            push_str(&mut o, &f.message);
            o.push('}');
        }
        o.push_str("]}\n");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_one_line_with_escapes() {
        let r = Report {
            v: VERSION,
            phase: "srun".into(),
            job: None,
            step: None,
            uid: 1000,
            node: "vm".into(),
            mode: "warn".into(),
            action: "warned".into(),
            findings: vec![ReportFinding {
                id: "launch.export_all".into(),
                severity: "error".into(),
                message: "a \"b\"\n\\c\u{1}".into(),
            }],
        };
        let line = r.to_json_line();
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with("}\n"));
        assert!(line.contains(r#""message":"a \"b\"\n\\c\u0001""#), "{line}");
        assert!(!line.contains("\"job\""));
    }
}
