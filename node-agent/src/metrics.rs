//! The Prometheus textfile for node_exporter's textfile collector (`--collector.textfile.directory`),
//! written atomically (a temporary file in the same directory, then `rename`), so the collector never
//! reads half a file. Names follow Prometheus conventions: `_total` counters, `_seconds` units.

use crate::gather::nofollow::{self, WalkError};
use crate::registry::NodeReport;
use crate::reports::Counters;
use launchguard_core::node::gpu::{
    sysfs_bus_id, xid_fault, FabricState, Gpu, GpuFacts, KernelLog, Nvml,
};
use std::fmt::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition text for the last check run, the report counters and the GPUs' last facts
/// ([`gpu_metrics`]).
pub fn render(rep: Option<&NodeReport>, counters: &Counters, gpus: Option<&GpuFacts>) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# HELP launchguard_check_status Node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
    let _ = writeln!(o, "# TYPE launchguard_check_status gauge");
    if let Some(r) = rep {
        for c in &r.checks {
            let _ = writeln!(
                o,
                "launchguard_check_status{{check=\"{}\"}} {}",
                esc(&c.id),
                c.status.exit_code()
            );
        }
        let _ = writeln!(o, "# HELP launchguard_node_status Worst node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
        let _ = writeln!(o, "# TYPE launchguard_node_status gauge");
        let _ = writeln!(o, "launchguard_node_status {}", r.exit_code);
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_duration_seconds Wall time of the last check run."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_duration_seconds gauge");
        let _ = writeln!(
            o,
            "launchguard_check_run_duration_seconds {:.6}",
            r.duration_ms / 1e3
        );
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_timestamp_seconds When the last check run finished."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_timestamp_seconds gauge");
        let _ = writeln!(o, "launchguard_check_run_timestamp_seconds {}", r.timestamp);
    }
    let _ = writeln!(o, "# HELP launchguard_reports_total Launch reports received from spank_launchguard.so, by source (slurmstepd: its verdict on a step; user_claim: what a user's srun sent, unverified) and action.");
    let _ = writeln!(o, "# TYPE launchguard_reports_total counter");
    for (source, action, n) in counters.accepted() {
        let _ = writeln!(
            o,
            "launchguard_reports_total{{source=\"{source}\",action=\"{action}\"}} {n}"
        );
    }
    let _ = writeln!(o, "# HELP launchguard_reports_dropped_total Launch reports or connections refused, by reason.");
    let _ = writeln!(o, "# TYPE launchguard_reports_dropped_total counter");
    for (reason, n) in counters.dropped() {
        let _ = writeln!(
            o,
            "launchguard_reports_dropped_total{{reason=\"{reason}\"}} {n}"
        );
    }
    if let Some(f) = gpus {
        gpu_metrics(&mut o, f);
    }
    o
}

