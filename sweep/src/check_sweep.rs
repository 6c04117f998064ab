//! `launchguard sweep`: the node checks on every node of a partition or node list, through one
//! `srun` step (one task per node), compared across nodes.
//!
//! Order of work, each under the sweep's one deadline (`--timeout`):
//! 1. `sinfo` says which nodes Slurm will not run a step on now (down, drained, not responding `*`,
//!    every CPU allocated, …): those are reported with Slurm's state and reason and not asked;
//! 2. one `srun -N<k> --ntasks-per-node=1 --label --no-kill -w <nodes>` runs the check everywhere
//!    else (two thirds of the time left); each task prints `@lg-node $SLURMD_NODENAME` and the
//!    check's JSON, read while the step runs ([`report::StepParser`]);
//! 3. nodes srun named in a launch error (`… failed on node X: why`) keep that reason; nodes that
//!    gave no report otherwise (their output cut when srun aborted the step) are asked again, one
//!    `srun -w <node>` each, in parallel, in the time left;
//! 4. nodes still silent are reported with what Slurm said (srun's launch error for the node, its
//!    state and reason from a fresh `sinfo`), a check that started but never answered as a timeout;
//!    the facts of the nodes that answered are compared ([`crate::compare`]).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cleanup;
use crate::compare::{self, Divergence, RULES};
use crate::diagnose::{self, Cause, Diagnosis};
use crate::finding::{self, Finding, Severity};
use crate::report::{self, NodeReport, TaskOutput};
use crate::slurm::{self, NodeState};

/// What to sweep and how.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Partition to sweep (`-p`), also passed to srun.
    pub partition: Option<String>,
    /// Node list (`lgn[1-3]`); with a partition, both must hold.
    pub nodes: Option<String>,
    /// Deadline for the whole sweep.
    pub timeout: Duration,
    /// Command each task runs (through `sh -c`), printing the check JSON.
    pub check_command: String,
    /// Extra srun arguments (`--reservation=maint`, `--account=…`).
    pub srun_args: Vec<String>,
    /// Most per-node retry sruns at once.
    pub parallel: usize,
}

/// What one node came back with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", content = "detail", rename_all = "snake_case")]
pub enum NodeResult {
    /// The check ran and printed its report.
    Report(NodeReport),
    /// The node could not run the step.
    Unreachable {
        /// What Slurm said.
        reason: String,
        /// The likeliest cause and its evidence ([`diagnose::judge`]); `None` for nodes not
        /// diagnosed (drained on purpose, unknown to Slurm, busy with jobs).
        #[serde(skip_serializing_if = "Option::is_none")]
        diagnosis: Option<Diagnosis>,
    },
    /// The sweep could not judge the node, through no fault of the node's: it was still completing
    /// a job (the sweep's own aborted step, most often) when its turn came, past the bounded wait.
    Unjudged {
        /// Why.
        reason: String,
    },
    /// The check started (its marker arrived) but gave no report before the deadline killed it.
    TimedOut {
        /// The sweep's deadline, seconds.
        seconds: f64,
    },
    /// The step ran but printed no usable report.
    Unreadable {
        /// What it printed instead.
        detail: String,
    },
}

/// One node's line of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeOutcome {
    /// Slurm node name.
    pub node: String,
    /// Slurm's state when the sweep looked (before or after asking).
    pub slurm_state: Option<String>,
    /// The result.
    #[serde(flatten)]
    pub result: NodeResult,
    /// This node's findings.
    pub findings: Vec<Finding>,
}

/// The whole sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// Report format version.
    pub schema: u32,
    /// Nodes, in node-list order.
    pub nodes: Vec<NodeOutcome>,
    /// Cluster-wide values that differ.
    pub divergences: Vec<Divergence>,
    /// Cluster-wide findings (the node findings are under each node).
    pub cluster_findings: Vec<Finding>,
    /// Worst of every finding.
    pub status: Severity,
    /// Exit code (0 ok, 1 warning, 2 critical, 3 unknown).
    pub exit_code: u8,
    /// srun steps used (1 + per-node retries).
    pub steps: usize,
    /// Wall time, ms.
    pub duration_ms: f64,
}

/// The shell wrapper each task runs: marker line, then the check.
pub fn task_script(check_command: &str) -> String {
    format!(
        // No `exec`: a --check-command may start with assignments (`FOO=1 launchguard …`) or be a
        // short script (`cd /x; launchguard …`).
        "echo \"{}$SLURMD_NODENAME\"; {check_command}",
        report::NODE_MARKER
    )
}

/// Quotes one word for `sh`.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn srun_cmd(opts: &SweepOptions, nodes: &[String], job: &str, budget: Duration) -> Command {
    let mut c = Command::new("srun");
    let minutes = budget.as_secs().div_ceil(60).max(1) + 1;
    let immediate = (budget.as_secs() / 2).clamp(1, 30);
    c.arg(format!("-N{}", nodes.len()))
        .arg(format!("-n{}", nodes.len()))
        .args([
            "--ntasks-per-node=1",
            "--label",
            "--kill-on-bad-exit=0",
            "--no-kill",
        ])
        .arg(format!("--immediate={immediate}"))
        .arg(format!("--time={minutes}"))
        .arg(format!("--job-name={job}"))
        .arg(format!("--nodelist={}", nodes.join(",")));
    if let Some(p) = &opts.partition {
        c.arg(format!("--partition={p}"));
    }
    c.args(&opts.srun_args);
    c.args(["sh", "-c", &task_script(&opts.check_command)]);
    c
}

fn unreachable_finding(
    node: &str,
    reason: &str,
    state: Option<&NodeState>,
    diagnosis: Option<&Diagnosis>,
) -> Finding {
    if state.is_some_and(NodeState::busy) {
        return Finding::new(
            "cluster.node_busy",
            Severity::Warning,
            vec![node.to_string()],
            &format!("node '{node}' was not checked: {reason}"),
            "a check step would wait for its jobs to end, so its configuration was not compared",
            &format!("sweep it again when its jobs end (squeue -w {node}), or inside a maintenance reservation with --srun-arg=--reservation=NAME"),
        );
    }
    let drained = state.is_some_and(|s| s.state.contains("drain") && !s.state.ends_with('*'));
    let what = format!("node '{node}' could not run the check step: {reason}");
    let (id, why, fix) = if reason.starts_with("Slurm has no node") {
        (
            "cluster.node_unreachable",
            "jobs scheduled there fail or wait, and its configuration could not be compared"
                .to_string(),
            format!(
                "check the name (sinfo -N lists the nodes Slurm knows) or add {node} to slurm.conf"
            ),
        )
    } else if drained {
        (
            "cluster.node_unreachable",
            "jobs scheduled there fail or wait, and its configuration could not be compared".to_string(),
            format!("it was taken out of service on purpose; once its reason is dealt with: scontrol update nodename={node} state=resume"),
        )
    } else {
        // Canned results (unit tests) come without a diagnosis: judge Slurm's words alone.
        let d = diagnosis.cloned().unwrap_or_else(|| {
            diagnose::judge(&diagnose::Evidence {
                launch_error: Some(reason),
                reason: state.map_or("", |s| s.reason.as_str()),
                ctld_lines: &[],
            })
        });
        let (why, fix) = diagnose::explain(d.cause, node);
        let why =
            if d.evidence.is_empty() || reason.contains(d.evidence.trim_start_matches("srun: ")) {
                why
            } else {
                format!("{why} ({})", d.evidence)
            };
        let id = if d.cause == Cause::MungeKey {
            "cluster.munge_auth"
        } else {
            "cluster.node_unreachable"
        };
        (id, why, fix)
    };
    Finding::new(
        id,
        if drained {
            Severity::Warning
        } else {
            Severity::Critical
        },
        vec![node.to_string()],
        &what,
        &why,
        &fix,
    )
}

