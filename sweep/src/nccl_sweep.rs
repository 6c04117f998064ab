//! `launchguard sweep nccl`: pairwise NCCL runs planned by [`crate::pairs`], launched through Slurm
//! either as steps of one allocation ([`Launch::Steps`], the default: one `sbatch -N<n> --exclusive`
//! job holding the nodes, one `srun --jobid=<id> -N2 -w a,b` step per pair started from here) or as
//! one job per pair ([`Launch::Jobs`]: `sbatch -N2 --nodelist=a,b --exclusive --wrap 'srun [args]
//! CMD'`; a Slurm job array cannot pin each of its tasks to its own pair of nodes, and a pinned pair
//! is what makes a later round's evidence mean something). Measured on 16/32/64 nodes, the steps take
//! about a third to two thirds of the jobs' time (docs/sweep.md, "Scale"). Progress goes to stderr; the runs
//! are judged by `launchguard_nccl::outliers` (the same analysis as `launchguard nccl outliers`),
//! over every run of every round together, with host names mapped to Slurm NodeNames.
//!
//! Each pair's output is `<out>/r<round>-<a>-<b>.out`; CMD is an nccl-tests binary on the host or,
//! with `--container-image`, in a container through Pyxis. A round has a deadline, counted from
//! before its first submission; runs still queued or running then are cancelled and count as failed
//! runs of their pair. Every job is cancelled on every exit ([`crate::cleanup`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use launchguard_nccl::outliers::{self, NodeVerdict, OutlierOptions, OutlierReport};
use launchguard_nccl::verdict::Severity as NcclSeverity;
use serde::Serialize;

use crate::cleanup;
use crate::finding::{self, Finding, Severity};
use crate::pairs::{self, Pair};
use crate::slurm;

/// What to run and where.
#[derive(Debug, Clone)]
pub struct NcclOptions {
    /// Partition (`-p`), also passed to sbatch.
    pub partition: Option<String>,
    /// Node list.
    pub nodes: Option<String>,
    /// The command each pair runs under srun (an nccl-tests binary and its arguments).
    pub command: String,
    /// Pyxis image: the command runs in it (`srun --container-image=…`).
    pub container_image: Option<String>,
    /// Extra srun arguments inside the job (`--mpi=pmix`, `--gpus-per-node=8`).
    pub srun_args: Vec<String>,
    /// Extra sbatch arguments (`--account=…`, `--reservation=…`).
    pub sbatch_args: Vec<String>,
    /// Tasks per node (ranks per node: GPUs per node for nccl-tests with MPI).
    pub ntasks_per_node: u32,
    /// Most rounds.
    pub rounds: usize,
    /// Deadline per round.
    pub round_timeout: Duration,
    /// Where the outputs go (must be visible from the nodes: a shared filesystem on a real cluster).
    pub out_dir: PathBuf,
    /// The outlier analysis' options (size, threshold, half, collective).
    pub outliers: OutlierOptions,
    /// Print progress on stderr.
    pub progress: bool,
    /// One job per pair, or one allocation with a step per pair.
    pub launch: Launch,
}

/// How the pair runs reach Slurm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Launch {
    /// One `sbatch -N2 --nodelist=a,b --exclusive` job per pair.
    Jobs,
    /// One allocation over every node (`sbatch -N<n> --exclusive`, holding them), and inside it one
    /// `srun --jobid=<id> -N2 -w a,b` step per pair, started from here; a node is in one step at a time.
    Steps,
}

/// One pair job.
#[derive(Debug, Clone, Serialize)]
pub struct PairRun {
    /// Round, from 1.
    pub round: usize,
    /// The two nodes.
    pub nodes: Pair,
    /// Slurm job id (None: sbatch refused it).
    pub job_id: Option<String>,
    /// Final state as Slurm reported it (`COMPLETED`, `FAILED`, `TIMEOUT`, `CANCELLED`, …), or why
    /// there is none.
    pub state: String,
    /// Output file.
    pub file: String,
}

/// The whole NCCL sweep.
#[derive(Debug, Clone, Serialize)]
pub struct NcclSweepReport {
    /// Report format version.
    pub schema: u32,
    /// Every pair run, by round.
    pub runs: Vec<PairRun>,
    /// Nodes named bad.
    pub bad: Vec<String>,
    /// Nodes still suspect.
    pub suspect: Vec<String>,
    /// Nodes proven good (a run within the threshold).
    pub good: Vec<String>,
    /// Nodes Slurm would not run on (with why).
    pub skipped: Vec<(String, String)>,
    /// The analysis over every run.
    pub analysis: Option<OutlierReport>,
    /// One-line findings.
    pub findings: Vec<Finding>,
    /// Worst finding.
    pub status: Severity,
    /// Exit code.
    pub exit_code: u8,
    /// Wall time, ms.
    pub duration_ms: f64,
}

fn sev(s: NcclSeverity) -> Severity {
    match s {
        NcclSeverity::Info => Severity::Ok,
        NcclSeverity::Warning => Severity::Warning,
        NcclSeverity::NoGo => Severity::Critical,
    }
}

/// The batch script's one line.
pub fn wrap_command(opts: &NcclOptions) -> String {
    let mut w = String::from("srun");
    for a in &opts.srun_args {
        w.push(' ');
        w.push_str(&crate::check_sweep::sh_quote(a));
    }
    if let Some(img) = &opts.container_image {
        w.push_str(&format!(
            " --container-image={}",
            crate::check_sweep::sh_quote(img)
        ));
    }
    w.push(' ');
    w.push_str(&opts.command);
    w
}

