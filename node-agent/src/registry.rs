//! The node check registry: every family's gatherer paired with its evaluator, run on a few blocking
//! threads ([`lanes`], more when they stall: see [`Runner::run`]), each family under the check
//! timeout. A family that times out is reported UNKNOWN (never a node fault) and is not started
//! again until its hung run returns (node_exporter's rule for stuck collectors), so a hung NFS stat
//! cannot pile up threads or cause a false drain.

use crate::gather::{self, Ctx};
use launchguard_core::node::{all_checks, Outcome, Status};
pub use launchguard_core::report::{CheckLine, NodeReport};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
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

/// Most blocking threads a run starts with ([`lanes`] gives fewer where fewer CPUs are ours); they
/// take the families in [`START_FIRST`], then [`FAMILIES`], order, one at a time. A family takes a
/// millisecond or less on a healthy node, and a thread start (clone, stack, its own malloc arena)
/// cost about 0.1 ms CPU on a 2-core VM: one thread per family was about a ninth of a `launchguard
/// check`'s CPU time there.
pub const LANES: usize = 3;

/// How many lanes a run starts with when `cpus` CPUs are this process's (its affinity mask, which a
/// cgroup's cpuset narrows): [`LANES`], but never more than `cpus`, and at least one. A lane more
/// than the CPUs only competes with the others (and with munged, whose answers the munge family
/// waits for); docs/node-agent.md has the measurements. A lane that goes [`STALL`] without a family
/// finishing still gets company: on a GPU node pinned to one or two CPUs, NVML's 25–32 ms in the
/// gpu family is longer than that, so such a run starts one lane more.
pub fn lanes(cpus: usize) -> usize {
    LANES.min(cpus).max(1)
}

/// The CPUs this process may run on (`sched_getaffinity(2)`: one system call, unlike
/// `available_parallelism`, which also reads the cgroup's CPU quota files); `LANES` when that
/// cannot be read.
fn own_cpus() -> usize {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .count(),
        Err(_) => LANES,
    }
}

/// Families a run queues before the others (in this order), because they may wait rather than
/// compute: `gpu` loads NVML and asks every GPU (25–32 ms on an H200 node, the suite's longest
/// family there), `munge` waits for munged's two answers and `hostname` for the resolver. Started
/// first, their waits overlap the other families' work instead of ending the run late: longest
/// first, as in any list schedule. `imex` stays last: it waits for the gpu family's gathering
/// (shared, [`gather::gpu::gather`]), and taken early it would hold a lane doing nothing. The report
/// keeps [`FAMILIES`] order.
pub const START_FIRST: &[&str] = &["gpu", "munge", "hostname"];

/// Where a family goes in a run's queue: [`START_FIRST`]'s position, then every other family in
/// [`FAMILIES`] order (the sort is stable).
fn queue_rank(name: &str) -> usize {
    START_FIRST
        .iter()
        .position(|f| *f == name)
        .unwrap_or(START_FIRST.len())
}

/// Puts a run's queue (families in [`FAMILIES`] order) in the order lanes take them.
fn start_order(queue: &mut VecDeque<Queued>) {
    queue
        .make_contiguous()
        .sort_by_key(|(name, _)| queue_rank(name));
}

/// How long every lane may go without a family finishing, while families wait, before another lane
/// is started: a family blocked in the kernel (a hung NFS stat, a slow controller) holds up the
/// families queued behind it by at most this, and each family still gets the whole check timeout.
pub const STALL: Duration = Duration::from_millis(20);

/// A family waiting for a lane: its name and function.
type Queued = (&'static str, fn(&Ctx) -> FamilyResult);

/// What a lane hands back for one family: its result and how long it took, or its panic.
type Done = (&'static str, std::thread::Result<(FamilyResult, Duration)>);

/// One lane: takes the queue's next family until the queue is empty, sending each result.
fn lane(
    ctx: &Ctx,
    busy: &Mutex<HashSet<&'static str>>,
    queue: &Mutex<VecDeque<Queued>>,
    done: &tokio::sync::mpsc::UnboundedSender<Done>,
) {
    loop {
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let Some((name, run)) = next else {
            return;
        };
        let t = Instant::now();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(ctx)));
        busy.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
        // The run may be over (its timeout passed): then nobody listens, and that is fine.
        let _ = done.send((name, r.map(|r| (r, t.elapsed()))));
    }
}

/// Runs the families on blocking threads with timeouts; remembers which are still running.
pub struct Runner {
    ctx: Arc<Ctx>,
    /// [`FAMILIES`] (other families only in this module's tests).
    families: &'static [Family],
    busy: Arc<Mutex<HashSet<&'static str>>>,
    /// One run at a time: a run asked for while another is going waits for it, instead of finding
    /// its families busy and reporting them UNKNOWN.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Runner {
    /// A runner over a context.
    pub fn new(ctx: Ctx) -> Runner {
        Runner::with_families(ctx, FAMILIES)
    }

