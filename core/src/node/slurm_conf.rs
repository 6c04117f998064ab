//! `node.slurm_conf.*`: this node's line in slurm.conf against its hardware (`slurmd -C`
//! prints the real values; a RealMemory above what the node has puts it DOWN with `Low RealMemory`). Slurm's rule (slurm.conf(5), NodeName): a node that registers with fewer CPUs,
//! sockets, cores, threads or less memory than configured is set DRAIN/DOWN; fewer configured is fine.

use super::{quote, Outcome, Status};
use crate::slurm_conf::{NodeLine, SlurmConf};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.slurm_conf.parse",
        "slurm.conf and its includes parse and define this node",
    ),
    (
        "node.slurm_conf.cpus",
        "CPUs, Boards, Sockets, CoresPerSocket, ThreadsPerCore not above the hardware",
    ),
    (
        "node.slurm_conf.real_memory",
        "RealMemory set and not above the node's memory (slurmd -C)",
    ),
    (
        "node.slurm_conf.gres",
        "Gres=gpu:N matches the GPU device files gres.conf names, and they exist",
    ),
];

/// The node's hardware as `slurmd -C` reports it (gathered from `/sys` and `/proc/meminfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hardware {
    /// Online logical CPUs.
    pub cpus: u32,
    /// Boards (always 1 on Linux, as slurmd -C says).
    pub boards: u32,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
    /// `MemTotal` in MiB (rounded down, as slurmd -C).
    pub real_memory_mib: u64,
}

/// Everything the slurm_conf family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmConfFacts {
    /// slurm.conf's path.
    pub path: String,
    /// The parsed file, or why it could not be read.
    pub conf: Result<SlurmConf, ConfReadError>,
    /// The name slurmd uses for this node (its hostname).
    pub node: String,
    /// The hardware (`Err`: could not be read).
    pub hw: Result<Hardware, String>,
    /// GPU device files gres.conf names for this node (`None`: gres.conf absent or AutoDetect).
    pub gres_gpu_files: Option<Vec<String>>,
    /// Those of them that do not exist.
    pub missing_gpu_files: Vec<String>,
}

/// `Gres=gpu:8`, `gpu:h100:8,nic:1` → the total GPU count (`gpu` without a count is 1).
pub fn gres_gpu_count(gres: &str) -> u32 {
    gres.split(',')
        .filter_map(|g| {
            let g = g.split('(').next().unwrap_or(g);
            let mut parts = g.split(':');
            (parts.next()? == "gpu").then(|| {
                let rest: Vec<&str> = parts.collect();
                rest.last().and_then(|n| n.parse::<u32>().ok()).unwrap_or(1)
            })
        })
        .sum()
}

/// Why slurm.conf could not be read: absent is not a fault by itself (a configless node before
/// slurmd fetched it, a login node), unreadable is. The message is the operating system's, as
/// `std::io::Error` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfReadError {
    /// The file does not exist.
    Absent(String),
    /// It exists but could not be read (permissions, I/O error, a directory).
    Unreadable(String),
}