fn unjudged_finding(node: &str, reason: &str) -> Finding {
    Finding::new(
        "cluster.node_unjudged",
        Severity::Unknown,
        vec![node.to_string()],
        &format!("node '{node}' was not judged: {reason}"),
        "the sweep could not run the check there in time; this says nothing against the node, but its configuration was not compared",
        &format!("sweep it again once it is idle: launchguard sweep -w {node}"),
    )
}

fn node_findings(r: &NodeReport) -> Vec<Finding> {
    let mut out: Vec<Finding> = r
        .failures
        .iter()
        .map(|c| Finding {
            id: c.id.clone(),
            severity: c.status,
            nodes: vec![r.node.clone()],
            line: if c.message.is_empty() {
                format!(
                    "launchguard: {}: {} on {} (no message)",
                    c.id,
                    c.status.as_str(),
                    r.node
                )
            } else {
                c.message.clone()
            },
        })
        .collect();
    // A node whose overall status is worse than its failures say (e.g. the check could not run one
    // of its checks and said so only in `status`) still counts.
    if r.status > finding::worst(&out) {
        out.push(Finding::new(
            "cluster.node_status",
            r.status,
            vec![r.node.clone()],
            &format!(
                "node '{}' reports status {} without a failing check",
                r.node,
                r.status.as_str()
            ),
            "the node's own verdict is worse than its checks explain",
            &format!("run launchguard check on {} and read its output", r.node),
        ));
    }
    out
}

