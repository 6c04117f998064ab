//! sbatch and salloc (`init_post_opt`, allocator context): warns about an `--export` without `ALL`,
//! which every srun inside the job inherits as `SLURM_EXPORT_ENV`, and about an
//! `sbatch --container-image` GPU script whose batch step gets one CPU, and about GPU task options
//! that make every srun of the job fail on this release (`launch.gpu_options`). Never rejects: `--export=NONE`
//! is a legitimate choice for the batch script itself.

use crate::ffi::{self, Spank};
use crate::gather;
use launchguard_core::argv::{self, ParsedArgv, Tool};
use launchguard_core::checks::{cpus_per_task, export, gpu_options, judge};
use launchguard_core::{CheckKind, Mode};

/// Most bytes of a batch script read for `#SBATCH` lines.
const MAX_SCRIPT: u64 = 256 * 1024;

/// Runs the submission-side checks; always lets the submission go on.
pub fn init_post_opt(sp: &Spank) -> bool {
    let Some(policy) = gather::client_policy(sp) else {
        return true;
    };
    let argv = gather::own_argv();
    let Some(tool) = argv.first().and_then(|a| Tool::from_argv0(a)) else {
        return true;
    };
    let parsed = argv::parse(tool, &argv);
    let script = (tool == Tool::Sbatch && !parsed.has("wrap"))
        .then(|| parsed.operands.first())
        .flatten()
        .and_then(|path| script_directives(path));
    let env = crate::srun::ProcessEnv;
    let mut findings = export::check_allocation(tool, &parsed, script.as_ref(), &env);
    if tool == Tool::Sbatch && policy.mode_for(CheckKind::CpusPerTask) != Mode::Off {
        findings.extend(cpus_per_task::check_batch_container(
            &parsed,
            script.as_ref(),
            &env,
        ));
    }
    if policy.mode_for(CheckKind::GpuOptions) != Mode::Off {
        findings.extend(gpu_options::check_allocation(
            &parsed,
            script.as_ref(),
            gather::release(sp),
            gather::micro_release(sp),
        ));
        findings.extend(gpu_options::check_gpus_per_task(
            &parsed,
            script.as_ref(),
            None,
        ));
    }
    let verdict = judge(findings, &policy);
    for f in &verdict.shown {
        ffi::log_user(&f.to_string());
    }
    true
}

/// The options on a batch script's `#SBATCH` lines (sbatch(1): read until the first line that is
/// neither a comment nor blank), parsed like sbatch's command line. `None` when the script is not a
/// readable regular file: a FIFO or `<(…)` is never opened (opening one could block sbatch, and
/// reading it would eat the script).
fn script_directives(path: &str) -> Option<ParsedArgv> {
    let text = gather::read_small(std::path::Path::new(path), MAX_SCRIPT)?;
    Some(argv::parse(Tool::Sbatch, &sbatch_words(&text)))
}

/// `["sbatch", <words of every #SBATCH line>…]`, stopping at the first command line.
pub fn sbatch_words(script: &str) -> Vec<String> {
    let mut words = vec!["sbatch".to_string()];
    for line in script.lines().skip(1) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        // sbatch honours #SBATCH only at the very start of a line.
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            let rest = rest.split(" #").next().unwrap_or("");
            words.extend(rest.split_whitespace().map(str::to_string));
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_lines_end_at_the_first_command() {
        let s = "#!/bin/bash\n#SBATCH -c 2\n\n#SBATCH --export=NONE # clean env\n  #SBATCH --gres=gpu:1\nsrun x\n#SBATCH --export=ALL\n";
        assert_eq!(sbatch_words(s), vec!["sbatch", "-c", "2", "--export=NONE"]);
    }
}
