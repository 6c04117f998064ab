//! `launchguard check` against the real services and files of this machine: a private munged with a
//! key of the wrong mode or owner, stopped, or stale; hostnames resolving to fe80:: or loopback (a
//! private mount + UTS namespace with its own /etc/hosts); RealMemory above the hardware; the pmix
//! plugin without its library (hidden in a mount namespace, where srun itself fails the same way);
//! enroot's runtime directory missing; a required plugstack line to a missing .so; a hung check.
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

mod common;
use common::*;
use std::path::Path;

#[test]
fn munge_key_mode_owner_and_a_stale_munged_are_found_on_a_real_munged() {
    let m = Munged::start("munge-key");
    let cfg = config(&m.dir, &m.section());
    let (code, rep) = check(&cfg, &["node.munge"]);
    for c in rep["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "ok", "{c}");
    }
    assert_eq!(code, 0);
    assert!(rep["facts"]["munge_key_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    let key = m.key.to_str().unwrap();
    cmd(&["chmod", "0644", key]);
    let (code, rep) = check(&cfg, &["node.munge"]);
    assert_eq!(status_of(&rep, "node.munge.key_mode"), "critical");
    assert!(message_of(&rep, "node.munge.key_mode").contains("chmod 0400"));
    assert_eq!(code, 2);
    cmd(&["chmod", "0600", key]);
    assert_eq!(
        status_of(
            &check(&cfg, &["node.munge.key_mode"]).1,
            "node.munge.key_mode"
        ),
        "warning"
    );
    cmd(&["chmod", "0400", key]);
    cmd(&["chown", "root:root", key]);
    let (_, rep) = check(&cfg, &["node.munge"]);
    assert_eq!(status_of(&rep, "node.munge.key_owner"), "critical");
    assert!(message_of(&rep, "node.munge.key_owner").contains("owned by uid 0"));
    cmd(&["chown", "munge:munge", key]);

    // A new key on disk while munged still runs with the old one: munged's credentials still
    // round-trip on this node, only the start time gives it away.
    cmd(&[
        "dd",
        "if=/dev/urandom",
        &format!("of={key}"),
        "bs=128",
        "count=1",
        "conv=notrunc",
    ]);
    cmd(&["touch", "-d", "+5 seconds", key]);
    let (_, rep) = check(&cfg, &["node.munge"]);
    assert_eq!(status_of(&rep, "node.munge.key_stale"), "warning", "{rep}");
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "ok");
}

/// As a user, the key under a directory only munge may open (0700) cannot be judged: one row says to
/// run as root instead of five UNKNOWN lines ("no key to inspect"), and the checks that work still
/// show (the round trip, which needs no key, is OK).
#[test]
fn a_user_is_told_once_to_run_as_root_for_the_checks_it_cannot_read() {
    let m = Munged::start("munge-user");
    let cfg = config(&m.dir, &m.section());
    let o = cmd(&[
        "runuser",
        "-u",
        "lgtest",
        "--",
        bin(),
        "check",
        "-v",
        "--config",
        &cfg,
        "--only",
        "node.munge",
    ]);
    let root_rows: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("ROOT "))
        .collect();
    assert_eq!(root_rows.len(), 1, "{o:?}");
    assert!(
        root_rows[0].starts_with("ROOT     node.munge.key_present, key_owner, key_mode, key_stale, key_digest: not judged"),
        "{o:?}"
    );
    assert!(root_rows[0].contains("sudo launchguard check"), "{o:?}");
    assert!(
        !o.stdout.lines().any(|l| l.starts_with("UNKNOWN ")),
        "{o:?}"
    );
    assert!(!o.stdout.contains("no key to inspect"), "{o:?}");
    assert!(o.stdout.contains("OK       node.munge.roundtrip"), "{o:?}");
    assert!(o.stdout.contains(", 5 need root ("), "{o:?}");
    // As root the same checks are judged, every one OK.
    let (code, rep) = check(&cfg, &["node.munge"]);
    assert_eq!(code, 0, "{rep}");
}

#[test]
fn munged_stopped_is_critical_and_its_round_trip_unknown() {
    let m = Munged::start("munge-stopped");
    let cfg = config(&m.dir, &m.section());
    m.stop();
    let (code, rep) = check(&cfg, &["node.munge"]);
    assert_eq!(status_of(&rep, "node.munge.daemon"), "critical");
    assert!(message_of(&rep, "node.munge.daemon").contains("systemctl enable --now munge"));
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "unknown");
    assert_eq!(code, 2);
}

/// munged started with another `--pid-file` than the config names (a source build under
/// /usr/local/var): the socket that answers is a running munged and the round trip is judged;
/// stopped, the same config finds no munged.
#[test]
fn a_munged_without_the_configured_pid_file_is_found_by_its_socket() {
    let m = Munged::start("munge-nopid");
    let elsewhere = m.dir.join("not-munged.pid");
    let cfg = config(
        &m.dir,
        &m.section().replace(
            &m.pid_file.display().to_string(),
            &elsewhere.display().to_string(),
        ),
    );
    let (_, rep) = check(&cfg, &["node.munge.daemon", "node.munge.roundtrip"]);
    assert_eq!(status_of(&rep, "node.munge.daemon"), "ok", "{rep}");
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "ok", "{rep}");
    m.stop();
    let (_, rep) = check(&cfg, &["node.munge.daemon", "node.munge.roundtrip"]);
    assert_eq!(status_of(&rep, "node.munge.daemon"), "critical", "{rep}");
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "unknown", "{rep}");
}

