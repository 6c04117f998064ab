//! Facts an NCCL_DEBUG=INFO log proves about the run: versions, network, provider/fabric, NICs,
//! GPUDirect RDMA, ranks and hosts, WARN lines and test failures.
//!
//! Line shapes come from the real logs in `../shared/fixtures/nccl/` (NCCL 2.28.9) and from the
//! excerpts in seeds `000_*` ("How to read nccl-tests results") and `003_*` (aws-ofi-nccl on EFA):
//! - `host:pid:tid [cudaDev] NCCL INFO <message>`; WARN lines carry a `[YYYY-MM-DD HH:MM:SS] ` prefix;
//! - `NCCL version 2.18.5+cuda12.2` printed bare by older NCCL, as an INFO message by newer;
//! - `NET/OFI Selected Provider is efa (found 4 nics)` (aws-ofi-nccl <= 1.13) and
//!   `NET/OFI Selected provider is efa, fabric is efa-direct (found 8 nics)` (newer);
//! - `Using network Libfabric` / `AWS Libfabric` (older plugin name) / `Socket` / `IB`;
//! - connection lines `Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA`.
//!
//! The scanner is a hot loop (seed-sized logs reach gigabytes on large jobs): every line is matched by
//! prefix, and strings are only allocated for facts not seen before.

use serde::Serialize;

/// How many distinct WARN / failure lines are kept verbatim.
const KEEP_LINES: usize = 8;

/// One `# Rank N Group G Pid P on HOST device D [BUS] NAME` line of the nccl-tests header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankLine {
    /// Global rank.
    pub rank: u32,
    /// Process id.
    pub pid: u32,
    /// Host name as the process saw it.
    pub host: String,
    /// CUDA device index on that host.
    pub device: u32,
    /// PCI bus id in brackets (`0000:00:06`), and the GPU name after it.
    pub gpu: String,
}

/// What aws-ofi-nccl's `Selected provider is …` line said on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderLine {
    /// Host that logged it (`None` when the line had no `host:pid:tid` prefix).
    pub host: Option<String>,
    /// Libfabric provider, lower-cased (`efa`, `tcp`, ...).
    pub provider: String,
    /// Fabric (`efa`, `efa-direct`), only in the newer spelling.
    pub fabric: Option<String>,
    /// `found N nics`.
    pub nics: Option<u32>,
}

/// An `NCCL_X set by environment to V` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvSetting {
    /// Variable name.
    pub name: String,
    /// Value as logged.
    pub value: String,
}

/// Everything the NCCL lines of one file prove.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogFacts {
    /// `# nccl-tests version 2.19.6 …`.
    pub nccl_tests_version: Option<String>,
    /// `NCCL version 2.28.9+cuda13.0`.
    pub nccl_version: Option<String>,
    /// `NET/OFI Initializing aws-ofi-nccl 1.7.4-aws`: `1.7.4-aws`.
    pub ofi_version: Option<String>,
    /// `NCCL INFO cudaDriverVersion 13000`.
    pub cuda_driver_version: Option<u32>,
    /// Distinct values of `Using network X`, in order of first appearance.
    pub networks: Vec<String>,
    /// NET plugins NCCL reported it could not initialise (`Failed to initialize NET plugin IB`).
    pub net_plugin_failures: Vec<String>,
    /// `NET/IB : No device found.` was logged.
    pub ib_no_device: bool,
    /// Distinct `Selected provider is …` lines, one per host (and spelling).
    pub providers: Vec<ProviderLine>,
    /// Interfaces in `NET/Socket : Using [0]eth0:…` (largest count any process logged).
    pub socket_nics: Option<u32>,
    /// HCAs in `NET/IB : Using [0]mlx5_0:1/IB [1]…` (largest count any process logged).
    pub ib_nics: Option<u32>,
    /// `Setting NCCL_TOPO_FILE environment variable to …` (aws-ofi-nccl's per-platform topology).
    pub topo_file: Option<String>,
    /// Connection lines through a NET transport (`via NET/<name>/<dev>…`).
    pub net_connections: u64,
    /// Of those, the ones marked `/GDRDMA` (GPUDirect RDMA).
    pub gdrdma_connections: u64,
    /// Distinct NET transport names seen in connection lines (`Socket`, `AWS Libfabric`, `IB`).
    pub net_transports: Vec<String>,
    /// Connection lines through P2P (`via P2P/…`) and SHM (`via SHM/…`).
    pub p2p_connections: u64,
    /// Connection lines through shared memory.
    pub shm_connections: u64,
    /// `# Rank …` header lines.
    pub ranks: Vec<RankLine>,
    /// `nranks N` from `ncclCommInitRank…` lines (largest communicator seen).
    pub nranks: Option<u32>,
    /// `nNodes N` from `comm 0x… rank R nRanks N nNodes M` lines.
    pub nnodes: Option<u32>,
    /// Hosts seen, from `# Rank` lines, `host:pid:tid` prefixes and `name: i-…` lines, in order.
    pub hosts: Vec<String>,
    /// `hostname: i-0123…` lines the seed 002 job scripts print (host, EC2 instance id).
    pub instance_ids: Vec<(String, String)>,
    /// `NCCL_X set by environment to V` lines (distinct).
    pub env: Vec<EnvSetting>,
    /// Number of `NCCL WARN` lines.
    pub warn_count: u64,
    /// The first distinct WARN messages (without prefix).
    pub warns: Vec<String>,
    /// nccl-tests failure lines (`Test NCCL failure …`, `Test failure …`, `Test CUDA failure …`).
    pub test_failures: Vec<String>,
    /// Failed correctness checks of the seed 000 PyTorch measurement
    /// (`# check all_reduce sum: got 2.0 expected 3.0 -> FAILED`).
    pub torch_check_failures: Vec<String>,
    /// Lines carrying an NCCL prefix (INFO or WARN).
    pub nccl_lines: u64,
    /// `host:pid` pairs seen on NCCL lines (processes).
    #[serde(skip)]
    pids: Vec<(u32, u32)>,
    #[serde(skip)]
    last_host: Option<u32>,
}

