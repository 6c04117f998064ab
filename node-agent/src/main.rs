//! `launchguard`: the per-node agent and the admin CLI (see the library for everything).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    // `launchguard list-checks | head`: Rust ignores SIGPIPE, so printing to a closed pipe panics.
    // End quietly with the status a shell gives a process killed by SIGPIPE (128 + 13), as other
    // command-line tools do; every other panic keeps the default report.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info)
    }));
    launchguard::run_cli()
}
