//! What one check run reads once and shares between its families (slurm.conf with its includes, the
//! hostname, the mount tables: `launchguard::gather::RunMemo`) lives for that run only. The agent
//! keeps one `Runner` for its whole life, so these tests drive one `Runner` the same way and change
//! a fact between two runs: the very next run judges the new fact. No Slurm and no munged are
//! needed: launchguard.toml points at a scratch slurm.conf and munge key.

use launchguard::config::Config;
use launchguard::gather::Ctx;
use launchguard::registry::{NodeReport, Runner};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("lg-fresh-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A runner over a config naming `dir`'s slurm.conf and munge key, node `lgfresh1`.
fn runner(dir: &std::path::Path) -> Runner {
    let toml = format!(
        "slurm_conf = \"{d}/slurm.conf\"\nnode_name = \"lgfresh1\"\n\n[munge]\nkey = \"{d}/munge.key\"\nsocket = \"{d}/no-socket\"\npid_file = \"{d}/no-munged.pid\"\n",
        d = dir.display()
    );
    let p = dir.join("launchguard.toml");
    std::fs::write(&p, toml).unwrap();
    Runner::new(Ctx::new(Config::load(Some(&p)).unwrap()))
}

fn run(rt: &tokio::runtime::Runtime, r: &Runner, only: &str) -> NodeReport {
    rt.block_on(r.run(&[only.to_string()]))
}

fn status(rep: &NodeReport, id: &str) -> String {
    let c = rep
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} not in the report"));
    format!("{} {}", c.status.as_str(), c.message)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn slurm_conf(real_memory: u64) -> String {
    format!("ClusterName=fresh\nSlurmctldHost=localhost\nNodeName=lgfresh1 CPUs=1 RealMemory={real_memory}\n")
}

/// slurm.conf is read once per run (eight families consult it) and again by the next run: raising
/// RealMemory above the node's memory is CRITICAL at once, and lowering it back is OK at once.
#[test]
fn an_edited_slurm_conf_is_judged_by_the_next_run() {
    let d = scratch("conf");
    std::fs::write(d.0.join("slurm.conf"), slurm_conf(1)).unwrap();
    let (r, rt) = (runner(&d.0), rt());
    let id = "node.slurm_conf.real_memory";
    assert!(status(&run(&rt, &r, id), id).starts_with("ok"));
    std::fs::write(d.0.join("slurm.conf"), slurm_conf(1 << 40)).unwrap();
    let s = status(&run(&rt, &r, id), id);
    assert!(s.starts_with("critical"), "{s}");
    assert!(s.contains("RealMemory"), "{s}");
    std::fs::write(d.0.join("slurm.conf"), slurm_conf(1)).unwrap();
    assert!(status(&run(&rt, &r, id), id).starts_with("ok"));
    // The whole family in one run: every check of it saw the same (edited) file.
    std::fs::write(d.0.join("slurm.conf"), slurm_conf(1 << 40)).unwrap();
    let rep = run(&rt, &r, "node.slurm_conf");
    assert!(status(&rep, id).starts_with("critical"));
    assert!(status(&rep, "node.slurm_conf.parse").starts_with("ok"));
}

/// The munge key's mode: world-readable is CRITICAL on the next run, 0400 OK again.
#[test]
fn a_munge_key_mode_change_is_judged_by_the_next_run() {
    let d = scratch("key");
    std::fs::write(d.0.join("slurm.conf"), slurm_conf(1)).unwrap();
    let key = d.0.join("munge.key");
    std::fs::write(&key, [7u8; 1024]).unwrap();
    let mode = |m| std::fs::set_permissions(&key, std::fs::Permissions::from_mode(m)).unwrap();
    mode(0o400);
    let (r, rt) = (runner(&d.0), rt());
    let id = "node.munge.key_mode";
    assert!(status(&run(&rt, &r, id), id).starts_with("ok"));
    mode(0o644);
    let s = status(&run(&rt, &r, id), id);
    assert!(s.starts_with("critical"), "{s}");
    assert!(s.contains("chmod 0400"), "{s}");
    mode(0o400);
    assert!(status(&run(&rt, &r, id), id).starts_with("ok"));
}

/// plugstack.conf and its plugins are gathered once per run (the plugstack and enroot families
/// share them) and again by the next run: a required plugin whose .so is missing is CRITICAL at
/// once, and the line removed is OK at once.
#[test]
fn an_edited_plugstack_conf_is_judged_by_the_next_run() {
    let d = scratch("plugstack");
    let stack = d.0.join("plugstack.conf");
    std::fs::write(
        d.0.join("slurm.conf"),
        format!("{}PlugStackConfig={}\n", slurm_conf(1), stack.display()),
    )
    .unwrap();
    std::fs::write(&stack, "# nothing listed\n").unwrap();
    let (r, rt) = (runner(&d.0), rt());
    let id = "node.plugstack.required_so";
    let s = status(&run(&rt, &r, "node.plugstack"), id);
    assert!(s.starts_with("ok"), "{s}");
    std::fs::write(
        &stack,
        format!("required {}/spank_gone.so\n", d.0.display()),
    )
    .unwrap();
    let s = status(&run(&rt, &r, "node.plugstack"), id);
    assert!(s.starts_with("critical"), "{s}");
    assert!(s.contains("spank_gone.so"), "{s}");
    std::fs::write(&stack, "# nothing listed\n").unwrap();
    let s = status(&run(&rt, &r, "node.plugstack"), id);
    assert!(s.starts_with("ok"), "{s}");
}
