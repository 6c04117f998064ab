//! The CLI's and the agent's file inputs as files, not only as strings: the config (`--config`), the
//! admin's NCCL rules file and plugstack.conf (through a slurm.conf naming it, as `check` finds it),
//! each written to a real file of the kind the first input byte picks — a regular file, a FIFO
//! nobody writes, a link to `/dev/zero`, a directory — and read through the readers the commands
//! use. Nothing may panic, block or grow: non-regular files are refused at once, a config error is
//! clipped, and every problem is one line.
#![no_main]

use launchguard::config::Config;
use launchguard::gather::{self, util};
use launchguard_core::checks::nccl_env;
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("lg-fuzz-cli-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Makes `p` a file of kind `k` holding `body` (when it is a regular file).
fn plant(p: &Path, k: u8, body: &[u8]) {
    let _ = std::fs::remove_file(p);
    let _ = std::fs::remove_dir_all(p);
    match k % 4 {
        0 => std::fs::write(p, body).unwrap(),
        1 => nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap(),
        2 => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        _ => std::fs::create_dir(p).unwrap(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    let dir = scratch();
    let input = dir.join("input");
    plant(&input, kind, body);
    let t = Instant::now();

    // --config FILE
    if let Err(e) = Config::load(Some(&input)) {
        let m = e.to_string();
        assert!(m.len() < 8192, "config error of {} bytes", m.len());
    }

    // nccl_env.rules = FILE, read as the agent reads it
    if let Ok(Some(text)) = util::read_optional(&input) {
        let (rules, problems) = nccl_env::parse_rules(&text, "/etc/launchguard/nccl-rules.conf");
        assert!(rules.len() <= nccl_env::MAX_RULES);
        assert!(problems.len() <= nccl_env::MAX_PROBLEMS + 2);
        assert!(problems.iter().all(|p| !p.contains('\n')));
    }

    // plugstack.conf = FILE, found through slurm.conf as `launchguard check` finds it
    let slurm_conf = dir.join("slurm.conf");
    std::fs::write(
        &slurm_conf,
        format!("PlugStackConfig={}\nPluginDir={}\n", input.display(), dir.display()),
    )
    .unwrap();
    let cfg = Config {
        slurm_conf: Some(slurm_conf),
        ..Config::default()
    };
    let facts = gather::plugstack::gather(&gather::Ctx::new(cfg));
    let _ = format!("{facts:?}");

    assert!(
        t.elapsed() < Duration::from_secs(3),
        "file inputs took {:?} (kind {})",
        t.elapsed(),
        kind % 4
    );
});