impl LogFacts {
    /// Number of distinct processes that logged NCCL lines.
    pub fn process_count(&self) -> usize {
        self.pids.len()
    }

    /// The network in use: the last `Using network X` if every process agreed, else all of them
    /// joined with `+`.
    pub fn network(&self) -> Option<String> {
        match self.networks.len() {
            0 => None,
            1 => Some(self.networks[0].clone()),
            _ => Some(self.networks.join("+")),
        }
    }

    /// Smallest `found N nics` any host logged, and the hosts that logged it.
    pub fn min_nics(&self) -> Option<(u32, Vec<String>)> {
        let min = self.providers.iter().filter_map(|p| p.nics).min()?;
        let hosts = self
            .providers
            .iter()
            .filter(|p| p.nics == Some(min))
            .filter_map(|p| p.host.clone())
            .collect();
        Some((min, hosts))
    }

    /// Largest `found N nics` any host logged.
    pub fn max_nics(&self) -> Option<u32> {
        self.providers.iter().filter_map(|p| p.nics).max()
    }

    /// Number of ranks: `# Rank` lines, else the `nranks` NCCL logged.
    pub fn rank_count(&self) -> Option<u32> {
        if self.ranks.is_empty() {
            self.nranks
        } else {
            Some(self.ranks.len() as u32)
        }
    }

    /// Whether anything NCCL- or nccl-tests-specific was seen.
    pub fn is_empty(&self) -> bool {
        self.nccl_lines == 0
            && self.ranks.is_empty()
            && self.nccl_version.is_none()
            && self.nccl_tests_version.is_none()
            && self.test_failures.is_empty()
            && self.instance_ids.is_empty()
    }

    fn add_host(&mut self, host: &str) -> u32 {
        if let Some(i) = self.last_host {
            if self.hosts[i as usize] == host {
                return i;
            }
        }
        let i = match self.hosts.iter().position(|h| h == host) {
            Some(i) => i,
            None => {
                self.hosts.push(host.to_string());
                self.hosts.len() - 1
            }
        } as u32;
        self.last_host = Some(i);
        i
    }

    /// Reads a `# …` comment line of the nccl-tests header (`# nccl-tests version`, `#  Rank`).
    pub fn scan_comment(&mut self, line: &str) {
        let body = line.trim_start_matches('#').trim_start();
        if let Some(rest) = body.strip_prefix("nccl-tests version ") {
            if let Some(v) = rest.split_ascii_whitespace().next() {
                self.nccl_tests_version = Some(v.to_string());
            }
        } else if body.starts_with("check ") && body.contains(" -> ") {
            if !body.trim_end().ends_with("-> OK") {
                push_distinct(&mut self.torch_check_failures, body.trim_end());
            }
        } else if body.starts_with("Rank ") {
            if let Some(r) = parse_rank_line(body) {
                self.add_host(&r.host);
                if !self.ranks.iter().any(|x| x.rank == r.rank) {
                    self.ranks.push(r);
                }
            }
        }
    }

