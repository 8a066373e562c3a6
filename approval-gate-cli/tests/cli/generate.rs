//! `completions` and `man` cover every command there is (taken from the command line's own
//! definition, so a command added later is checked too), are well-formed, and touch no store.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use approval_gate_cli::cli::Cli;
use clap::CommandFactory;

use crate::support::{BIN, assert_exit, assert_success, stdout};

/// Every command as the words that name it: `["list"]`, `["audit", "verify"]`, ...
fn commands() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, prefix: &[String], into: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            into.push(path.clone());
            walk(sub, &path, into);
        }
    }
    let mut all = Vec::new();
    walk(&Cli::command(), &[], &mut all);
    all
}

/// Every visible long option of every command: `--json`, `--older-than-days`, ...
fn long_options() -> Vec<String> {
    fn walk(command: &clap::Command, into: &mut Vec<String>) {
        for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                into.push(format!("--{long}"));
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, into);
        }
    }
    let mut all = Vec::new();
    walk(&Cli::command(), &mut all);
    all.sort();
    all.dedup();
    all
}

/// Runs the CLI with a `--dir` that does not exist, and checks it still does not after.
fn run_without_store(args: &[&str]) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("no-store");
    let output = Command::new(BIN)
        .arg("--dir")
        .arg(&dir)
        .args(args)
        .env_remove("APPROVAL_GATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!dir.exists(), "{args:?} created a store");
    output
}

/// Whether `program` can be run at all on this machine.
fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn the_definition_has_the_commands_this_file_expects() {
    // Not the list the checks below use (that comes from the definition), only a guard that
    // the walk finds anything at all, nested commands included.
    let names: Vec<String> = commands().iter().map(|path| path.join(" ")).collect();
    for expected in [
        "list",
        "deny",
        "audit verify",
        "audit reanchor",
        "completions",
        "man",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert!(long_options().contains(&"--older-than-days".to_owned()));
}

#[test]
fn bash_completion_registers_itself_and_knows_every_command_and_option() {
    let output = run_without_store(&["completions", "bash"]);
    assert_success(&output);
    let script = stdout(&output);
    assert!(
        script
            .lines()
            .any(|line| line.trim_start().starts_with("complete -F ")
                && line.trim_end().ends_with(" approval-gate")),
        "{script}"
    );
    let words: Vec<&str> = script
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .collect();
    for path in commands() {
        let name = path.last().unwrap();
        assert!(words.contains(&name.as_str()), "bash: no {path:?}");
    }
    for option in long_options() {
        assert!(words.contains(&option.as_str()), "bash: no {option}");
    }
    if have("bash") {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("approval-gate.bash");
        std::fs::write(&file, &script).unwrap();
        let checked = Command::new("bash").arg("-n").arg(&file).output().unwrap();
        assert_success(&checked);
    }
}

#[test]
fn every_shell_gets_a_script_naming_every_command() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef approval-gate"),
        ("fish", "complete -c approval-gate"),
        ("elvish", "edit:completion:arg-completer[approval-gate]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let output = run_without_store(&["completions", shell]);
        assert_success(&output);
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for path in commands() {
            let name = path.last().unwrap();
            assert!(script.contains(name.as_str()), "{shell}: no {path:?}");
        }
    }
    for (shell, check) in [("zsh", "-n"), ("fish", "--no-execute")] {
        if have(shell) {
            let tmp = tempfile::tempdir().unwrap();
            let file = tmp.path().join("script");
            let output = run_without_store(&["completions", shell]);
            std::fs::write(&file, &output.stdout).unwrap();
            let checked = Command::new(shell).arg(check).arg(&file).output().unwrap();
            assert_success(&checked);
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    assert_exit(
        &run_without_store(&["completions", "tcsh"]),
        2,
        "invalid value",
    );
    assert_exit(&run_without_store(&["completions"]), 2, "<SHELL>");
}

/// Roff text as a reader sees it: `\-` is a hyphen.
fn unroff(page: &str) -> String {
    page.replace("\\-", "-")
}

#[test]
fn the_man_page_is_roff_naming_every_command() {
    let output = run_without_store(&["man"]);
    assert_success(&output);
    let page = stdout(&output);
    assert!(
        page.lines()
            .any(|line| line.starts_with(".TH APPROVAL-GATE 1 ")),
        "{page}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    let text = unroff(&page);
    assert!(text.contains(concat!("approval-gate ", env!("CARGO_PKG_VERSION"))));
    // The top page lists each top-level command as a page of its own.
    for path in commands().into_iter().filter(|path| path.len() == 1) {
        let page_name = format!("approval-gate-{}(1)", path[0]);
        assert!(text.contains(&page_name), "no {page_name}");
    }
    // The exit codes and the JSON error shape are part of the page, as of --help.
    assert!(text.contains("took effect"));
    assert!(text.contains("\"error\""));
    if have("groff") {
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut groff.stdin.take().unwrap(), page.as_bytes()).unwrap();
        let checked = groff.wait_with_output().unwrap();
        assert_success(&checked);
        assert_eq!(String::from_utf8_lossy(&checked.stderr), "", "groff warns");
    }
}

#[test]
fn man_out_dir_writes_one_page_per_command_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("man").join("man1");
    let output = run_without_store(&["man", "--out-dir", pages.to_str().unwrap()]);
    assert_success(&output);
    let mut expected = vec!["approval-gate.1".to_owned()];
    for path in commands() {
        expected.push(format!("approval-gate-{}.1", path.join("-")));
    }
    expected.sort();
    let mut found: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    assert_eq!(found, expected);
    let said = stdout(&output);
    assert_eq!(said.lines().count(), expected.len(), "{said}");
    assert!(said.starts_with(&format!(
        "wrote {}\n",
        pages.join("approval-gate.1").display()
    )));
    for file in &expected {
        let page = std::fs::read_to_string(pages.join(file)).unwrap();
        let title = file.trim_end_matches(".1").to_uppercase();
        assert!(
            page.contains(&format!(".TH {title} 1 ")),
            "{file}: {}",
            page.lines().take(4).collect::<Vec<_>>().join("\n")
        );
    }
    let verify = std::fs::read_to_string(pages.join("approval-gate-audit-verify.1")).unwrap();
    assert!(unroff(&verify).contains("--json"));
}

#[test]
fn man_out_dir_that_cannot_be_made_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let inside = file.join("man1");
    let output = run_without_store(&["man", "--out-dir", inside.to_str().unwrap()]);
    assert_exit(&output, 2, "cannot create");
    assert!(Path::new(&file).is_file());
}
