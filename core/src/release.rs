//! The running Slurm release, and the launch rules that differ between releases.
//!
//! Sources: Slurm 23.11 release notes and the srun(1) man pages of 22.05–26.05; measured on 22.05.8,
//! 24.11.5 and 26.05.5 (docs/spank.md, docs/install.md).

use std::fmt;

/// A Slurm release as `major.minor` (e.g. 22.05, 23.11, 24.11). SPANK plugins load only on the
/// major.minor they were built for, so this is also the release the plugin runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlurmRelease {
    /// Year-like major number, e.g. 22.
    pub major: u16,
    /// Month-like minor number, e.g. 5 for 22.05.
    pub minor: u16,
}

impl SlurmRelease {
    /// Builds a release from numbers.
    pub const fn new(major: u16, minor: u16) -> Self {
        SlurmRelease { major, minor }
    }

    /// From `SLURM_VERSION_NUMBER` (`0xMMmmuu`, see `slurm_version.h`), e.g. `0x160508` → 22.05.
    pub const fn from_version_number(n: u32) -> Self {
        SlurmRelease {
            major: ((n >> 16) & 0xff) as u16,
            minor: ((n >> 8) & 0xff) as u16,
        }
    }

    /// From the strings SPANK gives for `S_SLURM_VERSION_MAJOR` / `S_SLURM_VERSION_MINOR`
    /// (e.g. `"22"`, `"05"`). `None` when either is not a number.
    pub fn from_parts(major: &str, minor: &str) -> Option<Self> {
        Some(SlurmRelease {
            major: major.trim().parse().ok()?,
            minor: minor.trim().parse().ok()?,
        })
    }

    /// Parses `"22.05"`, `"22.05.8"` or `"24.11.5"`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.trim().split('.');
        let major = it.next()?;
        let minor = it.next()?;
        Self::from_parts(major, minor)
    }

    /// Whether srun reads `SLURM_CPUS_PER_TASK` from its environment (23.11 and later). 22.05 and
    /// 23.02 read only `SRUN_CPUS_PER_TASK`, so `#SBATCH -c N` does not reach a plain `srun`.
    pub fn srun_reads_slurm_cpus_per_task(self) -> bool {
        self >= SlurmRelease::new(23, 11)
    }

    /// Whether srun loads its MPI plugin after the SPANK `init_post_opt` callback (23.11 and later:
    /// `mpi_g_client_init` in srun_job.c). 22.05 and 23.02 load it in option checking
    /// (`_opt_verify` in srun's opt.c), before `init_post_opt`, so a plugin that wants to speak
    /// before a failed load must do it in `slurm_spank_init`.
    pub fn srun_loads_mpi_after_post_opt(self) -> bool {
        self >= SlurmRelease::new(23, 11)
    }

    /// Whether a relative `Include` name in slurm.conf is looked up beside the file whose line names
    /// it (22.05 and older: `_add_full_path` in `src/common/parse_config.c`) rather than beside
    /// slurm.conf itself (`SLURM_CONF`'s directory, 23.02 and later: `get_extra_conf_path`). The two
    /// differ only for a nested include in another directory.
    pub fn include_beside_including_file(self) -> bool {
        self < SlurmRelease::new(23, 2)
    }

    /// The environment variable this release's srun takes `--cpus-per-task` from.
    pub fn srun_cpus_env_var(self) -> &'static str {
        if self.srun_reads_slurm_cpus_per_task() {
            "SLURM_CPUS_PER_TASK"
        } else {
            "SRUN_CPUS_PER_TASK"
        }
    }
}

impl fmt::Display for SlurmRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_env_var_follows_the_release() {
        let table = [
            ("22.05", "SRUN_CPUS_PER_TASK"),
            ("23.02", "SRUN_CPUS_PER_TASK"),
            ("23.11", "SLURM_CPUS_PER_TASK"),
            ("24.05", "SLURM_CPUS_PER_TASK"),
            ("24.11", "SLURM_CPUS_PER_TASK"),
            ("25.05", "SLURM_CPUS_PER_TASK"),
            ("26.05", "SLURM_CPUS_PER_TASK"),
        ];
        for (rel, var) in table {
            assert_eq!(
                SlurmRelease::parse(rel).unwrap().srun_cpus_env_var(),
                var,
                "{rel}"
            );
        }
    }

    #[test]
    fn parses_version_number_and_strings() {
        assert_eq!(
            SlurmRelease::from_version_number(0x160508),
            SlurmRelease::new(22, 5)
        );
        assert_eq!(
            SlurmRelease::from_version_number(0x180b05),
            SlurmRelease::new(24, 11)
        );
        assert_eq!(
            SlurmRelease::from_parts("22", "05"),
            Some(SlurmRelease::new(22, 5))
        );
        assert_eq!(SlurmRelease::parse("24.11.5").unwrap().to_string(), "24.11");
        assert_eq!(
            SlurmRelease::from_version_number(0x1a0505),
            SlurmRelease::new(26, 5)
        );
        assert_eq!(SlurmRelease::parse("x.y"), None);
        assert_eq!(SlurmRelease::parse("22"), None);
    }
}