    /// Reads one non-comment line; returns `true` when it was an NCCL or nccl-tests line.
    pub fn scan_line(&mut self, line: &str) -> bool {
        // Fast path: almost every line of a big log is `host:pid:tid [d] NCCL INFO …`.
        if let Some(pos) = find_nccl_marker(line) {
            let level_and_msg = &line[pos + 6..];
            let level = if let Some(m) = level_and_msg.strip_prefix("INFO ") {
                Some((false, m))
            } else {
                level_and_msg.strip_prefix("WARN ").map(|m| (true, m))
            };
            if let Some((is_warn, msg)) = level {
                self.nccl_lines += 1;
                self.prefix(&line[..pos]);
                if is_warn {
                    self.warn_count += 1;
                    push_distinct(&mut self.warns, msg.trim_end());
                } else {
                    self.info(msg);
                }
                return true;
            }
            if level_and_msg.starts_with("version ") {
                self.nccl_version_line(&line[pos + 1..]);
                return true;
            }
        }
        if line.starts_with("NCCL version ") {
            self.nccl_version_line(line);
            return true;
        }
        if let Some(i) = line.find("NET/OFI ") {
            // nccl_message_transfer prints `INFO: Function: … NET/OFI Selected Provider is efa …`.
            self.info(&line[i..]);
            return true;
        }
        if line.contains("Test NCCL failure")
            || line.contains("Test failure")
            || line.contains("Test CUDA failure")
        {
            push_distinct(&mut self.test_failures, line.trim());
            return true;
        }
        if let Some((host, id)) = parse_instance_line(line) {
            if !self.instance_ids.iter().any(|(h, _)| h == host) {
                self.instance_ids.push((host.to_string(), id.to_string()));
            }
            return true;
        }
        false
    }

    fn nccl_version_line(&mut self, line: &str) {
        if let Some(v) = line
            .strip_prefix("NCCL version ")
            .and_then(|r| r.split_ascii_whitespace().next())
        {
            if v.as_bytes().first().is_some_and(u8::is_ascii_digit) && self.nccl_version.is_none() {
                self.nccl_version = Some(v.to_string());
            }
        }
    }

