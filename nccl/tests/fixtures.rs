//! Parsers and verdicts over the real 2x H200 runs in `nccl/tests/fixtures/` (unedited; see its
//! README.md). Expected values are the ones the fixtures' README states.

use launchguard_nccl::file::parse_path;
use launchguard_nccl::table::{Correctness, Layout, Placement};
use launchguard_nccl::verdict::{check, CheckOptions, Fabric, Verdict};
use launchguard_nccl::Parsed;

macro_rules! fixture {
    ($name:literal) => {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/", $name)
    };
}

fn parsed(path: &str) -> Parsed {
    parse_path(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn ids(p: &Parsed, opts: &CheckOptions) -> (Verdict, Vec<&'static str>) {
    let r = check("f", p, opts);
    (r.verdict, r.findings.iter().map(|f| f.id).collect())
}

#[test]
fn all_reduce_info_log_table_with_interleaved_connection_lines() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_nccl_debug_info.log"));
    assert_eq!(p.tables.len(), 1);
    let t = &p.tables[0];
    assert_eq!(t.collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(t.layout, Layout::Current);
    assert_eq!(t.rows.len(), 28, "8 B .. 1 GiB");
    assert!(t.malformed_rows.is_empty());
    assert_eq!(t.rows[0].size, 8);
    let last = t.rows.last().unwrap();
    assert_eq!(last.size, 1073741824);
    assert_eq!(last.count, 268435456);
    assert_eq!(last.dtype, "float");
    assert_eq!(last.redop.as_deref(), Some("sum"));
    assert_eq!(last.root, Some(-1));
    let o = last.out_of_place.unwrap();
    assert_eq!((o.time_us, o.algbw, o.busbw), (3250.07, 330.37, 330.37));
    assert_eq!(o.correctness, Correctness::Wrong(0));
    assert_eq!(last.in_place.unwrap().busbw, 328.29);
    let footer = t.footer.as_ref().unwrap();
    assert_eq!(footer.out_of_bounds, Some(0));
    assert_eq!(footer.avg_busbw, Some(86.7146));
    // the 48 connection lines and 2 ring lines sit between header and first row
    assert_eq!(p.facts.p2p_connections, 48);
    assert_eq!(p.facts.net_connections, 0);
}

#[test]
fn all_reduce_info_log_environment_facts() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_nccl_debug_info.log"));
    let f = &p.facts;
    assert_eq!(f.nccl_tests_version.as_deref(), Some("2.19.6"));
    assert_eq!(f.nccl_version.as_deref(), Some("2.28.9+cuda13.0"));
    assert_eq!(f.cuda_driver_version, Some(13000));
    assert_eq!(f.ofi_version, None);
    assert_eq!(f.networks, vec!["Socket"]);
    assert_eq!(f.net_plugin_failures, vec!["IB"]);
    assert!(f.ib_no_device);
    assert_eq!(f.socket_nics, Some(1));
    assert_eq!(f.ib_nics, None, "[RO] is not a device");
    assert_eq!(f.ranks.len(), 2);
    assert_eq!(f.ranks[1].host, "vm");
    assert_eq!(f.ranks[1].device, 1);
    assert_eq!(f.ranks[1].gpu, "[0000:00:07] NVIDIA H200");
    assert_eq!(f.nranks, Some(2));
    assert_eq!(f.nnodes, Some(1));
    assert_eq!(f.hosts, vec!["vm"]);
    assert_eq!(f.process_count(), 1, "one process drives both GPUs");
    assert_eq!(f.warn_count, 0);
    assert!(f
        .env
        .iter()
        .any(|e| e.name == "NCCL_NVLS_ENABLE" && e.value == "0"));
}

#[test]
fn alltoall_na_in_place_wrong_and_zero_sizes() {
    let p = parsed(fixture!("alltoall_perf_2gpu_nccl_debug_info.log"));
    let t = &p.tables[0];
    assert_eq!(t.collective.as_deref(), Some("alltoall_perf"));
    assert_eq!(t.rows.len(), 26);
    assert_eq!((t.rows[0].size, t.rows[0].count), (0, 0));
    assert_eq!((t.rows[1].size, t.rows[1].count), (0, 0));
    assert_eq!(t.rows[0].redop.as_deref(), Some("none"));
    assert!(t
        .rows
        .iter()
        .all(|r| r.in_place.unwrap().correctness == Correctness::NotChecked));
    assert!(t
        .rows
        .iter()
        .all(|r| r.out_of_place.unwrap().correctness == Correctness::Wrong(0)));
    let last = t.rows.last().unwrap();
    assert_eq!(last.size, 268435456);
    assert_eq!(last.out_of_place.unwrap().algbw, 568.08);
    assert_eq!(last.out_of_place.unwrap().busbw, 284.04);
    assert_eq!(last.in_place.unwrap().busbw, 288.77);
    assert_eq!(t.footer.as_ref().unwrap().avg_busbw, Some(57.8874));
    assert_eq!(p.facts.p2p_connections, 64);
    assert_eq!(
        check("f", &p, &CheckOptions::default()).verdict,
        Verdict::Go
    );
}

#[test]
fn plain_log_has_no_nccl_lines_but_ranks_from_header() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_plain.log"));
    assert_eq!(p.facts.nccl_lines, 0);
    assert_eq!(p.facts.nccl_version, None);
    assert_eq!(p.facts.ranks.len(), 2);
    assert_eq!(p.hosts(), vec!["vm"]);
    let t = &p.tables[0];
    assert_eq!(t.rows.len(), 25);
    let last = t.rows.last().unwrap();
    assert_eq!(last.size, 134217728);
    assert_eq!(last.out_of_place.unwrap().busbw, 285.00);
    assert_eq!(last.in_place.unwrap().busbw, 285.15);
    assert_eq!(t.footer.as_ref().unwrap().avg_busbw, Some(58.4892));
    assert_eq!(ids(&p, &CheckOptions::default()), (Verdict::Go, vec![]));
}