/// Per-GPU series from the last GPU facts NVML gave (none when NVML was not asked, unusable or
/// timed out: `launchguard_check_status{check="node.gpu.nvml"}` says why). Every series carries
/// `gpu` (NVML's index, as `nvidia-smi` numbers them) and `uuid`; a value NVML does not give for a
/// GPU (retired pages on Hopper, NVLink on PCIe cards) has no series.
pub fn gpu_metrics(o: &mut String, f: &GpuFacts) {
    let Nvml::Read { gpus, .. } = &f.nvml else {
        return;
    };
    if gpus.is_empty() {
        return;
    }
    let id = |g: &Gpu| format!("gpu=\"{}\",uuid=\"{}\"", g.index, esc(&g.uuid));
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, u64)>| {
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(o, "{name}{{{labels}}} {v}");
        }
    };
    let per = |val: &dyn Fn(&Gpu) -> Option<u64>| -> Vec<(String, u64)> {
        gpus.iter().filter_map(|g| Some((id(g), val(g)?))).collect()
    };
    family(
        "launchguard_gpu_info",
        "gauge",
        "One series per GPU NVML lists (value 1): its name and PCI bus ID.",
        gpus.iter()
            .map(|g| {
                (
                    format!(
                        "{},name=\"{}\",pci_bus_id=\"{}\"",
                        id(g),
                        esc(&g.name),
                        esc(&g.pci_bus_id)
                    ),
                    1,
                )
            })
            .collect(),
    );
    family(
        "launchguard_gpu_ecc_uncorrected_errors_total",
        "counter",
        "Uncorrectable ECC errors since the driver loaded (NVML's volatile counter).",
        per(&|g| g.ecc_uncorrected),
    );
    family(
        "launchguard_gpu_row_remap_pending",
        "gauge",
        "1 when a row remap waits for a GPU reset (node.gpu.row_remap).",
        per(&|g| g.row_remap.map(|r| u64::from(r.pending))),
    );
    family(
        "launchguard_gpu_row_remap_failed",
        "gauge",
        "1 when a row remap failed (node.gpu.row_remap).",
        per(&|g| g.row_remap.map(|r| u64::from(r.failed))),
    );
    family(
        "launchguard_gpu_remapped_rows",
        "gauge",
        "Memory rows remapped, by the kind of error that caused it.",
        gpus.iter()
            .filter_map(|g| Some((g, g.row_remap?)))
            .flat_map(|(g, r)| {
                [
                    (
                        format!("{},cause=\"correctable\"", id(g)),
                        u64::from(r.correctable),
                    ),
                    (
                        format!("{},cause=\"uncorrectable\"", id(g)),
                        u64::from(r.uncorrectable),
                    ),
                ]
            })
            .collect(),
    );
    family(
        "launchguard_gpu_retired_pages_pending",
        "gauge",
        "1 when memory pages wait for retirement at the next driver load (node.gpu.retired_pages).",
        per(&|g| g.retired_pages_pending.map(u64::from)),
    );
    family(
        "launchguard_gpu_persistence_mode",
        "gauge",
        "1 when persistence mode is on (node.gpu.persistence).",
        per(&|g| g.persistence.map(u64::from)),
    );
    family(
        "launchguard_gpu_pcie_link_width",
        "gauge",
        "PCIe link width in lanes now (node.gpu.pcie).",
        per(&|g| g.pcie_width.map(|(c, _)| u64::from(c))),
    );
    family(
        "launchguard_gpu_pcie_link_width_max",
        "gauge",
        "The PCIe link's maximum width in lanes.",
        per(&|g| g.pcie_width.map(|(_, m)| u64::from(m))),
    );
    family(
        "launchguard_gpu_nvlink_links",
        "gauge",
        "NVLink links NVML answers for, by state (node.gpu.nvlink).",
        gpus.iter()
            .filter_map(|g| Some((g, g.nvlink.as_ref()?)))
            .flat_map(|(g, l)| {
                [
                    (format!("{},state=\"active\"", id(g)), u64::from(l.active())),
                    (format!("{},state=\"inactive\"", id(g)), l.down.len() as u64),
                ]
            })
            .collect(),
    );
    family(
        "launchguard_gpu_fabric_state",
        "gauge",
        "NVLink fabric registration (nvmlGpuFabricState_t): 0 not supported, 1 not started, 2 in progress, 3 completed (node.gpu.fabric).",
        per(&|g| {
            g.fabric.as_ref().ok().map(|i| match i.state {
                FabricState::NotSupported => 0,
                FabricState::NotStarted => 1,
                FabricState::InProgress => 2,
                FabricState::Completed => 3,
            })
        }),
    );
    // Node-fault Xid records of this boot per GPU and code (the kernel log names the GPU by bus).
    if let KernelLog::Read { xids, .. } = &f.kernel {
        let mut rows: std::collections::BTreeMap<(u32, u32), (String, u64)> = Default::default();
        for x in xids.iter().filter(|x| xid_fault(x.code).is_some()) {
            let bus = x.bus.to_ascii_lowercase();
            let Some(g) = gpus
                .iter()
                .find(|g| sysfs_bus_id(&g.pci_bus_id).starts_with(&bus))
            else {
                continue;
            };
            rows.entry((g.index, x.code))
                .or_insert_with(|| (format!("{},code=\"{}\"", id(g), x.code), 0))
                .1 += 1;
        }
        family(
            "launchguard_gpu_xid_records_total",
            "counter",
            "Kernel log records of this boot with an Xid that NVIDIA classes as a GPU, memory, link or firmware fault (node.gpu.xid), by code.",
            rows.into_values().collect(),
        );
    }
}

