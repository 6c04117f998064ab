//! The parallel scan ([`launchguard_nccl::parallel`]) gives exactly the sequential scan's result:
//! every fixture file, and all of them joined into one log (tables and NCCL lines of many hosts in
//! the middle), cut into pieces small enough that piece starts fall in every line, table and
//! multi-line block. Equality is on the whole [`Parsed`], the private bookkeeping included.

use std::path::{Path, PathBuf};

use launchguard_nccl::file::{parse_path, parse_path_in_pieces};
use launchguard_nccl::verdict::{check, CheckOptions};

/// Piece sizes in bytes: 1 cuts after every line; the others fall mid-line.
const PIECES: [u64; 6] = [1, 7, 61, 509, 4093, 65_521];

fn fixtures() -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() > 20, "{out:?}");
    out
}

fn same_everywhere(path: &Path) {
    let whole = parse_path(path);
    for piece in PIECES {
        let parts = parse_path_in_pieces(path, piece);
        assert_eq!(
            parts,
            whole,
            "{} in pieces of {piece} bytes",
            path.display()
        );
    }
    if let Ok(p) = &whole {
        // And so the verdict (what a user sees) is the same.
        let r = check("f", p, &CheckOptions::default());
        let q = check(
            "f",
            &parse_path_in_pieces(path, 1).unwrap(),
            &CheckOptions::default(),
        );
        assert_eq!(r.verdict, q.verdict, "{}", path.display());
        assert_eq!(format!("{:?}", r.findings), format!("{:?}", q.findings));
    }
}

#[test]
fn every_fixture_reads_the_same_in_pieces() {
    for f in fixtures() {
        same_everywhere(&f);
    }
}

#[test]
fn all_fixtures_joined_read_the_same_in_pieces() {
    let dir = std::env::temp_dir().join(format!("lg-nccl-par-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let joined = dir.join("joined.log");
    let mut all = vec![];
    for f in fixtures() {
        if f.extension().is_some_and(|e| e == "log" || e == "txt") {
            all.extend(std::fs::read(&f).unwrap());
        }
    }
    // Twice, so every host, provider and table is met again in a later piece.
    let twice = [all.as_slice(), all.as_slice()].concat();
    std::fs::write(&joined, &twice).unwrap();
    same_everywhere(&joined);
    // Without the final newline.
    std::fs::write(&joined, &twice[..twice.len() - 1]).unwrap();
    same_everywhere(&joined);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lines_that_depend_on_the_lines_before_them_read_the_same_in_pieces() {
    // A provider line without a host prefix takes the host of the line before; a prefix equal to
    // the one before is not read again (a `# Rank` line moved the last host in between); a table,
    // its interleaved NCCL lines and a footer alone; a PyTorch table; settings given twice.
    let text = "\
node-a:1:2 [0] NCCL INFO cudaDriverVersion 12040
INFO: Function: nccl_net_ofi_init Line: 1069: NET/OFI Selected Provider is efa (found 4 nics)
node-b:3:4 [0] NCCL INFO Using network Socket
#  Rank  0 Group  0 Pid   1418 on     node-c device  0 [0000:00:06] NVIDIA H200
node-b:3:4 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 8 nics)
node-b:3:4 [0] NCCL INFO cudaDriverVersion garbage
# Collective test starting: all_reduce_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    19.54    0.05    0.05      0    17.94    0.06    0.06      0
node-a:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
        2048           512     float     sum      -1    17.52    0.12    0.12      0    18.11    0.11    0.11      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.0851
node-a:1:2 [0] NCCL INFO cudaDriverVersion 13000
# Out of bounds values : 3 FAILED
op bytes time_ms algbw_GBps busbw_GBps
all_reduce 1048576 0.05 20.1 35.2
node-d:5:6 [1] NCCL INFO NCCL_IB_HCA set by environment to mlx5
all_reduce 2097152 0.07 29.9 52.3
";
    let dir = std::env::temp_dir().join(format!("lg-nccl-dep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("dep.log");
    for copies in [1, 3] {
        std::fs::write(&f, text.repeat(copies)).unwrap();
        same_everywhere(&f);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
