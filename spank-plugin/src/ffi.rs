//! The only `unsafe` in launchguard: the SPANK ABI. A leaf: it uses none of the crate's other modules.
//!
//! - the symbols Slurm's plugin loader reads (`plugin_name`, `plugin_type`, `plugin_version`,
//!   `spank_plugin_version`), with `plugin_version` taken from the headers at build time;
//! - [`guard`], which runs each of the five callbacks launchguard exports (they live in
//!   `crate::dispatch`) inside `catch_unwind`, so that a panic can never unwind into srun or
//!   slurmstepd (it is logged, and the launch goes on);
//! - safe wrappers over `spank_get_item`, `spank_getenv`, `spank_context` and Slurm's log functions.
//!
//! No `slurm_spank_job_prolog`/`epilog` is exported on purpose: each would make slurmd run a
//! `slurmstepd spank prolog/epilog` process for every job, and a failure there drains the node
//! (docs/spank.md, "Who runs which callback" and "What each context can read"). `spank_job_control_getenv` is never called (it segfaults slurmstepd in
//! job_script context on 22.05).

#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    clippy::upper_case_acronyms
)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[cfg(target_endian = "big")]
compile_error!("ffi::Spank::get_number reads SPANK integers of 2, 4 or 8 bytes through a zeroed u64; little-endian only");

mod sys {
    include!(concat!(env!("OUT_DIR"), "/spank_sys.rs"));
}

/// `SLURM_VERSION_NUMBER` of the headers this plugin was built against (`0xMMmmuu`).
pub const BUILT_FOR: u32 = sys::SLURM_VERSION_NUMBER;

/// Read by Slurm's plugin loader: the plugin's name.
#[no_mangle]
pub static plugin_name: [u8; 12] = *b"launchguard\0";
/// Read by Slurm's plugin loader: the plugin's type.
#[no_mangle]
pub static plugin_type: [u8; 6] = *b"spank\0";
/// Read by Slurm's plugin loader: must match the running Slurm's major.minor.
#[no_mangle]
pub static plugin_version: u32 = sys::SLURM_VERSION_NUMBER;
/// Read by Slurm's SPANK loader (the `SPANK_PLUGIN(name, 1)` convention).
#[no_mangle]
pub static spank_plugin_version: u32 = 1;

/// Which program and phase a callback runs in (`spank_context()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// srun.
    Local,
    /// slurmstepd.
    Remote,
    /// sbatch or salloc.
    Allocator,
    /// slurmd, prolog/epilog, or an error.
    Other,
}

/// Numeric SPANK items launchguard reads.
#[derive(Debug, Clone, Copy)]
pub enum NumItem {
    JobId,
    StepId,
    Uid,
    NodeId,
    JobNcpus,
    StepCpusPerTask,
    TaskGlobalId,
    TaskLocalId,
    /// The step's tasks on this node (`S_JOB_LOCAL_TASK_COUNT`; remote context).
    LocalTaskCount,
}

