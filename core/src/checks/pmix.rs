//! `launch.pmix`: a launch through Slurm's `mpi/pmix` that surely fails, judged where it can be seen.
//!
//! - srun, before allocation: srun takes its MPI type from `--mpi`, else `SLURM_MPI_TYPE`, else
//!   slurm.conf's `MpiDefault` (srun(1), slurm.conf(5)), and loads `mpi_<type>.so` from PluginDir
//!   right after option processing (`mpi_g_client_init` in srun_job.c, after the SPANK
//!   `init_post_opt` callback). A missing plugin stops srun with `Invalid MPI type '<type>', --mpi=list
//!   for acceptable types`; a pmix plugin whose PMIx library is missing stops it with `pmi/pmix: can
//!   not load PMIx library` (`_libpmix_open` in Slurm's `mpi_pmix.c`: `libpmix.so` up to 23.02.4,
//!   `libpmix.so.2` after, from the PMIx directory Slurm was built with). [`check_srun`] says so in
//!   one line with the fix, before Slurm's own words. Compute nodes that lack them are the agent's
//!   `node.pmix.*` (slurmstepd loads the plugin before any SPANK callback runs).
//! - the task, inside a Pyxis container: Slurm's PMIx server tells each rank where it is through
//!   the variables OpenPMIx's `PMIx_server_setup_fork` exports (measured on 22.05 with PMIx 4.2:
//!   `PMIX_SERVER_TMPDIR=/var/spool/slurmd/pmix.<job>.<step>/`, `PMIX_GDS_MODULE=ds21,ds12,hash`,
//!   `PMIX_DSTORE_21_BASE_PATH` under that directory, `PMIX_SECURITY_MODE=munge,native`). The
//!   image's PMIx client maps the server's job data from that directory (gds ds21/ds12) and proves
//!   who it is with the first security (psec) component it shares with the server. enroot's PMIx
//!   hook (`hooks/extra/50-slurm-pmi.sh`) bind-mounts the directory into the container and sets
//!   `PMIX_MCA_psec`/`PMIX_MCA_gds` from the server's lists; without it [`check_task`] sees what the
//!   rank will miss, and whether its client has another component to fall back on.

use super::env::Env;
use crate::argv::ParsedArgv;
use crate::finding::{clip, CheckKind, Finding, Severity};

/// One installed `mpi_pmix*.so` and the PMIx library it opens (shared with `node.pmix.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmixPlugin {
    /// The plugin file.
    pub path: String,
    /// The library file name it opens (`libpmix.so` or `libpmix.so.2`).
    pub lib_name: String,
    /// `Ok(path)` of the library found, or `Err(places searched)`.
    pub lib: Result<String, Vec<String>>,
}

/// The first Slurm release whose Debian packages carry no pmix plugin: slurm-wlm 26.05.5-1 ("Remove
/// pmix (Closes: #1149781)" in its changelog.Debian; sid's `slurm-wlm-basic-plugins` 26.05.5-1 ships
/// `mpi_cray_shasta.so` and `mpi_pmi2.so` only, trixie's 24.11.5 `mpi_pmix.so` and `mpi_pmix_v5.so`).
pub const DEBIAN_WITHOUT_PMIX: (u16, u16, u16) = (26, 5, 5);

/// `26.05.5` (as `slurmd -V` ends, or `24.11.5-4+deb13u1`) as (26, 5, 5); `None` for anything else.
pub fn version_triple(v: &str) -> Option<(u16, u16, u16)> {
    let mut it = v.trim().split(['.', '-', '+', '~']);
    let mut n = || it.next()?.parse::<u16>().ok();
    Some((n()?, n()?, n()?))
}