    fn with_families(ctx: Ctx, families: &'static [Family]) -> Runner {
        Runner {
            families,
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
    ///
    /// The selected families are queued ([`START_FIRST`], then [`FAMILIES`] order) and taken by
    /// [`lanes`] blocking threads; whenever [`STALL`] passes with families still queued and none
    /// finishing, one more lane starts, so a family stuck in the kernel delays the others by at most [`STALL`] each
    /// time. Every family must finish within `check_timeout_secs` of the run's start, else it is
    /// UNKNOWN ("did not finish within"); its lane stays with it, and the family is not queued
    /// again until it returns ("still running from an earlier run").
    pub async fn run(&self, only: &[String]) -> NodeReport {
        let _one = self.one_at_a_time.lock().await;
        let start = Instant::now();
        // Every family of this run shares one read of slurm.conf and the mount tables.
        self.ctx.begin_run();
        let timeout = Duration::from_secs(self.ctx.cfg.check_timeout_secs);
        let deadline = tokio::time::Instant::now() + timeout;
        let infos = all_checks();
        // (family, its selected IDs, whether it was queued: false when still busy from before)
        let mut tasks = vec![];
        let mut queue: VecDeque<Queued> = VecDeque::new();
        for fam in self.families {
            let ids: Vec<&'static str> = infos
                .iter()
                .filter(|c| c.family == fam.name && self.selected(c.id, only))
                .map(|c| c.id)
                .collect();
            if ids.is_empty() {
                continue;
            }
            let queued = self
                .busy
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(fam.name);
            if queued {
                queue.push_back((fam.name, fam.run));
            }
            tasks.push((fam.name, ids, queued));
        }
        start_order(&mut queue);
        let mut pending = queue.len();
        let queue = Arc::new(Mutex::new(queue));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Done>();
        let add_lane = || {
            let (ctx, busy, queue, tx) = (
                self.ctx.clone(),
                self.busy.clone(),
                queue.clone(),
                tx.clone(),
            );
            // The lane's handle is not awaited: its results come through `tx`.
            drop(tokio::task::spawn_blocking(move || {
                lane(&ctx, &busy, &queue, &tx)
            }));
        };
        for _ in 0..lanes(own_cpus()).min(pending) {
            add_lane();
        }
        let mut results: HashMap<&'static str, std::thread::Result<(FamilyResult, Duration)>> =
            HashMap::new();
        while pending > 0 {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            match tokio::time::timeout(STALL.min(deadline - now), rx.recv()).await {
                Ok(Some((name, r))) => {
                    results.insert(name, r);
                    pending -= 1;
                }
                // Unreachable while `tx` is held here; nothing more can come.
                Ok(None) => break,
                Err(_) => {
                    let waiting = !queue.lock().unwrap_or_else(|p| p.into_inner()).is_empty();
                    if waiting {
                        add_lane();
                    }
                }
            }
        }
        // Families no lane took before the deadline are not run late: they are free again.
        for (name, _) in queue.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            self.busy
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(name);
        }
        let mut checks = vec![];
        let mut facts = BTreeMap::new();
        facts.insert(
            "launchguard_version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        );
        for (name, ids, queued) in tasks {
            let result = if !queued {
                Err(format!(
                    "the {name} checks are still running from an earlier run (hung I/O?)"
                ))
            } else {
                match results.remove(name) {
                    Some(Ok(r)) => Ok(r),
                    Some(Err(_)) => Err(format!(
                        "the {name} checks panicked (a bug: please report it)"
                    )),
                    None => Err(format!(
                        "the {name} checks did not finish within {} s",
                        timeout.as_secs()
                    )),
                }
            };
            let mut ms = start.elapsed().as_secs_f64() * 1e3;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Condvar;

    /// Holds the `stuck` families until a test opens it (a family blocked in the kernel).
    static GATE: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

    fn stuck(_: &Ctx) -> FamilyResult {
        let (open, cv) = &GATE;
        let mut o = open.lock().unwrap_or_else(|p| p.into_inner());
        while !*o {
            o = cv.wait(o).unwrap_or_else(|p| p.into_inner());
        }
        FamilyResult {
            outcomes: vec![],
            facts: vec![],
        }
    }

    /// Opens [`GATE`] when dropped: a failed assertion must not leave the runtime's drop waiting
    /// for the stuck families for good.
    struct OpenOnDrop;

    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            let (open, cv) = &GATE;
            *open.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_all();
        }
    }

    /// No more lanes than CPUs (a CPU-pinned or 1-CPU cgroup gets one), never none, at most
    /// [`LANES`] however many CPUs.
    #[test]
    fn lanes_follow_the_cpus_up_to_lanes() {
        assert_eq!(
            [0, 1, 2, 3, 4, 256].map(lanes),
            [1, 1, 2, LANES.min(3), LANES.min(4), LANES]
        );
    }

    /// The families that wait start first, in [`START_FIRST`] order; every other family follows in
    /// [`FAMILIES`] order; a name in [`START_FIRST`] that is no family (a rename) fails here.
    #[test]
    fn waiting_families_are_queued_first_and_the_rest_keep_their_order() {
        for name in START_FIRST {
            assert!(
                FAMILIES.iter().any(|f| f.name == *name),
                "START_FIRST names {name}, which is no family"
            );
        }
        let mut queue: VecDeque<Queued> = FAMILIES.iter().map(|f| (f.name, f.run)).collect();
        start_order(&mut queue);
        let queued: Vec<&str> = queue.iter().map(|(n, _)| *n).collect();
        assert_eq!(&queued[..START_FIRST.len()], START_FIRST);
        let rest: Vec<&str> = FAMILIES
            .iter()
            .map(|f| f.name)
            .filter(|n| !START_FIRST.contains(n))
            .collect();
        assert_eq!(&queued[START_FIRST.len()..], &rest[..]);
    }

    /// OK for every check ID; each family keeps its own IDs.
    fn all_ok(_: &Ctx) -> FamilyResult {
        FamilyResult {
            outcomes: all_checks().iter().map(|c| Outcome::ok(c.id)).collect(),
            facts: vec![],
        }
    }

    /// However the lanes take the families ([`START_FIRST`] first), the report lists the checks in
    /// [`FAMILIES`] order, each family's in its own order.
    #[test]
    fn the_report_keeps_families_order() {
        let fams: &'static [Family] = Vec::leak(
            FAMILIES
                .iter()
                .map(|f| Family {
                    name: f.name,
                    run: all_ok,
                })
                .collect(),
        );
        let r = Runner::with_families(Ctx::new(crate::config::Config::default()), fams);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let rep = rt.block_on(r.run(&[]));
        let got: Vec<&str> = rep.checks.iter().map(|c| c.id.as_str()).collect();
        let want: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|f| all_checks().into_iter().filter(move |c| c.family == f.name))
            .map(|c| c.id)
            .collect();
        assert_eq!(got, want);
        assert_eq!(got.len(), all_checks().len());
    }

