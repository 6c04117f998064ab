//! Inputs modelled on public bug reports and forum threads (NVIDIA/nccl, NVIDIA/nccl-tests,
//! aws/aws-ofi-nccl, PyTorch), rewritten in our own words with made-up hosts and addresses, in
//! `nccl/tests/fixtures/field/`. Each test states the verdict the report deserves; the sources
//! are listed in `tests/field/README.md` ("NCCL logs and nccl-tests output").

use launchguard_nccl::file::parse_path;
use launchguard_nccl::table::Layout;
use launchguard_nccl::verdict::{check, CheckOptions, FileReport, Verdict};
use launchguard_nccl::Parsed;

fn load(name: &str) -> (Parsed, FileReport) {
    let path = format!("{}/tests/fixtures/field/{name}", env!("CARGO_MANIFEST_DIR"));
    let p = parse_path(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    let r = check(name, &p, &CheckOptions::default());
    (p, r)
}

fn ids(r: &FileReport) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.id).collect()
}

fn line(r: &FileReport, id: &str) -> String {
    r.findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(r)))
        .to_string()
}

#[test]
fn ofi_init_failure_then_socket_between_nodes_is_no_go_naming_the_plugin() {
    let (p, r) = load("ofi_init_failed_timestamped.log");
    assert_eq!(p.facts.hosts, vec!["trainer-a", "trainer-b"]);
    assert_eq!(r.verdict, Verdict::NoGo, "{:?}", ids(&r));
    let l = line(&r, "nccl.net_plugin_failed");
    assert!(
        l.contains("NET/OFI aws-ofi-nccl initialization failed"),
        "{l}"
    );
    assert!(
        l.contains("fell back to Socket (TCP) between 2 nodes"),
        "{l}"
    );
    assert!(l.contains("fi_info -p efa"), "{l}");
    // One finding per reason: the generic "not EFA" and "warn" lines do not repeat the cause,
    // and NCCL_IB_DISABLE=1 (the usual EFA setting) is not blamed.
    assert!(!ids(&r).contains(&"nccl.not_efa"), "{:?}", ids(&r));
    assert!(!ids(&r).contains(&"nccl.warn"));
    assert!(!ids(&r).contains(&"nccl.env.ib_disabled"));
}

#[test]
fn ofi_endpoint_error_is_named_first() {
    let (_, r) = load("ofi_endpoint_failed.log");
    assert_eq!(r.verdict, Verdict::NoGo);
    let l = line(&r, "nccl.net_plugin_failed");
    assert!(
        l.contains("the network plugin failed: NET/OFI Creating new endpoint for domain 0x7f00aa001000 failed: Invalid argument"),
        "{l}"
    );
}

#[test]
fn libfabric_symbol_version_dlerror_is_a_failed_plugin_not_a_missing_one() {
    let (p, r) = load("ofi_libfabric_symbol_version.log");
    assert_eq!(p.facts.nccl_version.as_deref(), Some("2.19.3+cuda12.2"));
    assert_eq!(p.facts.hosts, vec!["gpu-n1", "gpu-n2"]);
    assert_eq!(r.verdict, Verdict::NoGo);
    let l = line(&r, "nccl.net_plugin_failed");
    assert!(l.contains("version `FABRIC_1.7' not found"), "{l}");
    assert!(l.contains("newer Libfabric"), "{l}");
}

#[test]
fn missing_plugin_on_hosts_without_a_fabric_is_not_a_plugin_failure() {
    for name in [
        "no_plugin_single_node_socket.log",
        "no_plugin_two_nodes_socket.log",
        "p2p_level_loc_single_node.log",
    ] {
        let (p, r) = load(name);
        assert!(p.facts.net_plugin_absent, "{name}");
        assert!(
            p.facts.net_plugin_errors.is_empty(),
            "{name}: {:?}",
            p.facts.net_plugin_errors
        );
        assert!(!ids(&r).contains(&"nccl.net_plugin_failed"), "{name}");
        assert_eq!(r.verdict, Verdict::Warn, "{name}: {:?}", ids(&r));
    }
    let (_, r) = load("no_plugin_two_nodes_socket.log");
    let l = line(&r, "nccl.socket");
    assert!(
        l.contains("no external network plugin on these hosts"),
        "{l}"
    );
}