/// Runs the sweep.
pub fn sweep(opts: &SweepOptions) -> Result<SweepReport, String> {
    let start = Instant::now();
    // Ctrl-C/SIGTERM/SIGHUP cancel the check step's job (found by this run's job name).
    let _cleanup = cleanup::Guard::arm();
    let deadline = start + opts.timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    // Without -p or -w the step goes to the default partition: sweep exactly its nodes, or nodes of
    // other partitions would fail the allocation and read as unreachable.
    let partition = match (&opts.partition, &opts.nodes) {
        (None, None) => slurm::default_partition(left().min(Duration::from_secs(15))),
        (p, _) => p.clone(),
    };
    let states = slurm::sinfo(
        partition.as_deref(),
        opts.nodes.as_deref(),
        left().min(Duration::from_secs(15)),
    )?;
    let scope: Vec<String> = match &opts.nodes {
        Some(list) => slurm::expand(list)?,
        None => states.iter().map(|s| s.node.clone()).collect(),
    };
    if scope.is_empty() {
        return Err("no nodes to sweep (empty partition or node list)".into());
    }
    let state_of = |n: &str| states.iter().find(|s| s.node == n).cloned();
    let mut results: BTreeMap<String, NodeResult> = BTreeMap::new();
    let mut launch_err: BTreeMap<String, String> = BTreeMap::new();
    let mut unreadable: BTreeMap<String, String> = BTreeMap::new();
    let mut ask = Vec::new();
    let mut finishing = Vec::new();
    for n in &scope {
        match state_of(n) {
            None => {
                results.insert(
                    n.clone(),
                    NodeResult::Unreachable {
                        reason: match &opts.partition {
                            Some(p) => format!("Slurm has no node '{n}' in partition {p}"),
                            None => format!("Slurm has no node '{n}'"),
                        },
                        diagnosis: None,
                    },
                );
            }
            Some(s) if !s.usable() => {
                results.insert(
                    n.clone(),
                    NodeResult::Unreachable {
                        reason: s.describe(),
                        diagnosis: None,
                    },
                );
            }
            // Still completing a job: one step over every node would be refused as a whole
            // (`Requested nodes are busy`); wait for it apart, bounded.
            Some(s) if s.completing() => finishing.push(n.clone()),
            Some(_) => ask.push(n.clone()),
        }
    }
    if !finishing.is_empty() {
        let until = Instant::now() + (left() / 4).min(MAX_COMPLETING_WAIT);
        let (done, still) = wait_completed(&finishing, until);
        ask.extend(done);
        for (n, st) in still {
            results.insert(
                n,
                NodeResult::Unjudged {
                    reason: format!(
                        "it was still completing an earlier job when the sweep began ({})",
                        st.describe()
                    ),
                },
            );
        }
        ask.sort_by_key(|n| scope.iter().position(|x| x == n));
    }
    let job = cleanup::job_name("lg-sweep");
    // Slurm's node states as last seen: the first sinfo, updated by every later one.
    let mut known: BTreeMap<String, NodeState> =
        states.iter().map(|s| (s.node.clone(), s.clone())).collect();
    let mut steps = 0;
    let mut any_timeout = false;
    // Nodes whose check started but was still running when its step hit the deadline.
    let mut hung: BTreeSet<String> = BTreeSet::new();
    // Nodes whose refused launch made srun abort the first step.
    let mut aborted_by: Vec<String> = Vec::new();
    if !ask.is_empty() {
        // srun's job can be queued because a node became unusable between the sinfo above and the
        // allocation (slurmctld marks a node not responding at any moment, or another job takes
        // it): srun is then ended, the nodes read again, and the step launched again without the
        // unusable ones, at most twice; a queue Slurm's states do not explain is left to srun's
        // own --immediate wait.
        let mut relaunches = 0;
        loop {
            let budget = left() * 2 / 3;
            steps += 1;
            let stop: fn(&str) -> bool = if relaunches < MAX_RELAUNCHES {
                slurm::step_aborted_or_node_unavailable
            } else {
                slurm::step_aborted
            };
            let (o, tasks) = check_step(opts, &ask, &job, budget, stop)?;
            // Ended by us (deadline, srun's abort after a refused launch, a queued job): its job
            // is cancelled by name at the end, whatever srun managed before it died.
            any_timeout |= o.timed_out || o.stopped;
            absorb(&mut results, &mut unreadable, tasks);
            if o.timed_out {
                for n in unreadable.keys() {
                    hung.insert(n.clone());
                }
            }
            for (n, why) in slurm::launch_errors(&o.stderr) {
                if !aborted_by.contains(&n) {
                    aborted_by.push(n.clone());
                }
                launch_err.insert(n, why);
            }
            if o.stopped || o.timed_out {
                // srun may have died (SIGKILL after its grace) still holding the allocation:
                // cancel it now, so its nodes complete it and can be asked again.
                cleanup::unsure();
                cleanup::cancel_owned(left().min(Duration::from_secs(5)), true);
            }
            let Some(pending) = slurm::unavailable_reason(&o.stderr).filter(|_| o.stopped) else {
                break;
            };
            relaunches += 1;
            let fresh = slurm::sinfo(
                None,
                Some(&ask.join(",")),
                left().min(Duration::from_secs(10)),
            )
            .unwrap_or_default();
            for s in fresh {
                known.insert(s.node.clone(), s);
            }
            let gone: Vec<String> = ask
                .iter()
                .filter(|n| known.get(*n).is_some_and(|s| !s.usable()))
                .cloned()
                .collect();
            for n in &gone {
                results.insert(
                    n.clone(),
                    NodeResult::Unreachable {
                        reason: format!(
                            "{}; the check step's job was queued for it (srun: {pending})",
                            known[n].describe()
                        ),
                        diagnosis: None,
                    },
                );
            }
            ask.retain(|n| !gone.contains(n));
            // Nodes that started completing a job meanwhile: waited for, as before the first step.
            let completing: Vec<String> = ask
                .iter()
                .filter(|n| known.get(*n).is_some_and(NodeState::completing))
                .cloned()
                .collect();
            if !completing.is_empty() {
                let until = Instant::now() + (left() / 4).min(MAX_COMPLETING_WAIT);
                let (_, still) = wait_completed(&completing, until);
                for (n, st) in still {
                    ask.retain(|m| *m != n);
                    results.insert(
                        n.clone(),
                        NodeResult::Unjudged {
                            reason: format!(
                                "it was completing a job when the check step was launched, and still was past the wait ({})",
                                st.describe()
                            ),
                        },
                    );
                    known.insert(n, st);
                }
            }
            if ask.is_empty() || left() < Duration::from_secs(1) {
                break;
            }
        }
    }
    // Per-node retries for the silent ones, in parallel, in the time left.
    // A node srun named in a launch error ("… failed on node X: …") already has Slurm's reason;
    // asking it again would only wait for the aborted step's cleanup on it.
    let mut missing: Vec<String> = ask
        .iter()
        .filter(|n| !results.contains_key(*n) && !launch_err.contains_key(*n))
        .cloned()
        .collect();
    // What the sweep saw of a node that did not answer but that no evidence names: srun's words
    // about the step as a whole (a refused or queued allocation, a failure on the login node).
    // Such a node is reported from Slurm's own state for it, never from these words.
    let mut inconclusive: BTreeMap<String, String> = BTreeMap::new();
    if !missing.is_empty() && left() > Duration::from_millis(500) {
        for n in &missing {
            unreadable.remove(n);
        }
        // The aborted step's nodes are completing it for a moment (slurmd ends its tasks and
        // reports to slurmctld); a step asked of them before then is refused as busy. Wait for
        // that, bounded: a node that is still completing our own step is unjudged, not broken.
        let waited = Instant::now();
        let until = waited + (left() / 2).min(MAX_COMPLETING_WAIT);
        let (_, still) = wait_completed(&missing, until);
        for (n, st) in still {
            missing.retain(|m| *m != n);
            let after = waited.elapsed().as_secs_f64();
            let reason = if aborted_by.is_empty() {
                format!(
                    "it was still completing this sweep's own aborted step {after:.0} s later ({})",
                    st.describe()
                )
            } else {
                // Slurm's reverse tree (src/common/reverse_tree.h, REVERSE_TREE_CHILDREN_TIMEOUT):
                // slurmstepd waits up to 60 s for the step-completion message of each node below
                // it, and a node that refused the launch never sends one.
                format!(
                    "it was still completing this sweep's check step {after:.0} s after {} refused the launch and srun aborted the step ({}): slurmstepd there waits up to 60 s for the step-completion message of a node below it in Slurm's step tree that never started the step",
                    aborted_by.join(", "),
                    st.describe()
                )
            };
            known.insert(n.clone(), st);
            results.insert(n, NodeResult::Unjudged { reason });
        }
    }
    if !missing.is_empty() && left() > Duration::from_millis(500) {
        let retry_deadline = Instant::now() + left().saturating_sub(Duration::from_millis(300));
        let queue = Arc::new(Mutex::new(missing.clone()));
        type Done = Vec<(String, Result<(slurm::Output, Vec<TaskOutput>), String>)>;
        let done: Arc<Mutex<Done>> = Arc::default();
        let mut handles = Vec::new();
        for _ in 0..opts.parallel.max(1).min(missing.len()) {
            let (queue, done, opts, job) = (queue.clone(), done.clone(), opts.clone(), job.clone());
            handles.push(thread::spawn(move || {
                while let Some(n) = queue.lock().map(|mut q| q.pop()).ok().flatten() {
                    let b = retry_deadline.saturating_duration_since(Instant::now());
                    if b.is_zero() || cleanup::exiting() {
                        break;
                    }
                    let r = check_step(
                        &opts,
                        std::slice::from_ref(&n),
                        &job,
                        b,
                        slurm::step_aborted,
                    );
                    if let Ok(mut d) = done.lock() {
                        d.push((n, r));
                    }
                }
            }));
        }
        for h in handles {
            let _ = h.join();
        }
        steps += missing.len();
        for (n, r) in done.lock().map(|d| d.clone()).unwrap_or_default() {
            let (o, tasks) = match r {
                Ok(x) => x,
                Err(e) => {
                    // srun did not even start here (the login node's fault, not the node's).
                    inconclusive.insert(n, format!("its retry step could not start: {e}"));
                    continue;
                }
            };
            any_timeout |= o.timed_out || o.stopped;
            absorb(&mut results, &mut unreadable, tasks);
            if o.timed_out && unreadable.contains_key(&n) {
                hung.insert(n.clone());
            }
            if results.contains_key(&n) || unreadable.contains_key(&n) {
                continue;
            }
            // Evidence about this node: a launch error srun names it in.
            if let Some((_, why)) = slurm::launch_errors(&o.stderr)
                .into_iter()
                .find(|(x, _)| *x == n)
            {
                launch_err.entry(n).or_insert(why);
                continue;
            }
            // Anything else is about the step as a whole: a refused or queued allocation
            // (`Requested nodes are busy`, most often the node still completing our own step),
            // slurmctld or the login node's munged not answering, srun killed at the deadline.
            let words = if o.timed_out {
                format!(
                    "its retry step did not start within {:.0} s (srun killed at the deadline)",
                    o.elapsed.as_secs_f64()
                )
            } else {
                match slurm::srun_error(&o.stderr) {
                    Some(e) if refused_busy(&e) => format!("its retry step was refused: {e}"),
                    Some(e) => format!("its retry step failed before reaching the node: {e}"),
                    None => format!("its retry step's srun exited {:?} with no output", o.code),
                }
            };
            inconclusive.insert(n, words);
        }
    }
    if any_timeout {
        // srun was killed at its deadline (or ended after it aborted its step): its job, found by
        // this run's name, is cancelled now.
        cleanup::unsure();
        cleanup::cancel_owned(
            left().min(Duration::from_secs(5)) + Duration::from_secs(1),
            true,
        );
    }
    // Fresh states for the nodes that did not answer: Slurm may have noticed them by now.
    let silent: Vec<String> = ask
        .iter()
        .filter(|n| !results.contains_key(*n))
        .cloned()
        .collect();
    // Past the deadline this gets one more second, no more (slurmctld may be the slow part).
    let fresh = if silent.is_empty() {
        Vec::new()
    } else {
        let budget = (left() + Duration::from_secs(1)).min(Duration::from_secs(10));
        slurm::sinfo(None, Some(&silent.join(",")), budget).unwrap_or_default()
    };
    for s in &fresh {
        known.insert(s.node.clone(), s.clone());
    }
    for n in &silent {
        if let Some(detail) = unreadable.remove(n) {
            let r = if hung.contains(n) {
                NodeResult::TimedOut {
                    seconds: opts.timeout.as_secs_f64(),
                }
            } else {
                NodeResult::Unreadable { detail }
            };
            results.insert(n.clone(), r);
            continue;
        }
        let st = fresh.iter().find(|s| s.node == *n);
        if let Some(why) = launch_err.get(n) {
            let reason = match st {
                Some(s) => format!("{why} ({})", s.describe()),
                None => why.clone(),
            };
            results.insert(
                n.clone(),
                NodeResult::Unreachable {
                    reason,
                    diagnosis: None,
                },
            );
            continue;
        }
        // No word from srun about this node itself: only Slurm's state for it can name it.
        let words = inconclusive.remove(n).unwrap_or_else(|| {
            "the check step ended without output from this node and no retry ran in the time left"
                .into()
        });
        results.insert(n.clone(), silent_node(words, st));
    }
    let now_state = |n: &str| known.get(n).cloned();
    diagnose_unreachable(&mut results, &launch_err, &now_state, left());
    Ok(assemble(&scope, results, now_state, steps, start.elapsed()))
}

