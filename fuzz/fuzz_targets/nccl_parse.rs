//! Fuzzes every `launchguard nccl` parser with arbitrary bytes: the text scanner (whole and split
//! into two chunks at a data-chosen point, which must agree), nccl-tests JSON, and the verdict and
//! outlier logic on whatever parsed. Any panic is a bug: bad input must give an error or a partial
//! result.
#![no_main]

use launchguard_nccl::outliers::{analyse, OutlierOptions};
use launchguard_nccl::parse::{parse_bytes, Scanner};
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
    }
    let files = vec![("a".to_string(), whole.clone()), ("b".to_string(), whole)];
    let _ = analyse(&files, &OutlierOptions::default());
});
