//! `launchguard check-args`: tests a plugstack line without touching srun.

use launchguard_core::policy::{parse_args, ArgProblem};
use launchguard_core::{CheckKind, Mode, Policy};
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `launchguard check-args`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugstack arguments, e.g. 'mode=warn cpus_per_task=enforce', or a whole plugstack line
    /// ('required /path/spank_launchguard.so mode=warn …'). Several words or one quoted string.
    #[arg(required = true, allow_hyphen_values = true)]
    words: Vec<String>,
    /// Print the effective policy and the problems as JSON.
    #[arg(long)]
    json: bool,
}

/// A whole plugstack line's head: `required|optional <path>`.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    required: bool,
    path: String,
}

/// Splits the input into plugstack words as Slurm splits a plugstack.conf line (a `#` starts a
/// comment, even inside a word; spaces, tabs and newlines separate words:
/// [`launchguard_core::policy::plugstack_line_words`]) and takes off a leading
/// `required|optional <path>`.
fn plugstack_words(input: &[String]) -> (Option<Head>, Vec<String>) {
    let joined = input.join(" ");
    let mut words: Vec<String> = launchguard_core::policy::plugstack_line_words(&joined)
        .into_iter()
        .map(str::to_string)
        .collect();
    let kind = words.first().map(String::as_str);
    if matches!(kind, Some("required" | "optional")) && words.len() >= 2 {
        let required = kind == Some("required");
        let path = words[1].clone();
        words.drain(..2);
        return (Some(Head { required, path }), words);
    }
    (None, words)
}

/// Problems with the line's head that would hurt every srun (plugstack(5), docs/spank.md).
fn head_problems(head: &Head, policy: &Policy) -> Vec<ArgProblem> {
    let mut out = vec![];
    let so = Path::new(&head.path);
    if !so.is_file() {
        out.push(ArgProblem {
            arg: head.path.clone(),
            problem: if head.required {
                "no such file: a required plugstack line pointing to a missing .so fails every srun and sbatch and drains nodes".into()
            } else {
                "no such file: Slurm skips the plugin, so nothing is checked".into()
            },
        });
    } else if so.file_name().is_some_and(|n| n != "spank_launchguard.so") {
        out.push(ArgProblem {
            arg: head.path.clone(),
            problem: "not named spank_launchguard.so: check that this is launchguard's plugin"
                .into(),
        });
    }
    let enforcing = CheckKind::ALL
        .into_iter()
        .any(|c| policy.mode_for(c) == Mode::Enforce);
    if !head.required && enforcing {
        out.push(ArgProblem {
            arg: "optional".into(),
            problem: "Slurm ignores an optional plugin's errors, so enforce mode can only warn: use 'required'".into(),
        });
    }
    out
}

/// Runs the subcommand: 0 when every argument is valid, 2 otherwise.
pub fn run(a: &Args) -> ExitCode {
    let (head, words) = plugstack_words(&a.words);
    let (policy, mut problems) = parse_args(&words);
    if let Some(h) = &head {
        problems.extend(head_problems(h, &policy));
    }
    if a.json {
        let doc = serde_json::json!({
            "valid": problems.is_empty(),
            "policy": policy.describe(),
            "problems": problems.iter().map(|p| serde_json::json!({
                "argument": p.arg,
                "problem": p.problem,
            })).collect::<Vec<_>>(),
        });
        println!("{doc}");
    } else {
        println!("effective policy:");
        for l in policy.describe() {
            println!("  {l}");
        }
        for p in &problems {
            eprintln!("{p}");
        }
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_plugstack_lines_are_accepted() {
        let (h, w) =
            plugstack_words(&["required /x/spank_launchguard.so mode=warn  a=b".to_string()]);
        assert_eq!(w, vec!["mode=warn", "a=b"]);
        assert_eq!(
            h,
            Some(Head {
                required: true,
                path: "/x/spank_launchguard.so".into()
            })
        );
        // a trailing comment, as Slurm allows it (the issue: three "expected key=value" errors)
        let (_, w) = plugstack_words(&[
            "required /x/spank_launchguard.so mode=warn # set by ansible".to_string(),
        ]);
        assert_eq!(w, vec!["mode=warn"]);
        let (policy, problems) = parse_args(&w);
        assert!(problems.is_empty() && policy.describe()[0].contains("warn"));
        let (h, w) = plugstack_words(&["mode=warn".to_string(), "cpus_per_task=off".to_string()]);
        assert_eq!(w, vec!["mode=warn", "cpus_per_task=off"]);
        assert_eq!(h, None);
    }

    #[test]
    fn heads_that_break_srun_are_named() {
        let (policy, _) = parse_args(&["mode=enforce"]);
        let missing = Head {
            required: true,
            path: "/nonexistent/spank_launchguard.so".into(),
        };
        let p = head_problems(&missing, &policy);
        assert!(p[0].problem.contains("fails every srun"), "{p:?}");
        let optional = Head {
            required: false,
            path: "/bin/sh".into(),
        };
        let p = head_problems(&optional, &policy);
        assert!(p
            .iter()
            .any(|x| x.problem.contains("not named spank_launchguard.so")));
        assert!(p
            .iter()
            .any(|x| x.problem.contains("enforce mode can only warn")));
    }
}
