//! `exec` and `consume`: the single-use claim from any program. The command runs once, with
//! the approved payload's canonical bytes on its standard input, after the claim and the
//! start are durable; every refusal has its own exit code and runs nothing; a check that
//! fails before the claim spends nothing; sixteen racing `exec`s run the command once; a
//! signal sent to `exec` reaches the command; an `exec` killed mid-run leaves the outcome
//! unknown and the approval spent.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use approval_gate::{AuditEvent, CanonicalPayload, Decision, NewRequest, RequestId};
use serde_json::Value;

use crate::support::{Store, assert_exit, assert_success, json, stderr, stdout};

pub(crate) const ACTION: &str = "send invoice 1042 to alice";
pub(crate) const OP: &str = "smtp.send";
/// As the agent filed it; the executor's copy below has other spacing and key order.
pub(crate) const PAYLOAD: &str =
    r#"{"to":"alice@example.com","subject":"Invoice 1042","amount":12.5}"#;
const CANONICAL: &str = r#"{"amount":12.5,"subject":"Invoice 1042","to":"alice@example.com"}"#;

/// Records what it was given (stdin, the three variables) and appends a line to `runs`.
pub(crate) const RECORDER: &str = r#"cat > "$OUT/stdin"
printf '%s\n%s\n%s\n' "$APPROVAL_GATE_ID" "$APPROVAL_GATE_OPERATION" "${APPROVAL_GATE_PAYLOAD_DIGEST-unset}" > "$OUT/env"
echo run >> "$OUT/runs""#;

pub(crate) struct Exec {
    pub(crate) store: Store,
    pub(crate) out: PathBuf,
}

impl Exec {
    pub(crate) fn new() -> Self {
        let store = Store::new();
        let out = store.scratch().join("out");
        std::fs::create_dir(&out).unwrap();
        Self { store, out }
    }

    pub(crate) fn file(&self, payload: &str) -> RequestId {
        let ask = NewRequest::new(ACTION, "the invoice is due")
            .operation(OP)
            .payload(CanonicalPayload::from_json_text(payload).unwrap());
        self.store
            .gate()
            .request_approval(ask)
            .unwrap()
            .request
            .id()
    }

    pub(crate) fn approved(&self) -> RequestId {
        let id = self.file(PAYLOAD);
        self.store
            .gate()
            .approve(id, &Decision::by("alice"))
            .unwrap();
        id
    }