#[test]
fn a_munged_with_a_foreign_key_fails_the_round_trip() {
    // Two munged daemons with different keys: a credential from one does not decode on the other,
    // as between two nodes with different keys.
    let a = Munged::start("munge-a");
    let b = Munged::start("munge-b");
    let cred = cmd(&["munge", "-n", "-S", a.socket.to_str().unwrap()]);
    assert_eq!(cred.code, 0);
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "echo '{}' | unmunge -S {}",
            cred.stdout.trim(),
            b.socket.display()
        ))
        .output()
        .unwrap();
    assert!(!out.status.success());
    // And the digests differ, which `launchguard sweep` compares across nodes.
    let da = check(&config(&a.dir, &a.section()), &["node.munge.key_digest"]).1;
    let db = check(&config(&b.dir, &b.section()), &["node.munge.key_digest"]).1;
    assert_ne!(
        da["facts"]["munge_key_digest"],
        db["facts"]["munge_key_digest"]
    );
}

/// munged's own rule for the directories above its files, on a real munged: a group-writable
/// directory above the key (here the scratch directory that holds `etc/munge.key`) makes munged
/// refuse to start and the check CRITICAL with `chmod g-w`; the sticky bit (1775) passes both.
/// A socket directory users cannot search fails users' `munge` while root's works.
#[test]
fn munged_refuses_insecure_directories_and_the_check_says_so_first() {
    let m = Munged::start("munge-dirs");
    let cfg = config(&m.dir, &m.section());
    let dir = m.dir.to_str().unwrap();
    let (_, rep) = check(
        &cfg,
        &["node.munge.dirs_secure", "node.munge.socket_dir_access"],
    );
    assert_eq!(status_of(&rep, "node.munge.dirs_secure"), "ok", "{rep}");
    assert_eq!(
        status_of(&rep, "node.munge.socket_dir_access"),
        "ok",
        "{rep}"
    );

    cmd(&["chmod", "0775", dir]);
    let (code, rep) = check(&cfg, &["node.munge.dirs_secure"]);
    assert_eq!(
        status_of(&rep, "node.munge.dirs_secure"),
        "critical",
        "{rep}"
    );
    assert_eq!(code, 2);
    let msg = message_of(&rep, "node.munge.dirs_secure");
    assert!(msg.contains(&format!("chmod g-w '{dir}'")), "{msg}");
    m.stop();
    let o = m.try_run();
    assert_ne!(o.code, 0, "munged started on an insecure path: {o:?}");
    assert!(
        format!("{}{}", o.stdout, o.stderr).contains("group-writable"),
        "{o:?}"
    );

    cmd(&["chmod", "1775", dir]);
    let (_, rep) = check(&cfg, &["node.munge.dirs_secure"]);
    assert_eq!(status_of(&rep, "node.munge.dirs_secure"), "ok", "{rep}");
    m.run();

    let run = m.socket.parent().unwrap().to_str().unwrap();
    cmd(&["chmod", "0700", run]);
    let (_, rep) = check(&cfg, &["node.munge.socket_dir_access"]);
    assert_eq!(
        status_of(&rep, "node.munge.socket_dir_access"),
        "critical",
        "{rep}"
    );
    assert!(
        message_of(&rep, "node.munge.socket_dir_access").contains(&format!("chmod a+x '{run}'"))
    );
    let sock = m.socket.to_str().unwrap();
    assert_eq!(
        cmd(&["munge", "-n", "-S", sock]).code,
        0,
        "root's munge works"
    );
    let user = cmd(&["runuser", "-u", "lgtest", "--", "munge", "-n", "-S", sock]);
    assert_ne!(user.code, 0, "a user reached the socket: {user:?}");
    cmd(&["chmod", "0755", run]);
    cmd(&["chmod", "0755", dir]);
}

