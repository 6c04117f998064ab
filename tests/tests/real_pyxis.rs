//! launchguard next to REAL Pyxis and enroot, in both plugstack orders, on the host cluster.
//!
//! Enabled by `LG_PYXIS=1` once `scripts/pyxis.sh build SRC_DIR && scripts/pyxis.sh install &&
//! scripts/pyxis.sh image` has put Pyxis (`/usr/local/lib/slurm/spank_pyxis.so`), enroot
//! (`/usr/local/bin/enroot`) and the busybox test images in place (`LG_PYXIS=1` at build time sets
//! `cfg(lg_pyxis)`, `tests/slurm_tests_cfg.rs`); otherwise the test is listed as ignored with the
//! reason `real Pyxis: …`, the one skip `scripts/test.sh` accepts and names in its closing line (CI
//! cannot fetch Pyxis; the stand-in plugin `tests/spank-hide/lgtest_hide.c` guards the same
//! behaviours there, in `next_to_pyxis.rs`).
//!
//! Pyxis is listed as its own instructions say, `plugstack.conf.d/pyxis.conf`, only while a test
//! runs (removed on the way out, even on failure). launchguard is listed
//! - before Pyxis as `50-launchguard.conf` (the package's old name, still shipped for existing links):
//!   its `task_init` runs on the host, before Pyxis's enters the container;
//! - after Pyxis as `zz-launchguard.conf` (the name the package ships, and the test clusters' drop-in):
//!   its `task_init` runs inside the container, after Pyxis imported the image's environment.
//!
//! Besides the two orders: `srun --mpi=pmix` into a container with a real PMIx client in the image
//! (`real_pmix_in_a_container`, the image built by `scripts/pyxis.sh image-pmix`) and `--export`
//! without `ALL` on container steps, srun and `sbatch --export=NONE` (`real_export_none_in_a_container`).
//!
//! Every scenario prints what the user saw (`cargo test -- --nocapture` shows the screens).

use launchguard_tests::{host_path, lock, plugstack_line, run, As, Run, PLUGIN_PATH, SCRATCH};
use std::path::Path;

const PYXIS_SO: &str = "/usr/local/lib/slurm/spank_pyxis.so";
const PYXIS_DROPIN: &str = "/etc/slurm/plugstack.conf.d/pyxis.conf";
/// launchguard listed before Pyxis: the package's old name, which sorts before `pyxis.conf`.
const BEFORE_DROPIN: &str = "/etc/slurm/plugstack.conf.d/50-launchguard.conf";
const IMAGE: &str = "/var/lib/launchguard-test/busybox.sqsh";
/// The same image with `NCCL_NET=IB` in its /etc/environment (enroot reads it like an image's ENV).
const NCCL_IMAGE: &str = "/var/lib/launchguard-test/busybox-nccl.sqsh";
/// The busybox image with a PMIx client (`tests/pmix-client/lgtest_pmix.c`: PMIx_Init, the job size,
/// a fence) and the node's OpenPMIx libraries: `scripts/pyxis.sh image-pmix`.
const PMIX_IMAGE: &str = "/var/lib/launchguard-test/busybox-pmix.sqsh";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// launchguard, then Pyxis.
    Before,
    /// Pyxis, then launchguard.
    After,
}

/// Checks that the pieces are in place and that this is the host cluster (a clear panic when
/// `LG_PYXIS=1` asked for them but they are missing).
fn require_pyxis() {
    let host = matches!(std::env::var("LG_CLUSTER").as_deref(), Err(_) | Ok("host"));
    assert!(
        host,
        "LG_PYXIS=1 but LG_CLUSTER is not host: real Pyxis is installed only on the host cluster"
    );
    for f in [PYXIS_SO, "/usr/local/bin/enroot", IMAGE, NCCL_IMAGE] {
        assert!(
            Path::new(f).exists(),
            "LG_PYXIS=1 but {f} is missing: run scripts/pyxis.sh build SRC_DIR, scripts/pyxis.sh install, \
             scripts/pyxis.sh image and scripts/pyxis.sh image {NCCL_IMAGE} NCCL_NET=IB"
        );
    }
}

