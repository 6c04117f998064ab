//! `launchguard check-args`: tests a plugstack line without touching srun.

use launchguard_core::policy::{parse_args, ArgProblem};
use launchguard_core::{CheckKind, Mode, Policy};
use std::path::Path;
use std::process::ExitCode;

// Arguments of `launchguard check-args`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
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

/// The packaged plugstack line's head (packaging/zz-launchguard.conf), assumed in front of bare
/// arguments when measuring the line against Slurm's limit.
const PACKAGED_HEAD: &str = "required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_launchguard.so";

/// The words Slurm hands the plugin, and the problem when the line is longer than Slurm reads
/// ([`launchguard_core::node::plugstack::SLURM_LINE_MAX`]): then only its first piece's arguments.
fn as_slurm_reads(
    input: &[String],
    head: bool,
    words: Vec<String>,
) -> (Vec<String>, Option<ArgProblem>) {
    use launchguard_core::node::plugstack::{cut_line, slurm_pieces};
    let joined = input.join(" ");
    let full = if head {
        joined
    } else {
        format!("{PACKAGED_HEAD} {joined}")
    };
    let Some(cut) = cut_line(&full) else {
        return (words, None);
    };
    let first = slurm_pieces(&full)[0].to_string();
    let (_, kept) = plugstack_words(&[first]);
    let problem = ArgProblem {
        arg: if head { "the whole line" } else { "the arguments, after the packaged 'required …/spank_launchguard.so'" }.into(),
        problem: format!(
            "{cut}; the effective policy printed is what the plugin gets. Shorten the line to at most 4095 bytes: list fewer devices= (the step's GPUs and the node's RDMA devices are checked without being listed) or move NCCL rules to the file nccl_rules=PATH names"
        ),
    };
    (kept, Some(problem))
}

/// Runs the subcommand: 0 when every argument is valid, 2 otherwise.
pub fn run(a: &Args) -> ExitCode {
    let (head, words) = plugstack_words(&a.words);
    let (words, cut) = as_slurm_reads(&a.words, head.is_some(), words);
    let (policy, mut problems) = parse_args(&words);
    problems.extend(cut);
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

    /// Field report: a devices= list past Slurm's 4 KiB plugstack line passed check-args.
    #[test]
    fn a_line_slurm_cuts_is_a_problem_and_the_policy_is_what_the_plugin_gets() {
        let devices: Vec<String> = (0..400).map(|i| format!("/dev/d{i:04}")).collect();
        let line = format!(
            "required /x/spank_launchguard.so mode=warn devices={}",
            devices.join(",")
        );
        let input = [line.clone()];
        let (head, words) = plugstack_words(&input);
        let (kept, p) = as_slurm_reads(&input, head.is_some(), words);
        let p = p.expect("a problem");
        assert!(
            p.problem.starts_with(&format!("this line is {} bytes and Slurm reads plugstack lines in pieces of at most 4095 bytes", line.len())),
            "{p}"
        );
        let (policy, _) = parse_args(&kept);
        assert!(policy.devices.len() < 400, "{}", policy.devices.len());
        // bare arguments are measured behind the packaged head
        let bare = [format!("devices={}", devices.join(","))];
        let (_, w) = plugstack_words(&bare);
        assert!(as_slurm_reads(&bare, false, w).1.is_some());
        let short = ["mode=warn".to_string()];
        let (_, w) = plugstack_words(&short);
        assert!(as_slurm_reads(&short, false, w).1.is_none());
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