/// `path` as sbatch's `--output` reads it: sbatch expands `%j`, `%N`, … in the name, and `%%` is a
/// literal `%` (sbatch(1), "filename pattern"); a name with a backslash has no expansion at all.
pub fn output_pattern(path: &Path) -> String {
    let s = path.display().to_string();
    if s.contains('\\') {
        s
    } else {
        s.replace('%', "%%")
    }
}

/// The command that runs one pair by hand as the sweep submitted it, quoted for a POSIX shell (the
/// `--wrap` text is one word however many quotes the command holds).
pub fn repro(opts: &NcclOptions, p: &Pair) -> String {
    use crate::check_sweep::sh_quote;
    let mut c = format!(
        "sbatch -N2 --exclusive --ntasks-per-node={} -w {}",
        opts.ntasks_per_node,
        sh_quote(&format!("{},{}", p.0, p.1))
    );
    if let Some(part) = &opts.partition {
        c.push_str(&format!(" --partition={}", sh_quote(part)));
    }
    for a in &opts.sbatch_args {
        c.push(' ');
        c.push_str(&sh_quote(a));
    }
    c.push_str(" --wrap=");
    c.push_str(&sh_quote(&wrap_command(opts)));
    c
}

fn submit(opts: &NcclOptions, p: &Pair, round: usize, job: &str) -> PairRun {
    let file = opts.out_dir.join(format!("r{round}-{}-{}.out", p.0, p.1));
    let _ = std::fs::remove_file(&file);
    let Some(_submitting) = cleanup::Submitting::start() else {
        return PairRun {
            round,
            nodes: p.clone(),
            job_id: None,
            state: "not submitted: the sweep was interrupted".into(),
            file: file.display().to_string(),
        };
    };
    let minutes = opts.round_timeout.as_secs().div_ceil(60).max(1);
    let mut c = Command::new("sbatch");
    c.args(["--parsable", "-N2", "--exclusive"])
        .arg(format!("--job-name={job}"))
        .arg(format!("--nodelist={},{}", p.0, p.1))
        .arg(format!("--ntasks-per-node={}", opts.ntasks_per_node))
        .arg(format!("--time={minutes}"))
        .arg(format!("--output={}", output_pattern(&file)));
    if let Some(part) = &opts.partition {
        c.arg(format!("--partition={part}"));
    }
    c.args(&opts.sbatch_args);
    c.arg(format!("--wrap={}", wrap_command(opts)));
    let (job_id, state) = match slurm::run(&mut c, Duration::from_secs(30)) {
        Ok(o) if o.code == Some(0) && !o.timed_out => {
            let id = o.stdout.trim().split(';').next().unwrap_or("").to_string();
            // Ours from this moment: every exit from here on cancels it unless Slurm ended it.
            cleanup::own(&id);
            (Some(id), "PENDING".to_string())
        }
        Ok(o) => {
            // Killed at its deadline or failed part-way: slurmctld may have accepted the job all the
            // same; the cleanup finds it by this run's job name.
            cleanup::unsure();
            let why = if o.timed_out {
                "sbatch did not answer within 30 s (killed)".to_string()
            } else {
                format!(
                    "sbatch refused: {}",
                    slurm::srun_error(&o.stderr).unwrap_or_default()
                )
            };
            (None, why)
        }
        Err(e) => (None, e),
    };
    PairRun {
        round,
        nodes: p.clone(),
        job_id,
        state,
        file: file.display().to_string(),
    }
}

const TERMINAL: &[&str] = &[
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
];

/// Takes one `squeue -h -t all -o '%i|%T' -j …` answer into the runs' states. A job squeue no
/// longer lists (MinJobAge passed) is over: it keeps its last known state, or `COMPLETED?` when that
/// was not a final one. Call it only with the output of a squeue that exited 0 in time: an empty
/// answer from a failed squeue would read as "every job left the queue".
pub fn apply_squeue(runs: &mut [PairRun], stdout: &str) {
    let listed: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(i, st)| (i.trim(), st.trim()))
        .collect();
    for r in runs.iter_mut() {
        let Some(id) = r.job_id.as_deref() else {
            continue;
        };
        match listed.iter().find(|(i, _)| *i == id) {
            Some((_, st)) => r.state = st.to_string(),
            None if !is_done(&r.state) => r.state = "COMPLETED?".into(),
            None => {}
        }
    }
}

/// (finished, running) among the runs; a run sbatch refused counts as finished.
pub fn progress_counts(runs: &[PairRun]) -> (usize, usize) {
    let done = runs
        .iter()
        .filter(|r| r.job_id.is_none() || is_done(&r.state))
        .count();
    let running = runs
        .iter()
        .filter(|r| r.state == "RUNNING" || r.state == "COMPLETING")
        .count();
    (done, running)
}

/// At the round's deadline: marks every unfinished run as such and returns the job IDs to cancel.
pub fn expire(runs: &mut [PairRun], timeout: Duration) -> Vec<String> {
    let mut ids = Vec::new();
    for r in runs.iter_mut().filter(|r| !is_done(&r.state)) {
        if let Some(id) = &r.job_id {
            ids.push(id.clone());
        }
        r.state = format!(
            "not finished within {} s (cancelled; was {})",
            timeout.as_secs(),
            r.state
        );
    }
    ids
}

