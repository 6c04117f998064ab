//! Facts an NCCL_DEBUG=INFO log proves about the run: versions, network, provider/fabric, NICs,
//! GPUDirect RDMA, ranks and hosts, network plugin load errors, Socket interfaces, environment
//! overrides, WARN lines and test failures.
//!
//! Line shapes come from the real logs in `nccl/tests/fixtures/` (NCCL 2.28.9), from NCCL's own
//! documentation ("Environment Variables", "Troubleshooting") and from public aws-ofi-nccl logs:
//! - `host:pid:tid [cudaDev] NCCL INFO <message>`; WARN lines carry a `[YYYY-MM-DD HH:MM:SS] ` prefix
//!   and often a `file.cc:line` before `NCCL`;
//! - whatever a launcher or a log collector put in front: `srun --label`'s `3: `, PyTorch's
//!   `[rank3]:`, `mpirun --tag-output`, pdsh-style `host: `, ISO timestamps with `|`, Python logging
//!   (`INFO:root:`); or nothing at all (`NCCL INFO Using network Socket`, a stripped paste);
//! - `NCCL version 2.18.5+cuda12.2` printed bare by older NCCL, as an INFO message by newer;
//! - `NET/OFI Selected Provider is efa (found 4 nics)` (aws-ofi-nccl <= 1.13) and
//!   `NET/OFI Selected provider is efa, fabric is efa-direct (found 8 nics)` (newer);
//! - `Using network Libfabric` / `AWS Libfabric` (older plugin name) / `Socket` / `IB`;
//! - connection lines `Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA`;
//! - plugin loading: `NET/Plugin : dlerror=… No plugin found (libnccl-net.so), using internal
//!   implementation`, `NET/Plugin: Plugin load returned 2 : …`, `Failed to initialize NET plugin IB`,
//!   aws-ofi-nccl's `NET/OFI aws-ofi-nccl initialization failed` WARN;
//! - `NET/Socket : Using [0]eth0:10.0.0.5<0> [1]docker0:172.17.0.1<0>` and `Bootstrap : Using …`.
//!
//! The scanner is a hot loop (logs of large jobs reach gigabytes): every line is matched by prefix,
//! strings are only allocated for facts not seen before, and every per-line lookup (hosts, pids,
//! ranks, providers, environment names) is a hash lookup, so the cost per line does not grow with
//! the number of hosts or processes. The number of distinct hosts, processes and ranks remembered is
//! capped ([`MAX_TRACKED`]) so memory stays bounded on any input.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use memchr::memmem::Finder;

use serde::Serialize;

/// How many distinct WARN / failure lines are kept verbatim.
const KEEP_LINES: usize = 8;

/// Most distinct hosts, processes (`host:pid`), ranks or environment names remembered; more are
/// counted in [`LogFacts::untracked`] but not stored (a real job has far fewer: 2^18 ranks is
/// 32,768 nodes of 8 GPUs).
pub const MAX_TRACKED: usize = 1 << 18;

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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
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
    /// `hostname: i-0123…` lines pairwise job scripts print (host, EC2 instance id).
    pub instance_ids: Vec<(String, String)>,
    /// `NCCL_X set by environment to V` lines (distinct).
    pub env: Vec<EnvSetting>,
    /// Number of `NCCL WARN` lines.
    pub warn_count: u64,
    /// The first distinct WARN messages (without prefix).
    pub warns: Vec<String>,
    /// nccl-tests failure lines (`Test NCCL failure …`, `Test failure …`, `Test CUDA failure …`).
    pub test_failures: Vec<String>,
    /// Failed correctness checks of a PyTorch all-reduce measurement
    /// (`# check all_reduce sum: got 2.0 expected 3.0 -> FAILED`).
    pub torch_check_failures: Vec<String>,
    /// Lines carrying an NCCL prefix (INFO or WARN).
    pub nccl_lines: u64,
    /// Errors of a network plugin that failed to load or initialise, in the plugin's own words
    /// (`NET/OFI aws-ofi-nccl initialization failed`, a `dlerror=` other than "libnccl-net.so not
    /// found"); first distinct ones, in order (the first is usually the root cause).
    pub net_plugin_errors: Vec<String>,
    /// NCCL said no external net plugin was present (`No plugin found (libnccl-net.so)`, `Could not
    /// find: libnccl-net.so`): normal on hosts without EFA or a vendor plugin.
    pub net_plugin_absent: bool,
    /// Interfaces NCCL's Socket transport, its bootstrap and NET/IB's out-of-band channel use
    /// (`NET/Socket : Using [0]eth0:10.0.0.5<0>`), distinct, in order.
    pub socket_interfaces: Vec<SocketInterface>,
    /// `MNNVL 1` in a `comm 0x… nNodes N … MNNVL 1` line: multi-node NVLink in use.
    pub mnnvl: bool,
    /// NCCL found no network interface for its sockets: `Bootstrap : no socket interface found`
    /// (bootstrap.cc) or `NET/Socket : no interface found` (the Socket transport), both WARNs
    /// printed when `NCCL_SOCKET_IFNAME` matches nothing or no interface is up with an address.
    pub no_socket_interface: bool,
    /// The application's own report that an NCCL call failed (the job died of it): PyTorch's
    /// `DistBackendError: NCCL error in: …`, `ncclSystemError`/`unhandled system error`,
    /// `ncclInvalidUsage`, `ncclInternalError`, `ncclRemoteError`; first distinct lines, trimmed.
    pub job_errors: Vec<String>,
    /// Hosts, processes or ranks beyond [`MAX_TRACKED`] that were counted but not remembered.
    pub untracked: u64,
    /// `host:pid` pairs seen on NCCL lines (processes).
    #[serde(skip)]
    pids: HashSet<(u32, u32)>,
    /// Index of each host in `hosts`.
    #[serde(skip)]
    host_index: HashMap<String, u32>,
    /// Ranks already in `ranks`.
    #[serde(skip)]
    rank_set: HashSet<u32>,
    /// Hosts already in `instance_ids`.
    #[serde(skip)]
    instance_hosts: HashSet<String>,
    /// Names already in `env`.
    #[serde(skip)]
    env_names: HashSet<String>,
    /// `providers` as a set.
    #[serde(skip)]
    provider_set: HashSet<ProviderLine>,
    #[serde(skip)]
    last_host: Option<u32>,
    /// The prefix bytes of the last NCCL line and what they resolved to (most lines repeat it).
    #[serde(skip)]
    last_prefix: String,
    /// The last `host:pid` recorded in `pids` (most lines repeat it).
    #[serde(skip)]
    last_pid: Option<(u32, u32)>,
    /// The first NCCL prefix read and the host it named (for [`LogFacts::append`]).
    #[serde(skip)]
    first_prefix: Option<(String, Option<u32>)>,
    /// The line before was PyTorch's `Last error:` (the next one is NCCL's last WARN message).
    #[serde(skip)]
    after_last_error: bool,
    /// What the fast path for plain NCCL lines remembers (changes no result).
    #[serde(skip)]
    cache: LineCache,
}

