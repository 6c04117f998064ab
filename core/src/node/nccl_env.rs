//! `node.nccl_env.*`: NCCL/libfabric variables set node-wide (`/etc/environment`, `/etc/profile.d/*.sh`,
//! enroot's `environ.d/*.env`), judged with the same rules as the plugin's `launch.nccl_env`
//! (`docs/field-rules.md`, "NCCL variables for the fabric": on an EFA cluster `NCCL_NET=IB`/`Socket`
//! or another net plugin send NCCL to TCP or a failed start, and `NCCL_IB_*` marks an environment
//! carried over from IB). Every job on the node inherits these, so one stale line slows every job; it
//! is a WARNING (not a drain):
//! the step-level check tells users at srun.

use super::{quote, Outcome, Status};
use crate::checks::nccl_env::{check, Fabric, Rule};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[(
    "node.nccl_env.files",
    "node-wide environment files set no NCCL_/FI_ variable that is wrong for the fabric",
)];

/// `NAME=value` assignments of NCCL_/FI_ variables in a shell-ish environment file: `/etc/environment`
/// (`NAME=value`), profile.d scripts (`export NAME=value`), enroot's environ.d (`NAME=value`). Quotes
/// around the value are removed; lines that are not simple assignments are ignored.
pub fn assignments(text: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    for raw in text.lines() {
        let l = raw.trim();
        let l = l.strip_prefix("export ").map(str::trim_start).unwrap_or(l);
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        if !(k.starts_with("NCCL_") || k.starts_with("FI_"))
            || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            continue;
        }
        let v = v.split(" #").next().unwrap_or(v).trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
            .unwrap_or(v);
        out.push((k.to_string(), v.to_string()));
    }
    out
}

/// Everything the nccl_env family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclEnvFacts {
    /// `(path, its text)` of every environment file read.
    pub files: Vec<(String, String)>,
    /// The node's fabric (`None`: no RDMA devices).
    pub fabric: Option<Fabric>,
    /// The node's network interfaces.
    pub interfaces: Vec<String>,
    /// The rules (builtin plus the admin's).
    pub rules: Vec<Rule>,
    /// Why some configured files could not be looked at from here: the gathering process is shown
    /// their directory otherwise than the node (the agent's unit hiding `/tmp`, `/home`…).
    pub hidden: Vec<String>,
}

/// Judges the nccl_env family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &NcclEnvFacts) -> Vec<Outcome> {
    let mut problems = vec![];
    for (path, text) in &f.files {
        let vars = assignments(text);
        if vars.is_empty() {
            continue;
        }
        for finding in check(&vars, f.fabric, Some(&f.interfaces), &f.rules) {
            problems.push((path.clone(), finding));
        }
    }
    let Some((path, first)) = problems.first() else {
        // Nothing found in what could be read; unread files are not OK (issue 28).
        if let Some(why) = f.hidden.first() {
            return vec![Outcome::unknown("node.nccl_env.files", why.clone())];
        }
        return vec![Outcome::ok("node.nccl_env.files")];
    };
    let more = problems.len() - 1;
    vec![Outcome::new(
        "node.nccl_env.files",
        Status::Warning,
        format!(
            "{} in {}{}",
            first.what,
            quote(path),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        ),
        format!("every job on the node inherits it: {}", first.why),
        format!("remove or fix the line in {path}: {}", first.fix),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::nccl_env::builtin_rules;

    #[test]
    fn assignments_from_the_three_file_kinds() {
        let text = "PATH=/usr/bin\nexport NCCL_IB_HCA=mlx5\nFI_PROVIDER=\"efa\" # comment\nif x; then NCCL_X=1; fi\n";
        assert_eq!(
            assignments(text),
            vec![
                ("NCCL_IB_HCA".into(), "mlx5".into()),
                ("FI_PROVIDER".into(), "efa".into())
            ]
        );
    }

    #[test]
    fn ib_variables_on_efa_are_named_with_their_file() {
        let f = NcclEnvFacts {
            hidden: vec![],
            files: vec![
                ("/etc/environment".into(), "PATH=/bin\n".into()),
                (
                    "/etc/profile.d/nccl.sh".into(),
                    "export NCCL_IB_HCA=mlx5_0\n".into(),
                ),
            ],
            fabric: Some(Fabric::Efa),
            interfaces: vec!["eth0".into()],
            rules: builtin_rules(),
        };
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Warning, "{out:?}");
        assert!(
            out[0].what.contains("/etc/profile.d/nccl.sh"),
            "{}",
            out[0].what
        );
        let f = NcclEnvFacts { fabric: None, ..f };
        let _ = judge(&f);
    }

    /// Issue 28: a file the gathering process could not look at is not OK, a finding in one it
    /// could still stands.
    #[test]
    fn files_not_looked_at_are_unknown_unless_another_file_has_a_finding() {
        let mut f = NcclEnvFacts {
            hidden: vec!["the agent's sandbox shows another directory at /tmp/x".into()],
            files: vec![("/etc/environment".into(), "PATH=/bin\n".into())],
            fabric: None,
            interfaces: vec!["eth0".into()],
            rules: builtin_rules(),
        };
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Unknown, "{out:?}");
        assert!(out[0].what.contains("/tmp/x"), "{out:?}");
        f.files.push((
            "/etc/nccl.conf".into(),
            "NCCL_SOCKET_IFNAME=lgnone0\n".into(),
        ));
        assert_eq!(judge(&f)[0].status, Status::Warning);
    }

    #[test]
    fn clean_files_are_ok() {
        let f = NcclEnvFacts {
            hidden: vec![],
            files: vec![("/etc/environment".into(), "PATH=/bin\n".into())],
            fabric: Some(Fabric::Efa),
            interfaces: vec![],
            rules: builtin_rules(),
        };
        assert_eq!(judge(&f)[0].status, Status::Ok);
    }
}
