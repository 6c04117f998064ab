//! `launchguard explain` on any bytes: job outputs are whatever the job printed. The rule table must
//! never panic on a line, every finding must stay one line in the `what; why; fix` shape, the
//! findings stay bounded, and the bounded line reader must hand back every byte with no line over
//! its cap.
#![no_main]

use launchguard::explain::{explain_bytes, Rules, MAX_DISTINCT};
use launchguard::gather::util::for_each_line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rules = Rules::builtin().expect("the built-in rule table parses");
    let rep = explain_bytes(rules, data);
    assert!(rep.findings.len() <= MAX_DISTINCT);
    assert_eq!(rep.bytes, data.len() as u64);
    for f in &rep.findings {
        let line = f.line();
        assert!(!line.contains(['\n', '\r']), "{line}");
        assert!(line.starts_with(&format!("launchguard: {}: ", f.id)));
        // A rule's finding names its first line; the NCCL model's are about the whole input (0).
        assert!(f.count >= 1 && f.first_line <= rep.lines);
        assert!(f.first_line >= 1 || f.id.starts_with("nccl."), "{line}");
    }
    let total: u64 = rep
        .findings
        .iter()
        .filter(|f| f.first_line >= 1)
        .map(|f| f.count)
        .sum::<u64>()
        + rep.more_findings;
    assert!(total <= rep.lines);
    let mut lines = 0u64;
    let n = for_each_line(data, 7, |l, _| {
        assert!(l.len() <= 7);
        lines += 1;
    })
    .expect("reading memory cannot fail");
    assert_eq!(n, data.len() as u64);
    assert_eq!(lines, rep.lines);
});
