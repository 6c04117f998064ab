//! The node check registry: every family's gatherer paired with its evaluator, run concurrently on
//! blocking threads, each under the check timeout. A family that times out is reported UNKNOWN (never
//! a node fault) and is not started again until its hung run returns (node_exporter's rule for stuck
//! collectors), so a hung NFS stat cannot pile up threads or cause a false drain.

use crate::gather::{self, Ctx};
use launchguard_core::node::{all_checks, Outcome, Status};
pub use launchguard_core::report::{CheckLine, NodeReport};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one family returns: its outcomes and the facts it publishes for cross-node comparison.
pub struct FamilyResult {
    /// One per check ID of the family.
    pub outcomes: Vec<Outcome>,
    /// `(fact name, value)`, e.g. `("munge_key_digest", "sha256:…")`.
    pub facts: Vec<(&'static str, String)>,
}

/// A check family: name and the function that gathers and judges it.
pub struct Family {
    /// `munge`, `hostname`, …
    pub name: &'static str,
    /// Gathers and judges (blocking I/O).
    pub run: fn(&Ctx) -> FamilyResult,
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn file_digest(p: &std::path::Path) -> String {
    match gather::util::read_bytes(p, gather::util::MAX_READ) {
        Ok(b) => digest(&b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "absent".into(),
        Err(e) => format!("unreadable: {e}"),
    }
}

fn munge(ctx: &Ctx) -> FamilyResult {
    let f = gather::munge::gather(ctx);
    let d = f
        .digest
        .clone()
        .unwrap_or_else(|e| format!("unreadable: {e}"));
    // munged's directory rules are judged in their own file (core::node::munge_paths) but belong to
    // this family: their IDs are node.munge.*.
    let mut outcomes = launchguard_core::node::munge::judge(&f);
    outcomes.extend(launchguard_core::node::munge_paths::judge(
        &gather::munge_paths::gather(ctx),
    ));
    FamilyResult {
        outcomes,
        facts: vec![("munge_key_digest", d)],
    }
}

fn hostname(ctx: &Ctx) -> FamilyResult {
    FamilyResult {
        outcomes: launchguard_core::node::hostname::judge(&gather::hostname::gather(ctx)),
        facts: vec![],
    }
}

fn slurm_conf(ctx: &Ctx) -> FamilyResult {
    let f = gather::slurm_conf::gather(ctx);
    FamilyResult {
        outcomes: launchguard_core::node::slurm_conf::judge(&f),
        facts: vec![
            ("slurm_conf_digest", slurm_conf_digest(ctx, &f)),
            ("slurm_version", gather::slurmd_version::get(ctx)),
        ],
    }
}

/// The digest the sweep compares across nodes: slurm.conf's bytes, or, when it has `Include`s,
/// every file read in order (path and bytes), so an included file that differs is seen too.
fn slurm_conf_digest(ctx: &Ctx, f: &launchguard_core::node::slurm_conf::SlurmConfFacts) -> String {
    let files = match &f.conf {
        Ok(c) if c.files.len() > 1 => &c.files,
        _ => return file_digest(&ctx.cfg.slurm_conf_path()),
    };
    let mut h = Sha256::new();
    for p in files {
        h.update(p.as_bytes());
        h.update([0]);
        match gather::util::read_bytes(std::path::Path::new(p), gather::util::MAX_READ) {
            Ok(b) => h.update(&b),
            Err(e) => h.update(format!("unreadable: {e}").as_bytes()),
        }
        h.update([0]);
    }
    format!("sha256:{:x}", h.finalize())
}

fn pmix(ctx: &Ctx) -> FamilyResult {
    FamilyResult {
        outcomes: launchguard_core::node::pmix::judge(&gather::pmix::gather(ctx)),
        facts: vec![],
    }
}

fn memlock(ctx: &Ctx) -> FamilyResult {
    FamilyResult {
        outcomes: launchguard_core::node::memlock::judge(&gather::memlock::gather(ctx)),
        facts: vec![],
    }
}

fn enroot(ctx: &Ctx) -> FamilyResult {
    FamilyResult {
        outcomes: launchguard_core::node::enroot::judge(&gather::enroot::gather(ctx)),
        facts: vec![("enroot_conf_digest", file_digest(&ctx.cfg.enroot.conf))],
    }
}

fn plugstack(ctx: &Ctx) -> FamilyResult {
    let f = gather::plugstack::gather(ctx);
    // The plugin lines in load order (not the file bytes: comments and file layout may differ).
    let contents = match &f.entries {
        Ok(e) => e
            .iter()
            .map(|(e, _)| {
                format!(
                    "{} {} {}\n",
                    if e.required { "required" } else { "optional" },
                    e.path,
                    e.args.join(" ")
                )
            })
            .collect::<String>(),
        Err(e) => format!("unreadable: {e}"),
    };
    FamilyResult {
        outcomes: launchguard_core::node::plugstack::judge(&f),
        facts: vec![("plugstack_digest", digest(contents.as_bytes()))],
    }
}

fn nccl_env(ctx: &Ctx) -> FamilyResult {
    let f = gather::nccl_env::gather(ctx);
    let mut all = String::new();
    for (p, t) in &f.files {
        for (k, v) in launchguard_core::node::nccl_env::assignments(t) {
            all.push_str(&format!("{p}:{k}={v}\n"));
        }
    }
    FamilyResult {
        outcomes: launchguard_core::node::nccl_env::judge(&f),
        facts: vec![(
            "nccl_env_digest",
            if all.is_empty() {
                "absent".into()
            } else {
                digest(all.as_bytes())
            },
        )],
    }
}

fn devices(ctx: &Ctx) -> FamilyResult {
    let f = gather::devices::gather(ctx);
    let rdma: Vec<String> = f.rdma.iter().map(|d| d.describe()).collect();
    FamilyResult {
        outcomes: launchguard_core::node::devices::judge(&f),
        // e.g. "rdmap16s27 efa ACTIVE, mlx5_0 mlx5_core DOWN": which extra RDMA devices sit next
        // to EFA, and whether their links are up (a link-down one needs no action).
        facts: vec![(
            "rdma_devices",
            if rdma.is_empty() {
                "none".into()
            } else {
                rdma.join(", ")
            },
        )],
    }
}

fn gpu(ctx: &Ctx) -> FamilyResult {
    let f = gather::gpu::gather(ctx);
    FamilyResult {
        outcomes: launchguard_core::node::gpu::judge(&f),
        facts: launchguard_core::node::gpu::facts(&f),
    }
}

fn imex(ctx: &Ctx) -> FamilyResult {
    let f = gather::imex::gather(ctx);
    FamilyResult {
        outcomes: launchguard_core::node::imex::judge(&f),
        // Whether the IMEX checks judged this node, and why (an H200 is not an MNNVL node).
        facts: vec![(
            "imex",
            launchguard_core::node::imex::scope(&f).unwrap_or_else(|e| e),
        )],
    }
}

/// Every family, in documentation order.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "munge",
        run: munge,
    },
    Family {
        name: "hostname",
        run: hostname,
    },
    Family {
        name: "slurm_conf",
        run: slurm_conf,
    },
    Family {
        name: "pmix",
        run: pmix,
    },
    Family {
        name: "memlock",
        run: memlock,
    },
    Family {
        name: "enroot",
        run: enroot,
    },
    Family {
        name: "plugstack",
        run: plugstack,
    },
    Family {
        name: "nccl_env",
        run: nccl_env,
    },
    Family {
        name: "devices",
        run: devices,
    },
    Family {
        name: "gpu",
        run: gpu,
    },
    Family {
        name: "imex",
        run: imex,
    },
];

/// Runs the families on blocking threads with timeouts; remembers which are still running.
pub struct Runner {
    ctx: Arc<Ctx>,
    busy: Arc<Mutex<HashSet<&'static str>>>,
    /// One run at a time: a run asked for while another is going waits for it, instead of finding
    /// its families busy and reporting them UNKNOWN.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Runner {
    /// A runner over a context.
    pub fn new(ctx: Ctx) -> Runner {
        Runner {
            ctx: Arc::new(ctx),
            busy: Arc::new(Mutex::new(HashSet::new())),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether `id` is selected by `only` (IDs or family prefixes; empty selects all) and enabled.
    fn selected(&self, id: &str, only: &[String]) -> bool {
        let pick = only.is_empty()
            || only
                .iter()
                .any(|o| launchguard_core::node::id_matches(id, o));
        pick && !self.ctx.cfg.is_disabled(id)
    }

    /// The GPU facts the last check run gathered (`None` before any run that asked for them).
    pub fn gpu_facts(&self) -> Option<launchguard_core::node::gpu::GpuFacts> {
        self.ctx
            .gpu_last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a check run is going on now.
    pub fn busy(&self) -> bool {
        self.one_at_a_time.try_lock().is_err()
    }

    /// Runs every selected check once.
    pub async fn run(&self, only: &[String]) -> NodeReport {
        let _one = self.one_at_a_time.lock().await;
        let start = Instant::now();
        // Every family of this run shares one read of slurm.conf and the mount tables.
        self.ctx.begin_run();
        let timeout = Duration::from_secs(self.ctx.cfg.check_timeout_secs);
        let infos = all_checks();
        let mut tasks = vec![];
        for fam in FAMILIES {
            let ids: Vec<&'static str> = infos
                .iter()
                .filter(|c| c.family == fam.name && self.selected(c.id, only))
                .map(|c| c.id)
                .collect();
            if ids.is_empty() {
                continue;
            }
            let already = !self
                .busy
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(fam.name);
            if already {
                tasks.push((fam.name, ids, None, Instant::now()));
                continue;
            }
            let ctx = self.ctx.clone();
            let busy = self.busy.clone();
            let run = fam.run;
            let name = fam.name;
            let h = tokio::task::spawn_blocking(move || {
                let t = Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&ctx)));
                busy.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
                r.map(|r| (r, t.elapsed()))
            });
            tasks.push((fam.name, ids, Some(h), Instant::now()));
        }
        let mut checks = vec![];
        let mut facts = BTreeMap::new();
        facts.insert(
            "launchguard_version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        );
        for (name, ids, h, t0) in tasks {
            let result = match h {
                None => Err(format!(
                    "the {name} checks are still running from an earlier run (hung I/O?)"
                )),
                Some(h) => {
                    match tokio::time::timeout(timeout.saturating_sub(t0.elapsed()), h).await {
                        Ok(Ok(Ok(r))) => Ok(r),
                        Ok(Ok(Err(_))) => Err(format!(
                            "the {name} checks panicked (a bug: please report it)"
                        )),
                        Ok(Err(e)) => Err(format!("the {name} checks failed: {e}")),
                        Err(_) => Err(format!(
                            "the {name} checks did not finish within {} s",
                            timeout.as_secs()
                        )),
                    }
                }
            };
            let mut ms = t0.elapsed().as_secs_f64() * 1e3;
            match result {
                Ok((r, took)) => {
                    ms = took.as_secs_f64() * 1e3;
                    for o in r.outcomes.into_iter().filter(|o| ids.contains(&o.id)) {
                        checks.push(CheckLine {
                            id: o.id.into(),
                            status: o.status,
                            message: o.message(),
                            duration_ms: ms,
                            user_controlled: o.user_controlled,
                        });
                    }
                    for (k, v) in r.facts {
                        facts.insert(k.into(), v);
                    }
                }
                Err(e) => {
                    tracing::warn!(launchguard.family = name, "{e}");
                    for id in ids {
                        let o = Outcome::unknown(id, e.clone());
                        checks.push(CheckLine {
                            id: id.into(),
                            status: o.status,
                            message: o.message(),
                            duration_ms: ms,
                            user_controlled: None,
                        });
                    }
                }
            }
        }
        let mut rep = NodeReport {
            schema: 1,
            node: gather::node_name(),
            launchguard_version: env!("CARGO_PKG_VERSION").into(),
            status: Status::Ok,
            exit_code: 0,
            duration_ms: start.elapsed().as_secs_f64() * 1e3,
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            checks,
            facts,
        };
        self.ctx.end_run();
        let w = rep.worst();
        rep.status = w;
        rep.exit_code = w.exit_code();
        rep
    }
}
