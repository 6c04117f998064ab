//! `docs/reference/` is what `launchguard generate-docs --reference` writes from the code's tables:
//! regenerated into a temporary directory and compared file by file, so a check, NCCL rule, explain
//! rule or plugstack argument added without its page fails here (in the test command).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `launchguard generate-docs FLAG DIR` into a fresh temporary directory (`tag` names it) and
/// returns the directory; panics with generate-docs' stderr when it fails.
fn generate(flag: &str, tag: &str) -> std::path::PathBuf {
    let tmp = std::env::temp_dir().join(format!("lg-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["generate-docs", flag])
        .arg(&tmp)
        .output()
        .expect("run launchguard generate-docs");
    assert!(
        out.status.success(),
        "generate-docs {flag} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmp
}

#[test]
fn docs_reference_matches_the_code() {
    let tmp = generate("--reference", "reference");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference");
    let fix =
        "regenerate with: target/release/launchguard generate-docs --reference docs/reference";
    let (want, have) = (names(&tmp), names(&committed));
    assert_eq!(
        have, want,
        "docs/reference/ has other files than the generator writes; {fix}"
    );
    let mut stale = vec![];
    for n in &want {
        let a = std::fs::read_to_string(tmp.join(n)).unwrap();
        let b = std::fs::read_to_string(committed.join(n)).unwrap_or_default();
        if a != b {
            let line = a
                .lines()
                .zip(b.lines().chain(std::iter::repeat("")))
                .position(|(x, y)| x != y)
                .map_or(a.lines().count().min(b.lines().count()) + 1, |i| i + 1);
            stale.push(format!("docs/reference/{n} differs from line {line}"));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(stale.is_empty(), "{}; {fix}", stale.join(", "));
}

/// The shell completions `generate-docs --out` writes offer `launchguard help nccl check` and the
/// other nested subcommands under `help`: subcommands whose arguments are built deferred (`nccl`,
/// `sweep`) are mirrored into `help` whole, as a tree built at once would be.
#[test]
fn completions_mirror_nested_subcommands_under_help() {
    let tmp = generate("--out", "docs-out");
    let bash = std::fs::read_to_string(tmp.join("completions/launchguard.bash")).unwrap();
    let fish = std::fs::read_to_string(tmp.join("completions/launchguard.fish")).unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    for nested in [
        "nccl__subcmd__check",
        "nccl__subcmd__outliers",
        "sweep__subcmd__nccl",
    ] {
        let want = format!("launchguard__subcmd__help__subcmd__{nested}");
        assert!(bash.contains(&want), "bash completion lacks {want}");
        // The real command is there too, with its options.
        let real = format!("launchguard__subcmd__{nested}");
        assert!(bash.contains(&real), "bash completion lacks {real}");
    }
    assert!(
        fish.contains("__fish_launchguard_using_subcommand help; and __fish_seen_subcommand_from nccl\" -f -a \"check\""),
        "fish completion lacks `help nccl check`"
    );
    // No `help` inside the mirror (`launchguard help nccl help`), as clap's own mirror has none.
    assert!(!bash.contains("launchguard__subcmd__help__subcmd__nccl__subcmd__help"));
}
