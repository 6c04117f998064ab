//! Field truth for the launch checks: small inputs written from public reports (in our own words, no
//! names or addresses from them), each with the verdict it deserves. The sources are listed in
//! `tests/field/README.md` under "Launch checks".

use launchguard_core::argv::{parse, Tool};
use launchguard_core::checks::devices::{extra_rdma_next_to_efa, RdmaNic};
use launchguard_core::checks::nccl_env::{builtin_rules, check_in, Context, Fabric};
use launchguard_core::finding::Severity;
use launchguard_core::node::devices::{judge, DeviceFacts};
use launchguard_core::node::Status;

fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Rule names that fire, with their severity.
fn fired(env: &[(&str, &str)], ctx: &Context) -> Vec<(String, Severity)> {
    check_in(&vars(env), ctx, &builtin_rules())
        .into_iter()
        .map(|f| {
            let rule = f
                .what
                .rsplit("(rule ")
                .next()
                .unwrap()
                .trim_end_matches(')');
            (rule.to_string(), f.severity)
        })
        .collect()
}

/// NVIDIA/nccl PR 236: a node with a dozen mlx5 HCAs; `NCCL_IB_HCA=mlx5_1:1` meant one HCA but, read
/// as a prefix, also selected mlx5_10 and mlx5_11. The exact form `=mlx5_1:1` is right.
#[test]
fn ib_hca_prefix_selects_mlx5_1x_too() {
    let hcas: Vec<String> = (0..12).map(|i| format!("mlx5_{i}")).collect();
    let ifs = s(&["ib0"]);
    let ctx = Context {
        fabric: Some(Fabric::Ib),
        hcas: Some(&hcas),
        interfaces: Some(&ifs),
        gpu_step: Some(true),
        ..Context::default()
    };
    assert_eq!(
        fired(&[("NCCL_IB_HCA", "mlx5_1:1")], &ctx),
        vec![("any.nccl_ib_hca".into(), Severity::Warning)]
    );
    assert!(fired(&[("NCCL_IB_HCA", "=mlx5_1:1")], &ctx).is_empty());
}

/// NVIDIA/nccl issue 1412: two of five HCAs must not be used; the maintainers' answer is an exclusion
/// list, `^mlx5_3,mlx5_4`. Exclusions only remove devices: no finding.
#[test]
fn ib_hca_exclusion_list_is_fine() {
    let hcas = s(&["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4"]);
    let ctx = Context {
        fabric: Some(Fabric::Ib),
        hcas: Some(&hcas),
        gpu_step: Some(true),
        ..Context::default()
    };
    assert!(fired(&[("NCCL_IB_HCA", "^mlx5_3,mlx5_4")], &ctx).is_empty());
}

/// NVIDIA/enroot issue 207: a job got host GPUs 0,1,4,5 and kept NVIDIA_VISIBLE_DEVICES=0,1,4,5; the
/// container start failed with "4: unknown device". In a Slurm GPU step that is an error.
#[test]
fn nvidia_visible_devices_with_host_indices_is_an_error() {
    let ctx = Context {
        gpu_step: Some(true),
        step_gpus: Some("0,1,4,5"),
        ..Context::default()
    };
    // The job kept the host indices: 4 and 5 do not exist among the step's 4 GPUs.
    assert_eq!(
        fired(&[("NVIDIA_VISIBLE_DEVICES", "0,1,4,5")], &ctx),
        vec![("any.nvidia_visible_devices".into(), Severity::Error)]
    );
    // The work-around in the report: indices of the step's own GPUs, 0..3.
    assert!(fired(&[("NVIDIA_VISIBLE_DEVICES", "0,1,2,3")], &ctx).is_empty());
    assert!(fired(&[("NVIDIA_VISIBLE_DEVICES", "all")], &ctx).is_empty());
}

/// NVIDIA/nccl issue 631: training hung with 4+ GPUs on one node until NCCL_P2P_DISABLE=1; the
/// maintainers: it works, only slower (ACS/IOMMU is the real cause). A warning, never a rejection.
#[test]
fn p2p_disable_is_a_warning_on_gpu_steps_only() {
    let gpu = Context {
        gpu_step: Some(true),
        ..Context::default()
    };
    assert_eq!(
        fired(&[("NCCL_P2P_DISABLE", "1")], &gpu),
        vec![("any.p2p_disable".into(), Severity::Warning)]
    );
    let cpu = Context {
        gpu_step: Some(false),
        ..Context::default()
    };
    assert!(fired(&[("NCCL_P2P_DISABLE", "1")], &cpu).is_empty());
}

