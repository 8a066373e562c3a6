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
        vec!["watch"],
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