/// What a node that gave no report, and that srun named in no launch error, is reported as. srun's
/// other words (`words`: a refused or queued allocation, slurmctld or the login node's munged not
/// answering, srun killed at the deadline) are about the step as a whole, not about the node, so
/// only Slurm's own state for it can name it: unusable (`down*`, `idle*`, `completing*`, drained,
/// allocated) is [`NodeResult::Unreachable`], diagnosed later; anything else is
/// [`NodeResult::Unjudged`] with those words.
pub fn silent_node(words: String, state: Option<&NodeState>) -> NodeResult {
    match state {
        Some(s) if !s.usable() => NodeResult::Unreachable {
            reason: format!("{} ({words})", s.describe()),
            diagnosis: None,
        },
        Some(s) => NodeResult::Unjudged {
            reason: format!("{words} ({})", s.describe()),
        },
        None => NodeResult::Unjudged { reason: words },
    }
}

/// Longest the sweep waits for nodes to finish completing a job (its own aborted step, or one that
/// ended just before the sweep), within its deadline. A healthy slurmd reports a killed step's end
/// in well under a second; a node slurmctld cannot reach stays completing until slurmctld marks it
/// down, which the sweep does not wait for.
pub const MAX_COMPLETING_WAIT: Duration = Duration::from_secs(5);

/// Most times the first check step is launched again after its job was queued for a node that
/// became unusable ([`slurm::node_unavailable`]); past that, srun's own `--immediate` wait decides.
const MAX_RELAUNCHES: usize = 2;

/// Polls `sinfo` for `nodes` (every 200 ms) until none is completing or `until`: (the nodes done,
/// the nodes still completing with their last state). A node sinfo does not list counts as done
/// (the step then says what is wrong with it).
fn wait_completed(nodes: &[String], until: Instant) -> (Vec<String>, Vec<(String, NodeState)>) {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let states = slurm::sinfo(
            None,
            Some(&nodes.join(",")),
            left.max(Duration::from_secs(2)),
        )
        .unwrap_or_default();
        let still: Vec<(String, NodeState)> = nodes
            .iter()
            .filter_map(|n| {
                states
                    .iter()
                    .find(|s| s.node == *n && s.completing())
                    .map(|s| (n.clone(), s.clone()))
            })
            .collect();
        if still.is_empty() || Instant::now() >= until || cleanup::exiting() {
            let done = nodes
                .iter()
                .filter(|n| !still.iter().any(|(x, _)| x == *n))
                .cloned()
                .collect();
            return (done, still);
        }
        thread::sleep(Duration::from_millis(200).min(left));
    }
}

/// Whether srun's error says the allocation was refused because the nodes are busy
/// (`Unable to allocate resources: Requested nodes are busy`).
pub fn refused_busy(srun_error: &str) -> bool {
    srun_error.contains("Requested nodes are busy")
}

