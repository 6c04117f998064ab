//! `launchguard`: the per-node agent and the admin CLI (see the library for everything).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    launchguard::run_cli()
}