/// `access(path, R_OK | W_OK)`: `Ok(())` or the errno (a `libc::E*` value). The kernel applies the
/// devices cgroup here (EPERM) without opening the device (access(2)). A path with a NUL byte gives
/// `EINVAL`.
pub fn access_rw(path: &str) -> Result<(), i32> {
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call; access(2) only reads it.
    let rc = unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// `openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`: opens the directory `name`
/// (one path component) under the open directory `dir`, refusing a symlink (`ELOOP`) or anything
/// that is not a directory (`ENOTDIR`). Flags come from the `libc` crate, right on every
/// architecture (on arm64 `O_DIRECTORY`/`O_NOFOLLOW` differ from x86-64's).
pub fn open_dir_at(dir: &std::fs::File, name: &str) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let c = component(name)?;
    // SAFETY: `dir` is an open descriptor borrowed for the call and `c` a NUL-terminated string that
    // outlives it; openat(2) only reads them.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns; the File takes it over.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// `mkdirat(dir, name, mode)`: creates the directory `name` (one path component) under the open
/// directory `dir`; an existing entry gives `AlreadyExists` (a symlink there is never followed).
pub fn mkdir_at(dir: &std::fs::File, name: &str, mode: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let c = component(name)?;
    // SAFETY: as for openat above; mkdirat(2) only reads its arguments.
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One path component as a C string: no `/`, no NUL, not `.`/`..`.
fn component(name: &str) -> std::io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// The effective uid of this process (geteuid(2)).
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// String SPANK items launchguard reads.
#[derive(Debug, Clone, Copy)]
pub enum StrItem {
    VersionMajor,
    VersionMinor,
    VersionMicro,
}

/// The handle Slurm passes to a callback, with the plugstack arguments already decoded.
pub struct Spank {
    sp: sys::spank_t,
    args: Vec<String>,
}

impl Spank {
    /// The plugstack arguments (`mode=warn …`), lossily decoded, at most 64 of at most 4 KiB each.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The context this process runs in.
    pub fn context(&self) -> Context {
        // SAFETY: spank_context takes no arguments and only reads Slurm's global state.
        let c = unsafe { sys::spank_context() };
        match c {
            sys::S_CTX_LOCAL => Context::Local,
            sys::S_CTX_REMOTE => Context::Remote,
            sys::S_CTX_ALLOCATOR => Context::Allocator,
            _ => Context::Other,
        }
    }

    /// A numeric item, or `None` when Slurm does not offer it in this context.
    pub fn get_number(&self, item: NumItem) -> Option<u64> {
        let it = match item {
            NumItem::JobId => sys::S_JOB_ID,
            NumItem::StepId => sys::S_JOB_STEPID,
            NumItem::Uid => sys::S_JOB_UID,
            NumItem::NodeId => sys::S_JOB_NODEID,
            NumItem::JobNcpus => sys::S_JOB_NCPUS,
            NumItem::StepCpusPerTask => sys::S_STEP_CPUS_PER_TASK,
            NumItem::TaskGlobalId => sys::S_TASK_GLOBAL_ID,
            NumItem::TaskLocalId => sys::S_TASK_ID,
            NumItem::LocalTaskCount => sys::S_JOB_LOCAL_TASK_COUNT,
        };
        let mut buf: u64 = 0;
        // SAFETY: each of these items takes one pointer to an integer of 2 (S_JOB_NCPUS), 4 or 8
        // bytes (spank.h); `buf` is 8 zeroed bytes, aligned for any of them, so whichever width this
        // Slurm release writes, it stays inside `buf` and reads back correctly on little-endian.
        let rc = unsafe { sys::spank_get_item(self.sp, it, &mut buf as *mut u64) };
        (rc == sys::ESPANK_SUCCESS).then_some(buf)
    }

    /// A string item, or `None` when Slurm does not offer it in this context.
    pub fn get_str(&self, item: StrItem) -> Option<String> {
        let it = match item {
            StrItem::VersionMajor => sys::S_SLURM_VERSION_MAJOR,
            StrItem::VersionMinor => sys::S_SLURM_VERSION_MINOR,
            StrItem::VersionMicro => sys::S_SLURM_VERSION_MICRO,
        };
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: the version items take one `char **` (spank.h) that Slurm points at a static string.
        let rc = unsafe { sys::spank_get_item(self.sp, it, &mut p as *mut *const c_char) };
        if rc != sys::ESPANK_SUCCESS || p.is_null() {
            return None;
        }
        // SAFETY: non-null, NUL-terminated, owned by Slurm for the life of the process.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// argv[0] of the step's command (`S_JOB_ARGV`; remote context).
    pub fn job_argv0(&self) -> Option<String> {
        let mut argc: c_int = 0;
        let mut argv: *const *const c_char = std::ptr::null();
        // SAFETY: S_JOB_ARGV takes `int *` and `char ***` (spank.h); both point at locals.
        let rc = unsafe {
            sys::spank_get_item(
                self.sp,
                sys::S_JOB_ARGV,
                &mut argc as *mut c_int,
                &mut argv as *mut *const *const c_char,
            )
        };
        if rc != sys::ESPANK_SUCCESS || argc < 1 || argv.is_null() {
            return None;
        }
        // SAFETY: argc ≥ 1, so argv[0] is readable; it is a NUL-terminated string or NULL.
        let first = unsafe { *argv };
        if first.is_null() {
            return None;
        }
        // SAFETY: non-null C string owned by slurmstepd for the life of the step.
        Some(
            unsafe { CStr::from_ptr(first) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// The job's environment (`S_JOB_ENV`; remote context) as `NAME=value` pairs whose name starts
    /// with one of `prefixes`. At most 65,536 entries are read.
    pub fn job_env_with_prefixes(&self, prefixes: &[&str]) -> Vec<(String, String)> {
        let mut envp: *const *const c_char = std::ptr::null();
        // SAFETY: S_JOB_ENV takes one `char ***` (spank.h); it points at a local.
        let rc = unsafe {
            sys::spank_get_item(
                self.sp,
                sys::S_JOB_ENV,
                &mut envp as *mut *const *const c_char,
            )
        };
        let mut out = vec![];
        if rc != sys::ESPANK_SUCCESS || envp.is_null() {
            return out;
        }
        for i in 0..65_536 {
            // SAFETY: envp is a NULL-terminated array owned by slurmstepd (the step's `env`); we stop at
            // the terminator and read at most 65,536 entries.
            let p = unsafe { *envp.add(i) };
            if p.is_null() {
                break;
            }
            // SAFETY: each entry is a NUL-terminated `NAME=value` string.
            let kv = unsafe { CStr::from_ptr(p) }.to_string_lossy();
            if let Some((k, v)) = kv.split_once('=') {
                if prefixes.iter().any(|pre| k.starts_with(pre)) {
                    out.push((k.to_string(), v.to_string()));
                }
            }
        }
        out
    }

    /// A variable of the job's environment (`spank_getenv`; remote context only: srun's own
    /// environment is `std::env`). Values up to 1 MiB.
    pub fn getenv(&self, name: &str) -> Option<String> {
        let cname = CString::new(name).ok()?;
        let mut len = 4096usize;
        while len <= 1 << 20 {
            let mut buf = vec![0u8; len];
            // SAFETY: `buf` is `len` writable bytes; Slurm writes at most `len` bytes including the NUL.
            let rc = unsafe {
                sys::spank_getenv(
                    self.sp,
                    cname.as_ptr(),
                    buf.as_mut_ptr() as *mut c_char,
                    len as c_int,
                )
            };
            if rc == sys::ESPANK_NOSPACE {
                len *= 4;
                continue;
            }
            if rc != sys::ESPANK_SUCCESS {
                return None;
            }
            let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
            buf.truncate(end);
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
        None
    }
}

fn cstring_lossy(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// One line on the user's terminal (`slurm_spank_log`: srun's stderr; in slurmstepd, the step's
/// stderr from `user_init` to `task_exit`).
pub fn log_user(line: &str) {
    let c = cstring_lossy(line);
    // SAFETY: "%s" with one NUL-terminated string argument matches the printf-style prototype.
    unsafe { sys::slurm_spank_log(c"%s".as_ptr(), c.as_ptr()) }
}

/// One line in the daemon's log (slurmd's log in slurmstepd; `srun: …` on srun's terminal).
pub fn log_info(line: &str) {
    let c = cstring_lossy(line);
    // SAFETY: as for log_user.
    unsafe { sys::slurm_info(c"%s".as_ptr(), c.as_ptr()) }
}

/// One error line in Slurm's log (`srun: error: …` on srun's terminal; slurmd's log in slurmstepd).
pub fn log_error(line: &str) {
    let c = cstring_lossy(line);
    // SAFETY: as for log_user.
    unsafe { sys::slurm_error(c"%s".as_ptr(), c.as_ptr()) }
}

/// Sets a variable in srun's own environment, which srun copies into the step's environment.
///
/// Only called from srun's `init_post_opt`, while srun is still single-threaded (option processing,
/// before it starts its I/O and signal threads), so no other thread can be reading the environment.
pub fn set_srun_env(name: &str, value: &str) {
    std::env::set_var(name, value);
}

/// Decodes `argc`/`argv` of a callback.
fn decode_args(ac: c_int, av: *mut *mut c_char) -> Vec<String> {
    if av.is_null() || ac <= 0 {
        return vec![];
    }
    let n = (ac as usize).min(64);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: Slurm passes `ac` valid pointers in `av` (spank.h `spank_f`); we read at most
        // min(ac, 64) of them.
        let p = unsafe { *av.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: each is a NUL-terminated string owned by Slurm for the callback's duration.
        let s = unsafe { CStr::from_ptr(p) }.to_bytes();
        out.push(String::from_utf8_lossy(&s[..s.len().min(4096)]).into_owned());
    }
    out
}

/// The `spank_t` handle as Slurm passes it to a callback. ABI-identical to `spank_t`
/// (`repr(transparent)`); its field is private, so only Slurm (through an exported callback's
/// arguments) makes one.
#[repr(transparent)]
pub struct RawSpank(sys::spank_t);

/// A callback's `argv` as Slurm passes it (`char **`, `argc` entries). ABI-identical to the pointer;
/// its field is private, so only Slurm makes one.
#[repr(transparent)]
pub struct RawArgv(*mut *mut c_char);

/// Runs one callback body with the arguments Slurm passed (`sp`, `ac`, `av` of `spank_f`, spank.h):
/// never lets a panic cross into C, and turns the body's verdict into SPANK's return code (0 go on,
/// -1 stop the launch). A panic lets the launch go on. `name` labels the timing and error lines.
pub fn guard(name: &str, sp: RawSpank, ac: c_int, av: RawArgv, body: fn(&Spank) -> bool) -> c_int {
    let (sp, av) = (sp.0, av.0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let start = std::time::Instant::now();
        let h = Spank {
            sp,
            args: decode_args(ac, av),
        };
        let go_on = body(&h);
        if h.args.iter().any(|a| a == "timing=yes") {
            log_info(&format!(
                "launchguard: timing: {name} {} us",
                start.elapsed().as_micros()
            ));
        }
        go_on
    }));
    match r {
        Ok(true) => 0,
        Ok(false) => -1,
        Err(_) => {
            let _ = catch_unwind(|| {
                log_error(&format!(
                    "launchguard: internal error in {name}; launch not checked (please report)"
                ))
            });
            0
        }
    }
}