#[test]
fn p2p_level_loc_on_one_node_is_not_go() {
    let (_, r) = load("p2p_level_loc_single_node.log");
    assert_eq!(r.verdict, Verdict::Warn);
    let l = line(&r, "nccl.env.p2p_disabled");
    assert!(
        l.contains("NCCL_P2P_LEVEL set by environment to LOC"),
        "{l}"
    );
    let single = line(&r, "nccl.single_node");
    assert!(single.contains("1 SHM connections"), "{single}");
    assert!(!single.contains("P2P connections"), "{single}");
}

#[test]
fn overlay_and_loopback_socket_interfaces_get_the_ifname_fix() {
    let (_, r) = load("socket_overlay_interface.log");
    assert_eq!(r.verdict, Verdict::Warn);
    let l = line(&r, "nccl.socket_ifname");
    assert!(
        l.contains("flannel.1 (10.244.3.0, container bridge or virtual interface)"),
        "{l}"
    );
    assert!(l.contains("NCCL_SOCKET_IFNAME=enp1s0f0"), "{l}");
    let (_, r) = load("loopback_only_socket.log");
    let l = line(&r, "nccl.socket_ifname");
    assert!(l.contains("lo (127.0.0.1, loopback)"), "{l}");
    assert!(l.contains("bootstrap"), "{l}");
}

#[test]
fn host_label_before_the_nccl_prefix_keeps_hosts_and_providers() {
    let (p, r) = load("pdsh_host_prefix_efa.log");
    assert_eq!(p.facts.hosts, vec!["p4d-st-3", "p4d-st-12", "p4d-st-7"]);
    assert_eq!(p.facts.providers.len(), 3);
    assert_eq!(p.facts.providers[1].host.as_deref(), Some("p4d-st-12"));
    assert_eq!(p.facts.min_nics().map(|m| m.0), Some(4));
    assert!(!ids(&r).contains(&"nccl.not_efa"));
    assert!(
        !ids(&r).contains(&"nccl.net_plugin_failed"),
        "{:?}",
        ids(&r)
    );
    // An NCCL log excerpt without a benchmark table: a note (nccl.no_results, info), not a warning.
    assert_eq!(r.verdict, Verdict::Go, "{:?}", ids(&r));
}

#[test]
fn out_of_bounds_failures_in_old_and_new_layouts_are_no_go() {
    let (p, r) = load("nccl_tests_oob_failed.log");
    assert_eq!(p.tables[0].rows.len(), 3);
    assert_eq!(r.verdict, Verdict::NoGo);
    assert!(line(&r, "nccl.out_of_bounds").contains("Out of bounds values is 50"));
    let (p, r) = load("nccl_tests_legacy_no_hash.log");
    assert_eq!(p.tables.len(), 1);
    assert_eq!(p.tables[0].layout, Layout::Legacy);
    assert_eq!(p.tables[0].rows.len(), 3);
    assert_eq!(p.tables[0].footer.as_ref().unwrap().avg_busbw, Some(2.233));
    assert_eq!(r.verdict, Verdict::NoGo);
    assert!(line(&r, "nccl.out_of_bounds").contains("Out of bounds values is 24"));
}

#[test]
fn legacy_error_column_with_a_clean_footer_is_go() {
    let (p, r) = load("nccl_tests_legacy_error_column_ok.log");
    assert_eq!(p.tables[0].rows.len(), 3);
    assert_eq!(r.tables[0].busbw_out_of_place, Some(179.49));
    assert_eq!(r.verdict, Verdict::Go, "{:?}", ids(&r));
}

/// Causes of NCCL WARN lines (nccl/src/warn_rules.rs) on inputs after public reports: each names its
/// cause once, and the generic nccl.warn and the application's job error add nothing.
#[test]
fn warn_lines_with_a_known_cause_name_it() {
    for (file, id, says) in [
        (
            "ib_memlock_limit.log",
            "nccl.memlock",
            "LimitMEMLOCK=infinity",
        ),
        (
            "ib_retry_exceeded.log",
            "nccl.ib_completion_error",
            "transport retry counter exceeded",
        ),
        (
            "ib_local_protection.log",
            "nccl.ib_completion_error",
            "nvidia-peermem",
        ),
    ] {
        let (_, r) = load(file);
        assert_eq!(r.verdict, Verdict::NoGo, "{file}: {:?}", ids(&r));
        let found = ids(&r);
        assert_eq!(
            found.iter().filter(|i| **i == id).count(),
            1,
            "{file}: {found:?}"
        );
        assert!(!found.contains(&"nccl.warn"), "{file}: {found:?}");
        assert!(!found.contains(&"nccl.system_error"), "{file}: {found:?}");
        assert!(line(&r, id).contains(says), "{file}: {}", line(&r, id));
    }
}