/// Writes `text` to `path` atomically; does nothing when `path` is empty or its directory is absent.
///
/// Root writes here, so the directory is reached from `/` with `openat(…, O_NOFOLLOW |
/// O_DIRECTORY)` at every component ([`nofollow::walk_dir_strict`], as the plugin's enroot runtime
/// repair walks), and the file is created and renamed relative to that descriptor
/// (`openat(O_CREAT | O_EXCL | O_NOFOLLOW)`, `renameat`). Refused, with an error that says where:
/// a symlink at any component (a user's link to `/etc` must not make root write there), and a
/// directory on the way owned by an account other than root and the textfile directory's own
/// owner (node_exporter's account may own that one). Errors: those, and the I/O's own.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<bool> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(false);
    };
    if path.as_os_str().is_empty() || dir.as_os_str().is_empty() {
        return Ok(false);
    }
    let refuse = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("not written: {why}"),
        )
    };
    let w = match nofollow::walk_dir_strict(dir) {
        Ok(w) => w,
        Err(WalkError::Missing { .. }) => return Ok(false),
        Err(e @ WalkError::Symlink { .. }) => {
            return Err(refuse(format!(
                "{e}; launchguard never writes through a symlink as root"
            )))
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    let target_owner = w.chain.last().map_or(0, |l| l.uid);
    if let Some(l) = w.chain.iter().find(|l| l.uid != 0 && l.uid != target_owner) {
        return Err(refuse(format!(
            "'{}' is owned by {}, neither root nor the owner of '{}' ({}), so that account could swap what lies under it",
            l.path,
            nofollow::account(l.uid),
            w.path.display(),
            nofollow::account(target_owner)
        )));
    }
    let tmp = std::ffi::OsString::from(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let fd = Some(w.dir.as_raw_fd());
    // A leftover (or planted) entry at the temporary name goes first; the create never follows one.
    let _ = nix::unistd::unlinkat(fd, tmp.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    {
        use std::io::Write;
        let mut f = nofollow::create_at(&w.dir, &tmp, 0o644)?;
        f.write_all(text.as_bytes())?;
    }
    nix::fcntl::renameat(fd, tmp.as_os_str(), fd, name).map_err(|e| {
        let _ = nix::unistd::unlinkat(fd, tmp.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
        std::io::Error::from(e)
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, MetadataExt};

    /// A private directory, writable by its owner only (whoever runs the tests).
    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/metrics-tests")
            .join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn writes_the_file_and_skips_a_missing_directory() {
        let d = dir("plain");
        assert!(write_atomic(&d.join("launchguard.prom"), "a 1\n").unwrap());
        assert_eq!(
            std::fs::read_to_string(d.join("launchguard.prom")).unwrap(),
            "a 1\n"
        );
        assert!(!write_atomic(&d.join("absent/launchguard.prom"), "x").unwrap());
        assert!(!write_atomic(Path::new(""), "x").unwrap());
    }

    /// Smallest input: the textfile's directory is a symlink to another directory. Before: the file
    /// was created in the link's target (as root: `/etc/…/launchguard.prom`).
    #[test]
    fn never_writes_through_a_directory_symlink() {
        let d = dir("link");
        let target = d.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        symlink(&target, d.join("prom")).unwrap();
        let e = write_atomic(&d.join("prom/launchguard.prom"), "x").unwrap_err();
        assert!(e.to_string().contains("is a symlink owned by"), "{e}");
        assert!(!target.join("launchguard.prom").exists());
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    /// A directory on the way owned by another account than root and the textfile directory's
    /// owner is refused (as root only: it needs a chown).
    #[test]
    fn refuses_a_directory_owned_by_a_third_account() {
        if nix::unistd::geteuid().as_raw() != 0 {
            return;
        }
        let d = dir("owner");
        let mid = d.join("mid");
        let last = mid.join("prom");
        std::fs::create_dir_all(&last).unwrap();
        nix::unistd::chown(&mid, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let e = write_atomic(&last.join("launchguard.prom"), "x").unwrap_err();
        assert!(e.to_string().contains("is owned by uid 4242"), "{e}");
        // Owned by the same account as the textfile directory: accepted.
        nix::unistd::chown(&last, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        assert!(write_atomic(&last.join("launchguard.prom"), "x").unwrap());
        assert_eq!(
            std::fs::metadata(last.join("launchguard.prom"))
                .unwrap()
                .uid(),
            0
        );
    }

    use launchguard_core::node::Status;
    use launchguard_core::report::CheckLine;

    /// The alerting rules the package ships.
    const ALERTS: &str = include_str!("../../packaging/prometheus/launchguard-alerts.yml");

    fn sample() -> String {
        let rep = NodeReport {
            schema: 1,
            node: "gpu1".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Critical,
            exit_code: 2,
            duration_ms: 8.0,
            timestamp: 1_700_000_000,
            checks: vec![CheckLine {
                id: "node.munge.key_mode".into(),
                status: Status::Critical,
                message: "launchguard: node.munge.key_mode: …".into(),
                duration_ms: 0.1,
                user_controlled: None,
            }],
            facts: Default::default(),
        };
        render(Some(&rep), &Counters::default(), Some(&gpu_sample()))
    }

    /// The real H200's facts (node-agent/tests/fixtures/h200/gpu.json) with an Xid 79 on its bus.
    fn gpu_sample() -> GpuFacts {
        let mut f: GpuFacts =
            serde_json::from_str(include_str!("../tests/fixtures/h200/gpu.json")).unwrap();
        f.kernel = KernelLog::Read {
            uptime_s: 100,
            xids: vec![launchguard_core::node::gpu::XidEvent {
                usec: 50_000_000,
                bus: "0000:00:06".into(),
                code: 79,
                text: "GPU has fallen off the bus.".into(),
            }],
        };
        f
    }

    /// Per-GPU series: index and UUID labels on each, what NVML did not give left out.
    #[test]
    fn each_gpu_has_its_own_series() {
        let text = sample();
        let u = "gpu=\"0\",uuid=\"GPU-154fba30-3c51-e906-5c06-b4031be5b289\"";
        for line in [
            format!("launchguard_gpu_info{{{u},name=\"NVIDIA H200\",pci_bus_id=\"00000000:00:06.0\"}} 1"),
            format!("launchguard_gpu_ecc_uncorrected_errors_total{{{u}}} 0"),
            format!("launchguard_gpu_row_remap_pending{{{u}}} 0"),
            format!("launchguard_gpu_remapped_rows{{{u},cause=\"correctable\"}} 46"),
            format!("launchguard_gpu_persistence_mode{{{u}}} 1"),
            format!("launchguard_gpu_pcie_link_width{{{u}}} 16"),
            format!("launchguard_gpu_fabric_state{{{u}}} 0"),
            format!("launchguard_gpu_xid_records_total{{{u},code=\"79\"}} 1"),
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
        // Not given by NVML on the H200: no series.
        assert!(
            !text.contains("launchguard_gpu_retired_pages_pending"),
            "{text}"
        );
        assert!(!text.contains("launchguard_gpu_nvlink_links"), "{text}");
        // NVML timed out: no per-GPU series at all.
        let mut f = gpu_sample();
        f.nvml = Nvml::TimedOut(5);
        let mut o = String::new();
        gpu_metrics(&mut o, &f);
        assert_eq!(o, "");
    }

    /// Every metric the alerting rules use is one the agent writes, with the labels and label
    /// values they select on: renaming a metric without its rules fails here.
    #[test]
    fn the_alert_rules_use_the_metrics_we_write() {
        let text = sample();
        let names = regex::Regex::new(r"\b(launchguard_[a-z_]+)(\{[^}]*\})?").unwrap();
        let mut seen = 0;
        for c in names.captures_iter(ALERTS) {
            let name = &c[1];
            seen += 1;
            assert!(
                text.contains(&format!("# TYPE {name} ")),
                "launchguard-alerts.yml uses {name}, which the textfile does not have:\n{text}"
            );
            if let Some(sel) = c.get(2) {
                for m in sel.as_str().trim_matches(['{', '}']).split(',') {
                    let m = m.trim().replace("=~", "=");
                    assert!(
                        text.lines().any(|l| l.starts_with(name) && l.contains(&m)),
                        "launchguard-alerts.yml selects {name}{{{m}}}, which the textfile never writes"
                    );
                }
            }
        }
        assert!(seen >= 3, "the rules name launchguard's metrics");
    }

    /// Names follow Prometheus's naming guide: the `launchguard_` prefix, base units (`_seconds`),
    /// `_total` exactly on counters, snake_case label names.
    #[test]
    fn names_follow_the_prometheus_naming_guide() {
        let text = sample();
        let ty = regex::Regex::new(r"^# TYPE ([a-z_:][a-z0-9_:]*) (counter|gauge)$").unwrap();
        let mut n = 0;
        for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let c = ty
                .captures(l)
                .unwrap_or_else(|| panic!("bad TYPE line: {l}"));
            let (name, kind) = (&c[1], &c[2]);
            assert!(name.starts_with("launchguard_"), "{name}");
            assert_eq!(
                name.ends_with("_total"),
                kind == "counter",
                "{name} is a {kind}"
            );
            assert!(
                !name.contains("_ms") && !name.contains("milli"),
                "{name}: base units"
            );
            n += 1;
        }
        assert_eq!(n, 16, "{text}");
        let label = regex::Regex::new(r"\{([a-z_]+)=").unwrap();
        for c in label.captures_iter(&text) {
            assert!(!c[1].starts_with("__"), "{}", &c[1]);
        }
    }
}
