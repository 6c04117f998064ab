//! Bad input: truncated files, binary garbage, CRLF, logs that are only INFO lines, tables without a
//! footer, JSON cut off. Each gives a clear per-file error or a partial result, never a panic, and
//! the other files of the same command are still analysed.

use launchguard_nccl::parse::parse_bytes;
use launchguard_nccl::verdict::{check, CheckOptions, Verdict};
use launchguard_nccl::ParseError;

const INFO_LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/all_reduce_perf_2gpu_nccl_debug_info.log"
);

fn fixture() -> Vec<u8> {
    std::fs::read(INFO_LOG).unwrap()
}

#[test]
fn file_cut_mid_row_keeps_earlier_rows_and_warns_about_the_footer() {
    let data = fixture();
    let text = String::from_utf8(data.clone()).unwrap();
    let cut = text.find("  1073741824     268435456").unwrap() + 45;
    let p = parse_bytes(&data[..cut]).unwrap();
    let t = &p.tables[0];
    assert_eq!(t.rows.len(), 27, "rows up to 512 MiB survive");
    assert_eq!(t.malformed_rows.len(), 1, "the cut 1 GiB row");
    assert_eq!(t.footer, None);
    let r = check("cut.log", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::Warn);
    let found: Vec<_> = r.findings.iter().map(|f| f.id).collect();
    assert!(found.contains(&"nccl.no_footer"), "{found:?}");
    assert!(found.contains(&"nccl.malformed_rows"), "{found:?}");
    assert!(r.findings[0]
        .to_string()
        .starts_with("launchguard: nccl.no_footer: 'cut.log': all_reduce_perf: the table ends without its footer after 536870912 B"));
}

#[test]
fn crlf_file_parses_exactly_like_lf() {
    let lf = parse_bytes(&fixture()).unwrap();
    let crlf_text = String::from_utf8(fixture()).unwrap().replace('\n', "\r\n");
    let crlf = parse_bytes(crlf_text.as_bytes()).unwrap();
    assert_eq!(crlf.tables, lf.tables);
    assert_eq!(crlf.facts, lf.facts);
}

#[test]
fn srun_label_prefixes_are_read_through() {
    let labelled: String = String::from_utf8(fixture())
        .unwrap()
        .lines()
        .map(|l| format!("0: {l}\n"))
        .collect();
    let p = parse_bytes(labelled.as_bytes()).unwrap();
    assert_eq!(p.tables[0].rows.len(), 28);
    assert_eq!(p.facts.networks, vec!["Socket"]);
}

#[test]
fn binary_garbage_is_a_clear_error() {
    let mut junk = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        junk.push((x >> 24) as u8);
    }
    junk[10] = 0;
    assert_eq!(parse_bytes(&junk), Err(ParseError::Binary));
    assert_eq!(parse_bytes(b""), Err(ParseError::Empty));
    assert_eq!(
        parse_bytes(b"hello\nworld\n"),
        Err(ParseError::Unrecognised)
    );
}

#[test]
fn garbage_spliced_into_a_real_log_is_skipped_and_reported() {
    let mut data = fixture();
    let at = data.iter().position(|&b| b == b'\n').unwrap() + 1;
    data.splice(at..at, b"\x00\xff\xfe garbage \x01\x02\n".iter().copied());
    let p = parse_bytes(&data).unwrap();
    assert_eq!(p.binary_lines, 1);
    assert_eq!(p.tables[0].rows.len(), 28);
    let r = check("f", &p, &CheckOptions::default());
    assert!(r.findings.iter().any(|f| f.id == "nccl.binary_lines"));
}

#[test]
fn only_info_lines_is_facts_without_results() {
    let only_info: String = String::from_utf8(fixture())
        .unwrap()
        .lines()
        .filter(|l| l.contains(" NCCL INFO "))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = parse_bytes(only_info.as_bytes()).unwrap();
    assert!(p.tables.is_empty());
    assert_eq!(p.facts.nccl_version.as_deref(), Some("2.28.9+cuda13.0"));
    // Without the nccl-tests header or table it reads as an application's NCCL log: a note, not
    // a warning (issue 30: a healthy job's log is GO).
    let r = check("info.log", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::Go);
    assert!(r.findings.iter().any(
        |f| f.id == "nccl.no_results" && f.severity == launchguard_nccl::model::Severity::Info
    ));
}

#[test]
fn table_without_footer_is_a_partial_result() {
    let text = String::from_utf8(fixture()).unwrap();
    let end = text.find("# Out of bounds").unwrap();
    let p = parse_bytes(&text.as_bytes()[..end]).unwrap();
    assert_eq!(p.tables[0].rows.len(), 28);
    assert_eq!(p.tables[0].footer, None);
    let r = check("f", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::Warn);
    assert!(!r.tables[0].complete);
}