    /// `host:pid:tid [d]` or `[date time] host:pid:tid [d] file.cc:N`.
    fn prefix(&mut self, prefix: &str) {
        let p = match prefix.strip_prefix('[') {
            Some(r) => r.split_once("] ").map(|(_, r)| r).unwrap_or(""),
            None => prefix,
        };
        let mut parts = p.splitn(3, ':');
        let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
            return;
        };
        if host.is_empty() || host.contains(' ') {
            return;
        }
        let Ok(pid) = pid.parse::<u32>() else {
            return;
        };
        let h = self.add_host(host);
        if !self.pids.contains(&(h, pid)) {
            self.pids.push((h, pid));
        }
    }

    fn info(&mut self, msg: &str) {
        let b = msg.as_bytes();
        match b.first() {
            Some(b'C') => {
                if let Some(i) = msg.find(" via ") {
                    self.connection(&msg[i + 5..]);
                }
            }
            Some(b'N') => {
                if let Some(rest) = msg.strip_prefix("NET/OFI ") {
                    self.ofi(rest);
                } else if let Some(rest) = msg.strip_prefix("NET/IB : ") {
                    if rest.starts_with("No device found") {
                        self.ib_no_device = true;
                    } else if let Some(u) = rest.strip_prefix("Using ") {
                        let n = count_devices(u);
                        self.ib_nics = self.ib_nics.max(Some(n)).filter(|n| *n > 0);
                    }
                } else if let Some(rest) = msg.strip_prefix("NET/Socket : Using ") {
                    let n = count_devices(rest);
                    self.socket_nics = self.socket_nics.max(Some(n)).filter(|n| *n > 0);
                } else if msg.starts_with("NCCL version ") {
                    self.nccl_version_line(msg);
                } else if msg.starts_with("NCCL_") {
                    if let Some((name, value)) = msg.split_once(" set by environment to ") {
                        let value = value.trim_end().trim_end_matches('.');
                        if !self.env.iter().any(|e| e.name == name) {
                            self.env.push(EnvSetting {
                                name: name.to_string(),
                                value: value.to_string(),
                            });
                        }
                    }
                }
            }
            Some(b'U') => {
                if let Some(net) = msg.strip_prefix("Using network ") {
                    push_distinct(&mut self.networks, net.trim_end());
                }
            }
            Some(b'F') => {
                if let Some(p) = msg.strip_prefix("Failed to initialize NET plugin ") {
                    push_distinct(&mut self.net_plugin_failures, p.trim_end());
                }
            }
            Some(b'c') => {
                if let Some(v) = msg.strip_prefix("cudaDriverVersion ") {
                    self.cuda_driver_version = v.trim().parse().ok();
                } else if msg.starts_with("comm 0x") {
                    if let Some(n) = word_after(msg, " nNodes ") {
                        self.nnodes = self.nnodes.max(Some(n));
                    }
                    if let Some(n) = word_after(msg, " nRanks ") {
                        self.nranks = self.nranks.max(Some(n));
                    }
                }
            }
            Some(b'n') => {
                if let Some(n) = msg
                    .starts_with("ncclCommInitRank")
                    .then(|| word_after(msg, " nranks "))
                    .flatten()
                {
                    self.nranks = self.nranks.max(Some(n));
                }
            }
            _ => {}
        }
    }

    /// The part after ` via ` of a `Channel …` connection line.
    fn connection(&mut self, via: &str) {
        if let Some(net) = via.strip_prefix("NET/") {
            self.net_connections += 1;
            let name = net.split('/').next().unwrap_or("");
            if net.contains("/GDRDMA") {
                self.gdrdma_connections += 1;
            }
            if !name.is_empty() && !self.net_transports.iter().any(|t| t == name) {
                self.net_transports.push(name.to_string());
            }
        } else if via.starts_with("P2P/") {
            self.p2p_connections += 1;
        } else if via.starts_with("SHM/") {
            self.shm_connections += 1;
        }
    }

    /// An aws-ofi-nccl `NET/OFI …` message.
    fn ofi(&mut self, rest: &str) {
        if let Some(v) = rest.strip_prefix("Initializing aws-ofi-nccl ") {
            self.ofi_version = v.split_ascii_whitespace().next().map(str::to_string);
            return;
        }
        if let Some(f) = rest.find("NCCL_TOPO_FILE environment variable to ") {
            let v = rest[f + "NCCL_TOPO_FILE environment variable to ".len()..].trim();
            self.topo_file = Some(v.to_string());
            return;
        }
        // Both spellings: `Selected Provider is efa (found 4 nics)` and
        // `Selected provider is efa, fabric is efa-direct (found 8 nics)`.
        let lower = rest.to_ascii_lowercase();
        let Some(p) = lower.find("selected provider is ") else {
            return;
        };
        let after = &lower[p + "selected provider is ".len()..];
        let provider: String = after
            .chars()
            .take_while(|c| !matches!(c, ',' | ' ' | '('))
            .collect();
        let fabric = after.find("fabric is ").map(|f| {
            after[f + "fabric is ".len()..]
                .chars()
                .take_while(|c| !matches!(c, ',' | ' ' | '('))
                .collect::<String>()
        });
        let nics = after
            .find("(found ")
            .and_then(|f| word_after(&after[f..], "(found "));
        let host = self.last_host.map(|h| self.hosts[h as usize].clone());
        let line = ProviderLine {
            host,
            provider,
            fabric,
            nics,
        };
        if !self.providers.contains(&line) {
            self.providers.push(line);
        }
    }
}

