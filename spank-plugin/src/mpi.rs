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
        offered,
        plugin,
    }
}