#[test]
fn plain_log_cannot_prove_nics_or_efa() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_plain.log"));
    let opts = CheckOptions {
        expect_nics: Some(8),
        fabric: Some(Fabric::Efa),
        ..CheckOptions::default()
    };
    assert_eq!(
        ids(&p, &opts),
        (
            Verdict::Warn,
            vec!["nccl.network_unknown", "nccl.nics_unknown"]
        )
    );
}

#[test]
fn ib_failure_is_no_go_with_the_init_failure_named() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_net_ib_failure.log"));
    assert_eq!(p.row_count(), 0);
    assert_eq!(p.facts.warn_count, 2);
    assert_eq!(p.facts.warns, vec!["Failed to initialize any NET plugin"]);
    assert_eq!(p.facts.test_failures.len(), 3);
    assert!(p.facts.test_failures[0].starts_with("vm: Test NCCL failure common.cu:222"));
    assert_eq!(p.facts.networks, Vec::<String>::new());
    let (v, found) = ids(&p, &CheckOptions::default());
    assert_eq!(v, Verdict::NoGo);
    assert_eq!(found, vec!["nccl.net_init_failed", "nccl.test_failed"]);
}

#[test]
fn socket_through_the_network_transport_warns_and_fails_efa() {
    let p = parsed(fixture!(
        "all_reduce_perf_2gpu_p2p_shm_disabled_net_socket.log"
    ));
    assert_eq!(p.facts.net_connections, 8);
    assert_eq!(p.facts.gdrdma_connections, 0);
    assert_eq!(p.facts.net_transports, vec!["Socket"]);
    assert_eq!(p.facts.nnodes, Some(2));
    let last = p.tables[0].rows.last().unwrap();
    assert_eq!(last.size, 1048576);
    assert_eq!(last.out_of_place.unwrap().time_us, 486.82);
    assert_eq!(last.out_of_place.unwrap().busbw, 2.15);
    // One host: NCCL counts the two GPUs as two "nodes" (nNodes 2) because they can use neither
    // P2P nor SHM; the verdict names the two overrides, not a TCP fallback between nodes.
    assert_eq!(
        ids(&p, &CheckOptions::default()),
        (
            Verdict::Warn,
            vec![
                "nccl.env.p2p_disabled",
                "nccl.env.shm_disabled",
                "nccl.single_node",
                "nccl.env.nvls_disabled"
            ]
        )
    );
    let single = check("f", &p, &CheckOptions::default());
    let line = single
        .findings
        .iter()
        .find(|f| f.id == "nccl.single_node")
        .unwrap()
        .to_string();
    assert!(
        line.contains("8 connections through the network transport (Socket)"),
        "{line}"
    );
    assert!(!line.contains("P2P/SHM"), "{line}");
    let efa = CheckOptions {
        fabric: Some(Fabric::Efa),
        expect_nics: Some(8),
        ..CheckOptions::default()
    };
    let (v, found) = ids(&p, &efa);
    assert_eq!(v, Verdict::NoGo);
    assert_eq!(found[..2], ["nccl.not_efa", "nccl.nics"]);
    assert!(found.contains(&"nccl.no_gdrdma"));
}