/// Finds ` NCCL ` (the marker between an NCCL line's prefix and its level); returns its index.
fn find_nccl_marker(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(i) = b[from..].iter().position(|&c| c == b'N') {
        let at = from + i;
        if at > 0 && b[at - 1] == b' ' && b[at..].starts_with(b"NCCL ") {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

/// `[0]eth0:192.0.2.2<0>` or `[0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB …`: the `[digits]` entries before
/// `;` (the `[RO]` relaxed-ordering flag is not a device).
fn count_devices(s: &str) -> u32 {
    let s = s.split(';').next().unwrap_or("");
    let mut n = 0;
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(']') {
            n += 1;
        }
    }
    n
}

fn word_after(s: &str, key: &str) -> Option<u32> {
    let i = s.find(key)?;
    s[i + key.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn push_distinct(v: &mut Vec<String>, s: &str) {
    if v.len() < KEEP_LINES && !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// `#  Rank  0 Group  0 Pid   1418 on         vm device  0 [0000:00:06] NVIDIA H200` (also without
/// `Group`, as older nccl-tests printed it).
fn parse_rank_line(body: &str) -> Option<RankLine> {
    let t: Vec<&str> = body.split_ascii_whitespace().collect();
    let after = |k: &str| t.iter().position(|x| *x == k).and_then(|i| t.get(i + 1));
    let rank = after("Rank")?.parse().ok()?;
    let pid = after("Pid")?.parse().ok()?;
    let host = after("on")?.to_string();
    let device = after("device")?.parse().ok()?;
    let dev_i = t.iter().position(|x| *x == "device")?;
    let gpu = t.get(dev_i + 2..).map(|r| r.join(" ")).unwrap_or_default();
    Some(RankLine {
        rank,
        pid,
        host,
        device,
        gpu,
    })
}

/// `p5en-dy-gpu-1: i-022b2b0f40726512e`, as the seed 002 job scripts print at the top of each file.
fn parse_instance_line(line: &str) -> Option<(&str, &str)> {
    let (host, id) = line.trim().split_once(": ")?;
    let id = id.trim();
    let hex = id.strip_prefix("i-")?;
    if host.is_empty()
        || host.contains(char::is_whitespace)
        || hex.is_empty()
        || !hex.bytes().all(|b| b.is_ascii_hexdigit() || b == b'x')
    {
        return None;
    }
    Some((host, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_line_old_spelling() {
        let mut f = LogFacts::default();
        assert!(f.scan_line(
            "ip-172-31-4-37:9024:9062 [6] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"
        ));
        assert_eq!(
            f.providers,
            vec![ProviderLine {
                host: Some("ip-172-31-4-37".into()),
                provider: "efa".into(),
                fabric: None,
                nics: Some(4)
            }]
        );
    }

    #[test]
    fn provider_line_new_spelling() {
        let mut f = LogFacts::default();
        f.scan_line("node-1:1:2 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 8 nics)");
        assert_eq!(f.providers[0].fabric.as_deref(), Some("efa-direct"));
        assert_eq!(f.providers[0].nics, Some(8));
        assert_eq!(f.min_nics(), Some((8, vec!["node-1".to_string()])));
    }

    #[test]
    fn message_transfer_line_without_prefix() {
        let mut f = LogFacts::default();
        f.scan_line("INFO: Function: nccl_net_ofi_init Line: 1069: NET/OFI Selected Provider is efa (found 4 nics)");
        assert_eq!(f.providers[0].nics, Some(4));
        assert_eq!(f.providers[0].host, None);
    }

    #[test]
    fn gdrdma_connections_are_counted() {
        let mut f = LogFacts::default();
        f.scan_line(
            "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA",
        );
        f.scan_line("a:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/Libfabric/1");
        assert_eq!((f.net_connections, f.gdrdma_connections), (2, 1));
        assert_eq!(f.net_transports, vec!["AWS Libfabric", "Libfabric"]);
    }

    #[test]
    fn warn_line_with_timestamp_prefix() {
        let mut f = LogFacts::default();
        f.scan_line("[2026-11-30 00:12:00] vm:1487:1499 [1] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin");
        assert_eq!(f.warn_count, 1);
        assert_eq!(f.warns, vec!["Failed to initialize any NET plugin"]);
        assert_eq!(f.hosts, vec!["vm"]);
    }

    #[test]
    fn instance_id_lines() {
        assert_eq!(
            parse_instance_line("p5en-dy-gpu-1: i-022b2b0f40726512e"),
            Some(("p5en-dy-gpu-1", "i-022b2b0f40726512e"))
        );
        assert_eq!(parse_instance_line("note: i-am-not-an-id"), None);
    }

    #[test]
    fn device_counts_ignore_relaxed_ordering_flag() {
        assert_eq!(count_devices("[RO]; OOB eth0:192.0.2.2<0>"), 0);
        assert_eq!(
            count_devices("[0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0"),
            2
        );
    }
}