impl std::fmt::Display for ConfReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfReadError::Absent(e) | ConfReadError::Unreadable(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ConfReadError {}

impl From<std::io::Error> for ConfReadError {
    fn from(e: std::io::Error) -> ConfReadError {
        if e.kind() == std::io::ErrorKind::NotFound {
            ConfReadError::Absent(e.to_string())
        } else {
            ConfReadError::Unreadable(e.to_string())
        }
    }
}

/// Judges the slurm_conf family: one outcome per ID of [`CHECKS`], in that order.
pub fn judge(f: &SlurmConfFacts) -> Vec<Outcome> {
    let conf = match &f.conf {
        Ok(c) => c,
        Err(e) => {
            let mut out = vec![check_slurm_conf_unreadable(f, e)];
            for (id, _) in &CHECKS[1..] {
                out.push(Outcome::unknown(id, "slurm.conf unreadable"));
            }
            return out;
        }
    };
    let line = conf.node(&f.node);
    let mut out = vec![check_slurm_conf_parse(f, conf, line.is_some())];
    let Some(line) = line else {
        for (id, _) in &CHECKS[1..] {
            out.push(Outcome::unknown(id, "this node is not in slurm.conf"));
        }
        return out;
    };
    match &f.hw {
        Ok(hw) => {
            out.push(check_slurm_conf_cpus(f, line, hw));
            out.push(check_slurm_conf_real_memory(f, conf, line, hw));
        }
        Err(e) => {
            for id in ["node.slurm_conf.cpus", "node.slurm_conf.real_memory"] {
                out.push(Outcome::unknown(id, format!("hardware unknown: {e}")));
            }
        }
    }
    out.push(check_slurm_conf_gres(f, line));
    out
}

/// `node.slurm_conf.parse` when the file could not be read.
fn check_slurm_conf_unreadable(f: &SlurmConfFacts, e: &ConfReadError) -> Outcome {
    let path = quote(&f.path);
    match e {
        ConfReadError::Absent(_) => Outcome::unknown(
            "node.slurm_conf.parse",
            format!("no slurm.conf at {path} (configless?)"),
        ),
        ConfReadError::Unreadable(_) => Outcome::new(
            "node.slurm_conf.parse",
            Status::Critical,
            format!("cannot read {path}: {e}"),
            "slurmd and every Slurm command on this node need it",
            "make it readable (mode 0644), or set slurm_conf in launchguard.toml",
        ),
    }
}

/// `node.slurm_conf.parse`: the file names this node and has no problems.
fn check_slurm_conf_parse(f: &SlurmConfFacts, conf: &SlurmConf, has_node: bool) -> Outcome {
    // An include Slurm cannot follow comes first: the node's own line may be in the file not read.
    if let Some(e) = conf.include_errors.first() {
        return Outcome::new(
            "node.slurm_conf.parse",
            Status::Critical,
            format!(
                "{} {} cannot be followed: {}",
                conf.include_errors.len(),
                if conf.include_errors.len() == 1 { "Include" } else { "Includes" },
                crate::finding::clip(e, 240)
            ),
            "Slurm refuses the whole configuration when an included file cannot be read (slurmd, slurmctld and every command stop with 'Unable to process configuration file')",
            "make the named file exist and readable by every user (mode 0644), list each file on its own Include line (no globs), then scontrol reconfigure",
        );
    }
    match (has_node, conf.problems.first()) {
        (false, _) => Outcome::new(
            "node.slurm_conf.parse",
            Status::Critical,
            format!("{} defines no node named {}", quote(&f.path), quote(&f.node)),
            "slurmd refuses to start on a node slurm.conf does not list",
            format!(
                "add it, e.g. the line `slurmd -C` prints: NodeName={} CPUs=… RealMemory=…, then scontrol reconfigure",
                f.node
            ),
        ),
        (true, Some(p)) => Outcome::new(
            "node.slurm_conf.parse",
            Status::Warning,
            format!(
                "{} problem(s) in slurm.conf, first: {}",
                conf.problems.len(),
                crate::finding::clip(p, 120)
            ),
            "slurmctld and slurmd may read the file differently than intended, or refuse it",
            "fix the line named; slurmd -C and scontrol show config show what Slurm sees",
        ),
        (true, None) => Outcome::ok("node.slurm_conf.parse"),
    }
}

/// A number from the node's line (`CPUs=64` → 64).
fn num(line: &NodeLine, k: &str) -> Option<u64> {
    line.get(k).and_then(|v| v.parse::<u64>().ok())
}

/// `node.slurm_conf.cpus`: CPUs and topology not above the hardware.
fn check_slurm_conf_cpus(f: &SlurmConfFacts, line: &NodeLine, hw: &Hardware) -> Outcome {
    let num = |k: &str| num(line, k);
    let slurmd_c = format!(
        "CPUs={} Boards={} SocketsPerBoard={} CoresPerSocket={} ThreadsPerCore={}",
        hw.cpus,
        hw.boards,
        hw.sockets / hw.boards.max(1),
        hw.cores_per_socket,
        hw.threads_per_core
    );
    let sockets =
        num("Sockets").or_else(|| num("SocketsPerBoard").map(|s| s * num("Boards").unwrap_or(1)));
    let mut over = vec![];
    for (name, conf_v, hw_v) in [
        ("CPUs", num("CPUs"), hw.cpus as u64),
        ("Boards", num("Boards"), hw.boards as u64),
        ("Sockets", sockets, hw.sockets as u64),
        (
            "CoresPerSocket",
            num("CoresPerSocket"),
            hw.cores_per_socket as u64,
        ),
        (
            "ThreadsPerCore",
            num("ThreadsPerCore"),
            hw.threads_per_core as u64,
        ),
    ] {
        if let Some(c) = conf_v {
            if c > hw_v {
                over.push(format!("{name}={c} (has {hw_v})"));
            }
        }
    }
    let total = sockets.unwrap_or(1)
        * num("CoresPerSocket").unwrap_or(1)
        * num("ThreadsPerCore").unwrap_or(1);
    // slurmctld drains only when the CPUs or the Sockets×Cores×Threads product exceed what
    // slurmd registers ('Low socket*core*thread count'); a different split of the same count
    // (NUMA or L3 domains as sockets) registers fine.
    let mut fatal = vec![];
    if let Some(c) = num("CPUs").filter(|c| *c > hw.cpus as u64) {
        fatal.push(format!("CPUs={c}"));
    }
    if total > hw.cpus as u64 {
        fatal.push(format!("Sockets×CoresPerSocket×ThreadsPerCore={total}"));
    }
    if !fatal.is_empty() {
        Outcome::new(
            "node.slurm_conf.cpus",
            Status::Critical,
            format!("slurm.conf gives {} {} but it has {} CPUs", f.node, fatal.join(" and "), hw.cpus),
            "slurmd registers fewer CPUs than configured and slurmctld drains the node ('Low socket*core*thread count')",
            format!("use what slurmd -C prints: {slurmd_c}; then scontrol reconfigure"),
        )
    } else if !over.is_empty() {
        Outcome::new(
            "node.slurm_conf.cpus",
            Status::Warning,
            format!("slurm.conf's topology for {} differs from the hardware: {}", f.node, over.join(", ")),
            "the CPU count registers, but task binding and --cpus-per-task layouts follow the configured sockets and cores",
            format!("unless intended (NUMA domains as sockets), use what slurmd -C prints: {slurmd_c}"),
        )
    } else if num("CPUs").is_none() && sockets.is_none() && num("CoresPerSocket").is_none() {
        Outcome::new(
            "node.slurm_conf.cpus",
            Status::Warning,
            format!("slurm.conf gives {} no CPU count", f.node),
            "Slurm then schedules the node as 1 CPU, so GPU jobs cannot get --cpus-per-task",
            format!("add what slurmd -C prints: {slurmd_c}"),
        )
    } else {
        Outcome::ok("node.slurm_conf.cpus")
    }
}

/// `node.slurm_conf.real_memory`: RealMemory set and not above the node's memory.
fn check_slurm_conf_real_memory(
    f: &SlurmConfFacts,
    conf: &SlurmConf,
    line: &NodeLine,
    hw: &Hardware,
) -> Outcome {
    // SchedulerParameters=node_reg_mem_percent=N lets a node register with N% of RealMemory.
    let pct = conf
        .get("SchedulerParameters")
        .and_then(|p| {
            p.split(',')
                .find_map(|kv| kv.strip_prefix("node_reg_mem_percent="))
        })
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|p| (1..=100).contains(p))
        .unwrap_or(100);
    match num(line, "RealMemory") {
        Some(m) if hw.real_memory_mib * 100 < m * pct => Outcome::new(
            "node.slurm_conf.real_memory",
            Status::Critical,
            format!("RealMemory={m} for {} is above its {} MiB", f.node, hw.real_memory_mib),
            "slurmd registers less memory than configured and the node goes DOWN/DRAIN with 'Low RealMemory'",
            format!(
                "set RealMemory={} (slurmd -C) or a little lower to leave room for the OS; scontrol reconfigure",
                hw.real_memory_mib
            ),
        ),
        Some(_) => Outcome::ok("node.slurm_conf.real_memory"),
        None => Outcome::new(
            "node.slurm_conf.real_memory",
            Status::Warning,
            format!("slurm.conf gives {} no RealMemory", f.node),
            "the default is 1 MiB, so every job with --mem is refused or memory is not enforced",
            format!("add RealMemory={} (slurmd -C) to the node's line", hw.real_memory_mib),
        ),
    }
}