/// Builds the PMIx image (`scripts/pyxis.sh image-pmix`): its client is compiled against this node's
/// libpmix-dev, so it is built by the test that runs it rather than kept from an older install.
fn pmix_image() {
    let script = launchguard_tests::repo_root().join("scripts/pyxis.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .args(["image-pmix", PMIX_IMAGE])
        .output()
        .unwrap_or_else(|e| panic!("bash {} image-pmix: {e}", script.display()));
    assert!(out.status.success(), "scripts/pyxis.sh image-pmix: {out:?}");
}

/// Lists Pyxis and launchguard (with `args`) in `order`; undone on drop.
struct Stack;

impl Stack {
    fn new(order: Order, args: &str) -> Stack {
        // /dev/mqueue, /dev/log (enroot's RESTRICT_DEV hook) and /run/pyxis (Pyxis's slurmd side)
        let script = launchguard_tests::repo_root().join("scripts/pyxis.sh");
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg("prereqs")
            .output()
            .unwrap_or_else(|e| panic!("bash {} prereqs: {e}", script.display()));
        assert!(out.status.success(), "{out:?}");
        std::fs::write(PYXIS_DROPIN, format!("required {PYXIS_SO}\n")).expect("pyxis.conf");
        let line = format!("required {PLUGIN_PATH} {args}");
        match order {
            Order::Before => {
                launchguard_tests::no_plugstack();
                std::fs::write(BEFORE_DROPIN, format!("{line}\n")).expect("50-launchguard.conf");
            }
            Order::After => {
                let _ = std::fs::remove_file(BEFORE_DROPIN);
                plugstack_line(&line);
            }
        }
        Stack
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(PYXIS_DROPIN);
        let _ = std::fs::remove_file(BEFORE_DROPIN);
        launchguard_tests::no_plugstack();
    }
}

fn slurmd_log() -> String {
    std::fs::read_to_string(host_path("/var/log/slurmd.log")).unwrap_or_default()
}

/// Runs `argv` as lgtest with `env`, prints the user's screen, returns the run and what slurmd's
/// log gained meanwhile.
fn user(order: Order, what: &str, env: &[(&str, &str)], argv: &[&str]) -> (Run, String) {
    let mark = slurmd_log().len();
    let r = run(As::User, env, argv);
    let log = slurmd_log().get(mark..).unwrap_or_default().to_string();
    let shown_env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!(
        "---- {order:?} Pyxis: {what}\n$ {}{}\n{}{}[exit {}]",
        shown_env.join(""),
        argv.join(" "),
        r.stdout,
        r.stderr,
        r.code
    );
    (r, log)
}

const BLIND: &str = "launchguard: node.plugstack.order: job ";

#[test]
#[cfg_attr(
    not(lg_pyxis),
    ignore = "real Pyxis: runs on the host cluster only, with LG_PYXIS=1 (scripts/test.sh sets it where scripts/pyxis.sh installed Pyxis)"
)]
fn real_pyxis_in_both_orders() {
    require_pyxis();
    let _g = lock();
    for order in [Order::Before, Order::After] {
        let _s = Stack::new(order, "mode=enforce fabric=efa gpu_steps_only=no");

        // 1. /run/enroot missing: repaired as root before Pyxis needs it, in either order.
        let _ = std::fs::remove_dir_all("/run/enroot");
        let (r, log) = user(
            order,
            "/run/enroot missing",
            &[],
            &[
                "srun",
                "-c",
                "2",
                &format!("--container-image={IMAGE}"),
                "echo",
                "ran",
            ],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "ran\n"),
            "{order:?}: {r:#?}"
        );
        assert!(
            log.contains("launchguard: launch.enroot_runtime: repaired '/run/enroot'"),
            "{log}"
        );
        assert_eq!(
            log.contains(BLIND),
            order == Order::Before,
            "{order:?}: {log}"
        );

        // 2. ENROOT_RESTRICT_DEV=y hides the allocated GPU inside the container.
        let (r, log) = user(
            order,
            "ENROOT_RESTRICT_DEV=y, one GPU",
            &[("ENROOT_RESTRICT_DEV", "y")],
            &[
                "srun",
                "-c",
                "2",
                "--gres=gpu:1",
                &format!("--container-image={IMAGE}"),
                "sh",
                "-c",
                "ls /dev/fakegpu*",
            ],
        );
        assert_eq!(r.code, 1, "{r:#?}");
        match order {
            Order::After => {
                let f = r.findings();
                assert_eq!(f.len(), 1, "{r:#?}");
                assert!(
                    f[0].starts_with("launchguard: launch.devices: this task was given 1 GPU"),
                    "{r:#?}"
                );
                assert!(
                    f[0].contains("'/dev/fakegpu0' not visible inside the container"),
                    "{r:#?}"
                );
                assert!(r.stderr.contains("this launch was stopped"), "{r:#?}");
            }
            Order::Before => {
                // launchguard judged the host, where the GPU is there; the program fails later.
                assert!(r.findings().is_empty(), "{r:#?}");
                assert!(
                    r.stderr
                        .contains("ls: /dev/fakegpu*: No such file or directory"),
                    "{r:#?}"
                );
                assert!(log.contains(BLIND) && log.contains("not judged"), "{log}");
            }
        }

        // 3. NCCL_NET=IB from the image on an EFA node.
        let (r, log) = user(
            order,
            "NCCL_NET=IB set by the image",
            &[],
            &[
                "srun",
                "-c",
                "2",
                &format!("--container-image={NCCL_IMAGE}"),
                "sh",
                "-c",
                "echo NCCL_NET=$NCCL_NET",
            ],
        );
        match order {
            Order::After => {
                assert_eq!(r.code, 1, "{r:#?}");
                let f = r.findings();
                assert_eq!(f.len(), 1, "{r:#?}");
                assert!(
                    f[0].starts_with("launchguard: launch.nccl_env: NCCL_NET=IB is set by the container image on this EFA node"),
                    "{r:#?}"
                );
                assert!(f[0].contains("srun --container-env=NCCL_NET"), "{r:#?}");
                // The fix the line gives works: the user's value, kept by --container-env.
                let (r, _) = user(
                    order,
                    "the fix: NCCL_NET=Libfabric kept with --container-env",
                    &[("NCCL_NET", "Libfabric")],
                    &[
                        "srun",
                        "-c",
                        "2",
                        "--container-env=NCCL_NET",
                        &format!("--container-image={NCCL_IMAGE}"),
                        "sh",
                        "-c",
                        "echo NCCL_NET=$NCCL_NET",
                    ],
                );
                assert_eq!(
                    (r.code, r.stdout.as_str()),
                    (0, "NCCL_NET=Libfabric\n"),
                    "{r:#?}"
                );
                assert!(r.findings().is_empty(), "{r:#?}");
            }
            Order::Before => {
                assert_eq!((r.code, r.stdout.as_str()), (0, "NCCL_NET=IB\n"), "{r:#?}");
                assert!(r.findings().is_empty(), "{r:#?}");
                assert!(log.contains(BLIND), "{log}");
            }
        }
        // The same value set by the user (no image): the plain fix, in either order.
        let (r, _) = user(
            order,
            "NCCL_NET=IB set by the user",
            &[("NCCL_NET", "IB")],
            &[
                "srun",
                "-c",
                "2",
                &format!("--container-image={IMAGE}"),
                "true",
            ],
        );
        match order {
            Order::After => {
                assert_eq!(r.code, 1, "{r:#?}");
                assert!(r.findings()[0].contains("(rule efa.nccl_net_ib)"), "{r:#?}");
                assert!(!r.findings()[0].contains("container image"), "{r:#?}");
            }
            // judged on the host, before Pyxis: the user's own value is seen there too
            Order::Before => assert_eq!(r.code, 1, "{r:#?}"),
        }

        // 4. --export=NONE on a container step: PATH comes from the image, the user's variables stay behind.
        let (r, _) = user(
            order,
            "--export=NONE with a container",
            &[("NCCL_DEBUG", "INFO"), ("HF_HOME", "/tmp/hf")],
            &[
                "srun",
                "-c",
                "2",
                "--export=NONE",
                &format!("--container-image={IMAGE}"),
                "sh",
                "-c",
                "echo NCCL_DEBUG=${NCCL_DEBUG:-unset}",
            ],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "NCCL_DEBUG=unset\n"),
            "{r:#?}"
        );
        assert_eq!(
            r.findings(),
            vec!["launchguard: launch.export_all: --export=NONE does not include ALL, so your HF_HOME, NCCL_DEBUG stay behind \
                  (2 of yours set here); the container image supplies PATH and the step starts, but the program runs with the \
                  image's NCCL/libfabric settings and without your tokens and cache paths; use --export=ALL \
                  --container-env=HF_HOME,NCCL_DEBUG (Pyxis keeps the image's value of a variable it also sets unless \
                  --container-env names it)"],
            "{r:#?}"
        );

        // 5. sbatch --container-image with a GPU and no -c: the batch step has 1 CPU.
        let script = format!("{SCRATCH}/pyxis-batch.sh");
        let out = format!("{SCRATCH}/pyxis-batch.out");
        let _ = std::fs::remove_file(host_path(&out));
        std::fs::write(
            host_path(&script),
            format!("#!/bin/sh\n#SBATCH --container-image={IMAGE}\n#SBATCH --gres=gpu:1\necho cpus=$SLURM_CPUS_ON_NODE\n"),
        )
        .unwrap();
        let (r, _) = user(
            order,
            "sbatch --container-image, one GPU, no -c",
            &[],
            &["sbatch", "-W", "-o", &out, &script],
        );
        assert_eq!(r.code, 0, "{r:#?}");
        let text = std::fs::read_to_string(host_path(&out)).unwrap_or_default();
        eprintln!("(job output) {text}");
        assert!(text.contains("cpus=1"), "{text}");
        assert!(
            r.stderr.contains("launchguard: launch.cpus_per_task: sbatch --container-image runs the batch script in the container as the batch step, which gets 1 CPU here"),
            "{r:#?}"
        );
    }

    // 6. A rejection in slurmstepd's root phase, in each order: the user's whole screen, Pyxis's
    // `child NNN failed` line included.
    for order in [Order::Before, Order::After] {
        let _s = Stack::new(order, "mode=enforce enroot_repair=no");
        let _ = std::fs::remove_dir_all("/run/enroot");
        let (r, _) = user(
            order,
            "rejected in task_init_privileged (/run/enroot missing, enroot_repair=no)",
            &[],
            &[
                "srun",
                "-c",
                "2",
                &format!("--container-image={IMAGE}"),
                "echo",
                "ran",
            ],
        );
        assert_eq!(r.code, 1, "{r:#?}");
        assert!(r.findings()[0].starts_with("launchguard: launch.enroot_runtime: enroot's runtime directory '/run/enroot' is missing"), "{r:#?}");
        assert!(
            r.stderr
                .contains("launchguard: this launch was stopped by the site's policy"),
            "{r:#?}"
        );
        assert!(
            r.stderr.contains("error: pyxis: child ")
                && r.stderr.contains(" failed with error code: 1"),
            "{r:#?}"
        );
        assert!(!r.stdout.contains("ran"), "{r:#?}");
    }
    let _ = std::fs::remove_dir_all("/run/enroot");
}

