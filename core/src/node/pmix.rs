//! `node.pmix.*`: the PMIx MPI plugin (Slurm's MPI guide, mpi.conf(5): multi-node PyTorch/NCCL jobs
//! launched with `srun --mpi=pmix`). Slurm's `mpi_pmix*.so` loads the PMIx library at run time from
//! the directory it was built with (Debian: `/usr/lib/x86_64-linux-gnu/pmix2/lib`, on arm64
//! `/usr/lib/aarch64-linux-gnu/pmix2/lib`): `libpmix.so` up to Slurm 23.02.4, `libpmix.so.2` from
//! 23.02.5 on (`_libpmix_open` in Slurm's `mpi_pmix.c`). So `srun --mpi=list` offers pmix even when
//! the library is missing, and every `srun --mpi=pmix` then fails with `pmi/pmix: can not load PMIx
//! library`.

use super::{quote, Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.pmix.offered",
        "an mpi/pmix plugin is installed (srun --mpi=list offers pmix)",
    ),
    (
        "node.pmix.loads",
        "the PMIx library the pmix plugin loads at run time is present",
    ),
];

pub use crate::checks::pmix::PmixPlugin;

/// Everything the pmix family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmixFacts {
    /// Slurm's PluginDir searched.
    pub plugin_dir: String,
    /// MPI plugin types installed (`pmix`, `pmix_v4`, `pmi2`, `none`…), as `srun --mpi=list` shows.
    pub mpi_types: Vec<String>,
    /// The pmix plugins.
    pub plugins: Vec<PmixPlugin>,
    /// `MpiDefault` from slurm.conf.
    pub mpi_default: Option<String>,
    /// The package that provides the library on this distribution (for the fix).
    pub lib_package: &'static str,
    /// How an admin gets the pmix plugin here ([`crate::checks::pmix::plugin_source`]), for the fix.
    pub plugin_source: &'static str,
}

/// Judges the pmix family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &PmixFacts) -> Vec<Outcome> {
    let default_pmix = f
        .mpi_default
        .as_deref()
        .is_some_and(|d| d.to_ascii_lowercase().starts_with("pmix"));
    let severity = if default_pmix {
        Status::Critical
    } else {
        Status::Warning
    };
    let why_default = if default_pmix {
        "MpiDefault=pmix, so every srun on this node fails"
    } else {
        "every srun --mpi=pmix (the usual launch for multi-node NCCL and MPI jobs) fails"
    };
    let offered = f.mpi_types.iter().any(|t| t.starts_with("pmix"));
    let mut out = vec![if offered {
        Outcome::ok("node.pmix.offered")
    } else {
        Outcome::new(
            "node.pmix.offered",
            severity,
            format!("no mpi/pmix plugin in {}", quote(&f.plugin_dir)),
            why_default,
            f.plugin_source,
        )
    }];
    let broken: Vec<&PmixPlugin> = f.plugins.iter().filter(|p| p.lib.is_err()).collect();
    out.push(match broken.first() {
        // (no plugin, no library to load: the missing plugin is node.pmix.offered's one finding;
        // UNKNOWN would say the check could not judge, and make `launchguard check` exit 3)
        _ if !offered => Outcome::ok("node.pmix.loads"),
        None => Outcome::ok("node.pmix.loads"),
        Some(p) => {
            let searched = match &p.lib {
                Err(s) => s.join(", "),
                Ok(_) => String::new(),
            };
            Outcome::new(
                "node.pmix.loads",
                severity,
                format!(
                    "{} is offered but {} is missing (looked for {})",
                    quote(&p.path),
                    p.lib_name,
                    crate::finding::clip(&searched, 120)
                ),
                format!("{why_default} with 'pmi/pmix: can not load PMIx library'"),
                format!("install {} on every node", f.lib_package),
            )
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(lib: Result<String, Vec<String>>, default: Option<&str>) -> PmixFacts {
        PmixFacts {
            plugin_dir: "/usr/lib/x86_64-linux-gnu/slurm-wlm".into(),
            mpi_types: vec!["pmix".into(), "pmix_v4".into(), "none".into()],
            plugins: vec![PmixPlugin {
                path: "/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix_v4.so".into(),
                lib_name: "libpmix.so".into(),
                lib,
            }],
            mpi_default: default.map(String::from),
            lib_package: "libpmix-dev",
            plugin_source: crate::checks::pmix::plugin_source(true, Some((22, 5, 8))),
        }
    }

    #[test]
    fn missing_library_is_detected_and_severity_follows_mpi_default() {
        let missing = || Err(vec!["/usr/lib/x86_64-linux-gnu/pmix2/lib".to_string()]);
        let out = judge(&facts(missing(), Some("none")));
        assert_eq!(out[1].status, Status::Warning);
        assert!(out[1].fix.contains("libpmix-dev"));
        let out = judge(&facts(missing(), Some("pmix_v4")));
        assert_eq!(out[1].status, Status::Critical);
        let out = judge(&facts(Ok("/x/libpmix.so".into()), Some("pmix")));
        assert!(out.iter().all(|o| o.status == Status::Ok));
    }

    #[test]
    fn no_plugin_at_all() {
        let mut f = facts(Ok(String::new()), None);
        f.mpi_types = vec!["none".into()];
        f.plugins.clear();
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Warning);
        assert!(
            out[0].fix.contains("slurm-wlm-basic-plugins"),
            "{}",
            out[0].fix
        );
        // nothing to load is not "could not judge": the offered check says what is missing
        assert_eq!(out[1].status, Status::Ok);
    }

    #[test]
    fn debian_sid_slurm_26_05_has_no_package_with_the_plugin() {
        // Debian sid, slurm-wlm 26.05.5-1: PluginDir holds mpi_cray_shasta.so and mpi_pmi2.so only
        let mut f = facts(Ok(String::new()), Some("none"));
        f.mpi_types = vec!["cray_shasta".into(), "pmi2".into()];
        f.plugins.clear();
        f.plugin_source = crate::checks::pmix::plugin_source(true, Some((26, 5, 5)));
        let out = judge(&f);
        assert_eq!(
            out[0].message(),
            "launchguard: node.pmix.offered: no mpi/pmix plugin in '/usr/lib/x86_64-linux-gnu/slurm-wlm'; \
             every srun --mpi=pmix (the usual launch for multi-node NCCL and MPI jobs) fails; Debian's \
             Slurm packages carry no pmix plugin from slurm-wlm 26.05.5-1 on (Debian bug #1149781): build \
             Slurm with --with-pmix (Slurm's MPI guide) and install its mpi_pmix.so on every node"
        );
        assert_eq!(out[1].status, Status::Ok);
    }
}