#[test]
fn busbw_floor_at_the_largest_size() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_nccl_debug_info.log"));
    let pass = CheckOptions {
        min_busbw: Some(330.0),
        ..CheckOptions::default()
    };
    assert_eq!(check("f", &p, &pass).verdict, Verdict::Go);
    let fail = CheckOptions {
        min_busbw: Some(330.38),
        ..CheckOptions::default()
    };
    let r = check("f", &p, &fail);
    assert_eq!(r.verdict, Verdict::NoGo);
    assert_eq!(r.findings[0].id, "nccl.busbw_low");
    assert!(r.findings[0].what.contains("330.37 GB/s at 1073741824 B"));
    let in_place = CheckOptions {
        min_busbw: Some(330.0),
        placement: Placement::InPlace,
        ..CheckOptions::default()
    };
    assert_eq!(
        check("f", &p, &in_place).verdict,
        Verdict::NoGo,
        "in-place is 328.29"
    );
    let small = CheckOptions {
        size: Some(1048576),
        min_busbw: Some(55.0),
        ..CheckOptions::default()
    };
    assert_eq!(
        check("f", &p, &small).verdict,
        Verdict::NoGo,
        "54.26 at 1 MiB"
    );
    let missing = CheckOptions {
        size: Some(1 << 34),
        min_busbw: Some(1.0),
        ..CheckOptions::default()
    };
    assert_eq!(
        ids(&p, &missing),
        (
            Verdict::Warn,
            vec![
                "nccl.size_missing",
                "nccl.single_node",
                "nccl.env.nvls_disabled"
            ]
        )
    );
}

#[test]
fn seed_baseline_for_p6_b200_wants_16_gib() {
    let p = parsed(fixture!("all_reduce_perf_2gpu_nccl_debug_info.log"));
    let all = launchguard_nccl::baseline::parse(launchguard_nccl::baseline::SEEDS).unwrap();
    let opts = CheckOptions {
        baseline: launchguard_nccl::baseline::for_sku(&all, "p6-b200.48xlarge").unwrap(),
        ..CheckOptions::default()
    };
    let (v, found) = ids(&p, &opts);
    assert_eq!(v, Verdict::Warn);
    assert!(found.contains(&"nccl.size_missing"), "{found:?}");
}

#[test]
fn torch_logs_give_both_ops_and_the_combined_stream_matches_rank0() {
    let r0 = parsed(fixture!("torch_2proc_rank0.log"));
    let both = parsed(fixture!("torch_2proc_srun_style_combined.log"));
    for p in [&r0, &both] {
        assert_eq!(p.tables.len(), 2);
        assert_eq!(p.tables[0].layout, Layout::Torch);
        assert_eq!(p.tables[0].collective.as_deref(), Some("all_reduce"));
        assert_eq!(p.tables[1].collective.as_deref(), Some("all_to_all_single"));
        let ar = p.tables[0].rows.last().unwrap().out_of_place.unwrap();
        assert_eq!((ar.time_us, ar.algbw, ar.busbw), (3262.0, 329.21, 329.21));
        let a2a = p.tables[1].rows.last().unwrap().out_of_place.unwrap();
        assert_eq!((a2a.algbw, a2a.busbw), (662.26, 331.13));
        assert!(p.facts.torch_check_failures.is_empty());
    }
    assert_eq!(r0.facts.process_count(), 1);
    assert_eq!(both.facts.process_count(), 2, "pids 1586 and 1587");
    assert_eq!(both.facts.p2p_connections, 112);
    assert_eq!(
        check("f", &both, &CheckOptions::default()).verdict,
        Verdict::Go
    );
    // Rank 1 of the same healthy run prints no table (rank 0 does): an application's log, GO with
    // notes only.
    let r1 = parsed(fixture!("torch_2proc_rank1.log"));
    assert_eq!(r1.row_count(), 0);
    assert_eq!(
        ids(&r1, &CheckOptions::default()),
        (
            Verdict::Go,
            vec![
                "nccl.no_results",
                "nccl.single_node",
                "nccl.env.nvls_disabled"
            ]
        )
    );
}

