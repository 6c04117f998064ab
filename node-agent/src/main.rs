//! `launchguard`: the per-node agent and the admin CLI (see the library for everything).

fn main() -> std::process::ExitCode {
    launchguard::run_cli()
}
