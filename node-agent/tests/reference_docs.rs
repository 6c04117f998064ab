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

#[test]
fn docs_reference_matches_the_code() {
    let tmp = std::env::temp_dir().join(format!("lg-reference-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["generate-docs", "--reference"])
        .arg(&tmp)
        .output()
        .expect("run launchguard generate-docs");
    assert!(
        out.status.success(),
        "generate-docs --reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