/// What [`LogFacts::scan_plain_nccl_line`] remembers between lines: a cache that changes no
/// result, so every two compare equal (the sequential scan and the scan in pieces fill it
/// differently).
#[derive(Debug, Clone, Default)]
struct LineCache {
    /// `host:pid` parts of `host:pid:tid` words resolved before (`gpu-1:4101`, without `:tid`),
    /// each with the host index and pid it resolved to: that host is in [`LogFacts::hosts`] and
    /// the pair among its processes. Direct-mapped by [`slot`] (one compare per lookup, however
    /// many hosts): the ranks of a node interleave their lines, and a slot per process of a node
    /// keeps them all.
    slots: Vec<(String, (u32, u32))>,
    /// `last_prefix` was set from a plain line (`host:pid:tid [d]`, checked as
    /// [`LogFacts::scan_plain_nccl_line`] checks it): a line that starts with it and ` NCCL INFO `
    /// is plain too.
    plain_prefix: bool,
    /// With `plain_prefix`: where the `host:pid` part of `last_prefix`'s word ends (the index of
    /// its last `:`) and the (host index, pid) it resolved to, a pair in [`LogFacts::pids`]. A
    /// plain prefix with the same `host:pid` and another tid (another thread of that process)
    /// resolves to it again ([`LogFacts::same_process_as_last`]).
    plain_pair: Option<(usize, (u32, u32))>,
    /// The last few `(role, list)` pairs [`LogFacts::interfaces`] read: reading one again adds
    /// nothing (each interface in it is listed already, or the list was full), so it is skipped.
    interface_lists: Vec<(&'static str, String)>,
    /// Tests: remember nothing (the reference every cached answer is compared with).
    #[cfg(test)]
    off: bool,
}

/// Number of [`LineCache::slots`] (a power of two).
const SLOTS: usize = 16;

/// The slot of a `host:pid` key: its length and last two bytes (the pid's last digits).
#[inline]
fn slot(key: &[u8]) -> usize {
    let n = key.len();
    let a = n.checked_sub(1).map_or(0, |i| key[i] as usize);
    let b = n.checked_sub(2).map_or(0, |i| key[i] as usize);
    (a + b * 10 + n * 7) % SLOTS
}

impl PartialEq for LineCache {
    fn eq(&self, _: &LineCache) -> bool {
        true
    }
}

impl LineCache {
    /// What [`host_pid`] gives for `word` resolved to (host index, pid), when the part before its
    /// last `:` is a key met before and the part after it is a tid (digits): `host_pid` reads
    /// nothing else.
    fn get(&self, word: &str) -> Option<((u32, u32), usize)> {
        #[cfg(test)]
        if self.off {
            return None;
        }
        if self.slots.is_empty() {
            return None;
        }
        let b = word.as_bytes();
        let c2 = b.iter().rposition(|&c| c == b':')?;
        let (key, v) = &self.slots[slot(&b[..c2])];
        // c2 > 0: an unused slot's empty key matches nothing.
        (c2 > 0
            && b.len() > c2 + 1
            && same_bytes(&b[..c2], key.as_bytes())
            && b[c2 + 1..].iter().all(u8::is_ascii_digit))
        .then_some((*v, c2))
    }

    /// Remembers that `key` (`host:pid`) resolved to `value`.
    fn put(&mut self, key: &str, value: (u32, u32)) {
        if self.slots.is_empty() {
            // Unused slots: an empty key, which `get` never matches.
            self.slots = vec![(String::new(), (u32::MAX, 0)); SLOTS];
        }
        let (k, v) = &mut self.slots[slot(key.as_bytes())];
        k.clear();
        k.push_str(key);
        *v = value;
    }
}

/// One interface in a `NET/Socket : Using …`, `Bootstrap : Using …` or NET/IB `OOB …` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SocketInterface {
    /// Interface name (`eth0`, `docker0`).
    pub name: String,
    /// Address as NCCL printed it (`10.0.0.5`, `fe80::1%eth0`), without the `<0>` port suffix.
    pub addr: String,
    /// Where it was listed: `socket`, `bootstrap` or `oob`.
    pub role: &'static str,
}

impl LogFacts {
    /// Tests: a scanner that caches nothing between lines (no `host:pid` slots, no interface
    /// lists), the reference for the caches.
    #[cfg(test)]
    pub(crate) fn without_line_cache() -> LogFacts {
        let mut f = LogFacts::default();
        f.cache.off = true;
        f
    }

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

    /// Number of ranks: the larger of the `# Rank` lines (or `-J` JSON devices times GPUs per
    /// process) and the `nranks` NCCL logged.
    pub fn rank_count(&self) -> Option<u32> {
        let listed = (!self.ranks.is_empty()).then_some(self.ranks.len() as u32);
        listed.max(self.nranks)
    }

    /// Whether the run spanned more than one node: `Some(true)` when NCCL logged `nNodes` > 1 or
    /// more than one host appears, `Some(false)` when NCCL logged `nNodes 1`, or when every rank of
    /// the nccl-tests header is on one host (NCCL counts GPUs that can use neither P2P nor SHM as
    /// separate "nodes", so `NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1` on one host logs `nNodes 2`),
    /// `None` when unknown.
    pub fn inter_node(&self) -> Option<bool> {
        let one_host_all_ranks = self.hosts.len() == 1
            && !self.ranks.is_empty()
            && self.ranks.iter().all(|r| r.host == self.hosts[0]);
        match self.nnodes {
            _ if one_host_all_ranks => Some(false),
            Some(n) => Some(n > 1),
            None if self.hosts.len() > 1 => Some(true),
            None => None,
        }
    }