    /// The executor's copy of the payload, in a file.
    pub(crate) fn payload_file(&self, text: &str) -> PathBuf {
        let path = self.store.scratch().join("payload.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `approval-gate exec ID --operation OP --payload-file F -- sh -c SCRIPT`, F holding
    /// `payload`.
    pub(crate) fn command(&self, id: RequestId, payload: &str, script: &str) -> Command {
        self.payload_file(payload);
        self.argv(id, OP, &[], &["sh", "-c", script])
    }

    /// `approval-gate exec ID --operation OP --payload-file F FLAGS -- ARGV`, F holding the
    /// payload last written by [`Exec::payload_file`].
    pub(crate) fn argv(&self, id: RequestId, op: &str, flags: &[&str], argv: &[&str]) -> Command {
        let file = self.store.scratch().join("payload.json");
        let mut command = self
            .store
            .command(&["exec", id.as_str(), "--operation", op]);
        command
            .arg("--payload-file")
            .arg(file)
            .args(flags)
            .arg("--")
            .args(argv)
            .env("OUT", &self.out);
        command
    }

    pub(crate) fn run(&self, id: RequestId, payload: &str, script: &str) -> Output {
        self.command(id, payload, script)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub(crate) fn runs(&self) -> usize {
        std::fs::read_to_string(self.out.join("runs")).map_or(0, |t| t.lines().count())
    }

    /// The request's audit lines: event and details.
    pub(crate) fn events(&self, id: RequestId) -> Vec<(AuditEvent, Value)> {
        self.store
            .gate()
            .audit_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.id == id)
            .map(|r| (r.event, Value::Object(r.details)))
            .collect()
    }

    pub(crate) fn finished(&self, id: RequestId) -> Value {
        let finished: Vec<Value> = self
            .events(id)
            .into_iter()
            .filter(|(e, _)| *e == AuditEvent::ExecutionFinished)
            .map(|(_, d)| d)
            .collect();
        assert_eq!(finished.len(), 1, "{finished:?}");
        finished[0].clone()
    }
}

#[test]
fn exec_runs_the_command_once_with_the_approved_bytes_and_records_its_outcome() {
    let exec = Exec::new();
    let id = exec.approved();
    // The executor's copy: same value, other spacing and key order.
    let mine =
        "{ \"subject\": \"Invoice 1042\",\n \"to\": \"alice@example.com\", \"amount\": 12.50 }";
    let ran = exec.run(id, mine, RECORDER);
    assert_success(&ran);
    assert_eq!(exec.runs(), 1);
    assert_eq!(
        std::fs::read_to_string(exec.out.join("stdin")).unwrap(),
        CANONICAL
    );
    let digest = CanonicalPayload::from_json_text(PAYLOAD)
        .unwrap()
        .digest()
        .to_hex();
    assert_eq!(
        std::fs::read_to_string(exec.out.join("env")).unwrap(),
        format!("{id}\n{OP}\n{digest}\n")
    );
    let events: Vec<AuditEvent> = exec.events(id).into_iter().map(|(e, _)| e).collect();
    assert_eq!(
        events[events.len() - 3..],
        [
            AuditEvent::Consumed,
            AuditEvent::ExecutionStarted,
            AuditEvent::ExecutionFinished
        ]
    );
    assert_eq!(exec.finished(id)["outcome"], "ok");

    // Once: the second run is refused with its own code, and runs nothing.
    let again = exec.run(id, mine, RECORDER);
    assert_exit(&again, 114, "already consumed");
    assert_eq!(exec.runs(), 1);
}

#[test]
fn the_commands_status_is_execs_and_the_audits() {
    let exec = Exec::new();
    let id = exec.approved();
    let failed = exec.run(id, PAYLOAD, "echo run >> \"$OUT/runs\"; exit 3");
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    let finished = exec.finished(id);
    assert_eq!(finished["outcome"], "error");
    assert_eq!(finished["error"], "the command exited with status 3");

    let id = exec.approved();
    let killed = exec.run(id, PAYLOAD, "kill -KILL $$");
    assert_eq!(killed.status.code(), Some(128 + 9), "{}", stderr(&killed));
    assert!(stderr(&killed).contains("killed by signal 9 (SIGKILL)"));
    assert_eq!(
        exec.finished(id)["error"],
        "the command was killed by signal 9 (SIGKILL)"
    );
}

#[test]
fn each_refusal_has_its_code_and_runs_nothing() {
    let exec = Exec::new();
    let gate = exec.store.gate();
    let refused = |id: RequestId, payload: &str, code: i32, message: &str| {
        let output = exec.run(id, payload, RECORDER);
        assert_exit(&output, code, message);
        assert_eq!(exec.runs(), 0, "{message}");
    };

    let pending = exec.file(PAYLOAD);
    refused(pending, PAYLOAD, 110, "not approved");
    let denied = exec.file(PAYLOAD);
    gate.deny(denied, &Decision::by("alice")).unwrap();
    refused(denied, PAYLOAD, 111, "denied");
    let revoked = exec.approved();
    gate.revoke(revoked, &Decision::by("alice")).unwrap();
    refused(revoked, PAYLOAD, 113, "revoked");
    let expired = {
        let old = exec.store.gate_ago(Duration::from_secs(2 * 3600));
        let ask = NewRequest::new(ACTION, "long ago")
            .operation(OP)
            .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
        let id = old.request_approval(ask).unwrap().request.id();
        old.approve(id, &Decision::by("alice")).unwrap();
        id
    };
    refused(expired, PAYLOAD, 112, "expired");
    let nobody = RequestId::parse("0123456789ab").unwrap();
    refused(nobody, PAYLOAD, 117, "not found");

    // A mismatch spends nothing: the right payload, operation and action still run once.
    let id = exec.approved();
    refused(id, r#"{"to":"mallory@example.com"}"#, 115, "payload");
    exec.payload_file(PAYLOAD);
    let recorder = ["sh", "-c", RECORDER];
    let wrong_op = exec
        .argv(id, "smtp.send_all", &[], &recorder)
        .output()
        .unwrap();
    assert_exit(&wrong_op, 115, "operation");
    let action = exec
        .argv(
            id,
            OP,
            &["--action", "send invoice 1042 to mallory"],
            &recorder,
        )
        .output()
        .unwrap();
    assert_exit(&action, 115, "action");
    let runs_before = exec.runs();

    // A command that cannot be found or run, a payload that is not JSON: nothing is spent.
    let missing = exec
        .argv(id, OP, &[], &["no-such-command-anywhere"])
        .output()
        .unwrap();
    assert_exit(&missing, 127, "command not found");
    let not_executable = exec.store.scratch().join("script.sh");
    std::fs::write(&not_executable, "#!/bin/sh\necho run >> \"$OUT/runs\"\n").unwrap();
    let cannot = exec
        .argv(id, OP, &[], &[not_executable.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&cannot, 126, "not an executable file");
    let garbage = exec.run(id, "{\"to\": ", RECORDER);
    assert_exit(&garbage, 125, "");
    // Its cause said once, not once for the error and again for its source.
    let said = String::from_utf8_lossy(&garbage.stderr);
    assert_eq!(said.matches("not valid json").count(), 1, "{said}");
    let refusals: Vec<String> = exec
        .events(id)
        .into_iter()
        .filter(|(e, _)| *e == AuditEvent::ConsumeRefused)
        .map(|(_, d)| d["reason"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        refusals,
        [
            "payload_mismatch",
            "operation_mismatch",
            "action_mismatch",
            "invalid_payload"
        ]
    );
    assert_eq!(exec.runs(), runs_before);
    let ran = exec.run(id, PAYLOAD, RECORDER);
    assert_success(&ran);
    assert_eq!(exec.runs(), runs_before + 1);
}

#[test]
fn sixteen_racing_execs_run_the_command_once() {
    let exec = Exec::new();
    let id = exec.approved();
    exec.payload_file(PAYLOAD);
    let racers: Vec<_> = (0..16)
        .map(|_| {
            exec.argv(id, OP, &[], &["sh", "-c", "echo run >> \"$OUT/runs\""])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<Option<i32>> = racers
        .into_iter()
        .map(|child| child.wait_with_output().unwrap().status.code())
        .collect();
    assert_eq!(exec.runs(), 1, "{codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == Some(0)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == Some(114)).count(),
        15,
        "{codes:?}"
    );
}

/// Starts `exec` with `script`, which must print `ready` when it is running, and returns
/// the child once it has.
fn started(exec: &Exec, id: RequestId, script: &str) -> std::process::Child {
    let mut child = exec
        .command(id, PAYLOAD, script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    child
}

#[test]
fn a_signal_sent_to_exec_reaches_the_command_once() {
    let exec = Exec::new();
    let id = exec.approved();
    let script = r#"trap 'echo term >> "$OUT/got"; kill $sleeper; exit 7' TERM
sleep 60 >/dev/null 2>&1 & sleeper=$!
echo ready
wait $sleeper"#;
    let child = started(&exec, id, script);
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(7), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(exec.out.join("got")).unwrap(),
        "term\n"
    );
    assert_eq!(
        exec.finished(id)["error"],
        "the command exited with status 7"
    );
}

#[test]
fn an_exec_killed_while_its_command_runs_leaves_the_outcome_unknown_and_the_approval_spent() {
    let exec = Exec::new();
    let id = exec.approved();
    let script = r#"echo $$ > "$OUT/pid"
echo ready
exec sleep 1000"#;
    let mut child = started(&exec, id, script);
    child.kill().unwrap();
    child.wait().unwrap();
    // The command outlives exec; end it, as its operator would.
    let orphan: i32 = std::fs::read_to_string(exec.out.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let orphan = rustix::process::Pid::from_raw(orphan).unwrap();
    let _ = rustix::process::kill_process(orphan, rustix::process::Signal::KILL);

    // The next open recovers: the outcome is unknown, and nothing runs again.
    let finished = exec.finished(id);
    assert_eq!(finished["outcome"], "unknown", "{finished}");
    let again = exec.run(id, PAYLOAD, RECORDER);
    assert_exit(&again, 114, "already consumed");
    assert_eq!(exec.runs(), 0);
}

#[test]
fn exec_wait_runs_once_the_human_approves_and_refuses_when_time_runs_out() {
    let exec = Exec::new();
    let id = exec.file(PAYLOAD);
    exec.payload_file(PAYLOAD);
    let waited = |timeout: &str| {
        let mut command = exec.argv(
            id,
            OP,
            &["--wait", "--timeout", timeout],
            &["sh", "-c", RECORDER],
        );
        command.stdin(Stdio::null());
        command
    };
    let timed_out = waited("300ms").output().unwrap();
    assert_exit(&timed_out, 110, "not approved");
    assert_eq!(exec.runs(), 0);

    assert!(
        stderr(&timed_out).contains(&format!("exec {id}: waiting for a decision (at most 0s)"))
    );

    // A payload that cannot be bound is refused before any wait.
    exec.payload_file("{\"to\": ");
    let garbage = waited("1s").output().unwrap();
    assert_exit(&garbage, 125, "");
    assert!(
        !stderr(&garbage).contains("waiting"),
        "{}",
        stderr(&garbage)
    );
    exec.payload_file(PAYLOAD);

    // Approved while exec waits (it says so before it waits): it runs, once.
    let mut waiting = waited("10m")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(waiting.stderr.as_mut().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(
        said,
        format!("approval-gate: exec {id}: waiting for a decision (at most 10m)\n")
    );
    exec.store
        .gate()
        .approve(id, &Decision::by("alice"))
        .unwrap();
    let output = waiting.wait_with_output().unwrap();
    assert_success(&output);
    assert_eq!(exec.runs(), 1);
}

#[test]
fn exec_wait_without_a_timeout_waits_until_the_request_expires_and_then_says_expired() {
    let exec = Exec::new();
    // Filed on a clock an hour less 1.5 s back: it expires 1.5 s from now.
    let gate = exec
        .store
        .gate_ago(Duration::from_secs(3600) - Duration::from_millis(1500));
    let ask = NewRequest::new(ACTION, "the invoice is due")
        .operation(OP)
        .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
    let id = gate.request_approval(ask).unwrap().request.id();
    exec.payload_file(PAYLOAD);
    let output = exec
        .argv(id, OP, &["--wait"], &["sh", "-c", RECORDER])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 112, "expired");
    assert_eq!(exec.runs(), 0);
}

#[test]
fn consume_prints_the_claim_once_and_payload_stdin_binds() {
    let exec = Exec::new();
    let id = exec.approved();
    let mut consume = exec
        .store
        .command(&[
            "consume",
            id.as_str(),
            "--operation",
            OP,
            "--payload-stdin",
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut consume.stdin.take().unwrap(), PAYLOAD.as_bytes()).unwrap();
    let claim = json(&consume.wait_with_output().unwrap());
    assert_eq!(claim["id"], id.as_str());
    assert_eq!(claim["action"], ACTION);
    assert_eq!(claim["operation"], OP);
    assert_eq!(
        claim["payload"],
        serde_json::from_str::<Value>(CANONICAL).unwrap()
    );
    assert_eq!(
        claim["payloadDigest"],
        CanonicalPayload::from_json_text(PAYLOAD)
            .unwrap()
            .digest()
            .to_hex()
    );
    let file = exec.payload_file(PAYLOAD);
    let again = exec
        .store
        .command(&[
            "consume",
            id.as_str(),
            "--operation",
            OP,
            "--json",
            "--payload-file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        error["error"]["code"],
        "already_consumed",
        "{}",
        stdout(&again)
    );

    // Without --json: the approved bytes on stdout, the line for the human on stderr.
    let id = exec.approved();
    let plain = exec
        .store
        .command(&["consume", id.as_str(), "--operation", OP, "--payload-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_success(&plain);
    assert_eq!(stdout(&plain), CANONICAL);
    assert!(stderr(&plain).contains(&format!("consumed {id}")));
}

#[test]
fn ctrl_c_at_the_terminal_reaches_the_command_once_not_twice() {
    let exec = Exec::new();
    let id = exec.approved();
    // The terminal sends SIGINT to exec and the command alike: exec must not add its own.
    // A second SIGINT would arrive while the trap sleeps, and run the trap again.
    let script = r#"trap 'echo int >> "$OUT/got"; kill $sleeper; sleep 1; exit 5' INT
sleep 60 >/dev/null 2>&1 & sleeper=$!
echo ready
wait $sleeper"#;
    let command = exec.command(id, PAYLOAD, script);
    let mut session = rexpect::session::spawn_command(command, Some(20_000)).unwrap();
    session.exp_string("ready").unwrap();
    session.send_control('c').unwrap();
    session.exp_eof().unwrap();
    match session.process().wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => assert_eq!(code, 5),
        other => panic!("exec did not exit: {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(exec.out.join("got")).unwrap(),
        "int\n"
    );
}
