//! `completions` and `man`: generated from the same clap definition as `--help`, so they
//! name every command and option there is, and nothing else.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::CommandFactory as _;
use clap_complete::Shell;
use clap_mangen::Man;

use super::Cli;
use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output;

/// The program name completion scripts register for.
const NAME: &str = "approval-gate";

pub(crate) fn completions(shell: Shell) -> anyhow::Result<Exit> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), NAME, &mut script);
    output::stdout(&String::from_utf8(script).context("the completion script is not UTF-8")?)?;
    Ok(Exit::Done)
}

pub(crate) fn man(out_dir: Option<&Path>) -> anyhow::Result<Exit> {
    let Some(dir) = out_dir else {
        let mut page = Vec::new();
        page_of(Cli::command()).render(&mut page)?;
        output::stdout(&String::from_utf8(page).context("the man page is not UTF-8")?)?;
        return Ok(Exit::Done);
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}", escape(&dir.to_string_lossy())))?;
    let mut written = Vec::new();
    let mut command = Cli::command().disable_help_subcommand(true);
    // Built, the command knows its subcommands' full names (`approval-gate-audit-verify`).
    command.build();
    write_pages(command, dir, &mut written)?;
    let mut text = String::new();
    for path in written {
        let _ = writeln!(text, "wrote {}", escape(&path.to_string_lossy()));
    }
    output::stdout(&text)?;
    Ok(Exit::Done)
}

/// Writes the page of `command`, then those of its visible subcommands.
fn write_pages(
    command: clap::Command,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let subcommands: Vec<clap::Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    let man = page_of(command);
    let path = dir.join(man.get_filename());
    man.generate_to(dir)
        .with_context(|| format!("cannot write {}", escape(&path.to_string_lossy())))?;
    written.push(path);
    for sub in subcommands {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// The page of one command, titled in capitals as man pages are (`.TH APPROVAL-GATE 1`),
/// every page naming the program and its version as its source.
fn page_of(command: clap::Command) -> Man {
    let title = command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
        .to_uppercase();
    Man::new(command)
        .title(title)
        .source(concat!("approval-gate ", env!("CARGO_PKG_VERSION")))
}
