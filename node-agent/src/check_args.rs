//! `launchguard check-args`: tests a plugstack line without touching srun.

use launchguard_core::policy::parse_args;
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

/// Splits the input into plugstack words and drops a leading `required|optional <path>`.
fn plugstack_words(input: &[String]) -> Vec<String> {
    let mut words: Vec<String> = input
        .iter()
        .flat_map(|w| w.split_whitespace())
        .map(str::to_string)
        .collect();
    if matches!(
        words.first().map(String::as_str),
        Some("required" | "optional")
    ) {
        words.drain(..words.len().min(2));
    }
    words
}

/// Runs the subcommand: 0 when every argument is valid, 2 otherwise.
pub fn run(a: &Args) -> ExitCode {
    let words = plugstack_words(&a.words);
    let (policy, problems) = parse_args(&words);
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
        let w = plugstack_words(&["required /x/spank_launchguard.so mode=warn  a=b".to_string()]);
        assert_eq!(w, vec!["mode=warn", "a=b"]);
        let w = plugstack_words(&["mode=warn".to_string(), "cpus_per_task=off".to_string()]);
        assert_eq!(w, vec!["mode=warn", "cpus_per_task=off"]);
    }
}