/// `srun --mpi=pmix` into a Pyxis container without enroot's PMIx hook (`50-slurm-pmi.sh` is not in
/// /etc/enroot/hooks.d, as after a plain enroot install): the task has Slurm's `PMIX_*` variables but
/// neither the server's directory (`PMIX_SERVER_TMPDIR`) nor munged's socket. Measured with the
/// image's OpenPMIx (the node's 4.2): with the server's lists (`gds ds21,ds12,hash`, `psec
/// munge,native`) every rank prints a `gds_ds12_lock_pthread.c` PMIX ERROR line and starts (gds falls
/// back to hash, psec skips munge for native); a client limited to munge or to the shared-memory
/// stores fails PMIx_Init on every rank. launchguard, listed after Pyxis, says which of the two the
/// user has, and its fixes work.
#[test]
#[cfg_attr(
    not(lg_pyxis),
    ignore = "real Pyxis: runs on the host cluster only, with LG_PYXIS=1 (scripts/test.sh sets it where scripts/pyxis.sh installed Pyxis)"
)]
fn real_pmix_in_a_container() {
    require_pyxis();
    let _g = lock();
    pmix_image();
    let image = format!("--container-image={PMIX_IMAGE}");
    let pmix = |env: &[(&str, &str)], extra: &[&str], what: &str| {
        let mut argv = vec!["srun", "-n", "2", "-c", "1", "--mpi=pmix"];
        argv.extend_from_slice(extra);
        argv.extend_from_slice(&[image.as_str(), "lgtest_pmix"]);
        user(Order::After, what, env, &argv).0
    };
    let started = |r: &Run| {
        r.code == 0
            && r.stdout.contains("lgtest_pmix: rank 0 of 2: fence ok")
            && r.stdout.contains("lgtest_pmix: rank 1 of 2: fence ok")
    };
    {
        let _s = Stack::new(Order::After, "mode=enforce gpu_steps_only=no");
        // 1. The server's own lists: the ranks start; one line says why PMIx printed its error lines.
        let r = pmix(
            &[],
            &[],
            "--mpi=pmix, no enroot PMIx hook, the server's lists",
        );
        assert!(started(&r), "{r:#?}");
        assert!(r.stderr.contains("gds_ds12_lock_pthread.c"), "{r:#?}");
        let f = r.findings();
        assert_eq!(f.len(), 1, "{r:#?}");
        assert!(
            f[0].starts_with("launchguard: launch.pmix: inside the container the PMIx server's directory PMIX_SERVER_TMPDIR=/var/spool/slurmd/pmix."),
            "{r:#?}"
        );
        assert!(f[0].contains("the ranks still start"), "{r:#?}");
        assert!(f[0].contains("export PMIX_MCA_gds=hash"), "{r:#?}");
        // its fix: no PMIX ERROR line, no launchguard line
        let r = pmix(
            &[("PMIX_MCA_gds", "hash")],
            &[],
            "the fix: PMIX_MCA_gds=hash",
        );
        assert!(started(&r), "{r:#?}");
        assert!(!r.stderr.contains("PMIX ERROR"), "{r:#?}");
        assert!(r.findings().is_empty(), "{r:#?}");

        // 2. The user limited psec to munge: the launch is stopped with the fix.
        let r = pmix(
            &[("PMIX_MCA_psec", "munge"), ("PMIX_MCA_gds", "hash")],
            &[],
            "PMIX_MCA_psec=munge",
        );
        assert_eq!(r.code, 1, "{r:#?}");
        let f = r.findings();
        assert_eq!(f.len(), 1, "{r:#?}");
        assert!(
            f[0].starts_with("launchguard: launch.pmix: PMIX_MCA_psec=munge leaves the rank's PMIx only munge, but munged's socket /run/munge/munge.socket.2 is not inside the container"),
            "{r:#?}"
        );
        assert!(f[0].contains("unset PMIX_MCA_psec"), "{r:#?}");
        assert!(f[0].contains("--container-mounts=/run/munge"), "{r:#?}");
        assert!(r.stderr.contains("this launch was stopped"), "{r:#?}");
        // both fixes work
        let r = pmix(
            &[("PMIX_MCA_psec", "munge"), ("PMIX_MCA_gds", "hash")],
            &["--container-mounts=/run/munge"],
            "the fix: --container-mounts=/run/munge",
        );
        assert!(started(&r) && r.findings().is_empty(), "{r:#?}");
        let r = pmix(
            &[("PMIX_MCA_psec", "native"), ("PMIX_MCA_gds", "hash")],
            &[],
            "the fix: PMIX_MCA_psec=native",
        );
        assert!(started(&r) && r.findings().is_empty(), "{r:#?}");

        // 3. The user limited gds to the shared-memory store: stopped, with the fix.
        let r = pmix(&[("PMIX_MCA_gds", "ds12")], &[], "PMIX_MCA_gds=ds12");
        assert_eq!(r.code, 1, "{r:#?}");
        let f = r.findings();
        assert_eq!(f.len(), 1, "{r:#?}");
        assert!(
            f[0].starts_with("launchguard: launch.pmix: inside the container the PMIx server's directory PMIX_SERVER_TMPDIR="),
            "{r:#?}"
        );
        assert!(
            f[0].contains("PMIX_MCA_gds=ds12 leaves no other store"),
            "{r:#?}"
        );
        assert!(f[0].contains("PMIX_MCA_gds=hash"), "{r:#?}");
    }
    // What the errors say is what PMIx does: with launchguard in warn mode the launches run and fail
    // the way its lines said.
    let _s = Stack::new(Order::After, "mode=warn gpu_steps_only=no");
    let r = pmix(
        &[("PMIX_MCA_psec", "munge"), ("PMIX_MCA_gds", "hash")],
        &[],
        "PMIX_MCA_psec=munge, warn mode",
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stderr
            .contains("unable to find any usable plugins for the PSEC framework"),
        "{r:#?}"
    );
    assert_eq!(r.findings().len(), 1, "{r:#?}");
    let r = pmix(
        &[("PMIX_MCA_gds", "ds12")],
        &[],
        "PMIX_MCA_gds=ds12, warn mode",
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stderr
            .contains("unable to find any usable plugins for the GDS framework"),
        "{r:#?}"
    );
    assert_eq!(r.findings().len(), 1, "{r:#?}");
}