#[test]
fn wrong_elements_and_out_of_bounds_are_no_go() {
    let text = String::from_utf8(fixture()).unwrap();
    let bad = text
        .replace(
            "   8388608       2097152     float     sum      -1    49.65  168.96  168.96       0",
            "   8388608       2097152     float     sum      -1    49.65  168.96  168.96     512",
        )
        .replace(
            "# Out of bounds values : 0 OK",
            "# Out of bounds values : 1 FAILED",
        );
    assert_ne!(bad, text, "the row was found");
    let p = parse_bytes(bad.as_bytes()).unwrap();
    let r = check("bad.log", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::NoGo);
    let lines: Vec<String> = r.findings.iter().map(|f| f.to_string()).collect();
    const WHY_CORRUPT: &str = "nccl-tests checked the results (-c) and found wrong values: the data was corrupted in flight, \
        on the wire (a NIC, cable or switch port) or by a GPU or its memory; a correctness failure regardless of bandwidth, not a tuning problem (nccl-tests README, -c)";
    const FIX_CORRUPT: &str = "rerun the same command once on the same nodes (srun -w vm …); if it fails again, take them out: \
        scontrol update nodename=vm state=drain reason=\"nccl-tests wrong results\", then check each (dmesg for Xid and NIC link errors, nvidia-smi -q -d ECC) before resuming it";
    assert_eq!(
        lines[0],
        format!(
        "launchguard: nccl.wrong: 'bad.log': all_reduce_perf: #wrong is 512 over 1 row halves (first at 8388608 B out-of-place); \
         {WHY_CORRUPT}; {FIX_CORRUPT}"
        )
    );
    assert_eq!(r.findings[1].id, "nccl.out_of_bounds");
    // Issue 24 item 8: what is known (corruption on the wire or in a GPU/NIC) and the two steps,
    // rerun once on the same nodes, then drain them, with the exact commands.
    assert_eq!(
        lines[1],
        format!(
            "launchguard: nccl.out_of_bounds: 'bad.log': all_reduce_perf: Out of bounds values is 1 (FAILED); \
             {WHY_CORRUPT}; {FIX_CORRUPT}"
        )
    );
}

#[test]
fn two_tables_in_one_file_are_two_runs() {
    let a = fixture();
    let b = std::fs::read(INFO_LOG.replace(
        "all_reduce_perf_2gpu_nccl_debug_info",
        "alltoall_perf_2gpu_nccl_debug_info",
    ))
    .unwrap();
    let both = [a, b].concat();
    let p = parse_bytes(&both).unwrap();
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(p.tables[1].collective.as_deref(), Some("alltoall_perf"));
    assert_eq!(p.tables[1].rows.len(), 26);
}

#[test]
fn legacy_layout_with_an_error_column_reads() {
    let text = "\
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456   float     sum    25645   41.87   39.25  5e-07    25497   42.11   39.48  5e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 7.46044
";
    let p = parse_bytes(text.as_bytes()).unwrap();
    let row = &p.tables[0].rows[0];
    assert_eq!(p.tables[0].layout, launchguard_nccl::table::Layout::Legacy);
    assert_eq!(row.out_of_place.unwrap().busbw, 39.25);
    assert_eq!(row.in_place.unwrap().busbw, 39.48);
    assert_eq!(
        check("f", &p, &CheckOptions::default()).verdict,
        Verdict::Go
    );
}

#[test]
fn efa_log_in_both_provider_spellings_passes_the_efa_rules() {
    for provider in [
        "NET/OFI Selected Provider is efa (found 4 nics)",
        "NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
    ] {
        let text = format!(
            "ip-172-31-4-37:9024:9062 [6] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.7.4-aws\n\
             ip-172-31-4-37:9024:9062 [6] NCCL INFO {provider}\n\
             ip-172-31-4-37:9024:9062 [6] NCCL INFO Using network AWS Libfabric\n\
             ip-172-31-4-37:9024:9062 [6] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA\n\
             #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
             \x20 1073741824      16777216     float     sum      -1    25645   41.87   39.25      0    25497   42.11   39.48      0\n\
             # Out of bounds values : 0 OK\n# Avg bus bandwidth    : 7.46044\n"
        );
        let p = parse_bytes(text.as_bytes()).unwrap();
        assert_eq!(p.facts.ofi_version.as_deref(), Some("1.7.4-aws"));
        assert_eq!(p.facts.networks, vec!["AWS Libfabric"]);
        let ok = CheckOptions {
            expect_nics: Some(4),
            ..CheckOptions::default()
        };
        assert_eq!(check("f", &p, &ok).verdict, Verdict::Go, "{provider}");
        let eight = CheckOptions {
            expect_nics: Some(8),
            ..CheckOptions::default()
        };
        let r = check("f", &p, &eight);
        assert_eq!(r.verdict, Verdict::NoGo);
        assert_eq!(
            r.findings[0].what,
            "'f': aws-ofi-nccl found 4 NICs on ip-172-31-4-37, expected 8"
        );
    }
}
