//! The launch checks that run next to Pyxis, on the real cluster: enroot's runtime directory, devices
//! inside the step (real cgroup v1 device rules, and a container-like mount namespace made by the
//! test-only plugin `tests/spank-hide/lgtest_hide.c` listed before launchguard), and the NCCL
//! environment per fabric.
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

use launchguard_tests::{
    host_path, lock, node_name, plugstack, plugstack_with_hider, plugstack_with_hider_after,
    rootfs, run, srun, As, Run, LOGIN_CONF,
};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

const ENROOT_CONF: &str = "/tmp/lg-tests/enroot.conf";

fn write_enroot_conf() {
    std::fs::write(
        host_path(ENROOT_CONF),
        "# a common site setting\nENROOT_RUNTIME_PATH      /run/enroot/user-$(id -u)\nENROOT_RESTRICT_DEV      n\n",
    )
    .expect("enroot.conf");
}

fn slurmd_log() -> String {
    std::fs::read_to_string(host_path("/var/log/slurmd.log")).unwrap_or_default()
}

/// What slurmd's log gained since `mark` (its length before a launch).
fn slurmd_log_since(mark: usize) -> String {
    slurmd_log().get(mark..).unwrap_or_default().to_string()
}

/// The hider needs unprivileged user namespaces, which a chroot does not allow.
fn hider_works() -> bool {
    if rootfs().is_empty() {
        return true;
    }
    eprintln!("not run on a chroot cluster (24.11, 26.05, arm64): the test-only hider needs user namespaces, which chroot forbids");
    false
}

#[test]
fn enroot_runtime_dir_is_repaired_as_root_before_a_non_root_launch() {
    let _g = lock();
    write_enroot_conf();
    let dir = host_path("/run/enroot");
    let _ = std::fs::remove_dir_all(&dir);
    plugstack(&format!("mode=enforce enroot_conf={ENROOT_CONF}"));
    let mark = slurmd_log().len();
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "the user is not told: {r:#?}");
    let m = std::fs::metadata(&dir).expect("/run/enroot was created");
    assert!(m.is_dir());
    assert_eq!((m.mode() & 0o7777, m.uid(), m.gid()), (0o1777, 0, 0));
    assert!(
        slurmd_log_since(mark).contains(
            "launchguard: launch.enroot_runtime: repaired '/run/enroot' (it is missing): now mode 1777 owned by root; \
             make it survive reboots with the tmpfiles.d line 'd /run/enroot 1777 root root -' in /etc/tmpfiles.d/enroot.conf"
        ),
        "the admin is told in slurmd's log"
    );
}