#[test]
fn the_socket_client_speaks_munge_and_unmunge_wire_protocol_with_a_real_munged() {
    // launchguard's round trip talks to munged's socket itself (no `munge`/`unmunge` processes):
    // its credential must decode with the real `unmunge`, the real `munge`'s with it, and a
    // credential of another key must fail as `unmunge` fails.
    use launchguard::gather::munge_socket::{decode, encode};
    let t = std::time::Duration::from_secs(5);
    let a = Munged::start("munge-wire-a");
    let b = Munged::start("munge-wire-b");
    let ours = encode(&a.socket, t).unwrap();
    assert!(
        ours.starts_with(b"MUNGE:") && ours.ends_with(b":"),
        "{ours:?}"
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "echo '{}' | unmunge -S {}",
            String::from_utf8_lossy(&ours),
            a.socket.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let theirs = cmd(&["munge", "-n", "-S", a.socket.to_str().unwrap()]);
    assert_eq!(theirs.code, 0);
    decode(&a.socket, theirs.stdout.trim().as_bytes(), t).unwrap();
    let e = decode(&b.socket, theirs.stdout.trim().as_bytes(), t).unwrap_err();
    assert!(e.contains("munge error 14"), "{e}");
    // A replayed credential is refused, as unmunge refuses it.
    let e = decode(&a.socket, theirs.stdout.trim().as_bytes(), t).unwrap_err();
    assert!(e.contains("munge error 17"), "{e}");
}

/// Runs `launchguard check` in a private mount + UTS namespace with its own /etc/hosts and hostname.
fn check_in_ns(dir: &Path, hosts: &str, hostname: &str, only: &str) -> serde_json::Value {
    let hp = dir.join("hosts");
    std::fs::write(&hp, hosts).unwrap();
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=ns\nNodeName=lgx[1-3] CPUs=1 RealMemory=100\n",
    )
    .unwrap();
    let cfg = config(dir, &format!("slurm_conf = \"{}\"\n", conf.display()));
    let script = format!(
        "mount --bind {} /etc/hosts && hostname {hostname} && exec {} check --json --config {cfg} --only {only}",
        hp.display(),
        bin()
    );
    let o = cmd(&["unshare", "--mount", "--uts", "--", "sh", "-c", &script]);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"))
}

#[test]
fn hostnames_resolving_to_fe80_or_only_loopback_are_critical() {
    let d = scratch("hostname");
    // The hostname only on an IPv6 line (glibc sorts an IPv4 answer before fe80::, so the failing
    // case is a name with no IPv4 at all).
    let rep = check_in_ns(
        &d,
        "127.0.0.1 localhost\nfe80::1 lgx1\n",
        "lgx1",
        "node.hostname",
    );
    assert_eq!(
        status_of(&rep, "node.hostname.link_local"),
        "critical",
        "{rep}"
    );
    assert!(message_of(&rep, "node.hostname.link_local").contains("fe80::1"));
    // Issue 24 item 8: the same fe80:: line after an IPv4 one (glibc answers the IPv4 first) is a
    // warning: Slurm takes the first address, programs that try each one can pick it.
    let rep = check_in_ns(
        &d,
        "127.0.0.1 localhost\n10.9.8.7 lgx1\nfe80::1 lgx1\n",
        "lgx1",
        "node.hostname",
    );
    assert_eq!(
        status_of(&rep, "node.hostname.link_local"),
        "warning",
        "{rep}"
    );
    assert!(
        message_of(&rep, "node.hostname.link_local").contains("fe80::1 (not first)"),
        "{rep}"
    );
    let rep = check_in_ns(
        &d,
        "127.0.0.1 localhost\nfe80::1 lgx1\n",
        "lgx1",
        "node.hostname",
    );
    assert_eq!(
        status_of(&rep, "node.hostname.resolves"),
        "critical",
        "{rep}"
    );
    let rep = check_in_ns(
        &d,
        "127.0.0.1 localhost\n127.0.1.1 lgx1\n",
        "lgx1",
        "node.hostname",
    );
    assert_eq!(
        status_of(&rep, "node.hostname.loopback"),
        "critical",
        "{rep}"
    );
    assert_eq!(status_of(&rep, "node.hostname.link_local"), "ok");
    let rep = check_in_ns(&d, "127.0.0.1 localhost\n", "lgx1", "node.hostname");
    assert_eq!(
        status_of(&rep, "node.hostname.resolves"),
        "critical",
        "{rep}"
    );
    // The same namespace with a good entry is clean, so the namespace itself is not the cause.
    let own = common::cmd(&["hostname", "-I"]).stdout;
    if let Some(ip) = own.split_whitespace().find(|a| !a.contains(':')) {
        let rep = check_in_ns(
            &d,
            &format!("127.0.0.1 localhost\n{ip} lgx1\n"),
            "lgx1",
            "node.hostname",
        );
        for id in [
            "node.hostname.resolves",
            "node.hostname.link_local",
            "node.hostname.loopback",
        ] {
            assert_eq!(status_of(&rep, id), "ok", "{rep}");
        }
    }
}

