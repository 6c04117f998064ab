//! Slurm's MPI plugins as srun will load them (`launch.pmix`, srun side): slurm.conf's `PluginDir`
//! and `MpiDefault` (the file `SLURM_CONF` names, else `/etc/slurm/slurm.conf`; none in configless
//! mode, where only `--mpi` and `SLURM_MPI_TYPE` are judged), the `mpi_<type>.so` files there and the
//! PMIx library the requested pmix plugin opens. Read only for an srun that may load a pmix plugin.

use launchguard_core::checks::pmix::{LocalMpi, MpiRequest};
use launchguard_core::host::mpi;
use launchguard_core::node::pmix::PmixPlugin;
use launchguard_core::slurm_conf::SlurmConf;
use launchguard_core::SlurmRelease;
use std::path::Path;

/// slurm.conf as srun reads it, with its `Include` files
/// ([`launchguard_core::host::slurm_conf::read`], the agent's reader too: relative names as
/// `release` looks them up, regular files only, at most 4 MiB each); `None` when the main file
/// cannot be read.
pub fn slurm_conf(release: SlurmRelease) -> Option<SlurmConf> {
    let path = std::env::var("SLURM_CONF").unwrap_or_else(|_| "/etc/slurm/slurm.conf".into());
    launchguard_core::host::slurm_conf::read(Path::new(&path), Some(release)).ok()
}

/// The plugins where srun runs, and the requested type's plugin with its library.
pub fn local(req: &MpiRequest, conf: Option<&SlurmConf>) -> LocalMpi {
    let dirs = mpi::plugin_dirs(conf.and_then(|c| c.get("PluginDir")));
    let all = mpi::list(&dirs);
    let plugin = all.iter().find(|p| p.mpi_type == req.mpi_type).map(|p| {
        let strings = mpi::scan_plugin(&p.path);
        PmixPlugin {
            path: p.path.display().to_string(),
            lib: mpi::find_lib(Path::new("/etc"), &strings),
            lib_name: strings.lib,
        }
    });
    let lib = plugin
        .as_ref()
        .map_or(mpi::DEFAULT_LIB, |p| p.lib_name.as_str());
    let mut offered: Vec<String> = all.into_iter().map(|p| p.mpi_type).collect();
    // srun takes --mpi=none without a plugin file on 26.05 (built in), as --mpi=list shows.
    if !offered.is_empty() && !offered.iter().any(|t| t == "none") {
        offered.push("none".into());
    }
    LocalMpi {
        plugin_dir: dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        lib_package: mpi::lib_package(Path::new("/etc"), lib),
        plugin_source: launchguard_core::checks::pmix::plugin_source(
            Path::new("/etc/debian_version").exists(),
            Some(built_for_triple(crate::ffi::BUILT_FOR)),
        ),
        offered,
        plugin,
    }
}

/// `SLURM_VERSION_NUMBER` (`0xMMmmuu`, slurm_version.h) as (major, minor, micro): the release of the
/// headers this plugin was built against, which is the Slurm package installed beside it (Slurm loads
/// a plugin only on its own major.minor).
fn built_for_triple(n: u32) -> (u16, u16, u16) {
    (
        ((n >> 16) & 0xff) as u16,
        ((n >> 8) & 0xff) as u16,
        (n & 0xff) as u16,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn slurm_version_number_is_split_as_slurm_version_h_packs_it() {
        // SLURM_VERSION_NUM(26, 5, 5) = (26 << 16) | (5 << 8) | 5
        assert_eq!(super::built_for_triple(0x1a_05_05), (26, 5, 5));
        assert_eq!(super::built_for_triple(0x18_0b_05), (24, 11, 5));
    }
}
