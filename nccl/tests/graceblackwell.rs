//! `launchguard nccl check --sku graceblackwell-mnnvl|graceblackwell-ib` on MNNVL-sized runs: an
//! 18-node GB300 rack (72 ranks) with all_reduce up to 16 GiB, the size the built-in baselines hold
//! at (`nccl/baselines/seeds.tsv`: 937 GB/s intra-rack over multi-node NVLink, 200 GB/s inter-rack
//! over InfiniBand). Fixtures: `tests/fixtures/` (synthetic; README there).

use launchguard_nccl::baseline::{for_sku, parse, SEEDS};
use launchguard_nccl::file::parse_path;
use launchguard_nccl::verdict::{check, CheckOptions};
use launchguard_nccl::Parsed;

const MNNVL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/synthetic/gb300_18n_mnnvl_all_reduce_16g.log"
);
const NO_MNNVL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/synthetic/gb300_18n_no_mnnvl_all_reduce_16g.log"
);

fn parsed(path: &str) -> Parsed {
    parse_path(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn against(p: &Parsed, sku: &str) -> Vec<(&'static str, String)> {
    let all = parse(SEEDS).expect("built-in baselines parse");
    let opts = CheckOptions {
        baseline: for_sku(&all, sku).unwrap_or_else(|e| panic!("{sku}: {e}")),
        ..CheckOptions::default()
    };
    check("gb300", p, &opts)
        .findings
        .into_iter()
        .map(|f| (f.id, f.what))
        .collect()
}

fn baseline_findings(found: &[(&'static str, String)]) -> Vec<String> {
    found
        .iter()
        .filter(|(id, _)| id.ends_with("_below_baseline") || *id == "nccl.size_missing")
        .map(|(id, what)| format!("{id}: {what}"))
        .collect()
}

#[test]
fn both_graceblackwell_baselines_are_all_reduce_at_16_gib() {
    let all = parse(SEEDS).unwrap();
    for (sku, busbw) in [
        ("graceblackwell-mnnvl", 937.0),
        ("graceblackwell-ib", 200.0),
    ] {
        let b = for_sku(&all, sku).unwrap();
        assert_eq!(b.len(), 1, "{sku}");
        assert_eq!(
            (b[0].collective.as_str(), b[0].size),
            ("all_reduce", 17179869184)
        );
        assert_eq!(b[0].busbw, busbw);
    }
}

#[test]
fn the_fixtures_are_72_ranks_up_to_16_gib() {
    for path in [MNNVL, NO_MNNVL] {
        let p = parsed(path);
        assert_eq!(p.facts.ranks.len(), 72, "{path}");
        assert_eq!(p.facts.hosts.len(), 18, "{path}");
        assert_eq!(p.tables.len(), 1, "{path}");
        let sizes: Vec<u64> = p.tables[0].rows.iter().map(|r| r.size).collect();
        assert_eq!(
            sizes,
            [2147483648, 4294967296, 8589934592, 17179869184],
            "{path}"
        );
    }
}

#[test]
fn an_mnnvl_run_at_937_meets_both_baselines() {
    let p = parsed(MNNVL);
    let mnnvl = against(&p, "graceblackwell-mnnvl");
    assert!(baseline_findings(&mnnvl).is_empty(), "{mnnvl:?}");
    let ib = against(&p, "graceblackwell-ib");
    assert!(baseline_findings(&ib).is_empty(), "{ib:?}");
}

#[test]
fn a_rack_run_without_mnnvl_is_below_the_mnnvl_baseline_only() {
    let p = parsed(NO_MNNVL);
    let mnnvl = baseline_findings(&against(&p, "graceblackwell-mnnvl"));
    assert_eq!(mnnvl.len(), 1, "{mnnvl:?}");
    assert!(
        mnnvl[0].starts_with("nccl.busbw_below_baseline: ")
            && mnnvl[0].contains("191.40 GB/s at 17179869184 B")
            && mnnvl[0].contains("937"),
        "{}",
        mnnvl[0]
    );
    // 191.40 of 200 is within the 10% tolerance of the inter-rack (InfiniBand) figure.
    let ib = baseline_findings(&against(&p, "graceblackwell-ib"));
    assert!(ib.is_empty(), "{ib:?}");
}
