//! `exec`'s exit codes tell whether the approval was spent (issue 37, finding 13): "not
//! found, nothing spent" only when nothing was, and any failure to start the command after
//! the claim is reported as spent, with its own code.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use approval_gate::EffectiveStatus;

use crate::exec::{Exec, OP, PAYLOAD, RECORDER};
use crate::support::{assert_exit, assert_success};

/// An executable file holding `text`, beside the store.
fn executable(exec: &Exec, name: &str, text: &[u8]) -> PathBuf {
    let path = exec.store.scratch().join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_script_whose_interpreter_is_missing_is_refused_before_the_claim() {
    let exec = Exec::new();
    let id = exec.approved();
    exec.payload_file(PAYLOAD);
    let script = executable(&exec, "send.sh", b"#!/no/such/interpreter\necho run\n");
    let output = exec.argv(id, OP, &[], &[text(&script)]).output().unwrap();
    assert_exit(&output, 127, "nothing was consumed");
    assert!(
        crate::support::stderr(&output).contains("/no/such/interpreter"),
        "{}",
        crate::support::stderr(&output)
    );
    // Nothing was spent: the approval still runs once, with a command that works.
    assert_eq!(
        exec.store.gate().status(id).unwrap().effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_success(&exec.run(id, PAYLOAD, RECORDER));
    assert_eq!(exec.runs(), 1);
}

#[test]
fn a_command_that_fails_to_start_after_the_claim_is_reported_spent() {
    let exec = Exec::new();
    // An interpreter that is itself a script with a missing interpreter: the kernel finds
    // that out only when it starts the command, after the claim.
    let inner = executable(&exec, "inner", b"#!/no/such/interpreter\n");
    let nested = format!("#!{}\necho run\n", inner.display());
    let nested = executable(&exec, "nested.sh", nested.as_bytes());
    // Not a program at all: the kernel refuses its format.
    let garbage = executable(&exec, "garbage", b"\x7fELF this is not one\n");
    for command in [nested, garbage] {
        let id = exec.approved();
        exec.payload_file(PAYLOAD);
        let output = exec.argv(id, OP, &[], &[text(&command)]).output().unwrap();
        assert_exit(&output, 118, "the approval is spent");
        assert_eq!(
            exec.store.gate().status(id).unwrap().effective_status(),
            EffectiveStatus::Consumed,
            "{}",
            command.display()
        );
        let finished = exec.finished(id);
        assert_eq!(finished["outcome"], "error", "{finished}");
        // And the next try says so, rather than running anything.
        let again = exec.run(id, PAYLOAD, RECORDER);
        assert_exit(&again, 114, "already consumed");
    }
    assert_eq!(exec.runs(), 0);
}

#[test]
fn a_script_whose_interpreter_is_not_an_executable_file_is_refused_before_the_claim() {
    let exec = Exec::new();
    // A file without an execute bit, and a directory (which has them): neither can be an
    // interpreter, and the kernel would say so only after the claim.
    let plain = exec.store.scratch().join("plain");
    std::fs::write(&plain, "echo run\n").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let folder = exec.store.scratch().join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let id = exec.approved();
    exec.payload_file(PAYLOAD);
    for interpreter in [plain, folder] {
        let body = format!("#!{}\necho run >> \"$OUT/runs\"\n", interpreter.display());
        let script = executable(&exec, "send.sh", body.as_bytes());
        let output = exec.argv(id, OP, &[], &[text(&script)]).output().unwrap();
        assert_exit(
            &output,
            126,
            "is not an executable file; nothing was consumed",
        );
        assert!(
            crate::support::stderr(&output)
                .contains(&format!("the interpreter {}", interpreter.display())),
            "{}",
            crate::support::stderr(&output)
        );
        assert_eq!(
            exec.store.gate().status(id).unwrap().effective_status(),
            EffectiveStatus::ApprovedUnconsumed
        );
    }
    assert_eq!(exec.runs(), 0);
}

#[test]
fn a_script_whose_interpreter_line_has_blanks_and_an_argument_runs() {
    let exec = Exec::new();
    // The interpreter is the first word after `#!` and any blanks; the rest of the line is
    // its argument, after a space or a tab.
    for line in ["#!/bin/sh -e", "#! /bin/sh\t-e", "#!\t/bin/sh -e "] {
        let id = exec.approved();
        exec.payload_file(PAYLOAD);
        let body = format!("{line}\necho run >> \"$OUT/runs\"\n");
        let script = executable(&exec, "send.sh", body.as_bytes());
        let output = exec.argv(id, OP, &[], &[text(&script)]).output().unwrap();
        assert_success(&output);
    }
    assert_eq!(exec.runs(), 3);
}
