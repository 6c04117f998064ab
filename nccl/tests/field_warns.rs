//! NCCL and aws-ofi-nccl WARNs from public reports (issue 31: the catalogue of NCCL's and
//! aws-ofi-nccl's messages), each rewritten in our own words with made-up hosts and addresses in
//! `nccl/tests/fixtures/field/`, with the finding the report deserves: the cause named by
//! `nccl/src/warn_rules.rs`, not the generic `nccl.warn`. Sources: `tests/field/README.md`
//! ("NCCL logs and nccl-tests output").

use launchguard_nccl::file::parse_path;
use launchguard_nccl::verdict::{check, CheckOptions, FileReport, Verdict};

fn load(name: &str) -> FileReport {
    let path = format!("{}/tests/fixtures/field/{name}", env!("CARGO_MANIFEST_DIR"));
    let p = parse_path(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    check(name, &p, &CheckOptions::default())
}

/// (file, verdict, the findings it must give, what the cause's line must say, findings it must not give).
type Case = (
    &'static str,
    Verdict,
    &'static [&'static str],
    &'static str,
    &'static [&'static str],
);

const CASES: &[Case] = &[
    (
        "duplicate_gpu_mpirun.log",
        Verdict::NoGo,
        &["nccl.duplicate_gpu"],
        "SLURM_LOCALID",
        &["nccl.warn"],
    ),
    (
        "duplicate_gpu_last_error.log",
        Verdict::NoGo,
        &["nccl.duplicate_gpu"],
        "--gpus-per-task=1",
        &["nccl.warn"],
    ),
    (
        "nvls_bind_fabric.log",
        Verdict::NoGo,
        &["nccl.nvls_failed"],
        "nvidia-fabricmanager",
        &["nccl.warn", "nccl.cuda_failure"],
    ),
    (
        "nvls_last_error.log",
        Verdict::NoGo,
        &["nccl.nvls_failed"],
        "NCCL_NVLS_ENABLE=0",
        &["nccl.warn"],
    ),
    (
        "ib_modify_qp_unreachable.log",
        Verdict::NoGo,
        &["nccl.ib_qp_failed", "nccl.test_failed", "nccl.peer_closed"],
        "NCCL_IB_GID_INDEX",
        &["nccl.warn", "nccl.connect_failed"],
    ),
    (
        "ib_modify_qp_no_device.log",
        Verdict::NoGo,
        &["nccl.ib_qp_failed"],
        "show_gids",
        &["nccl.warn"],
    ),
    (
        "shm_no_space_ci.log",
        Verdict::NoGo,
        &["nccl.shm_failed"],
        "/dev/shm",
        &["nccl.warn"],
    ),
    (
        "shm_accept_no_space.log",
        Verdict::NoGo,
        &["nccl.shm_failed"],
        "/dev/shm",
        &["nccl.connect_failed", "nccl.warn"],
    ),
    (
        "sysfs_real_path.log",
        Verdict::NoGo,
        &["nccl.topology"],
        "/sys",
        &["nccl.warn"],
    ),
    (
        "ib_open_device_denied.log",
        Verdict::NoGo,
        &["nccl.ib_device"],
        "/dev/infiniband",
        &["nccl.warn"],
    ),
    (
        "ofi_register_invalid_argument.log",
        Verdict::NoGo,
        &["nccl.memlock"],
        "EFA installer",
        &["nccl.warn", "nccl.net_plugin_failed"],
    ),
    (
        "ofi_register_enomem_pdsh.log",
        Verdict::NoGo,
        &["nccl.memlock"],
        "LimitMEMLOCK=infinity",
        &["nccl.warn", "nccl.net_plugin_failed"],
    ),
    (
        "topo_xml_cpu_arch.log",
        Verdict::NoGo,
        &["nccl.topo_file"],
        "NCCL_TOPO_FILE",
        &["nccl.warn", "nccl.net_plugin_failed"],
    ),
    (
        "socket_truncated_sizes.log",
        Verdict::NoGo,
        &["nccl.message_truncated"],
        "same collectives",
        &["nccl.warn"],
    ),
    (
        "cuda_oom_proxy.log",
        Verdict::NoGo,
        &["nccl.cuda_failure"],
        "NCCL_BUFFSIZE",
        &["nccl.warn"],
    ),
    (
        "libcuda_missing.log",
        Verdict::NoGo,
        &["nccl.cuda_failure"],
        "libcuda.so",
        &["nccl.warn"],
    ),
    (
        "socket_connect_abort.log",
        Verdict::NoGo,
        &["nccl.connect_failed", "nccl.peer_closed"],
        "NCCL_SOCKET_IFNAME",
        &["nccl.warn"],
    ),
];

#[test]
fn warns_from_public_reports_name_their_cause() {
    let mut wrong = vec![];
    for (file, verdict, want, says, not) in CASES {
        let r = load(file);
        let ids: Vec<&str> = r.findings.iter().map(|f| f.id).collect();
        let line = r
            .findings
            .iter()
            .find(|f| f.id == want[0])
            .map(|f| f.to_string())
            .unwrap_or_default();
        if r.verdict != *verdict
            || !want.iter().all(|w| ids.contains(w))
            || not.iter().any(|n| ids.contains(n))
            || !line.contains(says)
        {
            wrong.push(format!("{file}: {:?} {ids:?}: {line}", r.verdict));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A log pasted without NCCL's `NCCL INFO` token (issue 31 item 4) still reads as NCCL's log.
#[test]
fn lines_pasted_without_the_info_token_are_a_log() {
    let r = load("pasted_without_info_token.log");
    assert_ne!(r.verdict, Verdict::Unreadable);
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id).collect();
    assert!(!ids.contains(&"nccl.unreadable"), "{ids:?}");
    assert!(ids.contains(&"nccl.no_results"), "{ids:?}");
}