/// Waits for the round's jobs, printing progress; cancels what is left at the deadline. The round
/// began at `round_start`, before its submissions: sbatch's time counts against the deadline.
fn wait(
    runs: &mut [PairRun],
    round: usize,
    round_start: Instant,
    timeout: Duration,
    progress: bool,
) {
    let ids: Vec<String> = runs.iter().filter_map(|r| r.job_id.clone()).collect();
    let tty = std::io::stderr().is_terminal();
    let mut last = None;
    loop {
        if !ids.is_empty() {
            let left = timeout.saturating_sub(round_start.elapsed());
            let o = slurm::run(
                Command::new("squeue").args([
                    "-h",
                    "-t",
                    "all",
                    "-o",
                    "%i|%T",
                    "-j",
                    &ids.join(","),
                ]),
                left.clamp(Duration::from_secs(1), Duration::from_secs(15)),
            );
            if let Some(o) = o.ok().filter(|o| o.code == Some(0) && !o.timed_out) {
                apply_squeue(runs, &o.stdout);
            }
        }
        for r in runs.iter().filter(|r| is_done(&r.state)) {
            if let Some(id) = &r.job_id {
                cleanup::release(id);
            }
        }
        let (done, running) = progress_counts(runs);
        if progress {
            let now = (done, running);
            let line = format!(
                "launchguard sweep nccl: round {round}: {done}/{} pairs done, {running} running, {} queued, {:.0} s",
                runs.len(),
                runs.len() - done - running,
                round_start.elapsed().as_secs_f64()
            );
            if tty {
                eprint!("\r{line}   ");
                let _ = std::io::stderr().flush();
            } else if last != Some(now) {
                eprintln!("{line}");
            }
            last = Some(now);
        }
        if done == runs.len() {
            break;
        }
        if round_start.elapsed() >= timeout {
            let cancel = expire(runs, timeout);
            // Forgotten only once cancelled; otherwise the Guard cancels them at the end.
            cleanup::cancel(&cancel);
            break;
        }
        thread::sleep(Duration::from_millis(250));
    }
    if progress && tty {
        eprintln!();
    }
}

fn is_done(state: &str) -> bool {
    TERMINAL.contains(&state) || state == "COMPLETED?" || state.starts_with("not finished")
}

/// Runs the analysis over every output file so far.
/// Puts Slurm's NodeName in place of each host name a run printed (`names` from
/// [`slurm::node_names`]); names with no entry stay as printed.
pub fn to_node_names(p: &mut launchguard_nccl::Parsed, names: &BTreeMap<String, String>) {
    let map = |h: &mut String| {
        if let Some(n) = names.get(h.as_str()) {
            h.clone_from(n);
        }
    };
    p.facts.hosts.iter_mut().for_each(map);
    p.facts.ranks.iter_mut().for_each(|r| map(&mut r.host));
    p.facts.instance_ids.iter_mut().for_each(|(h, _)| map(h));
}

fn analyse(
    runs: &[PairRun],
    opts: &OutlierOptions,
    names: &BTreeMap<String, String>,
) -> OutlierReport {
    let files: Vec<(
        String,
        Result<launchguard_nccl::Parsed, launchguard_nccl::ParseError>,
    )> = runs
        .iter()
        .filter(|r| Path::new(&r.file).exists())
        .map(|r| {
            (
                r.file.clone(),
                launchguard_nccl::parse_path(Path::new(&r.file)).map(|mut p| {
                    to_node_names(&mut p, names);
                    p
                }),
            )
        })
        .collect();
    outliers::analyse(&files, opts)
}

/// Most bytes of a pair's output read for its error line: a task that printed without end must not
/// fill the login node's memory (an nccl-tests run that failed says why within its first lines).
pub const MAX_ERROR_SCAN: u64 = 1 << 20;

/// The first error line of a pair's output, from its first [`MAX_ERROR_SCAN`] bytes (or why there is
/// none).
fn first_error(file: &str) -> String {
    // Through the CLI's bounded reader: a FIFO or device in the output directory is refused at once.
    let head =
        launchguard_core::host::files::read_bytes(std::path::Path::new(file), MAX_ERROR_SCAN);
    match head {
        Ok(b) => {
            let text = String::from_utf8_lossy(&b);
            let is_err = |l: &&str| l.to_ascii_lowercase().contains("error");
            // srun's "task N: Exited with exit code" says only that something failed; the
            // slurmstepd or program line after it says what.
            let line = text
                .lines()
                .filter(is_err)
                .find(|l| !l.contains("Exited with exit code"))
                .or_else(|| text.lines().find(is_err))
                .or_else(|| text.lines().find(|l| !l.trim().is_empty()));
            match line {
                Some(l) => format!("'{}'", crate::report::clip(l.trim(), 200)),
                None => "its output is empty".into(),
            }
        }
        Err(e) => format!("no output file ({e})"),
    }
}

