//! `--help` everywhere, `--version`, and usage errors exiting 2.

use std::process::{Command, Stdio};

use crate::support::{BIN, Store, assert_exit, assert_success, stdout};

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("APPROVAL_GATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn every_command_has_help() {
    for command in [
        vec![],
        vec!["list"],
        vec!["show"],
        vec!["approve"],
        vec!["deny"],
        vec!["revoke"],
        vec!["archive"],
        vec!["audit"],
        vec!["audit", "verify"],
        vec!["audit", "reanchor"],
        vec!["doctor"],
        vec!["watch"],
        vec!["completions"],
        vec!["man"],
        vec!["config"],
    ] {
        let mut args = command.clone();
        args.push("--help");
        let output = run(&args);
        assert_success(&output);
        assert!(
            stdout(&output).contains("Usage: approval-gate"),
            "{command:?}"
        );
    }
    let help = stdout(&run(&["--help"]));
    assert!(
        help.contains("1  refused"),
        "exit codes are documented: {help}"
    );
    let approve = stdout(&run(&["approve", "--help"]));
    assert!(
        approve.contains("BLAKE3"),
        "the confirmation code is documented"
    );
    let watch = stdout(&run(&["watch", "--help"]));
    assert!(watch.contains("APPROVAL_GATE_ACTION"));
    let config = stdout(&run(&["config", "--help"]));
    assert!(config.contains("APPROVAL_GATE_DEFAULT_TTL"), "{config}");
    assert!(stdout(&run(&["--help"])).contains("--store <STORE>"));
}

#[test]
fn version_is_printed() {
    let output = run(&["--version"]);
    assert_success(&output);
    assert_eq!(
        stdout(&output),
        format!("approval-gate {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_2() {
    let store = Store::new();
    for (args, message) in [
        (vec!["frobnicate"], "unrecognized subcommand"),
        (
            vec!["show", "not-an-id"],
            "expected 12 lowercase hex characters",
        ),
        (
            vec!["show", "ABCDEF012345"],
            "expected 12 lowercase hex characters",
        ),
        (vec!["list", "everything"], "invalid value"),
        (
            vec!["list", "--limit", "0"],
            "expected a number from 1 to 1000",
        ),
        (
            vec!["list", "--limit", "1001"],
            "expected a number from 1 to 1000",
        ),
        (vec!["archive"], "--older-than-days"),
    ] {
        assert_exit(&store.run(&args), 2, message);
    }
    let unknown_cursor = store.run(&["list", "--after", "0123456789ab"]);
    assert_exit(&unknown_cursor, 1, "request 0123456789ab not found");
}

#[test]
fn the_store_comes_from_the_environment_without_dir() {
    let store = Store::new();
    let request = store.ask("from the environment");
    let output = Command::new(BIN)
        .args(["show", request.id().as_str()])
        .env("APPROVAL_GATE_DIR", &store.path)
        .output()
        .unwrap();
    assert_success(&output);
    assert!(stdout(&output).contains("from the environment"));
}

/// The agent's server, `approval-gate-mcp`: another crate's binary.
fn mcp() -> String {
    let path = approval_gate_tests::workspace_binary("approval-gate-mcp");
    path.to_str().unwrap().to_owned()
}

/// Runs `program` with `HOME` in a fresh directory and `APPROVAL_GATE_DIR` as given; checks
/// that no store appeared in that home, then returns the output.
fn run_in_home(program: &str, env_dir: Option<&str>, args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(program);
    command
        .args(args)
        .env("HOME", home.path())
        .env_remove("APPROVAL_GATE_DIR")
        .stdin(Stdio::null());
    if let Some(dir) = env_dir {
        command.env("APPROVAL_GATE_DIR", dir);
    }
    let output = command.output().unwrap();
    assert!(
        !home.path().join(".approval-gate").exists(),
        "{program} {args:?} fell back to ~/.approval-gate"
    );
    output
}

#[test]
fn an_empty_store_directory_is_a_usage_error_in_both_binaries() {
    let empty = "the store directory is empty (from --dir or APPROVAL_GATE_DIR)";
    for program in [BIN, &mcp()] {
        // `list` for the CLI; the server takes no command.
        let command: &[&str] = if program == BIN { &["list"] } else { &[] };
        let flag = [&["--dir", ""][..], command].concat();
        assert_exit(&run_in_home(program, None, &flag), 2, empty);
        assert_exit(&run_in_home(program, Some(""), command), 2, empty);
    }
    // The CLI's --dir is accepted after the command too.
    assert_exit(&run_in_home(BIN, None, &["list", "--dir", ""]), 2, empty);
}

#[test]
fn an_explicit_dir_wins_over_an_empty_environment_variable() {
    let store = Store::new();
    let request = store.ask("explicit wins");
    let dir = store.path.to_str().unwrap();
    for args in [
        vec!["--dir", dir, "show", request.id().as_str()],
        vec!["show", request.id().as_str(), "--dir", dir],
    ] {
        let output = run_in_home(BIN, Some(""), &args);
        assert_success(&output);
        assert!(stdout(&output).contains("explicit wins"));
    }
    // The server reads stdin until it ends: null input, a clean exit.
    let served = run_in_home(&mcp(), Some(""), &["--dir", dir]);
    assert_success(&served);
}
