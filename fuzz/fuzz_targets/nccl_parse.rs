//! Fuzzes every `launchguard nccl` parser with arbitrary bytes: the text scanner (whole and split
//! into two chunks at a data-chosen point, which must agree), nccl-tests JSON, the CLI's file input
//! (the bytes written to a file and read back through `parse_path`, as `launchguard nccl check
//! FILE` reads it, which must agree with the in-memory parse), the NET/Plugin line classifier, and
//! the verdict (plugin, Socket interface and environment rules included), rendering and outlier
//! logic on whatever parsed, whose text output must hold no control or invisible character but its
//! line ends; the streamed JSON reader must agree with the in-memory one, and a baseline file's
//! error must quote a short printable excerpt. Any panic is a bug: bad input must give an error or
//! a partial result.
#![no_main]

use launchguard_nccl::file::parse_path;
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
    // nccl-tests JSON, in memory and streamed (as a file or stdin is read): the same result.
    let json = launchguard_nccl::json::parse_json(data);
    let streamed = launchguard_nccl::json::parse_json_reader(data);
    match (&json, &streamed) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("in memory {a:?}, streamed {b:?}"),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = launchguard_nccl::log::plugin_load_error(text);
        // A baseline file (`--baseline`): an error quotes a short, printable excerpt.
        if let Err(e) = launchguard_nccl::baseline::parse(text) {
            assert!(e.chars().count() < 1000, "{e}");
            assert!(!launchguard_core::text::needs_cleaning(&e), "{e:?}");
        }
    }
    // The CLI's path: a regular file read back through parse_path.
    let file = std::env::temp_dir().join(format!("lg-fuzz-nccl-{}", std::process::id()));
    if std::fs::write(&file, data).is_ok() {
        // The same result; for broken JSON both refuse it (serde's streamed and in-memory readers
        // word the position of the error differently).
        match (parse_path(&file), &whole) {
            (Ok(a), Ok(b)) => assert_eq!(&a, b),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("from the file {a:?}, in memory {b:?}"),
        }
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
        // Nothing from the input reaches a terminal raw: no control character but the line ends.
        let text = launchguard_nccl::output::check_text(&reports);
        assert!(!launchguard_core::text::needs_cleaning(&text.replace('\n', "")), "{text:?}");
        let csv = launchguard_nccl::output::check_csv(&reports);
        assert!(!csv.contains(['\u{1b}', '\u{9b}', '\u{202e}']), "{csv:?}");
        let _ = launchguard_nccl::output::check_json(&reports);
    }
    let files = vec![("a".to_string(), whole.clone()), ("b".to_string(), whole)];
    let r = analyse(&files, &OutlierOptions::default());
    let text = launchguard_nccl::output::outliers_text(&r, true);
    assert!(!launchguard_core::text::needs_cleaning(&text.replace('\n', "")), "{text:?}");
});