/// Takes the allocation for [`Launch::Steps`]: one job over `nodes` that holds them (its batch script
/// sleeps) until cancelled; waits until it runs. Err says why there is none (its state, or sbatch's
/// words).
fn allocate(
    opts: &NcclOptions,
    nodes: &[String],
    job: &str,
    until: Instant,
) -> Result<String, String> {
    let Some(_submitting) = cleanup::Submitting::start() else {
        return Err("the sweep was interrupted".into());
    };
    let secs = opts.round_timeout.as_secs().max(60) * opts.rounds.max(1) as u64 + 60;
    let mut c = Command::new("sbatch");
    c.args(["--parsable", "--exclusive", "--output=/dev/null"])
        .arg(format!("-N{}", nodes.len()))
        .arg(format!("--job-name={job}"))
        .arg(format!("--nodelist={}", nodes.join(",")))
        .arg(format!("--ntasks-per-node={}", opts.ntasks_per_node))
        .arg(format!("--time={}", secs.div_ceil(60)));
    if let Some(part) = &opts.partition {
        c.arg(format!("--partition={part}"));
    }
    c.args(&opts.sbatch_args);
    c.arg(format!("--wrap=exec sleep {secs}"));
    let o = slurm::run(&mut c, Duration::from_secs(30))?;
    if o.code != Some(0) || o.timed_out {
        cleanup::unsure();
        return Err(format!(
            "sbatch refused the allocation: {}",
            slurm::srun_error(&o.stderr).unwrap_or_else(|| "no answer within 30 s".into())
        ));
    }
    let id = o.stdout.trim().split(';').next().unwrap_or("").to_string();
    cleanup::own(&id);
    drop(_submitting);
    let mut state = "PENDING".to_string();
    while Instant::now() < until && !cleanup::exiting() {
        let q = slurm::run(
            Command::new("squeue").args(["-h", "-t", "all", "-o", "%T", "-j", &id]),
            Duration::from_secs(10),
        );
        if let Some(q) = q.ok().filter(|q| q.code == Some(0) && !q.timed_out) {
            state = q.stdout.trim().to_string();
            if state == "RUNNING" {
                return Ok(id);
            }
            if TERMINAL.contains(&state.as_str()) {
                break;
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "allocation {id} over {} nodes did not start (state {state})",
        nodes.len()
    ))
}

/// Most bytes of a step's output written to its file.
pub const MAX_STEP_OUTPUT: u64 = 64 << 20;

/// One pair as a step of `alloc`: `srun --jobid` pinned to the pair, output to the pair's file
/// (stdout as it arrives, capped at [`MAX_STEP_OUTPUT`], then srun's stderr), within `budget`.
fn step(opts: &NcclOptions, alloc: &str, p: &Pair, round: usize, budget: Duration) -> PairRun {
    use std::io::Write as _;
    let file = opts.out_dir.join(format!("r{round}-{}-{}.out", p.0, p.1));
    let mut run = PairRun {
        round,
        nodes: p.clone(),
        job_id: Some(alloc.to_string()),
        state: String::new(),
        file: file.display().to_string(),
    };
    let mut out = match std::fs::File::create(&file) {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            run.state = format!("cannot write '{}': {e}", file.display());
            run.job_id = None;
            return run;
        }
    };
    // The same line a pair job's batch script runs (wrap_command), pinned into the allocation: the
    // shell splits COMMAND into srun's arguments exactly as sbatch --wrap does, then is replaced by srun.
    let pinned = format!(
        "exec srun --jobid={alloc} -N2 -n{} --nodelist={},{}{}",
        2 * opts.ntasks_per_node,
        crate::check_sweep::sh_quote(&p.0),
        crate::check_sweep::sh_quote(&p.1),
        wrap_command(opts).strip_prefix("srun").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.args(["-c", &pinned]);
    let mut written = 0u64;
    let o = slurm::run_streaming(&mut c, budget, &mut |l| {
        if written < MAX_STEP_OUTPUT {
            written += l.len() as u64 + 1;
            let _ = writeln!(out, "{l}");
        }
    });
    run.state = match o {
        Ok(o) => {
            let _ = out.write_all(o.stderr.as_bytes());
            if o.timed_out {
                format!(
                    "not finished within {} s (cancelled; was RUNNING)",
                    opts.round_timeout.as_secs()
                )
            } else if o.code == Some(0) {
                "COMPLETED".into()
            } else {
                "FAILED".into()
            }
        }
        Err(e) => {
            run.job_id = None;
            e
        }
    };
    let _ = out.flush();
    run
}

/// A round as steps of the one allocation (taken now if this is the first round): every pair whose
/// two nodes are free starts at once, the others as nodes free up; all within the round's deadline,
/// counted from `round_start` (the allocation's submission included).
fn round_of_steps(
    opts: &NcclOptions,
    plan: &[Pair],
    round: usize,
    usable: &[String],
    job: &str,
    alloc: &mut Option<String>,
    round_start: Instant,
) -> Vec<PairRun> {
    let until = round_start + opts.round_timeout;
    if alloc.is_none() {
        match allocate(opts, usable, job, until) {
            Ok(id) => *alloc = Some(id),
            Err(why) => {
                return plan
                    .iter()
                    .map(|p| PairRun {
                        round,
                        nodes: p.clone(),
                        job_id: None,
                        state: why.clone(),
                        file: opts
                            .out_dir
                            .join(format!("r{round}-{}-{}.out", p.0, p.1))
                            .display()
                            .to_string(),
                    })
                    .collect()
            }
        }
    }
    let id = alloc.clone().unwrap_or_default();
    let mut pending: Vec<(usize, Pair)> = plan.iter().cloned().enumerate().collect();
    let mut running: Vec<(usize, Pair, thread::JoinHandle<PairRun>)> = Vec::new();
    let mut done: Vec<(usize, PairRun)> = Vec::new();
    let mut busy: BTreeSet<String> = BTreeSet::new();
    while !pending.is_empty() || !running.is_empty() {
        let mut i = 0;
        while i < pending.len() {
            let (_, p) = &pending[i];
            if busy.contains(&p.0) || busy.contains(&p.1) || cleanup::exiting() {
                i += 1;
                continue;
            }
            let (k, p) = pending.remove(i);
            busy.insert(p.0.clone());
            busy.insert(p.1.clone());
            let (o, id, q) = (opts.clone(), id.clone(), p.clone());
            let budget = until.saturating_duration_since(Instant::now());
            running.push((
                k,
                p,
                thread::spawn(move || step(&o, &id, &q, round, budget)),
            ));
        }
        if cleanup::exiting() {
            pending.clear();
        }
        if let Some(j) = running.iter().position(|(_, _, h)| h.is_finished()) {
            let (k, p, h) = running.remove(j);
            busy.remove(&p.0);
            busy.remove(&p.1);
            let r = h.join().unwrap_or_else(|_| PairRun {
                round,
                nodes: p.clone(),
                job_id: None,
                state: "the step's thread panicked".into(),
                file: String::new(),
            });
            done.push((k, r));
            if opts.progress {
                eprintln!(
                    "launchguard sweep nccl: round {round}: {}/{} pairs done, {} running, {:.1} s",
                    done.len(),
                    plan.len(),
                    running.len(),
                    round_start.elapsed().as_secs_f64()
                );
            }
            continue;
        }
        if Instant::now() >= until && !pending.is_empty() {
            for (k, p) in pending.drain(..) {
                done.push((
                    k,
                    PairRun {
                        round,
                        nodes: p.clone(),
                        job_id: None,
                        state: format!(
                            "not finished within {} s (its nodes were still busy)",
                            opts.round_timeout.as_secs()
                        ),
                        file: opts
                            .out_dir
                            .join(format!("r{round}-{}-{}.out", p.0, p.1))
                            .display()
                            .to_string(),
                    },
                ));
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    done.sort_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Sorts nodes into bad / suspect / good from the analysis plus runs that produced nothing to parse
/// (a pair job that failed before printing: both nodes suspect until proven good).
pub fn classify(
    report: &OutlierReport,
    runs: &[PairRun],
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut bad: BTreeSet<String> = BTreeSet::new();
    let mut suspect: BTreeSet<String> = BTreeSet::new();
    for n in &report.nodes {
        match n.verdict {
            NodeVerdict::Bad => bad.insert(n.host.clone()),
            NodeVerdict::Suspect => suspect.insert(n.host.clone()),
        };
    }
    let mut good: BTreeSet<String> = BTreeSet::new();
    for s in report.groups.iter().flat_map(|g| &g.samples) {
        if s.failed.is_none() && !(s.outlier && s.deviation < 0.0) {
            good.extend(s.hosts.iter().cloned());
        }
    }
    // Runs whose file holds no hosts (failed before nccl-tests printed its ranks): the pair is the
    // evidence.
    let with_hosts: BTreeSet<&str> = report
        .groups
        .iter()
        .flat_map(|g| &g.samples)
        .filter(|s| !s.hosts.is_empty())
        .map(|s| s.file.as_str())
        .chain(
            report
                .skipped
                .iter()
                .filter(|s| !s.hosts.is_empty())
                .map(|s| s.file.as_str()),
        )
        .collect();
    for r in runs {
        if !with_hosts.contains(r.file.as_str()) {
            for n in [&r.nodes.0, &r.nodes.1] {
                if !good.contains(n) && !bad.contains(n) {
                    suspect.insert(n.clone());
                }
            }
        }
    }
    let good: Vec<String> = good
        .into_iter()
        .filter(|n| !bad.contains(n) && !suspect.contains(n))
        .collect();
    (
        bad.into_iter().collect(),
        suspect.into_iter().collect(),
        good,
    )
}

/// Runs the NCCL sweep.
pub fn sweep(opts: &NcclOptions) -> Result<NcclSweepReport, String> {
    let start = Instant::now();
    // Every way out of this function (and Ctrl-C/SIGTERM/SIGHUP) cancels the jobs still ours.
    let _cleanup = cleanup::Guard::arm();
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| format!("cannot create '{}': {e}", opts.out_dir.display()))?;
    let states = slurm::sinfo(
        opts.partition.as_deref(),
        opts.nodes.as_deref(),
        Duration::from_secs(15),
    )?;
    let scope: Vec<String> = match &opts.nodes {
        Some(l) => slurm::expand(l)?,
        None => states.iter().map(|s| s.node.clone()).collect(),
    };
    let mut skipped = Vec::new();
    let mut usable = Vec::new();
    for n in &scope {
        match states.iter().find(|s| s.node == *n) {
            Some(s) if s.usable() => usable.push(n.clone()),
            Some(s) => skipped.push((n.clone(), s.describe())),
            None => skipped.push((n.clone(), "not a Slurm node".into())),
        }
    }
    if usable.len() < 2 {
        return Err(format!(
            "pairwise runs need at least 2 usable nodes, found {}",
            usable.len()
        ));
    }
    // nccl-tests names hosts as their `hostname` says; verdicts name Slurm's NodeName.
    let names = match slurm::node_names(&usable, Duration::from_secs(15)) {
        Ok(m) => m,
        Err(e) => {
            if opts.progress {
                eprintln!("launchguard sweep nccl: {e}; host names in the runs' output are taken as node names");
            }
            BTreeMap::new()
        }
    };
    let job = cleanup::job_name("lg-nccl");
    let mut runs: Vec<PairRun> = Vec::new();
    let mut tried: BTreeSet<Pair> = BTreeSet::new();
    let mut plan = pairs::first_round(&usable);
    let mut report = None;
    // Launch::Steps: the one allocation, taken in round 1 and kept for the later rounds.
    let mut alloc: Option<String> = None;
    for round in 1..=opts.rounds.max(1) {
        if plan.is_empty() || cleanup::exiting() {
            break;
        }
        if opts.progress {
            let list: Vec<String> = plan.iter().map(|(a, b)| format!("{a}+{b}")).collect();
            eprintln!(
                "launchguard sweep nccl: round {round}: {} pairs: {}",
                plan.len(),
                list.join(" ")
            );
        }
        let round_start = Instant::now();
        let this = match opts.launch {
            Launch::Jobs => {
                let mut this: Vec<PairRun> =
                    plan.iter().map(|p| submit(opts, p, round, &job)).collect();
                wait(
                    &mut this,
                    round,
                    round_start,
                    opts.round_timeout,
                    opts.progress,
                );
                this
            }
            Launch::Steps => {
                round_of_steps(opts, &plan, round, &usable, &job, &mut alloc, round_start)
            }
        };
        tried.extend(plan.iter().cloned());
        runs.extend(this);
        let r = analyse(&runs, &opts.outliers, &names);
        let (_, suspect, good) = classify(&r, &runs);
        report = Some(r);
        let untested: Vec<String> = usable
            .iter()
            .filter(|n| !runs.iter().any(|r| r.nodes.0 == **n || r.nodes.1 == **n))
            .cloned()
            .collect();
        let mut todo = suspect.clone();
        todo.extend(untested);
        plan = pairs::next_round(&todo, &good, &tried);
    }
    if let Some(id) = &alloc {
        cleanup::cancel(std::slice::from_ref(id));
    }
    let report = report.ok_or("no round ran")?;
    let (bad, suspect, good) = classify(&report, &runs);
    let mut findings: Vec<Finding> = Vec::new();
    for (n, why) in &skipped {
        findings.push(Finding::new(
            "cluster.node_unreachable",
            Severity::Warning,
            vec![n.clone()],
            &format!("node '{n}' was left out of the NCCL sweep: {why}"),
            "its network was not tested",
            &format!("bring it back (scontrol update nodename={n} state=resume once fixed) and sweep it again"),
        ));
    }
    for f in outliers::findings(&report) {
        let nodes = report
            .nodes
            .iter()
            .filter(|n| f.what.contains(&format!("'{}'", n.host)))
            .map(|n| n.host.clone())
            .collect();
        findings.push(Finding {
            id: f.id.to_string(),
            severity: sev(f.severity),
            nodes,
            line: f.to_string(),
        });
    }
    // Pair jobs that ended without a figure: say what their output says.
    let sampled: BTreeSet<&str> = report
        .groups
        .iter()
        .flat_map(|g| &g.samples)
        .map(|x| x.file.as_str())
        .collect();
    // Failed runs whose output names its hosts are judged by the analysis (nccl.bad_node,
    // nccl.suspect_node); the others are reported here with what their output says.
    let attributed: BTreeSet<&str> = report
        .skipped
        .iter()
        .filter(|x| !x.hosts.is_empty())
        .map(|x| x.file.as_str())
        .collect();
    let failed: Vec<&PairRun> = runs
        .iter()
        .filter(|r| !attributed.contains(r.file.as_str()))
        .filter(|r| {
            r.job_id.is_some()
                && !r.state.starts_with("not finished")
                && !sampled.contains(r.file.as_str())
        })
        .collect();
    if !failed.is_empty() && sampled.is_empty() {
        let r = failed[0];
        findings.push(Finding::new(
            "nccl.sweep_failed",
            Severity::Critical,
            usable.clone(),
            &format!(
                "none of the {} pair runs produced an nccl-tests result; the first ({}+{}, job {}, {}) says: {}",
                runs.len(),
                r.nodes.0,
                r.nodes.1,
                r.job_id.as_deref().unwrap_or("-"),
                r.state,
                first_error(&r.file)
            ),
            "when every pair fails the same way the command or its environment is wrong, not the nodes",
            &format!(
                "run one pair by hand and read its output: {}",
                repro(opts, &r.nodes)
            ),
        ));
    } else {
        for r in &failed {
            findings.push(Finding::new(
                "nccl.pair_failed",
                Severity::Critical,
                vec![r.nodes.0.clone(), r.nodes.1.clone()],
                &format!(
                    "pair {}+{} (round {}, job {}, {}) produced no result: {}",
                    r.nodes.0,
                    r.nodes.1,
                    r.round,
                    r.job_id.as_deref().unwrap_or("-"),
                    r.state,
                    first_error(&r.file)
                ),
                "a pair that fails while others run points at one of its two nodes",
                &format!(
                    "read '{}'; the node that also fails with a good partner is the broken one",
                    r.file
                ),
            ));
        }
    }
    if usable.len() == 2 {
        findings.push(Finding::new(
            "nccl.inconclusive",
            Severity::Warning,
            usable.clone(),
            &format!(
                "only 2 usable nodes ({}): one pair has nothing to be compared with",
                usable.join(",")
            ),
            "a slow pair cannot say which of its two nodes is slow",
            "sweep at least 3 nodes, or add a node known to be good to the node list",
        ));
    }
    for r in runs
        .iter()
        .filter(|r| r.job_id.is_none() || r.state.starts_with("not finished"))
    {
        findings.push(Finding::new(
            "nccl.pair_not_run",
            Severity::Warning,
            vec![r.nodes.0.clone(), r.nodes.1.clone()],
            &format!(
                "pair {}+{} of round {} gave no result: {}",
                r.nodes.0, r.nodes.1, r.round, r.state
            ),
            "its two nodes stay unproven",
            "look at the job's output and at squeue for why it did not run, then sweep again",
        ));
    }
    let status = finding::worst(&findings);
    Ok(NcclSweepReport {
        schema: 1,
        runs,
        bad,
        suspect,
        good,
        skipped,
        analysis: Some(report),
        findings,
        status,
        exit_code: status.exit_code(),
        duration_ms: start.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The readable report.
/// The `--html FILE` page (`launchguard_nccl::html`): the pairwise heat map, busbw per node and
/// busbw against message size from the pair outputs (read again, with `launchguard nccl`'s bounds),
/// with [`render`]'s text under the charts.
pub fn html(r: &NcclSweepReport, placement: launchguard_nccl::table::Placement) -> String {
    let files: Vec<(String, launchguard_nccl::Parsed)> = r
        .runs
        .iter()
        .filter_map(|run| {
            let p = launchguard_nccl::parse_path(Path::new(&run.file)).ok()?;
            Some((run.file.clone(), p))
        })
        .collect();
    launchguard_nccl::html::render(&launchguard_nccl::html::Input {
        title: "launchguard sweep nccl",
        text: &render(r),
        files: &files,
        report: r.analysis.as_ref(),
        baseline: &[],
        placement,
    })
}

/// The readable report.
pub fn render(r: &NcclSweepReport) -> String {
    let mut s = String::new();
    let rounds = r.runs.iter().map(|x| x.round).max().unwrap_or(0);
    s.push_str(&format!(
        "launchguard sweep nccl: {} pair runs in {rounds} rounds, {:.1} s: {}\n\n",
        r.runs.len(),
        r.duration_ms / 1000.0,
        r.status.as_str()
    ));
    let samples: Vec<&outliers::Sample> = r
        .analysis
        .iter()
        .flat_map(|a| &a.groups)
        .flat_map(|g| &g.samples)
        .collect();
    s.push_str("ROUND  PAIR                 JOB      STATE       BUSBW (GB/s)  DEVIATION\n");
    for run in &r.runs {
        let smp = samples.iter().find(|x| x.file == run.file);
        let (bw, dev) = match smp {
            Some(x) => (
                format!("{:.2}", x.busbw),
                format!(
                    "{:+.2}%{}",
                    x.deviation * 100.0,
                    if x.outlier && x.deviation < 0.0 {
                        " slow"
                    } else {
                        ""
                    }
                ),
            ),
            None => ("-".into(), "-".into()),
        };
        s.push_str(&format!(
            "{:5}  {:20} {:8} {:11} {bw:>12}  {dev}\n",
            run.round,
            format!("{}+{}", run.nodes.0, run.nodes.1),
            run.job_id.as_deref().unwrap_or("-"),
            run.state
        ));
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(",")
        }
    };
    s.push_str(&format!(
        "\nbad: {}\nsuspect: {}\ngood: {}\n",
        list(&r.bad),
        list(&r.suspect),
        list(&r.good)
    ));
    if !r.findings.is_empty() {
        s.push('\n');
        for f in &r.findings {
            s.push_str(&format!("{f}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_in_place_of_a_pairs_output_is_refused_at_once() {
        // Before: File::open on a FIFO without a writer blocked the sweep's report.
        let dir = std::env::temp_dir().join(format!("lg-sweep-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pair.out");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(ok.success());
        let why = first_error(fifo.to_str().unwrap());
        assert!(why.starts_with("no output file (a FIFO"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn opts(command: &str) -> NcclOptions {
        NcclOptions {
            partition: Some("gpu".into()),
            nodes: None,
            command: command.into(),
            container_image: None,
            srun_args: vec!["--mpi=pmix".into()],
            sbatch_args: vec!["--account=ops team".into()],
            ntasks_per_node: 1,
            rounds: 3,
            round_timeout: Duration::from_secs(60),
            out_dir: "/tmp".into(),
            outliers: OutlierOptions::default(),
            progress: false,
            launch: Launch::Jobs,
        }
    }

    fn run(round: usize, a: &str, b: &str, id: &str, state: &str) -> PairRun {
        PairRun {
            round,
            nodes: pairs::pair(a, b),
            job_id: Some(id.into()),
            state: state.into(),
            file: format!("r{round}-{a}-{b}.out"),
        }
    }

    /// An nccl-tests all_reduce_perf output over `hosts`, busbw scaled by `f`.
    fn output(hosts: &[&str], f: f64) -> String {
        let mut s = String::from("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n# Collective test starting: all_reduce_perf\n#\n# Using devices\n");
        for (i, h) in hosts.iter().enumerate() {
            s.push_str(&format!(
                "#  Rank {i:2} Group  0 Pid {:6} on {h:>10} device  0 [0000:00:06] NVIDIA H200\n",
                1000 + i
            ));
        }
        s.push_str("#\n#                                                              out-of-place                       in-place          \n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
        for (size, bw) in [(33554432u64, 240.52), (134217728, 285.00)] {
            let b = bw * f;
            s.push_str(&format!(
                "{size:12}  {:12}     float     sum      -1  {:7.2}  {b:6.2}  {b:6.2}       0  {:7.2}  {b:6.2}  {b:6.2}       0\n",
                size / 4,
                size as f64 / (b * 1000.0),
                size as f64 / (b * 1000.0)
            ));
        }
        s.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100.0 \n#\n# Collective test concluded: all_reduce_perf\n#\n");
        s
    }

    fn analysed(files: &[(&PairRun, Option<String>)]) -> OutlierReport {
        let parsed: Vec<(
            String,
            Result<launchguard_nccl::Parsed, launchguard_nccl::ParseError>,
        )> = files
            .iter()
            .filter_map(|(r, text)| {
                text.as_ref()
                    .map(|t| (r.file.clone(), launchguard_nccl::parse_bytes(t.as_bytes())))
            })
            .collect();
        outliers::analyse(&parsed, &OutlierOptions::default())
    }

    #[test]
    fn a_slow_pair_makes_suspects_and_a_second_slow_partner_makes_a_bad_node() {
        let r1 = [
            run(1, "n1", "n2", "11", "COMPLETED"),
            run(1, "n3", "n4", "12", "COMPLETED"),
            run(1, "n5", "n6", "13", "COMPLETED"),
        ];
        let rep = analysed(&[
            (&r1[0], Some(output(&["n1", "n2"], 0.6))),
            (&r1[1], Some(output(&["n3", "n4"], 1.0))),
            (&r1[2], Some(output(&["n5", "n6"], 1.0))),
        ]);
        let (bad, suspect, good) = classify(&rep, &r1);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(suspect, vec!["n1", "n2"]);
        assert_eq!(good, vec!["n3", "n4", "n5", "n6"]);
        // Round 2: n1 slow again with a proven partner, n2 fast with another.
        let mut all = r1.to_vec();
        all.push(run(2, "n1", "n3", "21", "COMPLETED"));
        all.push(run(2, "n2", "n4", "22", "COMPLETED"));
        let rep = analysed(&[
            (&all[0], Some(output(&["n1", "n2"], 0.6))),
            (&all[1], Some(output(&["n3", "n4"], 1.0))),
            (&all[2], Some(output(&["n5", "n6"], 1.0))),
            (&all[3], Some(output(&["n1", "n3"], 0.6))),
            (&all[4], Some(output(&["n2", "n4"], 1.0))),
        ]);
        let (bad, suspect, good) = classify(&rep, &all);
        assert_eq!(bad, vec!["n1"]);
        assert!(suspect.is_empty(), "{suspect:?}");
        assert_eq!(good, vec!["n2", "n3", "n4", "n5", "n6"]);
    }

    #[test]
    fn a_run_without_output_makes_both_nodes_suspect_unless_proven_good() {
        let runs = [
            run(1, "n1", "n2", "11", "FAILED"),
            run(1, "n3", "n4", "12", "COMPLETED"),
            run(1, "n4", "n5", "13", "FAILED"),
        ];
        let rep = analysed(&[
            (&runs[0], None),
            (&runs[1], Some(output(&["n3", "n4"], 1.0))),
            (&runs[2], None),
        ]);
        let (bad, suspect, good) = classify(&rep, &runs);
        assert!(bad.is_empty());
        // n4 ran fine with n3: only n5 is suspect from the second failure.
        assert_eq!(suspect, vec!["n1", "n2", "n5"]);
        assert_eq!(good, vec!["n3", "n4"]);
    }

    #[test]
    fn host_names_are_judged_as_node_names() {
        let runs = [
            run(1, "lgn1", "lgn2", "11", "COMPLETED"),
            run(1, "lgn3", "lgn4", "12", "COMPLETED"),
        ];
        let names: BTreeMap<String, String> = (1..=4)
            .map(|i| (format!("rack1-u{i}"), format!("lgn{i}")))
            .collect();
        let parsed: Vec<_> = [("rack1-u1", "rack1-u2", 0.6), ("rack1-u3", "rack1-u4", 1.0)]
            .iter()
            .zip(&runs)
            .map(|((a, b, f), r)| {
                let mut p = launchguard_nccl::parse_bytes(output(&[a, b], *f).as_bytes()).unwrap();
                to_node_names(&mut p, &names);
                (r.file.clone(), Ok(p))
            })
            .collect();
        let rep = outliers::analyse(&parsed, &OutlierOptions::default());
        let (_, suspect, good) = classify(&rep, &runs);
        assert_eq!(suspect, vec!["lgn1", "lgn2"]);
        assert_eq!(good, vec!["lgn3", "lgn4"]);
    }

    #[test]
    fn squeue_answers_move_states_and_a_job_gone_from_the_queue_is_over() {
        let mut runs = vec![
            run(1, "a", "b", "7", "PENDING"),
            run(1, "c", "d", "8", "PENDING"),
            run(1, "e", "f", "9", "PENDING"),
            PairRun {
                job_id: None,
                state: "sbatch refused: x".into(),
                ..run(1, "g", "h", "", "")
            },
        ];
        apply_squeue(&mut runs, "7|RUNNING\n8|PENDING\n9|FAILED\n");
        let st: Vec<&str> = runs.iter().map(|r| r.state.as_str()).collect();
        assert_eq!(
            st,
            vec!["RUNNING", "PENDING", "FAILED", "sbatch refused: x"]
        );
        assert_eq!(progress_counts(&runs), (2, 1));
        // 7 left the queue while running, 9 after failing: 7 is taken as completed, 9 stays FAILED.
        apply_squeue(&mut runs, "8|RUNNING\n");
        let st: Vec<&str> = runs.iter().map(|r| r.state.as_str()).collect();
        assert_eq!(
            st,
            vec!["COMPLETED?", "RUNNING", "FAILED", "sbatch refused: x"]
        );
        assert_eq!(progress_counts(&runs), (3, 1));
        // The deadline: only the unfinished one is cancelled, and says what it was.
        let ids = expire(&mut runs, Duration::from_secs(60));
        assert_eq!(ids, vec!["8"]);
        assert_eq!(
            runs[1].state,
            "not finished within 60 s (cancelled; was RUNNING)"
        );
        assert_eq!(progress_counts(&runs), (4, 0));
    }

    #[test]
    fn percent_signs_in_the_output_path_reach_sbatch_literally() {
        assert_eq!(
            output_pattern(Path::new("/scratch/100%/run-%j/r1-a-b.out")),
            "/scratch/100%%/run-%%j/r1-a-b.out"
        );
        // With a backslash sbatch expands nothing, so nothing is escaped.
        assert_eq!(output_pattern(Path::new("/x\\y/%j.out")), "/x\\y/%j.out");
    }

    #[test]
    fn the_repro_line_is_one_shell_word_per_argument() {
        let o = opts("sh -c 'exec all_reduce_perf -b 8 -e 1G' # it's");
        let line = repro(&o, &pairs::pair("n2", "n1"));
        assert_eq!(
            line,
            "sbatch -N2 --exclusive --ntasks-per-node=1 -w n1,n2 --partition=gpu '--account=ops team' --wrap='srun --mpi=pmix sh -c '\\''exec all_reduce_perf -b 8 -e 1G'\\'' # it'\\''s'"
        );
        // A shell reads the --wrap word back as exactly the batch script's line.
        let o2 = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("printf '%s\\n' {}", line.replace("sbatch ", "")),
            ])
            .output()
            .unwrap();
        let words = String::from_utf8(o2.stdout).unwrap();
        assert_eq!(
            words.lines().last().unwrap(),
            format!("--wrap={}", wrap_command(&o))
        );
    }
}
