//! Resource limits as `/proc/<pid>/limits` shows them (proc(5)); shared by the node's
//! `node.memlock.*` family and the task's `launch.memlock` check.

/// One `RLIMIT_MEMLOCK` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Limit {
    /// A finite limit in bytes.
    Bytes(u64),
    /// `unlimited` (`RLIM_INFINITY`).
    Unlimited,
}

impl Limit {
    /// `unlimited`, `8 MiB`, `64 KiB`, `1536 B`.
    pub fn human(self) -> String {
        match self {
            Limit::Unlimited => "unlimited".into(),
            Limit::Bytes(b) if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
            Limit::Bytes(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
            Limit::Bytes(b) if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
            Limit::Bytes(b) => format!("{b} B"),
        }
    }

    /// Whether the limit is finite (vendors ask for `unlimited` on RDMA nodes).
    pub fn finite(self) -> bool {
        matches!(self, Limit::Bytes(_))
    }
}

/// `(soft, hard)` locked-memory limits from a `/proc/<pid>/limits` text (proc(5): the row `Max locked
/// memory  <soft>  <hard>  bytes`, each value a number of bytes or `unlimited`); `None` when the row
/// is missing or malformed.
pub fn parse_limits(text: &str) -> Option<(Limit, Limit)> {
    let row = text.lines().find(|l| l.starts_with("Max locked memory"))?;
    let mut it = row["Max locked memory".len()..].split_whitespace();
    let one = |s: Option<&str>| match s? {
        "unlimited" => Some(Limit::Unlimited),
        n => n.parse().ok().map(Limit::Bytes),
    };
    Some((one(it.next())?, one(it.next())?))
}