#[test]
fn real_memory_above_what_slurmd_c_reports_is_critical() {
    let d = scratch("realmem");
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let slurmd_c = cmd(&["slurmd", "-C"]).stdout;
    let mem: u64 = slurmd_c
        .split_whitespace()
        .find_map(|w| w.strip_prefix("RealMemory="))
        .unwrap()
        .parse()
        .unwrap();
    let node = launchguard_tests::node_name();
    let write = |m: u64| {
        let text: String = real
            .lines()
            .map(|l| {
                if l.starts_with(&format!("NodeName={node} ")) {
                    l.split_whitespace()
                        .map(|w| {
                            if w.starts_with("RealMemory=") {
                                format!("RealMemory={m}")
                            } else {
                                w.to_string()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(d.join("slurm.conf"), text + "\n").unwrap();
        config(
            &d,
            &format!("slurm_conf = \"{}\"\n", d.join("slurm.conf").display()),
        )
    };
    let (_, rep) = check(&write(mem + 1), &["node.slurm_conf.real_memory"]);
    assert_eq!(status_of(&rep, "node.slurm_conf.real_memory"), "critical");
    assert!(
        message_of(&rep, "node.slurm_conf.real_memory").contains(&format!("RealMemory={mem}")),
        "{rep}"
    );
    let (_, rep) = check(&write(mem), &["node.slurm_conf.real_memory"]);
    assert_eq!(status_of(&rep, "node.slurm_conf.real_memory"), "ok");
}

#[test]
fn pmix_without_its_library_is_detected_and_srun_fails_the_same_way() {
    let libdir = "/usr/lib/x86_64-linux-gnu/pmix2";
    if !Path::new(libdir).is_dir() {
        panic!("{libdir} is missing: scripts/test.sh installs libpmix-dev (apt-get install libpmix-dev)");
    }
    let d = scratch("pmix");
    let cfg = config(&d, "");
    let (_, rep) = check(&cfg, &["node.pmix"]);
    assert_eq!(status_of(&rep, "node.pmix.offered"), "ok");
    assert_eq!(status_of(&rep, "node.pmix.loads"), "ok", "{rep}");
    let script = format!(
        "mount -t tmpfs none {libdir} && {} check --json --config {cfg} --only node.pmix; cd /tmp && srun --mpi=pmix -n1 true",
        bin()
    );
    let o = cmd(&["unshare", "--mount", "--", "sh", "-c", &script]);
    let line = o.stdout.lines().next().unwrap_or_default();
    let rep: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    // MpiDefault=none on the test cluster: a WARNING (CRITICAL only with MpiDefault=pmix).
    assert_eq!(status_of(&rep, "node.pmix.loads"), "warning", "{rep}");
    assert!(message_of(&rep, "node.pmix.loads").contains("libpmix-dev"));
    assert!(
        o.stderr.contains("can not load PMIx library"),
        "srun: {o:?}"
    );
}

#[test]
fn enroot_runtime_dir_missing_is_critical_and_1777_is_fine() {
    let d = scratch("enroot");
    let run = d.join("run/enroot");
    let conf = d.join("enroot.conf");
    std::fs::write(
        &conf,
        format!("ENROOT_RUNTIME_PATH {}/user-$(id -u)\n", run.display()),
    )
    .unwrap();
    let cfg = config(&d, &format!("[enroot]\nconf = \"{}\"\n", conf.display()));
    let (code, rep) = check(&cfg, &["node.enroot.run_dir"]);
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "critical");
    assert!(message_of(&rep, "node.enroot.run_dir").contains("install -d -m 1777"));
    assert_eq!(code, 2);
    // launchguard listed with enroot_repair=yes (its default) for this enroot.conf: it repairs the
    // directory at the next container launch, so a warning (health drains only for critical).
    let ps = d.join("plugstack.conf");
    let slurm_conf = d.join("slurm.conf");
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let text: String = real
        .lines()
        .filter(|l| !l.starts_with("PlugStackConfig"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        &slurm_conf,
        format!("{text}PlugStackConfig={}\n", ps.display()),
    )
    .unwrap();
    let with_plugin = |args: &str| {
        std::fs::write(
            &ps,
            format!(
                "required {} {args}\n",
                launchguard_tests::built_plugin().display()
            ),
        )
        .unwrap();
        config(
            &d,
            &format!(
                "slurm_conf = \"{}\"\n[enroot]\nconf = \"{}\"\n",
                slurm_conf.display(),
                conf.display()
            ),
        )
    };
    let cfg2 = with_plugin(&format!("enroot_conf={}", conf.display()));
    let (code, rep) = check(&cfg2, &["node.enroot.run_dir"]);
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "warning", "{rep}");
    assert!(message_of(&rep, "node.enroot.run_dir")
        .contains("repairs it as root at the next container launch"));
    assert_eq!(code, 1);
    // repair off, or the plugin reading another enroot.conf: critical again
    for args in [
        format!("enroot_conf={} enroot_repair=no", conf.display()),
        String::new(),
    ] {
        let (_, rep) = check(&with_plugin(&args), &["node.enroot.run_dir"]);
        assert_eq!(
            status_of(&rep, "node.enroot.run_dir"),
            "critical",
            "{args}: {rep}"
        );
    }
    std::fs::create_dir_all(&run).unwrap();
    cmd(&["chmod", "1777", run.to_str().unwrap()]);
    let (code, rep) = check(&cfg, &["node.enroot.run_dir"]);
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "ok");
    assert_eq!(code, 0);
}

#[test]
fn a_required_plugstack_line_to_a_missing_so_is_critical() {
    let d = scratch("plugstack");
    let ps = d.join("plugstack.conf");
    let conf = d.join("slurm.conf");
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let text: String = real
        .lines()
        .filter(|l| !l.starts_with("PlugStackConfig"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&conf, format!("{text}PlugStackConfig={}\n", ps.display())).unwrap();
    let cfg = config(&d, &format!("slurm_conf = \"{}\"\n", conf.display()));
    std::fs::write(
        &ps,
        format!(
            "required {}\nrequired /nonexistent/spank_gone.so\n",
            launchguard_tests::built_plugin().display()
        ),
    )
    .unwrap();
    let (code, rep) = check(&cfg, &["node.plugstack"]);
    assert_eq!(
        status_of(&rep, "node.plugstack.required_so"),
        "critical",
        "{rep}"
    );
    assert!(message_of(&rep, "node.plugstack.required_so").contains("plugstack.conf:2"));
    assert_eq!(code, 2);
    std::fs::write(
        &ps,
        format!("required {}\n", launchguard_tests::built_plugin().display()),
    )
    .unwrap();
    let (_, rep) = check(&cfg, &["node.plugstack"]);
    assert_eq!(status_of(&rep, "node.plugstack.required_so"), "ok", "{rep}");
    assert_eq!(status_of(&rep, "node.plugstack.parse"), "ok");
}

#[test]
fn a_hung_check_is_unknown_within_the_timeout_and_never_critical() {
    // A munged that accepts the connection and never answers, like a wedged daemon or a read on a dead
    // NFS server: the family's round trip blocks past check_timeout_secs. (Files are opened
    // O_NONBLOCK and must be regular, so a FIFO no longer hangs anything: see the end of this test.)
    let d = scratch("hung");
    let sock = d.join("munge.socket.2");
    let _wedged =
        std::os::unix::net::UnixListener::bind(&sock).expect("bind a socket nobody answers");
    let fifo = d.join("env.sh");
    assert_eq!(cmd(&["mkfifo", fifo.to_str().unwrap()]).code, 0);
    let cfg = config(
        &d,
        &format!(
            "check_timeout_secs = 1\n[munge]\nsocket = \"{}\"\n",
            sock.display()
        ),
    );
    let t = std::time::Instant::now();
    let (code, rep) = check(&cfg, &["node.munge", "node.slurm_conf"]);
    // A check that waited for the wedged munged would hang until the harness kills it (60 s); the
    // 1 s timeout plus a loaded machine's process start stays far below 15 s.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "unknown", "{rep}");
    assert!(
        message_of(&rep, "node.munge.roundtrip").contains("did not finish within 1 s"),
        "{rep}"
    );
    assert_eq!(status_of(&rep, "node.slurm_conf.real_memory"), "ok");
    assert_eq!(code, 3);
    // A FIFO where the munge key should be hangs nothing: it is not a regular file.
    let cfg = config(
        &d,
        &format!(
            "check_timeout_secs = 1\n[munge]\nkey = \"{}\"\n",
            fifo.display()
        ),
    );
    let (_, rep) = check(&cfg, &["node.munge.key_present"]);
    assert_eq!(
        status_of(&rep, "node.munge.key_present"),
        "critical",
        "{rep}"
    );
}

#[test]
fn bad_config_names_the_line_and_check_exits_unknown() {
    let d = scratch("badcfg");
    let cfg = config(&d, "interval_secs = 60\n[munge]\nkee = \"/x\"\n");
    let o = lg(&["check", "--config", &cfg]);
    assert_eq!(o.code, 3);
    assert!(
        o.stderr.contains("line 3") && o.stderr.contains("kee"),
        "{o:?}"
    );
    let o = lg(&[
        "agent",
        "--stderr",
        "--config",
        &cfg,
        "--socket",
        d.join("s.sock").to_str().unwrap(),
    ]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("does not start"), "{o:?}");
    assert!(!d.join("s.sock").exists());
}

#[test]
fn list_checks_names_every_family_and_marks_disabled_ones() {
    let d = scratch("list");
    let cfg = config(&d, "disabled = [\"node.enroot\"]\n");
    let o = lg(&["list-checks", "--config", &cfg]);
    assert_eq!(o.code, 0);
    for fam in [
        "munge",
        "hostname",
        "slurm_conf",
        "pmix",
        "enroot",
        "plugstack",
        "nccl_env",
        "devices",
        "imex",
    ] {
        assert!(o.stdout.contains(&format!("node.{fam}.")), "{fam}");
    }
    assert!(o
        .stdout
        .lines()
        .any(|l| l.starts_with("node.enroot.run_dir") && l.contains("disabled")));
    assert!(o
        .stdout
        .lines()
        .any(|l| l.starts_with("node.munge.key_mode") && l.contains("enabled")));
}

/// Issue 14 item 10, on this node's real files: enroot's own default runtime path is judged (not
/// UNKNOWN), a data path whose parent is missing is not "on the root filesystem", one fixed path
/// owned by one user breaks the others, and a hooks.d beside enroot.conf is read.
#[test]
fn enroot_default_runtime_path_and_storage_paths_are_judged() {
    let d = scratch("enroot-storage");
    let conf = d.join("enroot.conf");
    let locked = d.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    cmd(&["chmod", "0755", locked.to_str().unwrap()]);
    let owned = d.join("shared-data");
    std::fs::create_dir_all(&owned).unwrap();
    cmd(&["chown", "65534", owned.to_str().unwrap()]);
    cmd(&["chmod", "0755", owned.to_str().unwrap()]);
    // No ENROOT_RUNTIME_PATH: enroot's default ${XDG_RUNTIME_DIR}/enroot.
    std::fs::write(
        &conf,
        format!(
            "ENROOT_CACHE_PATH {}/raid/cache/user-$(id -u)\nENROOT_DATA_PATH {}\n",
            locked.display(),
            owned.display()
        ),
    )
    .unwrap();
    let cfg = config(&d, &format!("[enroot]\nconf = \"{}\"\n", conf.display()));
    let (code, rep) = check(&cfg, &["node.enroot"]);
    assert_eq!(
        status_of(&rep, "node.enroot.runtime_path"),
        "warning",
        "{rep}"
    );
    assert!(message_of(&rep, "node.enroot.runtime_path").contains("${XDG_RUNTIME_DIR}/enroot"));
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "ok", "{rep}");
    let storage = message_of(&rep, "node.enroot.storage");
    assert_eq!(status_of(&rep, "node.enroot.storage"), "critical", "{rep}");
    assert!(
        storage.contains(&format!("'{}/raid/cache' does not exist", locked.display())),
        "{storage}"
    );
    assert!(storage.contains("uid 65534 owns it"), "{storage}");
    assert!(!storage.contains("root filesystem"), "{storage}");
    assert_eq!(code, 2, "{rep}");
    assert!(rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] != "unknown"));
    // The common site layout: a 1777 parent, per-user paths, the runtime under /run/enroot's twin.
    let run = d.join("run/enroot");
    std::fs::create_dir_all(&run).unwrap();
    cmd(&[
        "chmod",
        "1777",
        run.to_str().unwrap(),
        locked.to_str().unwrap(),
    ]);
    std::fs::write(
        &conf,
        format!(
            "ENROOT_RUNTIME_PATH {}/user-$(id -u)\nENROOT_DATA_PATH {}/data/user-$(id -u)\n",
            run.display(),
            locked.display()
        ),
    )
    .unwrap();
    let (_, rep) = check(&cfg, &["node.enroot.storage", "node.enroot.nvidia_hook"]);
    // /tmp is on the root filesystem here: a warning, no longer a critical.
    assert_ne!(status_of(&rep, "node.enroot.storage"), "critical", "{rep}");
    // This test machine has no NVIDIA GPU: the hook is not required.
    assert_eq!(status_of(&rep, "node.enroot.nvidia_hook"), "ok", "{rep}");
}

/// Issue 14 item 11: a configless slurmd reads the controller's plugstack.conf from its cache, so
/// Pyxis listed in a plugstack.conf.d file that this copy does not include never loads; and
/// Pyxis's runtime_path on a small tmpfs (a real one, mounted here) is found.
#[test]
fn plugins_in_files_the_running_slurm_does_not_read_do_not_pass() {
    let d = scratch("configless");
    let cache = d.join("conf-cache");
    std::fs::create_dir_all(cache.join("plugstack.conf.d")).unwrap();
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let text: String = real
        .lines()
        .filter(|l| !l.starts_with("PlugStackConfig"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(cache.join("slurm.conf"), text).unwrap();
    // launchguard as the cluster lists it (by its installed name, spank_launchguard.so).
    let so = d.join("spank_launchguard.so");
    std::fs::copy(launchguard_tests::built_plugin(), &so).unwrap();
    let rt = d.join("pyxis-rt");
    std::fs::create_dir_all(&rt).unwrap();
    let mounted = cmd(&[
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=64m",
        "lg-pyxis-rt",
        rt.to_str().unwrap(),
    ]);
    assert_eq!(mounted.code, 0, "{mounted:?}");
    std::fs::write(
        cache.join("plugstack.conf.d/10-pyxis.conf"),
        format!(
            "required /usr/lib/slurm/spank_pyxis.so runtime_path={}\n",
            rt.display()
        ),
    )
    .unwrap();
    std::fs::write(
        cache.join("plugstack.conf"),
        format!("required {}\n", so.display()),
    )
    .unwrap();
    let cfg = config(
        &d,
        &format!("slurm_conf = \"{}\"\n", cache.join("slurm.conf").display()),
    );
    let (code, rep) = check(&cfg, &["node.plugstack"]);
    let unread = message_of(&rep, "node.plugstack.unread");
    assert_eq!(
        status_of(&rep, "node.plugstack.unread"),
        "critical",
        "{rep}"
    );
    assert!(unread.contains("spank_pyxis.so ("), "{unread}");
    assert!(unread.contains("configless"), "{unread}");
    assert!(
        unread.contains(&cache.join("plugstack.conf").display().to_string()),
        "{unread}"
    );
    assert_eq!(code, 2);
    // Once the cached stack includes it, Pyxis is read: its runtime_path is judged (a 64 MiB
    // tmpfs) and its missing .so is what fails now.
    std::fs::write(
        cache.join("plugstack.conf"),
        format!(
            "include plugstack.conf.d/*.conf\nrequired {}\n",
            so.display()
        ),
    )
    .unwrap();
    let (_, rep) = check(&cfg, &["node.plugstack"]);
    let umount = cmd(&["umount", rt.to_str().unwrap()]);
    assert_eq!(status_of(&rep, "node.plugstack.unread"), "ok", "{rep}");
    assert_eq!(
        status_of(&rep, "node.plugstack.pyxis_runtime"),
        "warning",
        "{rep}"
    );
    assert!(message_of(&rep, "node.plugstack.pyxis_runtime").contains("tmpfs of 0.1 GiB"));
    assert_eq!(
        status_of(&rep, "node.plugstack.required_so"),
        "critical",
        "{rep}"
    );
    assert_eq!(umount.code, 0, "{umount:?}");
}

/// Issue 32: `AutoDetect=nvml` on a Slurm built without NVML (Debian's has no gpu_nvml.so) gives
/// slurmd no GPU at all, while slurm.conf says `Gres=gpu:2`. The real slurmd agrees (`slurmd -G`
/// prints no gpu GRES and says the NVML library is missing), and `node.gpu.gres` is CRITICAL with
/// the fix; the same node with `File=` lines instead is OK.
#[test]
fn autodetect_nvml_without_slurms_nvml_plugin_is_critical_and_slurmd_agrees() {
    let d = scratch("gres-autodetect");
    std::fs::copy("/etc/slurm/slurm.conf", d.join("slurm.conf")).unwrap();
    let cfg = config(
        &d,
        &format!("slurm_conf = \"{}\"\n", d.join("slurm.conf").display()),
    );
    let plugin_dir = cmd(&[
        "sh",
        "-c",
        "scontrol show config | awk -F' = ' '/^PluginDir/{print $2}'",
    ])
    .stdout
    .trim()
    .to_string();
    let has_nvml = plugin_dir
        .split(':')
        .any(|p| Path::new(p).join("gpu_nvml.so").exists());
    std::fs::write(d.join("gres.conf"), "AutoDetect=nvml\n").unwrap();
    let slurmd_g = cmd(&["slurmd", "-G", "-f", d.join("slurm.conf").to_str().unwrap()]);
    let said = format!("{}{}", slurmd_g.stdout, slurmd_g.stderr);
    let (code, rep) = check(&cfg, &["node.gpu.gres"]);
    if has_nvml {
        // A Slurm with NVML on a node without NVIDIA GPUs: nothing for this check to hold.
        assert_eq!(status_of(&rep, "node.gpu.gres"), "ok", "{rep}");
        return;
    }
    assert!(!said.contains("Name=gpu"), "slurmd detected GPUs: {said}");
    assert!(said.contains("nvml"), "slurmd said nothing of NVML: {said}");
    assert_eq!(status_of(&rep, "node.gpu.gres"), "critical", "{rep}");
    assert_eq!(code, 2);
    let m = message_of(&rep, "node.gpu.gres");
    assert!(
        m.contains("AutoDetect=nvml") && m.contains("no gpu_nvml.so"),
        "{m}"
    );
    assert!(m.contains("Name=gpu File=/dev/nvidia[0-N]"), "{m}");
    // The same node with its GPU files named: slurmd has GPUs again, the check passes.
    let real = std::fs::read_to_string("/etc/slurm/gres.conf").unwrap_or_default();
    std::fs::write(d.join("gres.conf"), &real).unwrap();
    let (_, rep) = check(&cfg, &["node.gpu.gres"]);
    assert_eq!(status_of(&rep, "node.gpu.gres"), "ok", "{rep}");
}

/// Issue 24 item 2, and item 3's plugstack part (the user's seat), on the real srun: a test plugin
/// with an option (tests/spank-hide/lgtest_opt.c) listed in `opt.conf` and in the dpkg-saved copy
/// that `include …/*` also reads is loaded twice (its init runs twice and srun -v says the option is
/// 'provided by both'); a drop-in users cannot open fails every user's srun while root's works; a
/// drop-in directory users cannot list hides the plugin from users' srun; a .so users cannot read
/// fails their srun. srun runs with a slurm.conf whose PlugStackConfig is the test's file (srun reads
/// the stack itself; the steps run on the cluster as usual).
#[test]
fn a_plugin_listed_twice_or_closed_to_users_is_found_as_users_srun_meets_it() {
    let d = scratch("plugstack-twice");
    let dropins = d.join("plugstack.conf.d");
    std::fs::create_dir_all(&dropins).unwrap();
    cmd(&["chmod", "755", dropins.to_str().unwrap()]);
    let so = d.join("lgtest_opt.so");
    let src = launchguard_tests::repo_root().join("tests/spank-hide/lgtest_opt.c");
    let cc = cmd(&[
        "gcc",
        "-shared",
        "-fPIC",
        "-O2",
        "-o",
        so.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    assert_eq!(cc.code, 0, "{cc:?}");
    let ps = d.join("plugstack.conf");
    let conf = d.join("slurm.conf");
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let text: String = real
        .lines()
        .filter(|l| !l.starts_with("PlugStackConfig"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&conf, format!("{text}PlugStackConfig={}\n", ps.display())).unwrap();
    let cfg = config(&d, &format!("slurm_conf = \"{}\"\n", conf.display()));
    let line = format!("required {}\n", so.display());
    let opt = dropins.join("opt.conf");
    std::fs::write(&opt, &line).unwrap();
    std::fs::write(dropins.join("opt.conf.dpkg-old"), &line).unwrap();
    std::fs::write(&ps, format!("include {}/*\n", dropins.display())).unwrap();
    let srun = |user: bool, extra: &str| {
        let who = if user { "runuser -u lgtest -- " } else { "" };
        cmd(&[
            "sh",
            "-c",
            &format!(
                "cd /tmp && {who}env SLURM_CONF={} srun -v -n1 {extra} true",
                conf.display()
            ),
        ])
    };
    let status = |id: &str| {
        let (_, rep) = check(&cfg, &["node.plugstack"]);
        (status_of(&rep, id), message_of(&rep, id))
    };

    // Listed twice through the glob: Slurm loads it twice.
    let r = srun(true, "");
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stderr.matches("lgtest_opt: init").count(), 2, "{r:?}");
    assert!(
        r.stderr
            .contains("option \"lgtest-opt\" provided by both lgtest_opt.so and lgtest_opt.so"),
        "{r:?}"
    );
    let (st, msg) = status("node.plugstack.duplicate");
    assert_eq!(st, "warning", "{msg}");
    assert!(
        msg.contains(&format!(
            "'{}/opt.conf.dpkg-old' is a package manager's saved copy",
            dropins.display()
        )),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("match only '{}/*.conf'", dropins.display())),
        "{msg}"
    );

    // The fix the check gives: the include reads *.conf only, and the plugin loads once.
    std::fs::write(&ps, format!("include {}/*.conf\n", dropins.display())).unwrap();
    let r = srun(true, "");
    assert_eq!(r.stderr.matches("lgtest_opt: init").count(), 1, "{r:?}");
    assert_eq!(status("node.plugstack.duplicate").0, "ok");
    assert_eq!(status("node.plugstack.user_read").0, "ok");

    // Each part of the plugstack made unreadable to users in turn: every user's srun then fails (or
    // silently runs without the plugin) while root's works, and the check names the part, the
    // severity and the chmod that fixes it.
    let unreadable = |path: &Path,
                      mode: &str,
                      restore: &str,
                      opt: &str,
                      says: Option<String>,
                      severity: &str,
                      fix: &str| {
        cmd(&["chmod", mode, path.to_str().unwrap()]);
        let r = srun(true, opt);
        assert_ne!(r.code, 0, "{r:?}");
        if let Some(says) = says {
            assert!(r.stderr.contains(&says), "{says}: {r:?}");
        }
        assert_eq!(srun(false, opt).code, 0, "root's srun");
        let (st, msg) = status("node.plugstack.user_read");
        assert_eq!(st, severity, "{msg}");
        let fix = format!("{fix} '{}'", path.display());
        assert!(msg.contains(&fix), "{fix}: {msg}");
        cmd(&["chmod", restore, path.to_str().unwrap()]);
    };
    // A drop-in users cannot open.
    let denied = format!("spank: Failed to open {}: Permission denied", opt.display());
    unreadable(
        &opt,
        "0600",
        "0644",
        "",
        Some(denied),
        "critical",
        "chmod o+r",
    );
    // A drop-in directory users cannot list: their srun runs without the plugin.
    let unknown = "unrecognized option '--lgtest-opt'".to_string();
    unreadable(
        &dropins,
        "0700",
        "0755",
        "--lgtest-opt",
        Some(unknown),
        "warning",
        "chmod o+rx",
    );
    // A required .so users cannot read.
    unreadable(&so, "0700", "0755", "", None, "critical", "chmod o+r");
    assert_eq!(status("node.plugstack.user_read").0, "ok");
}

/// Issue 24 item 3: enroot's paths from the user's seat. A 1777 data directory under a parent that
/// users cannot pass (mode 0700) is as good as missing for every non-root user: root's check of the
/// 1777 directory alone said nothing worse than the root filesystem.
#[test]
fn an_enroot_path_users_cannot_reach_is_critical() {
    let d = scratch("enroot-seat");
    let hidden = d.join("hidden");
    let data = hidden.join("data");
    std::fs::create_dir_all(&data).unwrap();
    cmd(&["chmod", "1777", data.to_str().unwrap()]);
    cmd(&["chmod", "0700", hidden.to_str().unwrap()]);
    let conf = d.join("enroot.conf");
    std::fs::write(
        &conf,
        format!("ENROOT_DATA_PATH {}/user-$(id -u)\n", data.display()),
    )
    .unwrap();
    let cfg = config(&d, &format!("[enroot]\nconf = \"{}\"\n", conf.display()));
    let (_, rep) = check(&cfg, &["node.enroot.storage"]);
    assert_eq!(status_of(&rep, "node.enroot.storage"), "critical", "{rep}");
    let m = message_of(&rep, "node.enroot.storage");
    assert!(
        m.contains(&format!(
            "users cannot pass '{}' (mode 0700, owned by uid 0)",
            hidden.display()
        )) && m.contains(&format!("chmod o+x '{}'", hidden.display())),
        "{m}"
    );
    // The same from a user's seat: runuser as the test user cannot create their directory.
    let mk = cmd(&[
        "runuser",
        "-u",
        "lgtest",
        "--",
        "mkdir",
        data.join("user-lgtest").to_str().unwrap(),
    ]);
    assert!(mk.stderr.contains("Permission denied"), "{mk:?}");
    cmd(&["chmod", "0755", hidden.to_str().unwrap()]);
    let (_, rep) = check(&cfg, &["node.enroot.storage"]);
    assert_ne!(status_of(&rep, "node.enroot.storage"), "critical", "{rep}");
}
