//! gres.conf (gres.conf(5)): the device files Slurm hands out on a node.

use crate::hostlist;

/// What gres.conf says about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeGres {
    /// `Name=gpu` device files, in file order.
    pub gpu_files: Vec<String>,
    /// Every `File=` of any GRES (gpu, nic, mps…): devices Slurm gives only to steps that ask.
    pub all_files: Vec<String>,
    /// A `MultipleFiles=` line (MIG, shared devices): GPU file counting cannot be trusted.
    pub multiple_files: bool,
}

/// Reads gres.conf for `node`. Lines are `key=value` words; `NodeName=` (a hostlist) limits a line to
/// some nodes. Lines that do not apply, or whose `File=` cannot be expanded, are skipped.
pub fn for_node(gres_conf: &str, node: &str) -> NodeGres {
    let mut out = NodeGres::default();
    for line in gres_conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut name = None;
        let mut files = None;
        let mut node_ok = true;
        let mut multiple = false;
        for word in line.split_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            match k.to_ascii_lowercase().as_str() {
                "name" => name = Some(v),
                "file" => files = Some(v),
                "multiplefiles" => multiple = true,
                "nodename" => node_ok = hostlist::contains(v, node),
                _ => {}
            }
        }
        if !node_ok {
            continue;
        }
        out.multiple_files |= multiple;
        if let Some(list) = files.and_then(hostlist::expand) {
            if name == Some("gpu") {
                out.gpu_files.extend(list.iter().cloned());
            }
            out.all_files.extend(list);
        }
    }
    out
}

/// gres.conf's `AutoDetect=` for `node`, lower-case (`nvml`, `rsmi`, `nrt`, `oneapi`, `off`): a line
/// with `NodeName=` naming the node wins over a global one; the last such line counts. `None` when
/// gres.conf sets none (gres.conf(5), "AutoDetect").
pub fn autodetect(gres_conf: &str, node: &str) -> Option<String> {
    let mut global = None;
    let mut own = None;
    for line in gres_conf.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut value = None;
        let mut nodes = None;
        for word in line.split_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            match k.to_ascii_lowercase().as_str() {
                "autodetect" => value = Some(v.to_ascii_lowercase()),
                "nodename" => nodes = Some(v),
                _ => {}
            }
        }
        match (value, nodes) {
            (Some(v), None) => global = Some(v),
            (Some(v), Some(n)) if hostlist::contains(n, node) => own = Some(v),
            _ => {}
        }
    }
    own.or(global)
}

/// The `Name=gpu` device files gres.conf lists for `node`.
pub fn gpu_files(gres_conf: &str, node: &str) -> Vec<String> {
    for_node(gres_conf, node).gpu_files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autodetect_follows_the_node_and_a_node_line_wins() {
        let conf =
            "AutoDetect=NVML\nNodeName=cpu-[1-4] AutoDetect=off\nName=gpu File=/dev/nvidia0\n";
        assert_eq!(autodetect(conf, "gpu-1").as_deref(), Some("nvml"));
        assert_eq!(autodetect(conf, "cpu-2").as_deref(), Some("off"));
        assert_eq!(
            autodetect("# AutoDetect=nvml\nName=gpu File=/dev/nvidia0\n", "gpu-1"),
            None
        );
    }

    #[test]
    fn gpu_and_gres_files_follow_the_node() {
        let conf = "# comment\nNodeName=gpu-[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-1]\n\
                    NodeName=gpu-[01-02] Name=gpu File=/dev/nvidia[2-3]\n\
                    NodeName=gpu-[01-02] Name=nic File=/dev/infiniband/uverbs[0-1]\n\
                    NodeName=vm Name=gpu File=/dev/fakegpu[0-1]\n\
                    Name=shard Count=8\nAutoDetect=nvml\n";
        let g = for_node(conf, "gpu-02");
        assert_eq!(
            g.gpu_files,
            vec![
                "/dev/nvidia0",
                "/dev/nvidia1",
                "/dev/nvidia2",
                "/dev/nvidia3"
            ]
        );
        assert_eq!(g.all_files.len(), 6);
        assert!(!g.multiple_files);
        assert_eq!(
            gpu_files(conf, "vm"),
            vec!["/dev/fakegpu0", "/dev/fakegpu1"]
        );
        assert!(gpu_files(conf, "other").is_empty());
        assert!(gpu_files("garbage [[[ =", "vm").is_empty());
        assert!(
            for_node(
                "Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/x\n",
                "vm"
            )
            .multiple_files
        );
    }
}
