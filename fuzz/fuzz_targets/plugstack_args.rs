//! Plugstack arguments and `launchguard check-args` input: any bytes, split into words, must parse
//! without panicking, and every problem must name an argument that was given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let words: Vec<&str> = text.split_whitespace().collect();
    let (policy, problems) = launchguard_core::policy::parse_args(&words);
    assert!(problems.len() <= words.len());
    let _ = policy.describe();
    for p in problems {
        let line = p.to_string();
        assert!(!line.contains('\n'), "one line: {line:?}");
    }
});