/// `--export` without `ALL` on a container step, as Pyxis and enroot build the task's environment:
/// the user's own variables stay behind whether or not any was named, the image's PATH starts the
/// step, and a variable the image also sets keeps the image's value even with `--export=ALL`; Pyxis's
/// `--container-env` is what keeps the user's. The srun line names the variables and gives the fix
/// that brings them all back; the same inside `sbatch --export=NONE` (srun inherits
/// `SLURM_EXPORT_ENV=NONE`), where the line goes to the job's output.
#[test]
#[cfg_attr(
    not(lg_pyxis),
    ignore = "real Pyxis: runs on the host cluster only, with LG_PYXIS=1 (scripts/test.sh sets it where scripts/pyxis.sh installed Pyxis)"
)]
fn real_export_none_in_a_container() {
    require_pyxis();
    let _g = lock();
    let _s = Stack::new(Order::After, "mode=enforce gpu_steps_only=no");
    let image = format!("--container-image={NCCL_IMAGE}");
    let show = "echo NCCL_NET=${NCCL_NET:-unset} FI_PROVIDER=${FI_PROVIDER:-unset}";
    let mine = [("NCCL_NET", "Socket"), ("FI_PROVIDER", "efa")];
    let step = |what: &str, export: &[&str]| {
        let mut argv = vec!["srun", "-c", "2"];
        argv.extend_from_slice(export);
        argv.extend_from_slice(&[image.as_str(), "sh", "-c", show]);
        user(Order::After, what, &mine, &argv).0
    };

    // 1. --export=NONE: neither variable reaches the task; the image's NCCL_NET does.
    let r = step(
        "--export=NONE, NCCL_NET and FI_PROVIDER set",
        &["--export=NONE"],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "NCCL_NET=IB FI_PROVIDER=unset\n"),
        "{r:#?}"
    );
    assert_eq!(
        r.findings(),
        vec!["launchguard: launch.export_all: --export=NONE does not include ALL, so your FI_PROVIDER, NCCL_NET stay behind \
              (2 of yours set here); the container image supplies PATH and the step starts, but the program runs with the \
              image's NCCL/libfabric settings and without your tokens and cache paths; use --export=ALL \
              --container-env=FI_PROVIDER,NCCL_NET (Pyxis keeps the image's value of a variable it also sets unless \
              --container-env names it)"],
        "{r:#?}"
    );
    // 2. --export=ALL alone: FI_PROVIDER comes back, NCCL_NET stays the image's.
    let r = step("--export=ALL alone", &["--export=ALL"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "NCCL_NET=IB FI_PROVIDER=efa\n"),
        "{r:#?}"
    );
    // 3. The fix as printed: both are the user's.
    let r = step(
        "the fix: --export=ALL --container-env=FI_PROVIDER,NCCL_NET",
        &["--export=ALL", "--container-env=FI_PROVIDER,NCCL_NET"],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "NCCL_NET=Socket FI_PROVIDER=efa\n"),
        "{r:#?}"
    );
    assert!(r.findings().is_empty(), "{r:#?}");
    // 4. One variable, named in nothing: the line is about it alone.
    let r = user(
        Order::After,
        "--export=HOME, only NCCL_DEBUG set",
        &[("NCCL_DEBUG", "INFO")],
        &[
            "srun",
            "-c",
            "2",
            "--export=HOME",
            &format!("--container-image={IMAGE}"),
            "sh",
            "-c",
            "echo NCCL_DEBUG=${NCCL_DEBUG:-unset}",
        ],
    )
    .0;
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "NCCL_DEBUG=unset\n"),
        "{r:#?}"
    );
    let f = r.findings();
    assert_eq!(f.len(), 1, "{r:#?}");
    assert!(
        f[0].contains("so your NCCL_DEBUG stays behind (1 of yours set here)"),
        "{r:#?}"
    );
    assert!(
        f[0].contains("use --export=ALL,HOME --container-env=NCCL_DEBUG"),
        "{r:#?}"
    );

    // 5. sbatch --export=NONE: the script's own exports stay behind its container sruns.
    let script = format!("{SCRATCH}/pyxis-export-none.sh");
    let out = format!("{SCRATCH}/pyxis-export-none.out");
    let _ = std::fs::remove_file(host_path(&out));
    std::fs::write(
        host_path(&script),
        format!(
            "#!/bin/sh\nexport NCCL_NET=Socket FI_PROVIDER=efa\n\
             srun {image} sh -c '{show}'\n\
             srun --export=ALL --container-env=FI_PROVIDER,NCCL_NET {image} sh -c '{fixed}'\n",
            fixed = show.replace("echo ", "echo fixed: ")
        ),
    )
    .unwrap();
    let (r, _) = user(
        Order::After,
        "sbatch --export=NONE, a script that exports NCCL_NET and FI_PROVIDER",
        &[],
        &[
            "sbatch",
            "-W",
            "-c",
            "2",
            "--export=NONE",
            "-o",
            &out,
            &script,
        ],
    );
    let text = std::fs::read_to_string(host_path(&out)).unwrap_or_default();
    eprintln!("(job output)\n{text}");
    assert_eq!(r.code, 0, "{r:#?}");
    // sbatch cannot see the sruns' options: its line covers both kinds of step
    assert!(
        r.stderr.contains(
            "(a container srun starts, its image supplies PATH, but without your variables)"
        ),
        "{r:#?}"
    );
    assert!(text.contains("NCCL_NET=IB FI_PROVIDER=unset\n"), "{text}");
    assert!(
        text.contains("launchguard: launch.export_all: SLURM_EXPORT_ENV=NONE does not include ALL, so your FI_PROVIDER, NCCL_NET stay behind (2 of yours set here)"),
        "{text}"
    );
    assert!(
        text.contains("add --export=ALL --container-env=FI_PROVIDER,NCCL_NET to this srun"),
        "{text}"
    );
    assert!(
        text.contains("fixed: NCCL_NET=Socket FI_PROVIDER=efa\n"),
        "{text}"
    );
}
