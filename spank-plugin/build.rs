//! Generates Rust declarations for `<slurm/spank.h>` with bindgen, from the Slurm headers this plugin
//! is built against. `plugin_version` comes from `SLURM_VERSION_NUMBER` in those headers, because
//! Slurm loads a plugin only on the major.minor it was built for.
//!
//! `SLURM_INCLUDE_DIR` selects the headers (default `/usr/include`, i.e. the installed
//! `libslurm-dev`); e.g. `SLURM_INCLUDE_DIR=/srv/trixie/usr/include` for Slurm 24.11 in a chroot.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=SLURM_INCLUDE_DIR");
    let inc = env::var("SLURM_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".to_string());
    let spank_h = PathBuf::from(&inc).join("slurm/spank.h");
    let version_h = PathBuf::from(&inc).join("slurm/slurm_version.h");
    println!("cargo:rerun-if-changed={}", spank_h.display());
    println!("cargo:rerun-if-changed={}", version_h.display());
    if !spank_h.exists() {
        panic!(
            "{} not found: install Slurm's development headers (Debian/Ubuntu: apt-get install libslurm-dev; \
             RHEL: slurm-devel) or point SLURM_INCLUDE_DIR at the directory that holds slurm/spank.h",
            spank_h.display()
        );
    }
    let bindings = bindgen::Builder::default()
        .header_contents("launchguard_spank.h", "#include <slurm/spank.h>\n")
        .clang_arg(format!("-I{inc}"))
        .allowlist_function("spank_(get_item|getenv|context)|slurm_(info|error|spank_log)")
        .allowlist_var("SLURM_VERSION_NUMBER|ESPANK_SUCCESS|ESPANK_NOSPACE")
        .allowlist_var("S_(JOB|STEP|TASK|SLURM)_.*|S_CTX_.*")
        .allowlist_type("spank_t|spank_item_t|spank_context_t|spank_err_t")
        .prepend_enum_name(false)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen over {}: {e}", spank_h.display()));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("spank_sys.rs");
    bindings
        .write_to_file(&out)
        .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