/// NVIDIA/nccl-tests issue 293: NCCL_SHM_DISABLE=1 "recommended by someone" on two PCIe A100 nodes:
/// a warning there, but not on a GB300 MNNVL rack where it is part of the validated settings.
#[test]
fn shm_disable_depends_on_the_profile() {
    let plain = Context {
        gpu_step: Some(true),
        ..Context::default()
    };
    assert_eq!(
        fired(&[("NCCL_SHM_DISABLE", "1")], &plain),
        vec![("any.shm_disable".into(), Severity::Warning)]
    );
    let gb300 = Context {
        profile: Some("gb300-mnnvl"),
        ..plain
    };
    assert!(fired(&[("NCCL_SHM_DISABLE", "1")], &gb300).is_empty());
}

/// A public review of an EFA launch profile (SemiAnalysisAI/InferenceX PR 2979) pointed out that with
/// NCCL_NET_PLUGIN=ofi but NCCL_NET unset, a plugin that fails to load degrades silently to Socket.
#[test]
fn efa_with_ofi_plugin_and_unpinned_net_warns() {
    let ctx = Context {
        fabric: Some(Fabric::Efa),
        gpu_step: Some(true),
        ofi_plugin: Some("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"),
        ..Context::default()
    };
    assert_eq!(
        fired(&[("NCCL_NET_PLUGIN", "ofi")], &ctx),
        vec![("efa.nccl_net_unpinned".into(), Severity::Warning)]
    );
    assert!(fired(
        &[("NCCL_NET_PLUGIN", "ofi"), ("NCCL_NET", "Libfabric")],
        &ctx
    )
    .is_empty());
}

/// aws/aws-ofi-nccl issue 1020 and the EFA troubleshooting it cites: `fi_info -p efa` gave -61
/// inside the container. Extra RDMA devices next to EFA matter only when active and exposed; a
/// link-down one needs nothing.
#[test]
fn extra_rdma_devices_next_to_efa() {
    let efa = RdmaNic {
        name: "rdmap16s27".into(),
        driver: "efa".into(),
        active: true,
        exposed: true,
    };
    let mlx = |active| RdmaNic {
        name: "mlx5_0".into(),
        driver: "mlx5_core".into(),
        active,
        exposed: true,
    };
    assert!(extra_rdma_next_to_efa(&[efa.clone(), mlx(false)]).is_empty());
    let f = extra_rdma_next_to_efa(&[efa, mlx(true)]);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
}

/// NVIDIA/pyxis issue 47: cgroup.conf had only CgroupAutomount and ConstrainCores; GPU jobs saw GPUs
/// they were not given. With GPUs as GRES and no ConstrainDevices=yes: node WARNING.
#[test]
fn cgroup_conf_without_constrain_devices_warns() {
    let f = DeviceFacts {
        uverbs: vec![],
        gpus: (0..8).map(|i| (format!("/dev/nvidia{i}"), true)).collect(),
        rdma: vec![],
        cgroup_conf: Some("CgroupAutomount=yes\nConstrainCores=yes\n".into()),
    };
    let o = judge(&f);
    let c = o.iter().find(|o| o.id == "node.devices.constrain").unwrap();
    assert_eq!(c.status, Status::Warning);
}

/// Site guides show `srun --gres=gpu:2 --tasks-per-node=1 …` (the alias srun takes but does not list
/// in --help): parsed as srun's own option, so the launch is judged before allocation.
#[test]
fn tasks_per_node_alias_is_srun_s() {
    let argv = s(&[
        "srun",
        "--gres=gpu:2",
        "--tasks-per-node=1",
        "python",
        "train.py",
        "-c",
        "4",
    ]);
    let p = parse(Tool::Srun, &argv);
    assert!(!p.uncertain);
    assert_eq!(p.value("ntasks-per-node"), Some("1"));
    assert_eq!(p.value("cpus-per-task"), None, "python's -c is not srun's");
}
