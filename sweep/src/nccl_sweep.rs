//! `launchguard sweep nccl`: pairwise NCCL runs planned by [`crate::pairs`], submitted through
//! `sbatch` (one job per pair: a Slurm job array cannot pin each of its tasks to its own pair of
//! nodes, and a pinned pair is what makes a later round's evidence mean something), waited for with
//! progress on stderr, and judged by `launchguard_nccl::outliers` (the same analysis as `launchguard
//! nccl outliers`), over every run of every round together.
//!
//! Each pair job is `sbatch -N2 --nodelist=a,b --exclusive --wrap 'srun [args] CMD'` with its output
//! in `<out>/r<round>-<a>-<b>.out`; CMD is an nccl-tests binary on the host or, with
//! `--container-image`, in a container through Pyxis. A round has a deadline; jobs still queued or
//! running then are cancelled and count as failed runs of their pair.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use launchguard_nccl::outliers::{self, NodeVerdict, OutlierOptions, OutlierReport};
use launchguard_nccl::verdict::Severity as NcclSeverity;
use serde::Serialize;

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

fn submit(opts: &NcclOptions, p: &Pair, round: usize, job: &str) -> PairRun {
    let file = opts.out_dir.join(format!("r{round}-{}-{}.out", p.0, p.1));
    let _ = std::fs::remove_file(&file);
    let minutes = opts.round_timeout.as_secs().div_ceil(60).max(1);
    let mut c = Command::new("sbatch");
    c.args(["--parsable", "-N2", "--exclusive"])
        .arg(format!("--job-name={job}"))
        .arg(format!("--nodelist={},{}", p.0, p.1))
        .arg(format!("--ntasks-per-node={}", opts.ntasks_per_node))
        .arg(format!("--time={minutes}"))
        .arg(format!("--output={}", file.display()));
    if let Some(part) = &opts.partition {
        c.arg(format!("--partition={part}"));
    }
    c.args(&opts.sbatch_args);
    c.arg(format!("--wrap={}", wrap_command(opts)));
    let (job_id, state) = match slurm::run(&mut c, Duration::from_secs(30)) {
        Ok(o) if o.code == Some(0) => {
            let id = o.stdout.trim().split(';').next().unwrap_or("").to_string();
            (Some(id), "PENDING".to_string())
        }
        Ok(o) => (
            None,
            format!(
                "sbatch refused: {}",
                slurm::srun_error(&o.stderr).unwrap_or_default()
            ),
        ),
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

/// Waits for the round's jobs, printing progress; cancels what is left at the deadline.
fn wait(runs: &mut [PairRun], round: usize, timeout: Duration, progress: bool) {
    let start = Instant::now();
    let ids: Vec<String> = runs.iter().filter_map(|r| r.job_id.clone()).collect();
    if ids.is_empty() {
        return;
    }
    let tty = std::io::stderr().is_terminal();
    let mut last = None;
    loop {
        let o = slurm::run(
            Command::new("squeue").args(["-h", "-t", "all", "-o", "%i|%T", "-j", &ids.join(",")]),
            Duration::from_secs(15),
        );
        // A failed or timed-out squeue says nothing about the jobs: keep their states and poll again
        // (an empty answer must not read as "every job left the queue").
        if let Some(o) = o.ok().filter(|o| o.code == Some(0) && !o.timed_out) {
            for line in o.stdout.lines() {
                if let Some((id, st)) = line.split_once('|') {
                    if let Some(r) = runs
                        .iter_mut()
                        .find(|r| r.job_id.as_deref() == Some(id.trim()))
                    {
                        r.state = st.trim().to_string();
                    }
                }
            }
            // A job that left squeue (MinJobAge passed) is over; keep its last known state.
            for r in runs.iter_mut().filter(|r| r.job_id.is_some()) {
                if !o
                    .stdout
                    .lines()
                    .any(|l| l.split('|').next().map(str::trim) == r.job_id.as_deref())
                    && !TERMINAL.contains(&r.state.as_str())
                {
                    r.state = "COMPLETED?".into();
                }
            }
        }
        let done = runs
            .iter()
            .filter(|r| r.job_id.is_none() || is_done(&r.state))
            .count();
        let running = runs
            .iter()
            .filter(|r| r.state == "RUNNING" || r.state == "COMPLETING")
            .count();
        if progress {
            let now = (done, running);
            let line = format!(
                "launchguard sweep nccl: round {round}: {done}/{} pairs done, {running} running, {} queued, {:.0} s",
                runs.len(),
                runs.len() - done - running,
                start.elapsed().as_secs_f64()
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
        if start.elapsed() >= timeout {
            for r in runs.iter_mut().filter(|r| !is_done(&r.state)) {
                if let Some(id) = &r.job_id {
                    let _ = slurm::run(Command::new("scancel").arg(id), Duration::from_secs(10));
                }
                r.state = format!(
                    "not finished within {} s (cancelled; was {})",
                    timeout.as_secs(),
                    r.state
                );
            }
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
fn analyse(runs: &[PairRun], opts: &OutlierOptions) -> OutlierReport {
    let files: Vec<(
        String,
        Result<launchguard_nccl::Parsed, launchguard_nccl::ParseError>,
    )> = runs
        .iter()
        .filter(|r| Path::new(&r.file).exists())
        .map(|r| {
            (
                r.file.clone(),
                launchguard_nccl::parse_path(Path::new(&r.file)),
            )
        })
        .collect();
    outliers::analyse(&files, opts)
}

/// The first error line of a pair's output (or why there is none).
fn first_error(file: &str) -> String {
    match std::fs::read(file) {
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
    let job = format!("lg-nccl-{}", std::process::id());
    let mut runs: Vec<PairRun> = Vec::new();
    let mut tried: BTreeSet<Pair> = BTreeSet::new();
    let mut plan = pairs::first_round(&usable);
    let mut report = None;
    for round in 1..=opts.rounds.max(1) {
        if plan.is_empty() {
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
        let mut this: Vec<PairRun> = plan.iter().map(|p| submit(opts, p, round, &job)).collect();
        wait(&mut this, round, opts.round_timeout, opts.progress);
        tried.extend(plan.iter().cloned());
        runs.extend(this);
        let r = analyse(&runs, &opts.outliers);
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
                "run one pair by hand and read its output: sbatch -N2 -w {},{} --wrap '{}'",
                r.nodes.0,
                r.nodes.1,
                wrap_command(opts)
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