/// Gives every unreachable node that Slurm did not take out on purpose a [`Diagnosis`]: its launch
/// error, Slurm's reason, and slurmctld's log lines about it where that log is on this host. Asks
/// slurmctld (`scontrol show node`, `show config`) only when there is such a node, within
/// `budget` (at least 1 s, at most 5 s).
fn diagnose_unreachable(
    results: &mut BTreeMap<String, NodeResult>,
    launch_err: &BTreeMap<String, String>,
    state_of: &dyn Fn(&str) -> Option<NodeState>,
    budget: Duration,
) {
    let todo: Vec<String> = results
        .iter()
        .filter(|(n, r)| match r {
            NodeResult::Unreachable { reason, .. } => {
                let st = state_of(n);
                !reason.starts_with("Slurm has no node")
                    && !st.as_ref().is_some_and(NodeState::busy)
                    && !st
                        .as_ref()
                        .is_some_and(|s| s.state.contains("drain") && !s.state.ends_with('*'))
            }
            _ => false,
        })
        .map(|(n, _)| n.clone())
        .collect();
    if todo.is_empty() {
        return;
    }
    let t = budget.clamp(Duration::from_secs(1), Duration::from_secs(5));
    let addrs = slurm::node_addrs(&todo, t);
    let log = slurm::ctld_log_tail(t)
        .map(|(_, text)| text)
        .unwrap_or_default();
    for n in todo {
        let st = state_of(&n);
        let lines = diagnose::log_lines_about(&log, &n, addrs.get(&n).map(String::as_str), 20);
        let d = diagnose::judge(&diagnose::Evidence {
            launch_error: launch_err.get(&n).map(String::as_str),
            reason: st.as_ref().map_or("", |s| s.reason.as_str()),
            ctld_lines: &lines,
        });
        if let Some(NodeResult::Unreachable { diagnosis, .. }) = results.get_mut(&n) {
            *diagnosis = Some(d);
        }
    }
}

/// Most bytes of stdout kept from one task. A check report is ~3.3 KB; a task that prints without
/// end (a wrong `--check-command`, a looping wrapper) is cut here, so srun's output from thousands of
/// nodes cannot fill the login node's memory.
pub const MAX_TASK_OUTPUT: usize = 256 * 1024;

/// Feeds labelled step output to a [`report::StepParser`], at most [`MAX_TASK_OUTPUT`] bytes per
/// task; tasks cut off are named in [`CappedParser::finish`] with what happened.
#[derive(Default)]
pub struct CappedParser {
    parser: report::StepParser,
    /// Bytes per task so far, and the task's node once its marker arrived.
    tasks: BTreeMap<usize, (usize, Option<String>)>,
}

impl CappedParser {
    /// Takes one line of srun's labelled stdout.
    pub fn feed_line(&mut self, line: &str) {
        if let Some((task, text)) = report::split_label(line) {
            let e = self.tasks.entry(task).or_default();
            if e.0 >= MAX_TASK_OUTPUT {
                return;
            }
            e.0 += line.len();
            if let Some(n) = text.strip_prefix(report::NODE_MARKER) {
                e.1 = Some(n.trim().to_string());
            }
        }
        self.parser.feed_line(line);
    }

    /// The tasks' outputs; a task cut off without a complete report says so.
    pub fn finish(self, stderr: &str) -> Vec<TaskOutput> {
        let cut: BTreeSet<String> = self
            .tasks
            .into_values()
            .filter(|(n, _)| *n >= MAX_TASK_OUTPUT)
            .filter_map(|(_, node)| node)
            .collect();
        let mut tasks = self.parser.finish(stderr);
        for t in &mut tasks {
            if let TaskOutput::Unreadable { node, detail } = t {
                if cut.contains(node.as_str()) {
                    *detail = format!(
                        "its output passed {} KiB and was cut there (a check report is ~3 KB): {detail}",
                        MAX_TASK_OUTPUT / 1024
                    );
                }
            }
        }
        tasks
    }
}

/// One check step over `nodes`, its output aggregated while it runs.
fn check_step(
    opts: &SweepOptions,
    nodes: &[String],
    job: &str,
    budget: Duration,
    stop: fn(&str) -> bool,
) -> Result<(slurm::Output, Vec<TaskOutput>), String> {
    let mut parser = CappedParser::default();
    let o = slurm::run_streaming_until(
        &mut srun_cmd(opts, nodes, job, budget),
        budget,
        &mut |l| parser.feed_line(l),
        stop,
    )?;
    let tasks = parser.finish(&o.stderr);
    Ok((o, tasks))
}

/// Takes the reports of one step's output. A task that printed its marker but no report is kept
/// aside in `unreadable`, not in `results`: when srun aborts a step because another node refused
/// the launch, healthy nodes' checks are killed mid-way, and those nodes are asked again.
fn absorb(
    results: &mut BTreeMap<String, NodeResult>,
    unreadable: &mut BTreeMap<String, String>,
    tasks: Vec<TaskOutput>,
) {
    for t in tasks {
        match t {
            TaskOutput::Report(r) => {
                unreadable.remove(&r.node);
                results.insert(r.node.clone(), NodeResult::Report(r));
            }
            TaskOutput::Unreadable { node, detail } => {
                unreadable.insert(node, detail);
            }
        }
    }
}