/// How an admin gets Slurm's pmix plugin (`mpi_pmix*.so`) onto a node, for a fix (the words after
/// `admin: `), by distribution and Slurm release. `debian`: `/etc/debian_version` exists (Debian,
/// Ubuntu); `slurm`: the node's Slurm as (major, minor, micro), `None` when unknown. Debian's
/// `slurm-wlm-basic-plugins` carries the plugin up to 26.05.4 and none from
/// [`DEBIAN_WITHOUT_PMIX`] on, where only a Slurm built `--with-pmix` has it (Slurm's MPI guide,
/// "PMIx": configure with `--with-pmix=<PMIx dir>`).
pub fn plugin_source(debian: bool, slurm: Option<(u16, u16, u16)>) -> &'static str {
    match (debian, slurm) {
        (true, Some(v)) if v >= DEBIAN_WITHOUT_PMIX => {
            "Debian's Slurm packages carry no pmix plugin from slurm-wlm 26.05.5-1 on (Debian bug #1149781): build Slurm with --with-pmix (Slurm's MPI guide) and install its mpi_pmix.so on every node"
        }
        (true, Some(_)) => "install Slurm's pmix plugin on every node (Debian, Ubuntu: slurm-wlm-basic-plugins)",
        (true, None) => "install Slurm's pmix plugin on every node (Debian, Ubuntu: slurm-wlm-basic-plugins up to Slurm 26.05.4; from slurm-wlm 26.05.5-1 on Debian carries none: build Slurm with --with-pmix)",
        (false, _) => "install Slurm's pmix plugin on every node (a Slurm built with --with-pmix, as Slurm's MPI guide says; RHEL: slurm built --with-pmix)",
    }
}

/// Where srun's MPI type comes from (srun(1), `--mpi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiSource {
    /// `--mpi=TYPE`.
    Option,
    /// `SLURM_MPI_TYPE` in srun's environment.
    InputEnv,
    /// slurm.conf's `MpiDefault`.
    MpiDefault,
}

/// The MPI type an srun will load, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiRequest {
    /// The type as given (`pmix`, `pmix_v4`…).
    pub mpi_type: String,
    /// Where it came from.
    pub source: MpiSource,
}

impl MpiRequest {
    fn label(&self) -> String {
        let t = clip(&self.mpi_type, 40);
        match self.source {
            MpiSource::Option => format!("srun --mpi={t}"),
            MpiSource::InputEnv => format!("SLURM_MPI_TYPE={t}"),
            MpiSource::MpiDefault => format!("MpiDefault={t} (slurm.conf)"),
        }
    }
}

/// The pmix type an srun will load, when it loads one: `--mpi`, else `SLURM_MPI_TYPE`, else
/// `mpi_default` (slurm.conf's `MpiDefault`, `None` when unknown). `None` for another type,
/// `--mpi=list` (srun only prints the list) or `none`.
pub fn requested(
    argv: &ParsedArgv,
    env: &(impl Env + ?Sized),
    mpi_default: Option<&str>,
) -> Option<MpiRequest> {
    let (t, source) = if let Some(v) = argv.value("mpi") {
        (v.to_string(), MpiSource::Option)
    } else if let Some(v) = env.get("SLURM_MPI_TYPE").filter(|v| !v.is_empty()) {
        (v, MpiSource::InputEnv)
    } else {
        (mpi_default?.to_string(), MpiSource::MpiDefault)
    };
    let t = t.trim().to_string();
    t.to_ascii_lowercase()
        .starts_with("pmix")
        .then_some(MpiRequest {
            mpi_type: t,
            source,
        })
}

/// Slurm's MPI plugins where srun runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalMpi {
    /// PluginDir searched (colon-separated).
    pub plugin_dir: String,
    /// Every MPI type offered (`srun --mpi=list`).
    pub offered: Vec<String>,
    /// The requested type's plugin and its library, when the plugin is there.
    pub plugin: Option<PmixPlugin>,
    /// The package that provides the library here (for the fix).
    pub lib_package: &'static str,
    /// How an admin gets the pmix plugin here ([`plugin_source`]), for the fix.
    pub plugin_source: &'static str,
}

