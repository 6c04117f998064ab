//! `launchguard generate-docs --out DIR` (hidden): man pages (`DIR/man/launchguard*.1`, one per
//! subcommand, clap_mangen) and shell completions (`DIR/completions/`, clap_complete), generated from
//! the CLI definition so they never drift from `--help`; `--reference DIR`: the reference pages of
//! `docs/reference/` ([`crate::reference`]).

use clap::CommandFactory;
use std::path::PathBuf;
use std::process::ExitCode;

// `generate-docs`.
// (A plain comment, not a doc comment: clap would show it as this subcommand's help instead of
// the text the subcommand's variant gives, since its arguments are built deferred.)
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

fn write_all(out: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = vec![];
    let man = out.join("man");
    let comp = out.join("completions");
    std::fs::create_dir_all(&man)?;
    std::fs::create_dir_all(&comp)?;
    let mut cmd = crate::Cli::command();
    cmd.build();
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