#[test]
fn env_dump_is_not_an_nccl_file() {
    let e = parse_path(std::path::Path::new(fixture!("env.txt"))).unwrap_err();
    assert_eq!(e, launchguard_nccl::ParseError::Unrecognised);
}

#[test]
fn every_fixture_log_reaches_a_verdict_without_panicking() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "log") {
            let p = parse_path(&path).unwrap();
            let _ = check(&path.display().to_string(), &p, &CheckOptions::default());
            n += 1;
        }
    }
    assert_eq!(n, 13);
}

/// Issue 30's real PyTorch runs on one H200 (NCCL 2.28.9): healthy is GO with notes only; a socket
/// interface that does not exist and a forced NCCL_NET without HCAs are NO-GO naming the variable.
#[test]
fn one_gpu_torch_runs_healthy_and_failed() {
    let (v, f) = ids(
        &parsed(fixture!("torch_1gpu_h200_ok.log")),
        &CheckOptions::default(),
    );
    assert_eq!(v, Verdict::Go);
    assert_eq!(f, vec!["nccl.no_results", "nccl.single_node"]);
    let ok = check(
        "f",
        &parsed(fixture!("torch_1gpu_h200_ok.log")),
        &CheckOptions::default(),
    );
    assert!(ok
        .findings
        .iter()
        .all(|x| x.severity == launchguard_nccl::model::Severity::Info));

    let p = parsed(fixture!("torch_1gpu_h200_socket_ifname_nomatch.log"));
    assert!(p.facts.no_socket_interface);
    assert_eq!(p.facts.job_errors.len(), 2, "{:?}", p.facts.job_errors);
    let r = check("f", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::NoGo);
    assert_eq!(r.findings[0].id, "nccl.socket_ifname_nomatch");
    assert!(
        r.findings[0]
            .what
            .contains("NCCL_SOCKET_IFNAME==nosuchif0 matches none"),
        "{}",
        r.findings[0].what
    );
    assert!(
        !r.findings.iter().any(|x| x.id == "nccl.warn"),
        "the WARN is explained"
    );

    let p = parsed(fixture!("torch_1gpu_h200_net_ib_forced.log"));
    let r = check("f", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::NoGo);
    assert_eq!(r.findings[0].id, "nccl.net_init_failed");
    assert!(r.findings[0]
        .why
        .contains("fails NCCL init instead of falling back"));
    assert!(r.findings[0].fix.contains("remove NCCL_NET"));
    assert!(
        !r.findings.iter().any(|x| x.id == "nccl.job_failed"),
        "the cause is named, the job error adds nothing"
    );
}

/// The application's NCCL error with no WARN naming a cause (NCCL_DEBUG unset): NO-GO with its line.
#[test]
fn an_application_nccl_error_alone_is_no_go() {
    let log = "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n";
    let p = launchguard_nccl::parse_bytes(log.as_bytes()).unwrap();
    let r = check("f", &p, &CheckOptions::default());
    assert_eq!(r.verdict, Verdict::NoGo);
    assert_eq!(r.findings[0].id, "nccl.system_error");
    assert!(r.findings[0].what.starts_with("'f': NCCL failed on a system call and the job stopped: torch.distributed.DistBackendError"), "{}", r.findings[0].what);
    let log = "[rank0]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9\n";
    let r = check(
        "f",
        &launchguard_nccl::parse_bytes(log.as_bytes()).unwrap(),
        &CheckOptions::default(),
    );
    assert_eq!(r.findings[0].id, "nccl.job_failed");
}