/// Judges an srun that loads a pmix plugin against this node's plugins: an error when the plugin or
/// its PMIx library is missing (srun surely stops).
pub fn check_srun(req: &MpiRequest, local: &LocalMpi) -> Vec<Finding> {
    let label = req.label();
    let t = clip(&req.mpi_type, 40);
    let others_pmix: Vec<&str> = local
        .offered
        .iter()
        .filter(|o| o.starts_with("pmix") && **o != req.mpi_type)
        .map(String::as_str)
        .collect();
    let offered = if local.offered.is_empty() {
        "none".to_string()
    } else {
        clip(&local.offered.join(", "), 80)
    };
    let Some(p) = &local.plugin else {
        let fix = match (others_pmix.first(), req.source) {
            (Some(o), MpiSource::MpiDefault) => format!("pass --mpi={o} to srun (srun --mpi=list shows what this node offers); admin: set MpiDefault={o} in slurm.conf"),
            (Some(o), _) => format!("use --mpi={o} (srun --mpi=list shows what this node offers)"),
            (None, MpiSource::MpiDefault) => format!("pass --mpi=pmi2 (or --mpi=none) to srun if your MPI can use it; admin: {}, or set MpiDefault=none", local.plugin_source),
            (None, _) => format!("use --mpi=pmi2 (or --mpi=none) if your MPI can use it; admin: {}", local.plugin_source),
        };
        return vec![Finding {
            check: CheckKind::Pmix,
            severity: Severity::Error,
            what: format!(
                "{label} asks for Slurm's mpi/{t} plugin, which is not in {} (this node offers: {offered})",
                clip(&local.plugin_dir, 80)
            ),
            why: format!("srun stops with 'Invalid MPI type '{t}', --mpi=list for acceptable types' before the job starts"),
            fix,
        }];
    };
    let Err(searched) = &p.lib else {
        return vec![];
    };
    vec![Finding {
        check: CheckKind::Pmix,
        severity: Severity::Error,
        what: format!(
            "{label}: Slurm's {} is here but the PMIx library it opens is not (looked for {})",
            clip(&p.path, 80),
            clip(&searched.join(", "), 120)
        ),
        why: "srun stops with 'pmi/pmix: can not load PMIx library', and slurmstepd does the same on every node without it".into(),
        fix: format!(
            "admin: install {} on every node; meanwhile use --mpi=pmi2 if your MPI can use it",
            local.lib_package
        ),
    }]
}

/// What a task of a container step sees of Slurm's PMIx server (`task_init`, inside the container).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskPmix {
    /// `PMIX_SERVER_TMPDIR`: the server's directory.
    pub server_tmpdir: String,
    /// That directory exists in the task's view.
    pub tmpdir_visible: bool,
    /// `PMIX_GDS_MODULE`: the server's data-store components, in its order.
    pub gds_module: Option<String>,
    /// `PMIX_MCA_gds`: the client's choice, when the user or a hook set it.
    pub mca_gds: Option<String>,
    /// `PMIX_SECURITY_MODE`: the server's security components, in its order.
    pub security_mode: Option<String>,
    /// `PMIX_MCA_psec`: the client's choice, when set.
    pub mca_psec: Option<String>,
    /// munged's socket, as the node's munge client would reach it.
    pub munge_socket: String,
    /// That socket exists in the task's view.
    pub munge_visible: bool,
}

/// The components of a comma list, in order; `None` for an exclusion list (`^…`: the rest of what the
/// client has, which is not known here) or an empty one.
fn components(list: &str) -> Option<Vec<&str>> {
    let c: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    (!c.is_empty() && !c.iter().any(|c| c.starts_with('^'))).then_some(c)
}

/// The list the rank's PMIx client will take for a framework: `PMIX_MCA_<fw>` when the user (or
/// enroot's hook) set it, else the server's, with its label for the line.
fn chosen(mca: Option<&str>, mca_name: &str, server: Option<&str>) -> Option<(String, bool)> {
    match mca {
        Some(m) => Some((format!("{mca_name}={}", clip(m, 40)), true)),
        None => server.map(|s| (clip(s, 40), false)),
    }
}