/// `node.slurm_conf.gres`: `Gres=gpu:N` matches the GPU files gres.conf names, and they exist.
fn check_slurm_conf_gres(f: &SlurmConfFacts, line: &NodeLine) -> Outcome {
    let want = line.get("Gres").map(gres_gpu_count).unwrap_or(0);
    match &f.gres_gpu_files {
        // No File= list to count (AutoDetect, Count= only, MultipleFiles/MIG): slurmd's own count
        // decides, and launchguard cannot predict it.
        None => Outcome::ok("node.slurm_conf.gres"),
        // More files than configured is fine ('Ignoring excess count'); fewer drains the node.
        Some(files) if (files.len() as u32) < want => Outcome::new(
            "node.slurm_conf.gres",
            Status::Critical,
            format!(
                "slurm.conf says Gres=gpu:{want} for {} but gres.conf names {} GPU file(s)",
                f.node,
                files.len()
            ),
            "slurmd reports a different GPU count than configured and the node is drained ('gres/gpu count reported lower than configured')",
            "make the Gres=gpu:N count in slurm.conf equal the File= devices in gres.conf",
        ),
        Some(_) if !f.missing_gpu_files.is_empty() => Outcome::new(
            "node.slurm_conf.gres",
            Status::Critical,
            format!(
                "gres.conf names GPU files that do not exist: {}",
                crate::finding::clip(&f.missing_gpu_files.join(", "), 100)
            ),
            "slurmd fails to start or drains the node, and jobs get no GPUs",
            "load the NVIDIA driver (nvidia-smi; nvidia-modprobe -u -c=0) or fix File= in gres.conf",
        ),
        Some(_) => Outcome::ok("node.slurm_conf.gres"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm_conf::parse;

    fn facts(line: &str) -> SlurmConfFacts {
        let text = format!("ClusterName=c\n{line}\n");
        let conf = parse(&text, "slurm.conf", &mut |_, _| Err("no".into()));
        SlurmConfFacts {
            path: "/etc/slurm/slurm.conf".into(),
            conf: Ok(conf),
            node: "vm".into(),
            hw: Ok(Hardware {
                cpus: 2,
                boards: 1,
                sockets: 1,
                cores_per_socket: 2,
                threads_per_core: 1,
                real_memory_mib: 24105,
            }),
            gres_gpu_files: Some(vec!["/dev/fakegpu0".into(), "/dev/fakegpu1".into()]),
            missing_gpu_files: vec![],
        }
    }

    fn status(f: &SlurmConfFacts, id: &str) -> Status {
        judge(f).into_iter().find(|o| o.id == id).unwrap().status
    }

    /// Smallest input: `Include nodes.conf` where nodes.conf is missing. Before: the node's line
    /// (in nodes.conf) was not found and the WARNING/CRITICAL said only "defines no node".
    #[test]
    fn an_include_slurm_cannot_follow_is_critical_and_named_first() {
        let conf = parse(
            "ClusterName=c\nInclude nodes.conf\n",
            "/etc/slurm/slurm.conf",
            &mut |_, _| Err("/etc/slurm/nodes.conf: No such file or directory (os error 2)".into()),
        );
        let mut f = facts("");
        f.conf = Ok(conf);
        let o = judge(&f).remove(0);
        assert_eq!(o.id, "node.slurm_conf.parse");
        assert_eq!(o.status, Status::Critical);
        assert!(
            o.what.contains(
                "/etc/slurm/slurm.conf:2: Include nodes.conf: /etc/slurm/nodes.conf: No such file"
            ),
            "{}",
            o.what
        );
        assert!(
            o.why.contains("Unable to process configuration file"),
            "{}",
            o.why
        );
    }

    #[test]
    fn this_machines_line_is_ok() {
        let out = judge(&facts(
            "NodeName=vm CPUs=2 RealMemory=12052 Gres=gpu:2,nic:1",
        ));
        assert_eq!(out.len(), CHECKS.len());
        assert!(out.iter().all(|o| o.status == Status::Ok), "{out:?}");
    }

    #[test]
    fn real_memory_above_hardware_is_critical_with_slurmd_c_value() {
        let f = facts("NodeName=vm CPUs=2 RealMemory=30000 Gres=gpu:2");
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.slurm_conf.real_memory")
            .unwrap();
        assert_eq!(o.status, Status::Critical);
        assert!(o.fix.contains("RealMemory=24105"), "{}", o.fix);
        assert_eq!(
            status(
                &facts("NodeName=vm CPUs=2 Gres=gpu:2"),
                "node.slurm_conf.real_memory"
            ),
            Status::Warning
        );
    }

    #[test]
    fn cpus_above_hardware_and_topology_products() {
        assert_eq!(
            status(
                &facts("NodeName=vm CPUs=4 RealMemory=1 Gres=gpu:2"),
                "node.slurm_conf.cpus"
            ),
            Status::Critical
        );
        assert_eq!(
            status(
                &facts("NodeName=vm Sockets=2 CoresPerSocket=2 RealMemory=1 Gres=gpu:2"),
                "node.slurm_conf.cpus"
            ),
            Status::Critical
        );
        assert_eq!(
            status(
                &facts("NodeName=vm CPUs=1 RealMemory=1 Gres=gpu:2"),
                "node.slurm_conf.cpus"
            ),
            Status::Ok
        );
        assert_eq!(
            status(
                &facts("NodeName=vm RealMemory=1 Gres=gpu:2"),
                "node.slurm_conf.cpus"
            ),
            Status::Warning
        );
    }

    #[test]
    fn gres_count_mismatch_and_missing_files() {
        assert_eq!(
            status(
                &facts("NodeName=vm CPUs=2 RealMemory=1 Gres=gpu:h100:4"),
                "node.slurm_conf.gres"
            ),
            Status::Critical
        );
        let mut f = facts("NodeName=vm CPUs=2 RealMemory=1 Gres=gpu:2");
        f.missing_gpu_files = vec!["/dev/fakegpu1".into()];
        assert_eq!(status(&f, "node.slurm_conf.gres"), Status::Critical);
        assert_eq!(gres_gpu_count("gpu:h100:8(S:0-1),nic:1"), 8);
        assert_eq!(gres_gpu_count("gpu"), 1);
    }

    #[test]
    fn node_not_in_conf_is_critical_and_rest_unknown() {
        let f = facts("NodeName=other CPUs=2");
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Critical);
        assert!(out[1..].iter().all(|o| o.status == Status::Unknown));
    }
}
