//! gres.conf (gres.conf(5)): the GPU device files Slurm hands out on a node, in the order Slurm numbers
//! them (`SLURM_STEP_GPUS=0,1` are indexes into this list).

use crate::hostlist;

/// The GPU device files gres.conf lists for `node`, in index order. Lines are `key=value` words;
/// `NodeName=` (a hostlist) limits a line to some nodes; only `Name=gpu` lines with `File=` count.
/// Returns an empty list when gres.conf names no GPU files for this node (e.g. `AutoDetect=nvml`).
pub fn gpu_files(gres_conf: &str, node: &str) -> Vec<String> {
    let mut files = vec![];
    for line in gres_conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut name = None;
        let mut file = None;
        let mut node_ok = true;
        for word in line.split_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            match k.to_ascii_lowercase().as_str() {
                "name" => name = Some(v),
                "file" => file = Some(v),
                "nodename" => {
                    node_ok =
                        hostlist::expand(v).is_some_and(|names| names.iter().any(|n| n == node))
                }
                _ => {}
            }
        }
        if name == Some("gpu") && node_ok {
            if let Some(list) = file.and_then(hostlist::expand) {
                files.extend(list);
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_files_follow_node_and_order() {
        let conf = "# comment\nNodeName=gpu-[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-1]\n\
                    NodeName=gpu-[01-02] Name=gpu File=/dev/nvidia[2-3]\n\
                    NodeName=vm Name=gpu File=/dev/fakegpu[0-1]\n\
                    Name=shard Count=8\nAutoDetect=nvml\n";
        assert_eq!(
            gpu_files(conf, "gpu-02"),
            vec![
                "/dev/nvidia0",
                "/dev/nvidia1",
                "/dev/nvidia2",
                "/dev/nvidia3"
            ]
        );
        assert_eq!(
            gpu_files(conf, "vm"),
            vec!["/dev/fakegpu0", "/dev/fakegpu1"]
        );
        assert!(gpu_files(conf, "other").is_empty());
        assert!(gpu_files("garbage [[[ =", "vm").is_empty());
    }
}
