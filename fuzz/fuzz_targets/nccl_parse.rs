//! Fuzzes every `launchguard nccl` parser with arbitrary bytes: the text scanner (whole and split
//! into two chunks at a data-chosen point, which must agree), nccl-tests JSON, the CLI's file input
//! (the bytes written to a file and read back through `parse_path`, as `launchguard nccl check
//! FILE` reads it, which must agree with the in-memory parse), the NET/Plugin line classifier, and
//! the verdict (plugin, Socket interface and environment rules included), rendering and outlier
//! logic on whatever parsed. Any panic is a bug: bad input must give an error or a partial result.
#![no_main]

use launchguard_nccl::outliers::{analyse, OutlierOptions};
use launchguard_nccl::parse::{parse_bytes, parse_path, Scanner};
use launchguard_nccl::verdict::{check, CheckOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = parse_bytes(data);
    if let Some((&split, rest)) = data.split_first() {
        // The text scanner must not depend on where chunk boundaries fall.
        let at = split as usize % (rest.len() + 1);
        let mut chunked = Scanner::new();
        chunked.feed(&rest[..at]);
        chunked.feed(&rest[at..]);
        let mut one = Scanner::new();
        one.feed(rest);
        assert_eq!(chunked.finish(), one.finish());
    }
    let _ = launchguard_nccl::json::parse_json(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = launchguard_nccl::log::plugin_load_error(text);
    }
    // The CLI's path: a regular file read back through parse_path.
    let file = std::env::temp_dir().join(format!("lg-fuzz-nccl-{}", std::process::id()));
    if std::fs::write(&file, data).is_ok() {
        assert_eq!(parse_path(&file), whole);
    }
    if let Ok(p) = &whole {
        let opts = CheckOptions {
            expect_nics: Some(8),
            min_busbw: Some(100.0),
            ..CheckOptions::default()
        };
        let r = check("fuzz", p, &opts);
        for f in &r.findings {
            let _ = f.to_string();
        }
        let reports = [r];
        let _ = launchguard_nccl::output::check_text(&reports);
        let _ = launchguard_nccl::output::check_csv(&reports);
        let _ = launchguard_nccl::output::check_json(&reports);
    }
    let files = vec![("a".to_string(), whole.clone()), ("b".to_string(), whole)];
    let _ = analyse(&files, &OutlierOptions::default());
});
