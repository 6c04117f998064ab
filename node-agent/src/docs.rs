//! `launchguard generate-docs --out DIR` (hidden): man pages (`DIR/man/launchguard*.1`, one per
//! subcommand, clap_mangen) and shell completions (`DIR/completions/`, clap_complete), generated from
//! the CLI definition so they never drift from `--help`; `--reference DIR`: the reference pages of
//! `docs/reference/` ([`crate::reference`]).

use clap::CommandFactory;
use std::path::PathBuf;
use std::process::ExitCode;

// `generate-docs`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output directory for man pages and completions (created).
    #[arg(long, value_name = "DIR", required_unless_present = "reference")]
    pub out: Option<PathBuf>,
    /// Output directory for the Markdown reference pages (created), e.g. docs/reference.
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
}

fn write_reference(dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    let pages = crate::reference::pages().map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    let mut written = vec![];
    for (name, text) in pages {
        let p = dir.join(name);
        std::fs::write(&p, text)?;
        written.push(p);
    }
    Ok(written)
}

/// `cmd` (built) with its `help` subcommand mirroring the whole tree. clap copies the tree into
/// `help` when it builds the root, before a deferred subcommand (`nccl`, `sweep`) has added its
/// own subcommands, so the completions would not offer `launchguard help nccl check`. The copy is
/// made as clap makes it: each node's name, about and hidden flag, without help or version flags.
fn with_full_help_tree(cmd: clap::Command) -> clap::Command {
    // The root is built already, so the copies get the bin and display names a build would give
    // them (`launchguard help nccl check`, `launchguard-help-nccl-check`), which the completion
    // generators read.
    fn copy(c: &clap::Command, bin: &str, display: &str) -> clap::Command {
        let bin = format!("{bin} {}", c.get_name());
        let display = format!("{display}-{}", c.get_name());
        // A one-shot command: the few names are leaked, as the man pages' names below.
        let name: &'static str = Box::leak(c.get_name().to_string().into_boxed_str());
        let mut m = clap::Command::new(name)
            .hide(c.is_hide_set())
            .disable_help_flag(true)
            .disable_version_flag(true)
            .disable_help_subcommand(true)
            .subcommands(
                c.get_subcommands()
                    .filter(|s| s.get_name() != "help")
                    .map(|s| copy(s, &bin, &display)),
            );
        if let Some(about) = c.get_about() {
            m = m.about(about.clone());
        }
        m.bin_name(bin).display_name(display)
    }
    let (bin, display) = match cmd.find_subcommand("help") {
        Some(h) => (
            h.get_bin_name().unwrap_or("launchguard help").to_string(),
            h.get_display_name()
                .unwrap_or("launchguard-help")
                .to_string(),
        ),
        None => return cmd,
    };
    let tree: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .map(|c| copy(c, &bin, &display))
        .collect();
    cmd.mut_subcommand("help", |h| {
        h.mut_subcommands(
            |m| match tree.iter().find(|t| t.get_name() == m.get_name()) {
                Some(full) => full.clone(),
                None => m,
            },
        )
    })
}

fn write_all(out: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = vec![];
    let man = out.join("man");
    let comp = out.join("completions");
    std::fs::create_dir_all(&man)?;
    std::fs::create_dir_all(&comp)?;
    let mut cmd = crate::Cli::command();
    cmd.build();
    let mut cmd = with_full_help_tree(cmd);
    let mut pages = vec![(String::from("launchguard"), cmd.clone())];
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let name = format!("launchguard-{}", sub.get_name());
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((name, sub.clone().name(leaked)));
    }
    for (name, c) in pages {
        let p = man.join(format!("{name}.1"));
        let mut buf = vec![];
        clap_mangen::Man::new(c).render(&mut buf)?;
        std::fs::write(&p, buf)?;
        written.push(p);
    }
    use clap_complete::Shell;
    for (shell, file) in [
        (Shell::Bash, "launchguard.bash"),
        (Shell::Zsh, "_launchguard"),
        (Shell::Fish, "launchguard.fish"),
    ] {
        let p = comp.join(file);
        let mut f = std::fs::File::create(&p)?;
        clap_complete::generate(shell, &mut cmd, "launchguard", &mut f);
        written.push(p);
    }
    Ok(written)
}

/// Writes one kind of file into a directory and returns the paths written.
type Writer = fn(&std::path::Path) -> std::io::Result<Vec<PathBuf>>;

/// Writes the files and lists them.
pub fn run(a: &Args) -> ExitCode {
    let jobs: [(Option<&PathBuf>, Writer); 2] = [
        (a.out.as_ref(), write_all),
        (a.reference.as_ref(), write_reference),
    ];
    for (dir, write) in jobs {
        let Some(dir) = dir else { continue };
        match write(dir) {
            Ok(files) => {
                for f in files {
                    println!("{}", f.display());
                }
            }
            Err(e) => {
                eprintln!("launchguard: generate-docs: {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
