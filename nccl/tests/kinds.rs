//! Issue 14's kinds of NCCL log and nccl-tests input, each with its variants: NCCL lines under any
//! prefix (or none), older nccl-tests tables without `#`, an `Out of bounds values : N FAILED`
//! anywhere, and `-J` JSON runs with several GPUs per process.

use launchguard_nccl::parse::parse_bytes;
use launchguard_nccl::table::Layout;
use launchguard_nccl::verdict::{check, CheckOptions, Verdict};

const EFA_LINES: [&str; 4] = [
    "NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0",
    "NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 8 nics)",
    "NCCL INFO Using network Libfabric",
    "NCCL WARN NET/OFI Unable to find a protocol that worked",
];

/// Every prefix a launcher, a logger or a paste leaves in front of NCCL's own
/// `host:pid:tid [dev]` (or instead of it).
const PREFIXES: [&str; 12] = [
    "",
    "gpu-1:101:101 [0] ",
    "3: ",
    "  12: gpu-1:101:101 [0] ",
    "[rank3]:",
    "[rank3]: gpu-1:101:101 [0] ",
    "2024-05-01 10:00:00,123 - INFO - ",
    "INFO:root:gpu-1:101:101 [0] ",
    "2025-03-02T10:15:01.101Z | gpu-1:101:101 [0] ",
    "[2024-05-01 10:00:00] gpu-1:101:101 [0] net.cc:12 ",
    "gpu-1: gpu-1:101:101 [0] ",
    "[1,3]<stdout>:gpu-1:101:101 [0] ",
];

#[test]
fn nccl_lines_are_read_under_every_prefix_and_without_one() {
    for pfx in PREFIXES {
        let text: String = EFA_LINES.iter().map(|l| format!("{pfx}{l}\n")).collect();
        let p = parse_bytes(text.as_bytes()).unwrap_or_else(|e| panic!("{pfx:?}: {e}"));
        let f = &p.facts;
        assert_eq!(f.nccl_lines, 4, "{pfx:?}");
        assert_eq!(f.ofi_version.as_deref(), Some("1.14.0"), "{pfx:?}");
        assert_eq!(f.networks, vec!["Libfabric"], "{pfx:?}");
        assert_eq!(f.providers[0].nics, Some(8), "{pfx:?}");
        assert_eq!(f.warn_count, 1, "{pfx:?}");
        if pfx.contains("gpu-1:101") {
            assert_eq!(f.hosts, vec!["gpu-1"], "{pfx:?}");
            assert_eq!(f.providers[0].host.as_deref(), Some("gpu-1"), "{pfx:?}");
            assert_eq!(f.process_count(), 1, "{pfx:?}");
        } else {
            assert!(f.hosts.is_empty(), "{pfx:?}: {:?}", f.hosts);
        }
        let r = check("f", &p, &CheckOptions::default());
        assert_ne!(r.verdict, Verdict::Unreadable, "{pfx:?}");
        assert!(
            !r.findings.iter().any(|x| x.id == "nccl.not_efa"),
            "{pfx:?}"
        );
    }
}

#[test]
fn the_issue_example_without_any_prefix_is_read() {
    let text = "NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0\n\
                NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 8 nics)\n\
                NCCL INFO Using network Libfabric\n";
    let p = parse_bytes(text.as_bytes()).unwrap();
    let r = check("f", &p, &CheckOptions::default());
    // No result table (a note only) and the EFA path proven: GO.
    assert_eq!(r.verdict, Verdict::Go);
    assert_eq!(p.facts.network().as_deref(), Some("Libfabric"));
}

#[test]
fn clock_times_are_not_taken_for_a_host() {
    let p = parse_bytes(b"12:00:01 NCCL INFO Using network Socket\n").unwrap();
    assert!(p.facts.hosts.is_empty(), "{:?}", p.facts.hosts);
}

const LEGACY_NO_HASH: &str = "      size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
       (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
 134217728      33554432   float   1412.3   95.03  178.19  0e+00   1410.9   95.13  178.37  0e+00
 Out of bounds values : 3 FAILED
 Avg bus bandwidth    : 178.28
";

#[test]
fn older_table_without_hash_is_read_and_out_of_bounds_is_no_go() {
    let p = parse_bytes(LEGACY_NO_HASH.as_bytes()).unwrap();
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.layout, Layout::Legacy);
    assert_eq!(t.rows.len(), 1);
    assert_eq!(t.rows[0].redop, None);
    assert_eq!(t.rows[0].root, None);
    assert_eq!(t.rows[0].out_of_place.unwrap().busbw, 178.19);
    let footer = t.footer.as_ref().unwrap();
    assert_eq!(
        (footer.out_of_bounds, footer.avg_busbw),
        (Some(3), Some(178.28))
    );
    let r = check("f", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::NoGo);
    assert_eq!(r.findings[0].id, "nccl.out_of_bounds");
}

#[test]
fn out_of_bounds_failed_anywhere_is_no_go() {
    for text in [
        "Out of bounds values : 3 FAILED\n",
        "# Out of bounds values : 3 FAILED\n",
        "2: # Out of bounds values : 3 FAILED\n",
        "[2024-05-01 10:00:00] Out of bounds values : 3 FAILED\n",
        "some text\n 1048576 262144 float sum -1 1.0 1.0 1.0 0 1.0 1.0 1.0 0\nOut of bounds values : 3 FAILED\n",
    ] {
        let p = parse_bytes(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let r = check("f", &p, &CheckOptions::default());
        assert_eq!(r.verdict, Verdict::NoGo, "{text:?}: {:?}", r.findings);
        assert!(r.findings.iter().any(|f| f.id == "nccl.out_of_bounds"), "{text:?}");
    }
    // ... and a clean count is not.
    let p = parse_bytes(b"Out of bounds values : 0 OK\n").unwrap();
    assert_ne!(
        check("f", &p, &CheckOptions::default()).verdict,
        Verdict::NoGo
    );
}

#[test]
fn json_run_with_two_gpus_per_process_has_two_ranks() {
    let doc = r#"{"version":3,"args":["./all_reduce_perf","-g","2"],"nccl_version":22809,"config":{"nthreads":1,"ngpus":2,"devices":[{"rank":0,"group":0,"pid":1418,"hostname":"vm","device":0,"device_hex":"0000:00:06","device_info":"NVIDIA H200"}]},"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":14.85,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0},"in_place":{"time":15.83,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0}}],"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":0.0,"okay":"unchecked"},"errors":[]}"#;
    let p = parse_bytes(doc.as_bytes()).unwrap();
    assert_eq!(p.facts.rank_count(), Some(2));
    let text =
        launchguard_nccl::output::check_text(&[check("run.json", &p, &CheckOptions::default())]);
    assert!(text.contains("ranks 2"), "{text}");
}