/// Judges a container task's view of Slurm's PMIx server (see the module's text). Measured on Slurm
/// 22.05's mpi/pmix with OpenPMIx 4.2 in an enroot container without enroot's PMIx hook: the client
/// skips a gds component whose directory is missing (printing `PMIX ERROR: ERROR in file
/// …gds_ds12_lock_pthread.c`) and a psec component that cannot init (munge without munged's socket),
/// and takes the next in its list; with none left PMIx_Init fails with `We were unable to find any
/// usable plugins for the GDS (PSEC) framework`. So a list with another component is a warning (or
/// nothing), a list of only the unusable ones an error.
pub fn check_task(t: &TaskPmix) -> Vec<Finding> {
    let mut out = vec![];
    let gds = chosen(
        t.mca_gds.as_deref(),
        "PMIX_MCA_gds",
        t.gds_module.as_deref(),
    );
    let gds_list = t
        .mca_gds
        .as_deref()
        .or(t.gds_module.as_deref())
        .and_then(components);
    if let (false, Some((label, by_user)), Some(list)) = (t.tmpdir_visible, gds, gds_list) {
        let shared = list.iter().any(|g| g.starts_with("ds"));
        let other = list.iter().any(|g| !g.starts_with("ds"));
        let what = format!(
            "inside the container the PMIx server's directory PMIX_SERVER_TMPDIR={} is missing",
            clip(&t.server_tmpdir, 80)
        );
        const HOOK: &str = "admin: enable enroot's PMIx hook on every node (copy enroot's hooks/extra/50-slurm-pmi.sh into /etc/enroot/hooks.d: it mounts SlurmdSpoolDir/pmix.JOB.STEP into the container and sets PMIX_MCA_psec/gds/ptl)";
        if shared && other {
            out.push(Finding {
                check: CheckKind::Pmix,
                severity: Severity::Warning,
                what,
                why: format!(
                    "each rank's PMIx cannot map the server's shared-memory store (gds {label}), prints 'PMIX ERROR: ERROR in file …gds_ds12_lock_pthread.c' and falls back to asking the server over its socket: the ranks still start, and every rank fetches the job's data by message"
                ),
                fix: format!("export PMIX_MCA_gds=hash before srun (no error lines); {HOOK}"),
            });
        } else if shared {
            out.push(Finding {
                check: CheckKind::Pmix,
                severity: Severity::Error,
                what,
                why: format!(
                    "{label} leaves no other store, so PMIx_Init fails on every rank ('We were unable to find any usable plugins for the GDS framework')"
                ),
                fix: if by_user {
                    format!("unset PMIX_MCA_gds, or export PMIX_MCA_gds=hash before srun; {HOOK}")
                } else {
                    format!("export PMIX_MCA_gds=hash before srun; {HOOK}")
                },
            });
        }
    }
    let psec = chosen(
        t.mca_psec.as_deref(),
        "PMIX_MCA_psec",
        t.security_mode.as_deref(),
    );
    let psec_list = t
        .mca_psec
        .as_deref()
        .or(t.security_mode.as_deref())
        .and_then(components);
    if let (false, Some((label, by_user)), Some(list)) = (t.munge_visible, psec, psec_list) {
        if list.iter().all(|p| *p == "munge") {
            let dir = std::path::Path::new(&t.munge_socket)
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "/run/munge".into());
            let server = t.security_mode.as_deref().map(|m| clip(m, 40));
            out.push(Finding {
                check: CheckKind::Pmix,
                severity: Severity::Error,
                what: format!(
                    "{} leaves the rank's PMIx only munge, but munged's socket {} is not inside the container",
                    if by_user { label } else { format!("PMIx security mode {label}") },
                    clip(&t.munge_socket, 60)
                ),
                why: "the client's munge component cannot init without munged and there is no other, so PMIx_Init fails on every rank ('We were unable to find any usable plugins for the PSEC framework')".into(),
                fix: match (by_user, server) {
                    (true, Some(s)) if s.split(',').any(|c| c.trim() != "munge") => format!(
                        "unset PMIX_MCA_psec (Slurm's PMIx server offers {s}; the client takes the next one it can use) or export PMIX_MCA_psec=native, or add --container-mounts={dir} to srun"
                    ),
                    (true, _) => format!("unset PMIX_MCA_psec, or add --container-mounts={dir} to srun"),
                    (false, _) => format!(
                        "add --container-mounts={dir} to srun; admin: mount {dir} into containers (a line in /etc/enroot/mounts.d) or let Slurm's PMIx server offer native too"
                    ),
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::{parse, Tool};

    fn req(argv: &[&str], env: &[(&str, &str)], default: Option<&str>) -> Option<MpiRequest> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        requested(&parse(Tool::Srun, &argv), env, default)
    }

    #[test]
    fn the_type_follows_srun_precedence() {
        let r = |a: &[&str], e: &[(&str, &str)], d| req(a, e, d).map(|r| (r.mpi_type, r.source));
        assert_eq!(
            r(
                &["srun", "--mpi=pmix", "x"],
                &[("SLURM_MPI_TYPE", "pmi2")],
                None
            ),
            Some(("pmix".into(), MpiSource::Option))
        );
        assert_eq!(
            r(&["srun", "--mpi", "pmix_v5", "x"], &[], None),
            Some(("pmix_v5".into(), MpiSource::Option))
        );
        assert_eq!(r(&["srun", "--mpi=pmi2", "x"], &[], Some("pmix")), None);
        assert_eq!(r(&["srun", "--mpi=list"], &[], None), None);
        assert_eq!(
            r(&["srun", "x"], &[("SLURM_MPI_TYPE", "pmix")], Some("none")),
            Some(("pmix".into(), MpiSource::InputEnv))
        );
        assert_eq!(
            r(&["srun", "x"], &[], Some("pmix_v4")),
            Some(("pmix_v4".into(), MpiSource::MpiDefault))
        );
        assert_eq!(r(&["srun", "x"], &[], Some("none")), None);
        assert_eq!(r(&["srun", "x"], &[], None), None);
    }

    #[test]
    fn the_plugins_source_follows_the_distribution_and_release() {
        // Debian 12 (22.05.8) and 13 (24.11.5) ship mpi_pmix.so in slurm-wlm-basic-plugins; sid's
        // 26.05.5-1 ships none.
        for v in ["22.05.8", "24.11.5-4+deb13u1", "26.05.4"] {
            let t = plugin_source(true, version_triple(v));
            assert!(t.contains("slurm-wlm-basic-plugins)"), "{v}: {t}");
        }
        let sid = plugin_source(true, version_triple("26.05.5"));
        assert!(!sid.contains("slurm-wlm-basic-plugins"), "{sid}");
        assert!(
            sid.contains("--with-pmix") && sid.contains("#1149781"),
            "{sid}"
        );
        assert_eq!(plugin_source(true, version_triple("27.11.0")), sid);
        assert!(plugin_source(true, None).contains("up to Slurm 26.05.4"));
        let rhel = plugin_source(false, version_triple("26.05.5"));
        assert!(
            rhel.contains("--with-pmix") && !rhel.contains("slurm-wlm"),
            "{rhel}"
        );
        assert_eq!(version_triple("unknown: timed out"), None);
        assert_eq!(version_triple("26.05"), None);
    }

    fn local(offered: &[&str], plugin: Option<Result<String, Vec<String>>>) -> LocalMpi {
        LocalMpi {
            plugin_dir: "/usr/lib/x86_64-linux-gnu/slurm-wlm".into(),
            offered: offered.iter().map(|s| s.to_string()).collect(),
            plugin: plugin.map(|lib| PmixPlugin {
                path: "/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so".into(),
                lib_name: "libpmix.so.2".into(),
                lib,
            }),
            lib_package: "libpmix2",
            // Debian sid's Slurm 26.05.5, whose PluginDir offers cray_shasta, none and pmi2
            plugin_source: plugin_source(true, Some((26, 5, 5))),
        }
    }

    #[test]
    fn a_missing_plugin_is_an_error_with_what_the_node_offers() {
        let r = req(&["srun", "--mpi=pmix", "x"], &[], None).unwrap();
        let f = check_srun(&r, &local(&["cray_shasta", "none", "pmi2"], None));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.pmix: srun --mpi=pmix asks for Slurm's mpi/pmix plugin, which is not in \
             /usr/lib/x86_64-linux-gnu/slurm-wlm (this node offers: cray_shasta, none, pmi2); srun stops with \
             'Invalid MPI type 'pmix', --mpi=list for acceptable types' before the job starts; use --mpi=pmi2 \
             (or --mpi=none) if your MPI can use it; admin: Debian's Slurm packages carry no pmix plugin \
             from slurm-wlm 26.05.5-1 on (Debian bug #1149781): build Slurm with --with-pmix (Slurm's MPI \
             guide) and install its mpi_pmix.so on every node"
        );
        // another pmix version is offered: name it
        let r = req(&["srun", "--mpi=pmix_v5", "x"], &[], None).unwrap();
        let f = check_srun(&r, &local(&["none", "pmix", "pmix_v4"], None));
        assert!(f[0].fix.starts_with("use --mpi=pmix "), "{}", f[0].fix);
        let r = req(&["srun", "x"], &[], Some("pmix_v5")).unwrap();
        let f = check_srun(&r, &local(&["none", "pmix_v4"], None));
        assert!(
            f[0].what
                .starts_with("MpiDefault=pmix_v5 (slurm.conf) asks"),
            "{}",
            f[0].what
        );
        assert!(f[0].fix.contains("MpiDefault=pmix_v4"), "{}", f[0].fix);
    }

    #[test]
    fn a_missing_library_is_an_error_and_a_present_one_is_silent() {
        let r = req(&["srun", "--mpi=pmix", "x"], &[], None).unwrap();
        let f = check_srun(
            &r,
            &local(
                &["pmix", "pmix_v5"],
                Some(Err(vec![
                    "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2".into(),
                ])),
            ),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0]
            .what
            .contains("looked for /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2"));
        assert!(f[0].why.contains("can not load PMIx library"));
        assert!(f[0].fix.contains("libpmix2"));
        let ok = local(&["pmix", "pmix_v5"], Some(Ok("/x/libpmix.so.2".into())));
        assert!(check_srun(&r, &ok).is_empty());
    }

    fn task() -> TaskPmix {
        TaskPmix {
            server_tmpdir: "/var/spool/slurmd/pmix.2410.0/".into(),
            tmpdir_visible: true,
            gds_module: Some("ds21,ds12,hash".into()),
            mca_gds: None,
            security_mode: Some("munge,native".into()),
            mca_psec: None,
            munge_socket: "/run/munge/munge.socket.2".into(),
            munge_visible: true,
        }
    }

    /// The cases measured with real Pyxis and OpenPMIx 4.2 (tests/tests/real_pyxis.rs).
    #[test]
    fn a_container_without_the_servers_directory_or_munge_is_judged_by_what_the_client_falls_back_on(
    ) {
        assert!(check_task(&task()).is_empty());
        let bare = TaskPmix {
            tmpdir_visible: false,
            munge_visible: false,
            ..task()
        };
        // the server's lists: gds falls back to hash (a warning about the PMIX ERROR lines), psec
        // skips munge for native (nothing)
        let f = check_task(&bare);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0]
            .what
            .contains("PMIX_SERVER_TMPDIR=/var/spool/slurmd/pmix.2410.0/"));
        assert!(f[0].why.contains("the ranks still start"), "{}", f[0].why);
        assert!(f[0].fix.starts_with("export PMIX_MCA_gds=hash"));
        // what the user (or enroot's hook) chose is what counts
        let chosen = TaskPmix {
            mca_gds: Some("hash".into()),
            mca_psec: Some("native".into()),
            ..bare.clone()
        };
        assert!(check_task(&chosen).is_empty());
        // only the shared-memory stores: every rank fails
        let ds = TaskPmix {
            mca_gds: Some("ds12".into()),
            ..bare.clone()
        };
        let f = check_task(&ds);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0]
            .why
            .starts_with("PMIX_MCA_gds=ds12 leaves no other store"));
        assert!(f[0].fix.starts_with("unset PMIX_MCA_gds"));
        // the directory is there: ds12 alone is fine
        assert!(check_task(&TaskPmix {
            tmpdir_visible: true,
            ..ds
        })
        .is_empty());
        // munge only, chosen by the user: an error whose fix is the user's
        let munge = TaskPmix {
            mca_gds: Some("hash".into()),
            mca_psec: Some("munge".into()),
            ..bare.clone()
        };
        let f = check_task(&munge);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.pmix: PMIX_MCA_psec=munge leaves the rank's PMIx only munge, but munged's socket \
             /run/munge/munge.socket.2 is not inside the container; the client's munge component cannot init without \
             munged and there is no other, so PMIx_Init fails on every rank ('We were unable to find any usable plugins \
             for the PSEC framework'); unset PMIX_MCA_psec (Slurm's PMIx server offers munge,native; the client takes \
             the next one it can use) or export PMIX_MCA_psec=native, or add --container-mounts=/run/munge to srun"
        );
        // munge visible: fine
        assert!(check_task(&TaskPmix {
            munge_visible: true,
            ..munge
        })
        .is_empty());
        // a server that takes munge only: the mount, and the admin's fix
        let server = TaskPmix {
            mca_gds: Some("hash".into()),
            security_mode: Some("munge".into()),
            ..bare.clone()
        };
        let f = check_task(&server);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].what.starts_with("PMIx security mode munge leaves"));
        assert!(f[0]
            .fix
            .starts_with("add --container-mounts=/run/munge to srun; admin:"));
        // exclusion lists are not judged
        assert!(check_task(&TaskPmix {
            mca_gds: Some("^hash".into()),
            mca_psec: Some("^native".into()),
            ..bare
        })
        .is_empty());
    }
}