/// Builds the report from per-node results (pure: the unit tests feed it canned results).
pub fn assemble(
    scope: &[String],
    mut results: BTreeMap<String, NodeResult>,
    state_of: impl Fn(&str) -> Option<NodeState>,
    steps: usize,
    elapsed: Duration,
) -> SweepReport {
    let mut nodes = Vec::new();
    for n in scope {
        let result = results.remove(n).unwrap_or(NodeResult::Unreachable {
            reason: "not asked".into(),
            diagnosis: None,
        });
        let st = state_of(n);
        let findings = match &result {
            NodeResult::Report(r) => node_findings(r),
            NodeResult::Unreachable { reason, diagnosis } => {
                vec![unreachable_finding(n, reason, st.as_ref(), diagnosis.as_ref())]
            }
            NodeResult::Unjudged { reason } => vec![unjudged_finding(n, reason)],
            NodeResult::TimedOut { seconds } => vec![Finding::new(
                "cluster.check_timeout",
                Severity::Unknown,
                vec![n.clone()],
                &format!("node '{n}' started the check but gave no report within the sweep's {seconds:.0} s (srun killed at the deadline)"),
                "a check that hangs usually waits on a hung filesystem, daemon or device on that node, and its health is unknown",
                &format!("run launchguard check on {n} and see what it waits on (ps -o pid,stat,wchan:30,cmd -C launchguard), or raise --timeout if the node is only slow"),
            )],
            NodeResult::Unreadable { detail } => vec![Finding::new(
                "cluster.check_unreadable",
                Severity::Unknown,
                vec![n.clone()],
                &format!("node '{n}' ran the step but gave no check report: {detail}"),
                "its health and configuration are unknown",
                &format!("install the same launchguard on {n} as on the other nodes (or pass --launchguard PATH) and run launchguard check --json there"),
            )],
        };
        nodes.push(NodeOutcome {
            node: n.clone(),
            slurm_state: st.map(|s| s.state),
            result,
            findings,
        });
    }
    let reports: Vec<NodeReport> = nodes
        .iter()
        .filter_map(|n| match &n.result {
            NodeResult::Report(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    let divergences = compare::compare(&reports);
    let mut cluster_findings = compare::findings(&divergences);
    cluster_findings.extend(compare::nvlink_cliques(&reports));
    let status = finding::worst(
        nodes
            .iter()
            .flat_map(|n| &n.findings)
            .chain(&cluster_findings),
    );
    SweepReport {
        schema: 1,
        nodes,
        divergences,
        cluster_findings,
        status,
        exit_code: status.exit_code(),
        steps,
        duration_ms: elapsed.as_secs_f64() * 1000.0,
    }
}

/// The GPU facts of the nodes that report GPUs (`gpu_count` other than `0`), one line each: count
/// and model, driver, CUDA driver, NVLink links and multi-node NVLink domain (`<cluster
/// uuid>/<clique>`); empty when no node has a GPU.
pub fn gpu_table(r: &SweepReport) -> String {
    let rows: Vec<(&str, &NodeReport)> = r
        .nodes
        .iter()
        .filter_map(|n| match &n.result {
            NodeResult::Report(rep) => Some((n.node.as_str(), rep)),
            _ => None,
        })
        .filter(|(_, rep)| rep.facts.get("gpu_count").is_some_and(|c| c != "0"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(4).max(4);
    let fact = |rep: &NodeReport, k: &str| rep.facts.get(k).cloned().unwrap_or_else(|| "-".into());
    let mut s = String::from("\nGPUs (NVML):\n");
    s.push_str(&format!(
        "{:w$}  {:20}  {:12}  {:6}  {:24}  NVLINK DOMAIN\n",
        "NODE", "GPUS", "DRIVER", "CUDA", "NVLINK"
    ));
    for (node, rep) in rows {
        s.push_str(&format!(
            "{node:w$}  {:20}  {:12}  {:6}  {:24}  {}\n",
            fact(rep, "gpu_count"),
            fact(rep, "gpu_driver_version"),
            fact(rep, "gpu_cuda_driver_version"),
            fact(rep, "gpu_nvlink"),
            fact(rep, "gpu_nvlink_domain")
        ));
    }
    s
}

/// The readable report: one table of nodes and their findings, one of cluster-wide values.
pub fn render(r: &SweepReport) -> String {
    let mut s = String::new();
    let answered = r
        .nodes
        .iter()
        .filter(|n| matches!(n.result, NodeResult::Report(_)))
        .count();
    s.push_str(&format!(
        "launchguard sweep: {} nodes, {} answered, {} srun steps, {:.1} s: {}\n\n",
        r.nodes.len(),
        answered,
        r.steps,
        r.duration_ms / 1000.0,
        r.status.as_str()
    ));
    let w = r
        .nodes
        .iter()
        .map(|n| n.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    s.push_str(&format!("{:w$}  {:11}  FINDINGS\n", "NODE", "STATUS"));
    for n in &r.nodes {
        let status = match &n.result {
            NodeResult::Report(_) => finding::worst(&n.findings).as_str(),
            NodeResult::Unreachable { .. } => "unreachable",
            NodeResult::Unjudged { .. } => "unjudged",
            NodeResult::Unreadable { .. } => "unreadable",
            NodeResult::TimedOut { .. } => "timeout",
        };
        if n.findings.is_empty() {
            s.push_str(&format!("{:w$}  {status:11}  -\n", n.node));
        }
        for (i, f) in n.findings.iter().enumerate() {
            let (node, st) = if i == 0 {
                (n.node.as_str(), status)
            } else {
                ("", "")
            };
            s.push_str(&format!("{node:w$}  {st:11}  {f}\n"));
        }
    }
    s.push_str(&gpu_table(r));
    s.push_str("\nmust be identical on every node:\n");
    let fw = RULES.iter().map(|r| r.fact.len()).max().unwrap_or(4);
    s.push_str(&format!(
        "{:fw$}  {:32}  DIFFERS ON\n",
        "VALUE", "EXPECTED (NODES)"
    ));
    for rule in RULES {
        let d = r.divergences.iter().find(|d| d.fact == rule.fact);
        let (expected, differs) = match d {
            Some(d) => (
                d.expected
                    .as_ref()
                    .map(|e| format!("{} ({})", compare::short(&e.value), e.nodes.len()))
                    .unwrap_or_else(|| "no majority".into()),
                d.differing
                    .iter()
                    .map(|h| format!("{} {}", h.nodes.join(","), compare::short(&h.value)))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            None => {
                let vals: Vec<&str> = r
                    .nodes
                    .iter()
                    .filter_map(|n| match &n.result {
                        NodeResult::Report(rep) => rep.facts.get(rule.fact).map(String::as_str),
                        _ => None,
                    })
                    .collect();
                match vals.first() {
                    Some(v) => (
                        format!("{} ({})", compare::short(v), vals.len()),
                        "-".into(),
                    ),
                    None => ("not reported".into(), "-".into()),
                }
            }
        };
        s.push_str(&format!("{:fw$}  {expected:32}  {differs}\n", rule.fact));
    }
    if !r.cluster_findings.is_empty() {
        s.push('\n');
        for f in &r.cluster_findings {
            s.push_str(&format!("{f}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canned(node: &str, key: &str, extra: &str) -> String {
        format!(
            r#"{{"schema":1,"node":"{node}","launchguard_version":"0.1.0","status":"{st}","exit_code":0,"duration_ms":3.0,"checks":[{{"id":"node.hostname.resolves","status":"{st}","message":"{msg}","duration_ms":0.1}}],"facts":{{"munge_key_digest":"{key}","slurm_conf_digest":"sha256:5c","plugstack_digest":"sha256:77","enroot_conf_digest":"absent","nccl_env_digest":"absent","slurm_version":"22.05.8","launchguard_version":"0.1.0"}}}}"#,
            st = if extra.is_empty() { "ok" } else { "critical" },
            msg = extra
        )
    }

    fn results(docs: &[(&str, String)]) -> BTreeMap<String, NodeResult> {
        docs.iter()
            .map(|(n, d)| {
                (
                    n.to_string(),
                    NodeResult::Report(report::parse_report(n, d).unwrap()),
                )
            })
            .collect()
    }

    /// Issue 32: the GPU facts of each GPU node in one table, and a node in another clique of the
    /// same NVLink domain named as a cluster finding; CPU nodes are not in the GPU table.
    #[test]
    fn gpu_nodes_facts_are_shown_and_a_split_nvlink_domain_is_named() {
        let gpu = |n: &str, clique: u32| {
            canned(n, "sha256:k1", "").replace(
                r#""launchguard_version":"0.1.0"}}"#,
                &format!(
                    r#""launchguard_version":"0.1.0","gpu_count":"4 NVIDIA GB300","gpu_driver_version":"580.159.04","gpu_cuda_driver_version":"13.0","gpu_nvlink":"active/links 0:18/18 1:18/18 2:18/18 3:18/18","gpu_nvlink_domain":"5f1e2d3c4b5a69788796a5b4c3d2e1f0/{clique}"}}}}"#
                ),
            )
        };
        let scope: Vec<String> = ["gb-1", "gb-2", "gb-3", "cpu-1"].map(String::from).to_vec();
        let r = assemble(
            &scope,
            results(&[
                ("gb-1", gpu("gb-1", 3)),
                ("gb-2", gpu("gb-2", 3)),
                ("gb-3", gpu("gb-3", 5)),
                ("cpu-1", canned("cpu-1", "sha256:k1", "")),
            ]),
            |_| None,
            1,
            Duration::from_millis(500),
        );
        let t = render(&r);
        assert!(t.contains("GPUs (NVML):\n"), "{t}");
        assert!(
            t.contains("gb-3  4 NVIDIA GB300        580.159.04    13.0    active/links 0:18/18 1:18/18 2:18/18 3:18/18  5f1e2d3c4b5a69788796a5b4c3d2e1f0/5"),
            "{t}"
        );
        assert!(!t.contains("cpu-1  0"), "{t}");
        assert_eq!(r.cluster_findings.len(), 1, "{:?}", r.cluster_findings);
        assert_eq!(r.cluster_findings[0].nodes, vec!["gb-3"]);
        assert!(r.cluster_findings[0]
            .line
            .contains("clique 5 on gb-3, while 2 node(s) are in clique 3"));
        assert_eq!(r.status, Severity::Warning);
    }

    #[test]
    fn a_healthy_cluster_is_ok_with_every_value_shown_once() {
        let scope: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let r = assemble(
            &scope,
            results(&[
                ("a", canned("a", "sha256:k1", "")),
                ("b", canned("b", "sha256:k1", "")),
                ("c", canned("c", "sha256:k1", "")),
            ]),
            |_| None,
            1,
            Duration::from_millis(500),
        );
        assert_eq!((r.status, r.exit_code), (Severity::Ok, 0));
        let t = render(&r);
        assert!(
            t.contains("launchguard sweep: 3 nodes, 3 answered, 1 srun steps, 0.5 s: ok"),
            "{t}"
        );
        assert!(t.contains("munge_key_digest     sha256:k1 (3)"), "{t}");
    }

    #[test]
    fn one_odd_key_one_failing_node_and_one_unreachable_node_are_each_named() {
        let scope: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let mut res = results(&[
            ("a", canned("a", "sha256:k1", "")),
            ("b", canned("b", "sha256:k2", "")),
            (
                "c",
                canned(
                    "c",
                    "sha256:k1",
                    "launchguard: node.hostname.resolves: 'c' resolves to 127.0.1.1; x; y",
                ),
            ),
        ]);
        res.insert(
            "d".into(),
            NodeResult::Unreachable {
                reason: "Communication connection failure".into(),
                diagnosis: None,
            },
        );
        let r = assemble(&scope, res, |_| None, 2, Duration::from_secs(1));
        assert_eq!(r.exit_code, 2);
        let ids: Vec<(&str, Vec<String>)> = r
            .nodes
            .iter()
            .flat_map(|n| &n.findings)
            .chain(&r.cluster_findings)
            .map(|f| (f.id.as_str(), f.nodes.clone()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("node.hostname.resolves", vec!["c".to_string()]),
                ("cluster.node_unreachable", vec!["d".to_string()]),
                ("cluster.munge_key_digest", vec!["b".to_string()]),
            ]
        );
        let t = render(&r);
        assert!(t.contains("a     ok           -\n"), "{t}");
        assert!(t.contains("d     unreachable  launchguard: cluster.node_unreachable: node 'd' could not run the check step: Communication connection failure;"), "{t}");
        assert!(
            t.contains("munge_key_digest     sha256:k1 (2)                     b sha256:k2"),
            "{t}"
        );
    }

    #[test]
    fn a_drained_node_is_a_warning_and_a_munge_refusal_gets_the_munge_fix() {
        let drained = NodeState {
            node: "x".into(),
            state: "drained".into(),
            reason: "maint".into(),
        };
        let f = unreachable_finding("x", &drained.describe(), Some(&drained), None);
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.id, "cluster.node_unreachable");
        let f = unreachable_finding("y", "Zero Bytes were transmitted or received", None, None);
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.id, "cluster.munge_auth");
        assert!(f.line.contains("munge key differs"), "{}", f.line);
        assert!(f.line.contains("restart munged"), "{}", f.line);
        let f = unreachable_finding("z", "Communication connection failure", None, None);
        assert_eq!(f.id, "cluster.node_unreachable");
        assert!(f.line.contains("start slurmd on z"), "{}", f.line);
    }

    /// Issue 29's sweep: lgn16's key differs and slurmctld already marks it `down*`/`Not
    /// responding`; lgn10 was still completing the sweep's own aborted step when retried. Only
    /// lgn16 is named, with the cause from slurmctld's log; lgn10 is unjudged, not unreachable.
    #[test]
    fn the_node_completing_our_own_step_is_unjudged_and_only_the_munge_node_is_named() {
        let scope: Vec<String> = ["lgn1", "lgn10", "lgn16"].map(String::from).to_vec();
        let mut res = results(&[("lgn1", canned("lgn1", "sha256:k1", ""))]);
        res.insert(
            "lgn10".into(),
            NodeResult::Unjudged {
                reason: "its retry step was refused: Unable to allocate resources: Requested nodes are busy".into(),
            },
        );
        let log = "[2026-12-01T15:48:20.605] error: slurm_receive_msgs: [[10.78.0.26]:6918] failed: Zero Bytes were transmitted or received\n";
        let lines = diagnose::log_lines_about(log, "lgn16", Some("10.78.0.26"), 5);
        let d = diagnose::judge(&diagnose::Evidence {
            launch_error: None,
            reason: "Not responding",
            ctld_lines: &lines,
        });
        res.insert(
            "lgn16".into(),
            NodeResult::Unreachable {
                reason: "Slurm state down*, reason 'Not responding'".into(),
                diagnosis: Some(d),
            },
        );
        let r = assemble(&scope, res, |_| None, 6, Duration::from_secs(2));
        let named: Vec<(&str, &str, Severity)> = r
            .nodes
            .iter()
            .flat_map(|n| {
                n.findings
                    .iter()
                    .map(move |f| (n.node.as_str(), f.id.as_str(), f.severity))
            })
            .collect();
        assert_eq!(
            named,
            vec![
                ("lgn10", "cluster.node_unjudged", Severity::Unknown),
                ("lgn16", "cluster.munge_auth", Severity::Critical),
            ]
        );
        assert_eq!(r.exit_code, 2);
        let t = render(&r);
        assert!(t.contains("lgn10  unjudged     launchguard: cluster.node_unjudged: node 'lgn10' was not judged: its retry step was refused"), "{t}");
        assert!(
            t.contains("munge key differs: lgn16's slurmd rejects credentials"),
            "{t}"
        );
        assert!(
            t.contains(
                "(slurmctld's log: [2026-12-01T15:48:20.605] error: slurm_receive_msgs: [[10.78.0.26]:6918] failed: Zero Bytes"
            ),
            "{t}"
        );
        assert!(
            t.contains("copy the cluster's /etc/munge/munge.key to lgn16"),
            "{t}"
        );
        assert!(refused_busy(
            "Unable to allocate resources: Requested nodes are busy"
        ));
    }

    /// Issue 29's false alarms: a retry that failed for the step as a whole is no evidence against
    /// the node. These are srun's words when the login node's munged, slurmctld or the allocation
    /// fail; before, they were read as the node's launch error (`Protocol authentication error`
    /// named the node's munge key, `Unable to contact slurm controller` its slurmd).
    #[test]
    fn a_retry_that_failed_for_the_whole_step_names_the_node_only_by_slurms_state() {
        let st = |state: &str, reason: &str| NodeState {
            node: "lgn11".into(),
            state: state.into(),
            reason: reason.into(),
        };
        for words in [
            "its retry step failed before reaching the node: Unable to allocate resources: Protocol authentication error",
            "its retry step failed before reaching the node: Unable to allocate resources: Unable to contact slurm controller (connect failure)",
            "its retry step failed before reaching the node: Unable to allocate resources: Socket timed out on send/recv operation",
            "its retry step was refused: Unable to allocate resources: Requested nodes are busy",
            "its retry step could not start: cannot run srun: Resource temporarily unavailable",
        ] {
            for healthy in [st("idle", "none"), st("completing", "none"), st("mixed", "none")] {
                let r = silent_node(words.into(), Some(&healthy));
                assert!(
                    matches!(&r, NodeResult::Unjudged { reason } if reason.starts_with(words)),
                    "{r:?}"
                );
                let scope = vec!["lgn11".to_string()];
                let rep = assemble(
                    &scope,
                    BTreeMap::from([("lgn11".to_string(), r)]),
                    |_| Some(healthy.clone()),
                    2,
                    Duration::from_secs(1),
                );
                let ids: Vec<&str> = rep.nodes[0].findings.iter().map(|f| f.id.as_str()).collect();
                assert_eq!(ids, vec!["cluster.node_unjudged"]);
                assert_eq!(rep.exit_code, 3);
            }
            // Slurm itself marks the node: that is evidence, whatever srun said.
            let down = st("down*", "Not responding");
            let r = silent_node(words.into(), Some(&down));
            assert!(matches!(&r, NodeResult::Unreachable { reason, .. } if reason.starts_with("Slurm state down*, reason 'Not responding' (")), "{r:?}");
            assert!(matches!(
                silent_node(words.into(), Some(&st("completing*", "none"))),
                NodeResult::Unreachable { .. }
            ));
        }
        // Not read as a stopped slurmd any more.
        let d = diagnose::judge(&diagnose::Evidence {
            launch_error: Some("Unable to contact slurm controller (connect failure)"),
            reason: "none",
            ctld_lines: &[],
        });
        assert_eq!(d.cause, Cause::Unknown);
    }

    /// The login-node side at 10,000 nodes: labelled output cut in srun's 1024-byte chunks, parsed,
    /// compared and rendered. Prints the time (docs/sweep.md quotes it).
    #[test]
    fn aggregating_ten_thousand_nodes_stays_cheap() {
        let n = 10_000;
        let mut stdout = String::new();
        let mut scope = Vec::new();
        for i in 0..n {
            let name = format!("gpu-{i:05}");
            let key = if i == 4242 { "sha256:odd" } else { "sha256:k1" };
            stdout.push_str(&format!("{i}: {}{name}\n", report::NODE_MARKER));
            for chunk in canned(&name, key, "").as_bytes().chunks(1024) {
                stdout.push_str(&format!("{i}: {}\n", std::str::from_utf8(chunk).unwrap()));
            }
            scope.push(name);
        }
        let t = Instant::now();
        let mut results = BTreeMap::new();
        let mut unreadable = BTreeMap::new();
        absorb(
            &mut results,
            &mut unreadable,
            report::parse_step_output(&stdout, ""),
        );
        let r = assemble(&scope, results, |_| None, 1, Duration::ZERO);
        let text = render(&r);
        let took = t.elapsed();
        eprintln!(
            "aggregating {n} nodes ({} bytes of output): {took:?}",
            stdout.len()
        );
        assert_eq!(r.cluster_findings.len(), 1);
        assert_eq!(r.cluster_findings[0].nodes, vec!["gpu-04242"]);
        assert!(text.lines().count() > n);
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_task_that_prints_without_end_is_cut_and_named() {
        let mut p = CappedParser::default();
        p.feed_line(&format!("0: {}lgn1", report::NODE_MARKER));
        p.feed_line(&format!("1: {}lgn2", report::NODE_MARKER));
        let junk = "y".repeat(1000);
        // 100 MB from task 0; only MAX_TASK_OUTPUT of it is kept.
        for _ in 0..100_000 {
            p.feed_line(&format!("0: {junk}"));
        }
        for chunk in canned("lgn2", "sha256:k1", "").as_bytes().chunks(1024) {
            p.feed_line(&format!("1: {}", std::str::from_utf8(chunk).unwrap()));
        }
        assert!(p.tasks[&0].0 < MAX_TASK_OUTPUT + 2048, "{}", p.tasks[&0].0);
        let out = p.finish("");
        assert_eq!(out.len(), 2);
        match &out[0] {
            TaskOutput::Unreadable { node, detail } => {
                assert_eq!(node, "lgn1");
                assert!(
                    detail.starts_with("its output passed 256 KiB and was cut there"),
                    "{detail}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&out[1], TaskOutput::Report(r) if r.node == "lgn2"));
    }

    #[test]
    fn the_task_script_marks_the_node_and_quotes_the_binary() {
        assert_eq!(
            sh_quote("/usr/local/bin/launchguard"),
            "/usr/local/bin/launchguard"
        );
        assert_eq!(sh_quote("/opt/my dir/lg"), "'/opt/my dir/lg'");
        assert_eq!(
            task_script("/x/lg check --json"),
            "echo \"@lg-node $SLURMD_NODENAME\"; /x/lg check --json"
        );
    }
}