#[test]
fn a_user_owned_enroot_runtime_dir_is_never_adopted() {
    let _g = lock();
    write_enroot_conf();
    let dir = host_path("/run/enroot");
    let _ = std::fs::remove_dir_all(&dir);
    // the first user to run enroot created it 0700 for themselves
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let uid = run(As::User, &[], &["id", "-u"])
        .stdout
        .trim()
        .parse::<u32>()
        .unwrap();
    std::os::unix::fs::chown(&dir, Some(uid), None).unwrap();
    plugstack(&format!("mode=enforce enroot_conf={ENROOT_CONF}"));
    // srun says the step uses no container: repaired or not, the user is not told
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    // srun without launchguard (a login node without it): whether it is a container step is unknown,
    // so a warning; and launchguard refuses to adopt a directory a user owns
    let r = run(
        As::User,
        &[("SLURM_CONF", LOGIN_CONF)],
        &["srun", "echo", "ran"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(
        r.findings(),
        vec![format!(
            "launchguard: launch.enroot_runtime: enroot's runtime directory '/run/enroot' has mode 0700 and owner uid {uid} \
             (launchguard could not repair it: it is owned by uid {uid}: remove it so that launchguard recreates it); \
             Pyxis container jobs of non-root users fail with 'mkdir: cannot create directory '/run/enroot': Permission denied'; \
             ask the admin to run 'install -d -m 1777 -o root -g root /run/enroot' and add 'd /run/enroot 1777 root root -' \
             to /etc/tmpfiles.d/enroot.conf"
        )
        .as_str()],
        "{r:#?}"
    );
    let m = std::fs::metadata(&dir).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (uid, 0o700), "left untouched");
    // with repair off, the same warning advises enroot_repair=yes, once per node
    plugstack(&format!(
        "mode=enforce enroot_repair=no enroot_conf={ENROOT_CONF}"
    ));
    let r = run(
        As::User,
        &[("SLURM_CONF", LOGIN_CONF)],
        &["srun", "-n2", "echo", "ran"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\nran\n"), "{r:#?}");
    assert_eq!(r.findings().len(), 1, "once per node: {r:#?}");
    assert!(
        r.findings()[0].ends_with("(or set enroot_repair=yes in plugstack)"),
        "{r:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn enroot_is_not_judged_where_it_is_not_installed() {
    let _g = lock();
    let dir = host_path("/run/enroot");
    let _ = std::fs::remove_dir_all(&dir);
    plugstack("mode=enforce enroot_conf=/tmp/lg-tests/no-such-enroot.conf");
    let r = run(
        As::User,
        &[("SLURM_CONF", LOGIN_CONF)],
        &["srun", "echo", "ran"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    assert!(!std::path::Path::new(&dir).exists(), "nothing created");
}

fn devices_line(path: &str, how: &str, why: &str, fix: &str) -> String {
    format!(
        "launchguard: launch.devices: {path} {how} on {}; {why}; {fix}",
        node_name()
    )
}

#[test]
fn allocated_gpus_pass_and_a_gpu_missing_in_the_container_is_reported() {
    let _g = lock();
    plugstack("mode=enforce min_cpus_per_task=2");
    // ConstrainDevices=yes: fakegpu0 allowed (allocated), fakegpu1 denied (not allocated): no finding
    let r = srun(
        As::User,
        &[
            "-c",
            "2",
            "--gres=gpu:1",
            "bash",
            "-c",
            "echo $SLURM_STEP_GPUS",
        ],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "0\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    let r = srun(As::User, &["-c", "2", "--gres=gpu:2", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    if !hider_works() {
        return;
    }
    // the allocated GPU's device node is not a device inside the container (not mounted by the runtime)
    plugstack_with_hider("hide=/dev/fakegpu0", "mode=enforce min_cpus_per_task=2");
    let r = srun(As::User, &["-c", "2", "--gres=gpu:1", "echo", "ran"]);
    assert_eq!(r.code, 1, "{r:#?}");
    let n = node_name();
    assert_eq!(
        r.findings(),
        vec![format!(
            "launchguard: launch.devices: this task was given 1 GPU (SLURM_STEP_GPUS=0) but only 0 GPU device files are usable on {n}: \
             '/dev/fakegpu0' not a character device in the step's /dev, '/dev/fakegpu1' denied by the devices cgroup (EPERM); \
             CUDA sees fewer GPUs than Slurm allocated, so the job fails or runs on fewer GPUs; \
             keep enroot's nvidia hook enabled and do not override NVIDIA_VISIBLE_DEVICES in the image, or pass --container-mounts for the GPU devices"
        )
        .as_str()],
        "{r:#?}"
    );
}

#[test]
fn a_device_denied_by_the_devices_cgroup_is_reported() {
    if !rootfs().is_empty() {
        eprintln!("the chroot clusters have no devices cgroup (proctrack/linuxproc, task/affinity); this case runs on the host cluster");
        return;
    }
    // The host cluster lists /dev/infiniband/uverbs0 as GRES "nic": ConstrainDevices=yes denies it to
    // steps that do not ask for it, a real misconfiguration when a site needs it in every step.
    let _g = lock();
    plugstack("mode=enforce devices=/dev/infiniband/uverbs0");
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(
        r.findings(),
        vec![devices_line(
            "'/dev/infiniband/uverbs0' (required by the admin)",
            "is denied by the devices cgroup (EPERM)",
            "the site marks this device as required by its jobs",
            "if gres.conf lists '/dev/infiniband/uverbs0' (File=), request that GRES (e.g. --gres=nic:1) or drop it from gres.conf; otherwise allow it in the site's device cgroup rules",
        )
        .as_str()],
        "{r:#?}"
    );
    let r = srun(As::User, &["--gres=nic:1", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
}

#[test]
fn infiniband_hidden_inside_the_container_is_reported() {
    let _g = lock();
    let args = "devices=/dev/infiniband/uverbs1 min_cpus_per_task=2";
    let want = devices_line(
        "'/dev/infiniband/uverbs1' (required by the admin)",
        "is not visible inside the container",
        "the site marks this device as required by its jobs",
        "set ENROOT_RESTRICT_DEV n in /etc/enroot/enroot.conf, or add --container-mounts=/dev/infiniband:/dev/infiniband",
    );
    // visible on the host: silence
    plugstack(&format!("mode=enforce {args}"));
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    if !hider_works() {
        return;
    }
    // hidden by a container-like mount namespace (ENROOT_RESTRICT_DEV=y)
    plugstack_with_hider("hide=/dev/infiniband", &format!("mode=enforce {args}"));
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings(), vec![want.as_str()], "{r:#?}");
    plugstack_with_hider("hide=/dev/infiniband", &format!("mode=warn {args}"));
    let r = srun(As::User, &["echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert_eq!(r.findings(), vec![want.as_str()], "{r:#?}");
}

/// A CPU-only launch with NCCL variables exported; `gpu_steps_only=no` so that the NCCL rules judge it
/// (by default they judge GPU steps only, like the CPU rule: `launch.rs` tests that); the CPU rule is
/// off, as it would judge these CPU-only steps too.
fn nccl(args: &str, export: &str) -> Run {
    plugstack(&format!("{args} gpu_steps_only=no cpus_per_task=off"));
    srun(
        As::User,
        &[&format!("--export=ALL,{export}"), "echo", "ran"],
    )
}

#[test]
fn nccl_environment_is_judged_per_fabric() {
    let _g = lock();
    let r = nccl("mode=enforce fabric=efa", "NCCL_NET=IB");
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.nccl_env: NCCL_NET=IB is set on this EFA node (rule efa.nccl_net_ib); \
              on EFA, NCCL_NET=IB forces the InfiniBand transport, which finds no device and fails NCCL initialisation; \
              set NCCL_NET=Libfabric (aws-ofi-nccl's name for EFA) or unset NCCL_NET"],
        "{r:#?}"
    );
    // each rule on a real launch: (plugstack, exported variables, rule, rejected in enforce?)
    let table: &[(&str, &str, &str, bool)] = &[
        (
            "fabric=efa",
            "NCCL_NET=AWS Libfabric",
            "efa.nccl_net_old_name",
            false,
        ),
        (
            "fabric=efa",
            "NCCL_NET=Socket",
            "efa.nccl_net_socket",
            false,
        ),
        ("fabric=efa", "NCCL_NET=UCX", "efa.nccl_net", false),
        (
            "fabric=efa",
            "NCCL_NET_PLUGIN=ib",
            "efa.nccl_net_plugin",
            false,
        ),
        ("fabric=efa", "NCCL_IB_HCA=mlx5_0", "efa.nccl_ib", false),
        ("fabric=efa", "FI_PROVIDER=tcp", "efa.fi_provider", false),
        (
            "fabric=efa",
            "NCCL_TREE_THRESHOLD=0",
            "efa.tree_threshold",
            false,
        ),
        ("fabric=efa", "NCCL_PROTO=Simple", "efa.proto", false),
        ("fabric=ib", "NCCL_NET=Socket", "ib.nccl_net_socket", false),
        (
            "fabric=ib",
            "NCCL_NET=Libfabric",
            "ib.nccl_net_libfabric",
            true,
        ),
        ("fabric=ib", "FI_PROVIDER=efa", "ib.fi_provider", false),
        ("fabric=ib", "FI_EFA_USE_DEVICE_RDMA=1", "ib.fi_efa", false),
        (
            "fabric=efa",
            "NCCL_SOCKET_IFNAME=nosuch0",
            "any.socket_ifname",
            false,
        ),
    ];
    for (fabric, export, rule, rejected) in table {
        let r = nccl(&format!("mode=enforce {fabric}"), export);
        let f = r.findings();
        assert_eq!(f.len(), 1, "{export}: {r:#?}");
        assert!(
            f[0].contains(&format!("(rule {rule})")),
            "{export}: {}",
            f[0]
        );
        assert_eq!(r.code != 0, *rejected, "{export}: {r:#?}");
        assert_eq!(r.stdout.contains("ran"), !rejected, "{export}: {r:#?}");
    }
    // a clean environment, IB settings on IB, unknown NCCL_* variables: silence
    for (fabric, export) in [
        (
            "fabric=efa",
            "NCCL_DEBUG=INFO,NCCL_NET=Libfabric,NCCL_FOO=1",
        ),
        ("fabric=ib", "NCCL_IB_HCA=mlx5_0,NCCL_NET=IB"),
        // auto: this machine has no RDMA NIC, so no fabric rule applies
        ("fabric=auto", "NCCL_NET=IB"),
    ] {
        let r = nccl(&format!("mode=enforce {fabric}"), export);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "ran\n"),
            "{export}: {r:#?}"
        );
        assert!(r.findings().is_empty(), "{export}: {r:#?}");
    }
}

/// Issue 24 item 7 / issue 30: on a GPU step, an `NCCL_SOCKET_IFNAME` that leaves NCCL no interface
/// of the node surely fails NCCL's bootstrap, so enforce mode stops the step with the fix; one that
/// leaves only loopback is a warning and the step runs.
#[test]
fn a_socket_ifname_that_leaves_no_interface_stops_a_gpu_step() {
    let _g = lock();
    plugstack("mode=enforce cpus_per_task=off");
    let r = srun(
        As::User,
        &[
            "--gres=gpu:1",
            "--export=ALL,NCCL_SOCKET_IFNAME=nosuchif0",
            "echo",
            "ran",
        ],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(!r.stdout.contains("ran"), "{r:#?}");
    let f = r.findings();
    assert_eq!(f.len(), 1, "{r:#?}");
    assert!(
        f[0].starts_with("launchguard: launch.nccl_env: NCCL_SOCKET_IFNAME=nosuchif0 names no interface of this node (it has ")
            && f[0].contains("every rank fails at init (rule any.socket_ifname)"),
        "{}",
        f[0]
    );
    let r = srun(
        As::User,
        &[
            "--gres=gpu:1",
            "--export=ALL,NCCL_SOCKET_IFNAME=lo",
            "echo",
            "ran",
        ],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(
        r.findings()
            .iter()
            .any(|l| l.contains("selects only a loopback or container bridge interface (lo)")),
        "{r:#?}"
    );
}

#[test]
fn admin_nccl_rules_extend_the_table() {
    let _g = lock();
    std::fs::write(
        host_path("/tmp/lg-tests/nccl-rules.conf"),
        "# site rule\nany NCCL_P2P_DISABLE is 1 error | peer-to-peer off halves intra-node bandwidth | unset NCCL_P2P_DISABLE\nbogus line\n",
    )
    .unwrap();
    let mark = slurmd_log().len();
    let r = nccl(
        "mode=enforce nccl_rules=/tmp/lg-tests/nccl-rules.conf",
        "NCCL_P2P_DISABLE=1",
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.nccl_env: NCCL_P2P_DISABLE=1 is set (rule site.nccl_p2p_disable); \
              peer-to-peer off halves intra-node bandwidth; unset NCCL_P2P_DISABLE"],
        "{r:#?}"
    );
    let log = slurmd_log_since(mark);
    assert_eq!(
        log.matches("launchguard: NCCL rules file: /tmp/lg-tests/nccl-rules.conf:3: expected")
            .count(),
        1,
        "logged once per node: {log}"
    );
}

/// srun's environment that makes launchguard's srun side mark the step as a Pyxis container step
/// without Pyxis loaded (the variable sbatch --container-image passes on to its sruns).
const AS_CONTAINER: (&str, &str) = (
    "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
    "/img.sqsh",
);

/// What real Pyxis + enroot do (tests/tests/real_pyxis.rs, LG_PYXIS=1), reproduced by the stand-in
/// so CI guards it: the image's environment imported in task_init, enroot's host /dev unless
/// ENROOT_RESTRICT_DEV=y, and the callback order (stand-in listed before launchguard: launchguard
/// judges the container; after: launchguard's task_init runs first and says it was blind).
#[test]
fn container_behaviours_of_real_pyxis_in_both_orders() {
    let _g = lock();
    if !hider_works() {
        return;
    }
    let pyxis = "container restrict_dev env=NCCL_NET=IB";
    // Pyxis first: the image's NCCL_NET is judged and named as the image's.
    plugstack_with_hider(pyxis, "mode=enforce fabric=efa gpu_steps_only=no");
    let r = run(
        As::User,
        &[AS_CONTAINER],
        &["srun", "-c", "2", "echo", "ran"],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.findings().len(), 1, "{r:#?}");
    assert!(
        r.findings()[0].starts_with(
            "launchguard: launch.nccl_env: NCCL_NET=IB is set by the container image on this EFA node (rule efa.nccl_net_ib)"
        ),
        "{r:#?}"
    );
    assert!(
        r.findings()[0].contains("srun --container-env=NCCL_NET"),
        "{r:#?}"
    );
    // enroot's /dev is the host's without RESTRICT_DEV: the GPU is there, the step runs.
    plugstack_with_hider("container restrict_dev", "mode=enforce");
    let r = run(
        As::User,
        &[AS_CONTAINER],
        &[
            "srun",
            "-c",
            "2",
            "--gres=gpu:1",
            "sh",
            "-c",
            "ls /dev/fakegpu0",
        ],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "/dev/fakegpu0\n"),
        "{r:#?}"
    );
    assert!(r.findings().is_empty(), "{r:#?}");
    // ENROOT_RESTRICT_DEV=y hides it: judged inside the container, stopped.
    let r = run(
        As::User,
        &[AS_CONTAINER, ("ENROOT_RESTRICT_DEV", "y")],
        &[
            "srun",
            "-c",
            "2",
            "--gres=gpu:1",
            "sh",
            "-c",
            "ls /dev/fakegpu0",
        ],
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.findings()[0].contains("'/dev/fakegpu0' not visible inside the container"),
        "{r:#?}"
    );
    // launchguard first: nothing can be judged in the container; the program fails on its own and
    // slurmd's log says the step was not judged, once.
    plugstack_with_hider_after("container restrict_dev", "mode=enforce");
    let mark = slurmd_log().len();
    let r = run(
        As::User,
        &[AS_CONTAINER, ("ENROOT_RESTRICT_DEV", "y")],
        &[
            "srun",
            "-c",
            "2",
            "--gres=gpu:1",
            "sh",
            "-c",
            "ls /dev/fakegpu0",
        ],
    );
    assert_ne!(r.code, 0, "{r:#?}");
    assert!(r.findings().is_empty(), "{r:#?}");
    let log = slurmd_log_since(mark);
    assert_eq!(
        log.matches("launchguard: node.plugstack.order: job ")
            .count(),
        1,
        "{log}"
    );
    assert!(log.contains("were not judged; name launchguard's drop-in /etc/slurm/plugstack.conf.d/zz-launchguard.conf"), "{log}");
    // A step without a container is never called blind.
    let mark = slurmd_log().len();
    let r = srun(As::User, &["-c", "2", "echo", "ran"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ran\n"), "{r:#?}");
    assert!(!slurmd_log_since(mark).contains("node.plugstack.order"));
}