    /// Adds a host (deduplicated, O(1)); returns its index. Public for the JSON reader.
    pub fn note_host(&mut self, host: &str) {
        self.add_host(host);
    }

    /// Adds a rank line unless that rank was seen (O(1)).
    pub fn note_rank(&mut self, r: RankLine) {
        if self.rank_set.len() >= MAX_TRACKED {
            self.untracked += 1;
            return;
        }
        if self.rank_set.insert(r.rank) {
            self.ranks.push(r);
        }
    }

    /// Whether anything NCCL- or nccl-tests-specific was seen.
    pub fn is_empty(&self) -> bool {
        self.nccl_lines == 0
            && self.job_errors.is_empty()
            && self.ranks.is_empty()
            && self.nccl_version.is_none()
            && self.nccl_tests_version.is_none()
            && self.test_failures.is_empty()
            && self.instance_ids.is_empty()
    }

    fn add_host(&mut self, host: &str) -> Option<u32> {
        if let Some(i) = self.last_host {
            if self.hosts[i as usize] == host {
                return Some(i);
            }
        }
        let i = match self.host_index.get(host) {
            Some(&i) => i,
            None => {
                if self.hosts.len() >= MAX_TRACKED {
                    self.untracked += 1;
                    return None;
                }
                let i = self.hosts.len() as u32;
                self.hosts.push(host.to_string());
                self.host_index.insert(host.to_string(), i);
                i
            }
        };
        self.last_host = Some(i);
        Some(i)
    }

    /// Whether [`LogFacts::append`] gives exactly what reading `later`'s lines after this would:
    /// no bound of [`MAX_TRACKED`] can be reached, and nothing in `later` depended on the host of
    /// the lines before it (a provider line without a host prefix takes the previous line's host;
    /// a first prefix equal to this one's last is not read again) or on this one's last line
    /// (PyTorch's `Last error:`).
    pub(crate) fn can_append(&self, later: &LogFacts) -> bool {
        let near = |a: usize, b: usize| a + b >= MAX_TRACKED;
        // After PyTorch's `Last error:` the next line is read as a WARN: `later` read it fresh.
        if self.after_last_error
            || later.untracked > 0
            || near(self.hosts.len(), later.hosts.len())
            || near(self.pids.len(), later.pids.len())
            || near(self.rank_set.len(), later.rank_set.len())
            || near(self.instance_hosts.len(), later.instance_hosts.len())
            || near(self.env_names.len(), later.env_names.len())
            || near(self.provider_set.len(), later.provider_set.len())
        {
            return false;
        }
        if self.last_host.is_some() && later.providers.iter().any(|p| p.host.is_none()) {
            return false;
        }
        if let Some((p, Some(h))) = &later.first_prefix {
            if *p == self.last_prefix
                && self.last_host.map(|g| self.hosts[g as usize].as_str())
                    != Some(later.hosts[*h as usize].as_str())
            {
                return false;
            }
        }
        true
    }