    fn quick(_: &Ctx) -> FamilyResult {
        FamilyResult {
            outcomes: vec![],
            facts: vec![("quick_family", "ran".into())],
        }
    }

    /// [`LANES`] families stuck for good take every lane the run starts with ([`lanes`]: fewer where
    /// fewer CPUs are ours) and each lane added after a [`STALL`] until all are stuck; the family
    /// queued behind them still runs within the run's timeout, the stuck ones are UNKNOWN, and
    /// the next run does not start them again while they are still stuck. Before the lanes were
    /// added on a stall, `quick_family` never ran: the run ended with it still queued.
    #[test]
    fn families_stuck_on_every_lane_hold_up_no_other_family() {
        // One stuck family per lane, then the quick one (real family names: their check IDs).
        let fams: Vec<Family> = FAMILIES
            .iter()
            .take(LANES + 1)
            .enumerate()
            .map(|(i, f)| Family {
                name: f.name,
                run: if i < LANES { stuck } else { quick },
            })
            .collect();
        assert_eq!(fams.len(), LANES + 1);
        let fams: &'static [Family] = Vec::leak(fams);
        let cfg = crate::config::Config {
            check_timeout_secs: 1,
            ..crate::config::Config::default()
        };
        let r = Runner::with_families(Ctx::new(cfg), fams);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        // Dropped before `rt`: the stuck families end, so the runtime's drop does not wait forever.
        let _open = OpenOnDrop;
        let rep = rt.block_on(r.run(&[]));
        assert_eq!(
            rep.facts.get("quick_family").map(String::as_str),
            Some("ran"),
            "{:?}",
            rep.checks
        );
        let msg = |rep: &NodeReport, id: &str| {
            rep.checks
                .iter()
                .find(|c| c.id == id)
                .map(|c| format!("{} {}", c.status.as_str(), c.message))
                .unwrap_or_default()
        };
        let m = msg(&rep, "node.munge.key_mode");
        assert!(
            m.starts_with("unknown") && m.contains("did not finish within 1 s"),
            "{m}"
        );
        assert!(msg(&rep, "node.hostname.resolves").contains("did not finish within 1 s"));
        let again = rt.block_on(r.run(&[]));
        assert!(
            msg(&again, "node.munge.key_mode").contains("still running from an earlier run"),
            "{:?}",
            again.checks
        );
        assert_eq!(
            again.facts.get("quick_family").map(String::as_str),
            Some("ran")
        );
    }
}