    /// Adds the facts of the lines that follow (read separately, from a fresh [`LogFacts`]), as if
    /// they had been read after this one's: counts add up, first-seen lists keep file order and
    /// their caps, the last value of a setting wins. Call only when [`LogFacts::can_append`] holds.
    pub(crate) fn append(&mut self, later: LogFacts) {
        self.after_last_error = later.after_last_error;
        let map: Vec<u32> = later
            .hosts
            .iter()
            .map(|h| match self.host_index.get(h) {
                Some(&i) => i,
                None => {
                    let i = self.hosts.len() as u32;
                    self.hosts.push(h.clone());
                    self.host_index.insert(h.clone(), i);
                    i
                }
            })
            .collect();
        if later.nccl_tests_version.is_some() {
            self.nccl_tests_version = later.nccl_tests_version;
        }
        if self.nccl_version.is_none() {
            self.nccl_version = later.nccl_version;
        }
        if later.ofi_version.is_some() {
            self.ofi_version = later.ofi_version;
        }
        if later.cuda_driver_version.is_some() {
            self.cuda_driver_version = later.cuda_driver_version;
        }
        if later.topo_file.is_some() {
            self.topo_file = later.topo_file;
        }
        for (mine, theirs) in [
            (&mut self.networks, later.networks),
            (&mut self.net_plugin_failures, later.net_plugin_failures),
            (&mut self.net_transports, later.net_transports),
            (&mut self.warns, later.warns),
            (&mut self.test_failures, later.test_failures),
            (&mut self.torch_check_failures, later.torch_check_failures),
            (&mut self.net_plugin_errors, later.net_plugin_errors),
            (&mut self.job_errors, later.job_errors),
        ] {
            for x in &theirs {
                push_distinct(mine, x);
            }
        }
        for p in later.providers {
            if !self.provider_set.contains(&p) {
                self.provider_set.insert(p.clone());
                self.providers.push(p);
            }
        }
        for r in later.ranks {
            self.note_rank(r);
        }
        for (h, id) in later.instance_ids {
            if self.instance_hosts.insert(h.clone()) {
                self.instance_ids.push((h, id));
            }
        }
        for e in later.env {
            if self.env_names.insert(e.name.clone()) {
                self.env.push(e);
            }
        }
        for i in later.socket_interfaces {
            if self.socket_interfaces.len() < 2 * KEEP_LINES
                && !self
                    .socket_interfaces
                    .iter()
                    .any(|x| x.name == i.name && x.addr == i.addr && x.role == i.role)
            {
                self.socket_interfaces.push(i);
            }
        }
        self.ib_no_device |= later.ib_no_device;
        self.net_plugin_absent |= later.net_plugin_absent;
        self.mnnvl |= later.mnnvl;
        self.no_socket_interface |= later.no_socket_interface;
        self.socket_nics = self.socket_nics.max(later.socket_nics);
        self.ib_nics = self.ib_nics.max(later.ib_nics);
        self.nranks = self.nranks.max(later.nranks);
        self.nnodes = self.nnodes.max(later.nnodes);
        self.net_connections += later.net_connections;
        self.gdrdma_connections += later.gdrdma_connections;
        self.p2p_connections += later.p2p_connections;
        self.shm_connections += later.shm_connections;
        self.warn_count += later.warn_count;
        self.nccl_lines += later.nccl_lines;
        self.untracked += later.untracked;
        self.pids
            .extend(later.pids.iter().map(|&(h, pid)| (map[h as usize], pid)));
        if let Some(h) = later.last_host {
            self.last_host = Some(map[h as usize]);
        }
        if !later.last_prefix.is_empty() {
            self.last_prefix = later.last_prefix;
            self.cache.plain_prefix = false;
            self.cache.plain_pair = None;
        }
        if let Some((h, pid)) = later.last_pid {
            self.last_pid = Some((map[h as usize], pid));
        }
        if self.first_prefix.is_none() {
            self.first_prefix = later
                .first_prefix
                .map(|(p, h)| (p, h.map(|h| map[h as usize])));
        }
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
                self.note_rank(r);
            }
        }
    }

    /// [`LogFacts::scan_line`] for the shape nearly every line of a big log has, a line that
    /// starts with its `host:pid:tid [d] NCCL INFO ` or `… NCCL WARN ` prefix: reads it exactly as
    /// `scan_line` would (and as [`crate::parse::strip_launcher_prefix`] leaves it) and returns
    /// `true`; returns `false` having read nothing for any other line, which then goes the general
    /// way. No line is skipped: this only finds the prefix and the level without searching for them.
    pub(crate) fn scan_plain_nccl_line(&mut self, line: &str) -> bool {
        let b = line.as_bytes();
        // scan_line's `Last error:` test trims the end first: only a line ending in a visible
        // ASCII byte needs no trim.
        if self.after_last_error
            || !b.first().is_some_and(u8::is_ascii_alphabetic)
            || !b.last().is_some_and(u8::is_ascii_graphic)
            || b.ends_with(b"Last error:")
        {
            return false;
        }
        // The same prefix as the plain line before: nothing to check or read again in it.
        let lp = self.last_prefix.as_bytes();
        if self.cache.plain_prefix && b.len() > lp.len() + 11 && same_bytes(&b[..lp.len()], lp) {
            let is_warn = match &b[lp.len()..lp.len() + 11] {
                b" NCCL INFO " => Some(false),
                b" NCCL WARN " => Some(true),
                _ => None,
            };
            if let Some(is_warn) = is_warn {
                let msg = &line[lp.len() + 11..];
                self.nccl_lines += 1;
                if is_warn {
                    self.warn(msg.trim_end());
                } else {
                    self.info(msg);
                }
                return true;
            }
        }
        // The first word, `host:pid:tid`, up to a space: a launcher label (`host: `, ending in
        // `:`) would be stripped, and a line starting `NCCL ` has its marker at the start.
        let sp = match first_at_most_space(b) {
            // Every ASCII whitespace byte is <= b' ': none comes before this space.
            Some(i) if b[i] == b' ' => i,
            _ => match b.iter().position(u8::is_ascii_whitespace) {
                Some(i) => i,
                None => return false,
            },
        };
        if b[sp] != b' ' || b[sp - 1] == b':' || &b[..sp] == b"NCCL" {
            return false;
        }
        // ` [digits] NCCL `: no `N` before this marker follows a space, so it is the first one
        // find_nccl_marker would take.
        let rest = &b[sp + 1..];
        let digits = match rest.split_first() {
            Some((b'[', r)) => r.iter().take_while(|c| c.is_ascii_digit()).count(),
            _ => return false,
        };
        let at = sp + 2 + digits + 2;
        if digits == 0 || !rest[1 + digits..].starts_with(b"] NCCL ") {
            return false;
        }
        let is_warn = match &b[at + 5..] {
            [b'I', b'N', b'F', b'O', b' ', ..] => false,
            [b'W', b'A', b'R', b'N', b' ', ..] => true,
            _ => return false,
        };
        let msg = &line[at + 10..];
        self.nccl_lines += 1;
        if !self.same_process_as_last(&line[..at - 1], sp) {
            self.trimmed_prefix(&line[..at - 1], Some(&line[..sp]));
        }
        if is_warn {
            self.warn(msg.trim_end());
        } else {
            self.info(msg);
        }
        true
    }

    /// For a plain prefix `host:pid:tid [d]` whose word ends at `sp`: when it names the process
    /// the last plain prefix named (same `host:pid`, a tid of digits) and that process is in
    /// `pids`, does what [`LogFacts::trimmed_prefix`] would do (keep the prefix, point
    /// `last_host` and `last_pid` at that process) without resolving the word again, and returns
    /// `true`; returns `false` having done nothing otherwise.
    fn same_process_as_last(&mut self, prefix: &str, sp: usize) -> bool {
        #[cfg(test)]
        if self.cache.off {
            return false;
        }
        let Some((k, (h, pid))) = self.cache.plain_pair.filter(|_| self.cache.plain_prefix) else {
            return false;
        };
        let (b, lp) = (prefix.as_bytes(), self.last_prefix.as_bytes());
        if sp <= k + 1
            || lp.len() <= k
            || !same_bytes(&b[..=k], &lp[..=k])
            || !b[k + 1..sp].iter().all(u8::is_ascii_digit)
        {
            return false;
        }
        if !same_bytes(b, lp) {
            self.last_prefix.clear();
            self.last_prefix.push_str(prefix);
            self.last_host = Some(h);
            self.last_pid = Some((h, pid));
        }
        true
    }

    /// Reads one non-comment line; returns `true` when it was an NCCL or nccl-tests line.
    pub fn scan_line(&mut self, line: &str) -> bool {
        // PyTorch's `ncclInvalidUsage: …` / `Last error:` / NCCL's last WARN message, without
        // NCCL's prefix: the message is read as that WARN when a rule names its cause.
        if std::mem::take(&mut self.after_last_error) {
            let msg = line.trim();
            if !msg.contains(" NCCL ") && crate::warn_causes::explain(msg).is_some() {
                self.nccl_lines += 1;
                self.warn(msg);
                return true;
            }
        }
        if line.trim_end().ends_with("Last error:") {
            self.after_last_error = true;
            return true;
        }
        // Fast path: almost every line of a big log is `<prefix> NCCL INFO …`, where the prefix is
        // `host:pid:tid [d]`, anything a launcher or log collector added, or nothing.
        if let Some(at) = find_nccl_marker(line) {
            let level_and_msg = &line[at + 5..];
            let level = if let Some(m) = level_and_msg.strip_prefix("INFO ") {
                Some((false, m))
            } else {
                level_and_msg.strip_prefix("WARN ").map(|m| (true, m))
            };
            if let Some((is_warn, msg)) = level {
                self.nccl_lines += 1;
                self.prefix(&line[..at]);
                if is_warn {
                    self.warn(msg.trim_end());
                } else {
                    self.info(msg);
                }
                return true;
            }
            if level_and_msg.starts_with("version ") {
                self.nccl_version_line(&line[at..]);
                return true;
            }
        }
        static OFI: OnceLock<Finder<'static>> = OnceLock::new();
        if let Some(i) = find(&OFI, "NET/OFI ", line) {
            // nccl_message_transfer prints `INFO: Function: … NET/OFI Selected Provider is efa …`.
            self.nccl_lines += 1;
            self.info(&line[i..]);
            return true;
        }
        if let Some((prefix, msg)) = headless_info(line) {
            // A line pasted without NCCL's `NCCL INFO` token (`NET/Socket : Using …`).
            self.nccl_lines += 1;
            self.prefix(prefix);
            self.info(msg);
            return true;
        }
        if line.contains("Test NCCL failure")
            || line.contains("Test failure")
            || line.contains("Test CUDA failure")
        {
            push_distinct(&mut self.test_failures, line.trim());
            return true;
        }
        if let Some(e) = job_error(line) {
            push_distinct(&mut self.job_errors, e);
            return true;
        }
        if let Some((host, id)) = parse_instance_line(line) {
            if self.instance_hosts.len() < MAX_TRACKED
                && self.instance_hosts.insert(host.to_string())
            {
                self.instance_ids.push((host.to_string(), id.to_string()));
            }
            return true;
        }
        false
    }

    fn warn(&mut self, msg: &str) {
        self.warn_count += 1;
        push_distinct(&mut self.warns, msg);
        if is_no_socket_interface_warn(msg) {
            self.no_socket_interface = true;
        }
        // A plugin WARN with a cause of its own (memory registration, a failed transfer) is that
        // cause's finding, not "the plugin failed".
        if is_net_plugin_warn(msg) && crate::warn_causes::explain(msg).is_none() {
            push_distinct(&mut self.net_plugin_errors, msg);
        }
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

    /// Whatever came before ` NCCL `: `host:pid:tid [d]`, `[date time] host:pid:tid [d] file.cc:N`,
    /// or that with anything in front (timestamps, `host: `, `INFO:root:`), or nothing. The
    /// `host:pid:tid` word is looked for from the right; a prefix equal to the previous line's is
    /// not read again.
    fn prefix(&mut self, prefix: &str) {
        self.trimmed_prefix(prefix.trim_end(), None);
    }

    /// [`LogFacts::prefix`] of a prefix without trailing whitespace; `word`: its `host:pid:tid`
    /// word when the caller knows the prefix is that word, one space and `[digits]` (the words
    /// [`last_words`] would try, as `[digits]` has no `:`).
    fn trimmed_prefix(&mut self, prefix: &str, word: Option<&str>) {
        if prefix.is_empty() || same_bytes(prefix.as_bytes(), self.last_prefix.as_bytes()) {
            return;
        }
        self.last_prefix.clear();
        self.last_prefix.push_str(prefix);
        let plain = word.is_some();
        self.cache.plain_prefix = plain;
        self.cache.plain_pair = None;
        let first = self.first_prefix.is_none();
        if first {
            self.first_prefix = Some((prefix.to_string(), None));
        }
        // A word the memo knows resolves as it did then: host_pid would give the same host and
        // pid, add_host the same index, and the pair is already in `pids`.
        let mut found = None;
        let n = if word.is_some() { 0 } else { 6 };
        for w in last_words(prefix, n).chain(word) {
            if let Some(((h, pid), c2)) = self.cache.get(w).filter(|_| !first) {
                self.last_host = Some(h);
                self.last_pid = Some((h, pid));
                if plain {
                    self.cache.plain_pair = Some((c2, (h, pid)));
                }
                return;
            }
            if let Some(hp) = host_pid(w) {
                found = Some((w, hp));
                break;
            }
        }
        let Some((word, (host, pid))) = found else {
            return;
        };
        let Some(h) = self.add_host(host) else {
            return;
        };
        if first {
            if let Some((_, fh)) = &mut self.first_prefix {
                *fh = Some(h);
            }
        }
        // Most lines come from the process of the line before (another thread, another tid).
        if self.last_pid == Some((h, pid)) {
            return;
        }
        self.last_pid = Some((h, pid));
        if self.pids.len() >= MAX_TRACKED {
            if !self.pids.contains(&(h, pid)) {
                self.untracked += 1;
            }
            return;
        }
        self.pids.insert((h, pid));
        let key = &word[..word.rfind(':').unwrap_or(0)];
        self.cache.put(key, (h, pid));
        if plain {
            self.cache.plain_pair = Some((key.len(), (h, pid)));
        }
    }

    fn info(&mut self, msg: &str) {
        let b = msg.as_bytes();
        match b.first() {
            Some(b'C') => {
                if let Some(i) = find_via(b) {
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
                        if let Some(i) = find_str!(u, "OOB ") {
                            self.interfaces(&u[i + "OOB ".len()..], "oob");
                        }
                    }
                } else if let Some(rest) = msg.strip_prefix("NET/Socket : Using ") {
                    let n = count_devices(rest);
                    self.socket_nics = self.socket_nics.max(Some(n)).filter(|n| *n > 0);
                    self.interfaces(rest, "socket");
                } else if msg.starts_with("NET/Plugin") {
                    self.plugin_line(msg);
                } else if msg.starts_with("NCCL version ") {
                    self.nccl_version_line(msg);
                } else if msg.starts_with("NCCL_") {
                    const SET: &str = " set by environment to ";
                    if let Some((name, value)) = find_str!(msg, " set by environment to ")
                        .map(|i| (&msg[..i], &msg[i + SET.len()..]))
                    {
                        let value = value.trim_end().trim_end_matches('.');
                        if self.env_names.len() < MAX_TRACKED && !self.env_names.contains(name) {
                            self.env_names.insert(name.to_string());
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
            Some(b'B') => {
                // `Bootstrap : Using eth0:10.0.0.5<0>` (older), `Bootstrap: Using [0]eth0:…` (newer).
                if let Some(rest) = msg
                    .strip_prefix("Bootstrap : Using ")
                    .or_else(|| msg.strip_prefix("Bootstrap: Using "))
                {
                    self.interfaces(rest, "bootstrap");
                }
            }
            Some(b'F') => {
                if let Some(p) = msg.strip_prefix("Failed to initialize NET plugin ") {
                    push_distinct(&mut self.net_plugin_failures, p.trim_end());
                }
            }
            Some(b'c') => {
                if let Some(v) = msg.strip_prefix("cudaDriverVersion ") {
                    // The last readable value wins (an unreadable one does not erase it).
                    if let Ok(v) = v.trim().parse() {
                        self.cuda_driver_version = Some(v);
                    }
                } else if msg.starts_with("comm 0x") {
                    if let Some(n) = word_after!(msg, " nNodes ") {
                        self.nnodes = self.nnodes.max(Some(n));
                    }
                    if word_after!(msg, " MNNVL ").is_some_and(|m| m > 0) {
                        self.mnnvl = true;
                    }
                    if let Some(n) = word_after!(msg, " nRanks ") {
                        self.nranks = self.nranks.max(Some(n));
                    }
                }
            }
            Some(b'n') => {
                if let Some(n) = msg
                    .starts_with("ncclCommInitRank")
                    .then(|| word_after!(msg, " nranks "))
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
            if find_str!(net, "/GDRDMA").is_some() {
                self.gdrdma_connections += 1;
            }
            if !name.is_empty() {
                push_distinct(&mut self.net_transports, name);
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
            if let Some(v) = v.split_ascii_whitespace().next() {
                self.ofi_version = Some(v.to_string());
            }
            return;
        }
        if let Some(f) = find_str!(rest, "NCCL_TOPO_FILE environment variable to ") {
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
            .and_then(|f| word_after!(&after[f..], "(found "));
        let host = self.last_host.map(|h| self.hosts[h as usize].clone());
        let line = ProviderLine {
            host,
            provider,
            fabric,
            nics,
        };
        if self.provider_set.len() < MAX_TRACKED && !self.provider_set.contains(&line) {
            self.provider_set.insert(line.clone());
            self.providers.push(line);
        }
    }

    /// A `NET/Plugin …` line: tells "no external plugin on this host" (normal without EFA or a
    /// vendor plugin) from a plugin that is there but failed to load (a `dlerror` about a
    /// dependency, a missing symbol version such as `FABRIC_1.7`, an undefined symbol).
    fn plugin_line(&mut self, msg: &str) {
        match plugin_load_error(msg) {
            Some(PluginLoad::Failed(err)) => push_distinct(&mut self.net_plugin_errors, err),
            Some(PluginLoad::Absent) => self.net_plugin_absent = true,
            None => {}
        }
    }

    /// The interfaces of a `NET/Socket : Using …`, `Bootstrap : Using …` or `OOB …` list.
    fn interfaces(&mut self, list: &str, role: &'static str) {
        // Every rank logs the same lists: one read before adds nothing now.
        let seen = &mut self.cache.interface_lists;
        #[cfg(test)]
        if self.cache.off {
            seen.clear();
        }
        if seen
            .iter()
            .any(|(r, l)| *r == role && same_bytes(l.as_bytes(), list.as_bytes()))
        {
            return;
        }
        if seen.len() >= 8 {
            seen.remove(0);
        }
        seen.push((role, list.to_string()));
        for tok in list.split_ascii_whitespace() {
            if tok == ";"
                || tok.starts_with('[') && !tok[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                continue;
            }
            let t = match tok.strip_prefix('[') {
                Some(r) => r.split_once(']').map(|(_, r)| r).unwrap_or(r),
                None => tok,
            };
            let Some((name, addr)) = t.split_once(':') else {
                continue;
            };
            let addr = addr.split('<').next().unwrap_or(addr);
            if name.is_empty() || addr.is_empty() || self.socket_interfaces.len() >= 2 * KEEP_LINES
            {
                continue;
            }
            if !self
                .socket_interfaces
                .iter()
                .any(|i| i.name == name && i.addr == addr && i.role == role)
            {
                self.socket_interfaces.push(SocketInterface {
                    name: name.to_string(),
                    addr: addr.to_string(),
                    role,
                });
            }
        }
    }
}

/// What a `NET/Plugin …` line says about loading an external network plugin.
#[derive(Debug, PartialEq, Eq)]
pub enum PluginLoad<'a> {
    /// No external plugin on this host (`libnccl-net.so` itself not found): NCCL uses its own.
    Absent,
    /// The plugin is there but could not be loaded; the loader's own error.
    Failed(&'a str),
}

/// Classifies a `NET/Plugin` message; `None` for lines that say neither (`Loaded net plugin …`,
/// `Failed to find ncclNetPlugin_v6 symbol`, which only means an older plugin API version).
pub fn plugin_load_error(msg: &str) -> Option<PluginLoad<'_>> {
    // The loader's error: after `dlerror=`, or after `returned N : ` (NCCL 2.12+).
    let err = if let Some(i) = find_str!(msg, "dlerror=") {
        Some(&msg[i + "dlerror=".len()..])
    } else if let Some(i) = find_str!(msg, " returned ") {
        msg[i..].split_once(" : ").map(|(_, e)| e)
    } else {
        None
    };
    if let Some(err) = err {
        let err = err
            .split(" No plugin found")
            .next()
            .unwrap_or(err)
            .split(" : when loading")
            .next()
            .unwrap_or(err)
            .trim();
        // `libnccl-net.so: cannot open shared object file` names the plugin itself: not installed.
        let file = err.split(": ").next().unwrap_or("");
        let base = file.rsplit('/').next().unwrap_or(file);
        let absent =
            base.starts_with("libnccl-net") && err.contains("cannot open shared object file");
        if !err.is_empty() && !absent {
            return Some(PluginLoad::Failed(err));
        }
        return Some(PluginLoad::Absent);
    }
    if find_str!(msg, "No plugin found").is_some()
        || find_str!(msg, "Could not find: libnccl-net").is_some()
    {
        return Some(PluginLoad::Absent);
    }
    None
}

/// The `host:pid:tid` word of an NCCL prefix (`vm:1418:1437`, `INFO:root:vm:1:2`); `None` for
/// anything else, including clock times (`00:12:00]`, `12:00:01`).
fn host_pid(tok: &str) -> Option<(&str, u32)> {
    // Byte by byte: this runs on every NCCL line whose prefix differs from the line before.
    let b = tok.as_bytes();
    let digits_before = |end: usize| {
        b[..end]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let c2 = b.iter().rposition(|&c| c == b':')?;
    let tid = &b[c2 + 1..];
    if tid.is_empty() || !tid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let c1 = b[..c2].iter().rposition(|&c| c == b':')?;
    let pid = &b[c1 + 1..c2];
    if pid.is_empty() || pid.len() > 10 || digits_before(c2) != pid.len() {
        return None;
    }
    let pid: u32 = tok[c1 + 1..c2].parse().ok()?;
    let start = b[..c1]
        .iter()
        .rposition(|&c| c == b':')
        .map_or(0, |c0| c0 + 1);
    let host = tok[start..c1].trim_start_matches(['[', '(', '<']);
    if host.is_empty()
        || host.bytes().all(|b| b.is_ascii_digit())
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return None;
    }
    Some((host, pid))
}

/// The last `n` pieces of `s` split at ASCII whitespace, from the right (empty pieces between
/// two spaces count, as with `str::rsplit`); byte by byte, as this runs on most NCCL lines.
fn last_words(s: &str, n: usize) -> impl Iterator<Item = &str> {
    let b = s.as_bytes();
    let mut end = Some(b.len());
    std::iter::from_fn(move || {
        let e = end?;
        match b[..e].iter().rposition(|c| c.is_ascii_whitespace()) {
            Some(i) => {
                end = Some(i);
                Some(&s[i + 1..e])
            }
            None => {
                end = None;
                Some(&s[..e])
            }
        }
    })
    .take(n)
}

/// Index of the first byte <= `b' '` (a space or a control byte), eight bytes at a time (the
/// "has a byte less than n" test: the lowest flagged byte is exact).
#[inline]
fn first_at_most_space(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0xff; 8]));
        let z = w.wrapping_sub(LO * 0x21) & !w & HI;
        if z != 0 {
            return Some(at + (z.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c <= b' ')
        .map(|p| at + p)
}

/// `a == b`, eight bytes at a time and without a library call (prefixes and keys are a few dozen
/// bytes: a call to `memcmp` for each cost more than the comparison).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    for (p, q) in (&mut x).zip(&mut y) {
        if u64::from_ne_bytes(p.try_into().unwrap_or([0; 8]))
            != u64::from_ne_bytes(q.try_into().unwrap_or([0; 8]))
        {
            return false;
        }
    }
    x.remainder().iter().zip(y.remainder()).all(|(p, q)| p == q)
}

/// Finds `needle` in `hay` with a searcher built once per process (building one per line, as
/// `str::find` does, cost a third of the scan).
pub(crate) fn find(
    cell: &'static OnceLock<Finder<'static>>,
    needle: &'static str,
    hay: &str,
) -> Option<usize> {
    cell.get_or_init(|| Finder::new(needle))
        .find(hay.as_bytes())
}

/// Finds `NCCL ` at the start of the line or after a space (the marker between an NCCL line's
/// prefix, possibly empty, and its level); returns the index of the `N`.
fn find_nccl_marker(line: &str) -> Option<usize> {
    // A single-byte SIMD search for `N` beats a substring search on lines this short; the prefix
    // before `NCCL` rarely holds another `N`.
    let b = line.as_bytes();
    memchr::memchr_iter(b'N', b)
        .find(|&i| (i == 0 || b[i - 1] == b' ') && b[i..].starts_with(b"NCCL "))
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

/// The first `$needle` in `$hay` (a `&str`), with the needle's searcher built once per process:
/// `str::find` builds one per call, which on a line this short costs more than the search.
macro_rules! find_str {
    ($hay:expr, $needle:literal) => {{
        static F: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
        $crate::log::find(&F, $needle, $hay)
    }};
}
pub(crate) use find_str;

/// The number right after the first `$key` in `$s` (`word_after!(msg, " nNodes ")`), with the
/// key's searcher built once per process (memmem builds one per call otherwise).
macro_rules! word_after {
    ($s:expr, $key:literal) => {{
        static KEY: OnceLock<Finder<'static>> = OnceLock::new();
        let s: &str = $s;
        find(&KEY, $key, s).and_then(|i| number_at(&s[i + $key.len()..]))
    }};
}
use word_after;

/// The run of digits `s` starts with, as a number.
fn number_at(s: &str) -> Option<u32> {
    s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Index of the first ` via ` in `b`: a one-byte SIMD search for its `v` (in a `Channel …` line
/// the first `v` is usually that of `via`) beats a substring search on a line this short.
fn find_via(b: &[u8]) -> Option<usize> {
    let mut from = 1;
    while let Some(i) = memchr::memchr(b'v', b.get(from..)?) {
        let i = from + i;
        if b[i - 1] == b' ' && b[i..].starts_with(b"via ") {
            return Some(i - 1);
        }
        from = i + 1;
    }
    None
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

/// `p5en-dy-gpu-1: i-022b2b0f40726512e`, as pairwise job scripts print at the top of each file.
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

/// An NCCL INFO message without its `NCCL INFO` token, as users paste them: `NET/Socket : Using
/// [0]eth0:…`, `Initialized NET plugin Socket`, `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`…, at the
/// start of the line or after a `host:pid:tid [d] ` prefix. Returns (prefix, message); `None` for
/// anything else, so prose that merely mentions NCCL is not read as its log.
fn headless_info(line: &str) -> Option<(&str, &str)> {
    const HEADS: &[&str] = &[
        "NET/Socket : ",
        "NET/IB : ",
        "NET/Plugin",
        "Initialized NET plugin ",
        "Failed to initialize NET plugin ",
        "Using network ",
        "Bootstrap : Using ",
        "Bootstrap: Using ",
        "cudaDriverVersion ",
    ];
    let t = line.trim_start();
    // `host:pid:tid [d] ` before the message: a `[digits` right before the first `] `.
    let after_prefix = t.split_once("] ").and_then(|(p, m)| {
        let (_, dev) = p.rsplit_once('[')?;
        (p.contains(':') && !dev.is_empty() && dev.bytes().all(|b| b.is_ascii_digit())).then_some(m)
    });
    for msg in std::iter::once(t).chain(after_prefix) {
        let msg = msg.trim_end();
        let known = HEADS.iter().any(|h| msg.starts_with(h))
            || (msg.starts_with("Channel ") && msg.contains(" -> ") && msg.contains(" via "))
            || (msg.starts_with("comm 0x") && msg.contains(" nRanks "))
            || (msg.starts_with("ncclCommInitRank comm 0x") && msg.contains(" nranks "))
            || (msg.starts_with("NCCL_") && msg.contains(" set by environment to "));
        if known {
            let at = msg.as_ptr() as usize - line.as_ptr() as usize;
            return Some((&line[..at], msg));
        }
    }
    None
}

/// The WARN NCCL prints when no network plugin (not even its own IB or Socket) initialised.
pub const NET_INIT_FAILED_WARN: &str = "Failed to initialize any NET plugin";

/// Whether a WARN message says NCCL found no interface for its sockets (bootstrap.cc's
/// `Bootstrap : no socket interface found`, the Socket transport's `NET/Socket : no interface found`).
pub fn is_no_socket_interface_warn(msg: &str) -> bool {
    find_str!(msg, "no socket interface found").is_some()
        || find_str!(msg, "NET/Socket : no interface found").is_some()
}

/// Whether a WARN message is a network plugin's own (aws-ofi-nccl only warns about its own failures:
/// init, provider, endpoint, domain; NCCL's plugin loader says `NET/Plugin`).
pub fn is_net_plugin_warn(msg: &str) -> bool {
    msg.starts_with("NET/OFI ") || msg.starts_with("NET/Plugin")
}

/// The application's line saying an NCCL call failed, trimmed, or `None`. `line` is as the scanner
/// hands it, launcher prefixes such as PyTorch's `[rankN]: ` already stripped
/// ([`crate::parse::strip_launcher_prefix`]).
/// Matched: PyTorch's `DistBackendError` / `NCCL error in:` lines and the NCCL result names
/// (`ncclSystemError`, `ncclInvalidUsage`, `ncclInternalError`, `ncclRemoteError`,
/// `ncclUnhandledCudaError`, `ncclInvalidArgument`).
pub fn job_error(line: &str) -> Option<&str> {
    // The shapes the errors really have: PyTorch's exception (`DistBackendError: NCCL error in: …`,
    // older `RuntimeError: NCCL error in: …`) and NCCL's result names; not prose that mentions NCCL.
    let hit = line.contains("DistBackendError")
        || line.contains("NCCL error in:")
        || [
            "ncclSystemError",
            "ncclInvalidUsage",
            "ncclInternalError",
            "ncclRemoteError",
            "ncclUnhandledCudaError",
            "ncclInvalidArgument",
        ]
        .iter()
        .any(|k| line.contains(k));
    if !hit || line.contains(" NCCL INFO ") || line.contains(" NCCL WARN ") {
        return None;
    }
    Some(line.trim())
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
    fn info_messages_without_their_token_are_read() {
        let mut f = LogFacts::default();
        assert!(f.scan_line("NET/Socket : Using [0]eth0:10.0.0.5<0> [1]eth1:10.1.0.5<0>"));
        assert!(f.scan_line("Initialized NET plugin Socket"));
        assert!(f.scan_line("gpu-1:101:101 [0] Using network Socket"));
        assert_eq!(f.socket_nics, Some(2));
        assert_eq!(f.networks, vec!["Socket"]);
        assert_eq!(f.hosts, vec!["gpu-1"]);
        assert_eq!(f.nccl_lines, 3);
        for prose in [
            "We use NCCL with Socket here",
            "Using networks is fun",
            "see NET/Socket docs",
        ] {
            assert!(!f.scan_line(prose), "{prose}");
        }
    }

    #[test]
    fn the_line_after_last_error_is_read_as_the_warn_when_a_rule_names_it() {
        let mut f = LogFacts::default();
        f.scan_line("Last error:");
        f.scan_line("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000");
        f.scan_line("Last error:");
        f.scan_line("something NCCL did not say");
        assert_eq!(
            f.warns,
            vec!["Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000"]
        );
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
    fn first_at_most_space_is_the_first_byte_at_most_space() {
        let bytes: Vec<u8> = (0..=255u8).collect();
        for len in 0..40 {
            for fill in [b'a', 0x80, 0xff, b'!'] {
                for (pos, &c) in bytes.iter().enumerate().step_by(3) {
                    let mut v = vec![fill; len];
                    if len > 0 {
                        v[pos % len] = c;
                    }
                    let want = v.iter().position(|&x| x <= b' ');
                    assert_eq!(first_at_most_space(&v), want, "{v:?}");
                }
            }
        }
    }

    #[test]
    fn last_words_split_as_rsplit_does() {
        for s in [
            "",
            " ",
            "a",
            "a b",
            "a  b\tc ",
            "[2026-11-30 00:12:00] vm:1:2 [1] net.cc:379",
        ] {
            let want: Vec<&str> = s
                .rsplit(|c: char| c.is_ascii_whitespace())
                .take(6)
                .collect();
            assert_eq!(last_words(s, 6).collect::<Vec<_>>(), want, "{s:?}");
        }
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
