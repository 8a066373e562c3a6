//! `cargo run --example smtp` end to end: the example files a request, a human approves it
//! through the CLI in a pseudo-terminal, and exactly one message arrives at a real SMTP
//! server on loopback; with a denial or a tampered payload, none does.

use std::path::Path;
use std::process::{Command, Stdio};

use approval_gate::{Decision, Gate, RequestId};
use rexpect::process::WaitStatus;
use rexpect::session::spawn_command;

use crate::smtp_run::{built, start, start_with};
use crate::smtp_sink::SmtpSink;

fn approve_in_a_terminal(store: &Path, id: RequestId) {
    let mut command = Command::new(built("approval-gate"));
    command
        .arg("--dir")
        .arg(store)
        .args(["approve", id.as_str()])
        .env("NO_COLOR", "1")
        .env("TERM", "dumb");
    // No time limit: the prompt or the CLI's exit (end of input on the terminal) ends each
    // wait. A limit in seconds fails this test on a busy machine, where the CLI can take that
    // long to start; a CLI that never answers would still hang the run, not pass it.
    let mut session = spawn_command(command, None).unwrap();
    let (_, prompt) = session
        .exp_regex(r"Type [0-9a-f]{8} to approve")
        .expect("the approval prompt");
    session.send_line(&prompt[5..13]).unwrap();
    session.exp_eof().unwrap();
    match session.process().wait().unwrap() {
        WaitStatus::Exited(_, 0) => {}
        other => panic!("approve failed: {other:?}"),
    }
}

#[test]
fn an_approved_email_arrives_exactly_once_as_approved() {
    let mut run = start(&[]);
    approve_in_a_terminal(&run.store, run.id);
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("store:"),
        "it says which store it uses: {printed}"
    );
    // The store came from APPROVAL_GATE_DIR, so the command for the human names it.
    let command = format!(
        "approval-gate --dir {} approve {}",
        run.store.display(),
        run.id
    );
    assert!(printed.contains(&command), "{command:?} not in {printed}");
    assert!(printed.contains("sent to alice@example.com"), "{printed}");
    assert_eq!(delivered.len(), 1, "exactly one message: {delivered:?}");
    let message = std::fs::read_to_string(&delivered[0]).unwrap();
    for expected in [
        "X-Envelope-To: <alice@example.com>",
        "To: alice@example.com",
        "Subject: Invoice 1042",
        "please find invoice 1042",
    ] {
        assert!(message.contains(expected), "{expected:?} not in\n{message}");
    }
}

#[test]
fn a_denied_email_is_never_sent() {
    let mut run = start(&[]);
    // `deny` needs no terminal: saying no is always safe.
    let status = Command::new(built("approval-gate"))
        .arg("--dir")
        .arg(&run.store)
        .args(["deny", run.id.as_str(), "wrong", "recipient"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 1, "{printed}");
    assert!(
        printed.contains("not sent: the request is denied"),
        "{printed}"
    );
    assert!(delivered.is_empty(), "sent after a denial: {delivered:?}");
}

#[test]
fn a_payload_changed_after_approval_is_never_sent() {
    let mut run = start(&["--tamper"]);
    Gate::open(&run.store)
        .unwrap()
        .approve(run.id, &Decision::by("tester"))
        .unwrap();
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 1, "{printed}");
    assert!(
        delivered.is_empty(),
        "sent a tampered message: {delivered:?}"
    );
    assert!(
        printed.contains("payload does not match"),
        "it says why: {printed}"
    );
    // The refusal did not spend the approval; it is still there, unused.
    let report = Gate::open(&run.store).unwrap().status(run.id).unwrap();
    assert_eq!(
        report.effective_status(),
        approval_gate::EffectiveStatus::ApprovedUnconsumed
    );
}

#[test]
fn without_smtp_url_it_delivers_to_its_own_loopback_server() {
    let tmp = tempfile::tempdir().unwrap();
    let outbox = tmp.path().join("outbox");
    // Only to read the outbox afterwards: the example runs its own server, writing there.
    let sink = SmtpSink::start(&outbox).unwrap();
    let mut run = start_with(&[], tmp, sink, &[("SMTP_OUTBOX", outbox.as_os_str())]);
    Gate::open(&run.store)
        .unwrap()
        .approve(run.id, &Decision::by("tester"))
        .unwrap();
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 0, "{printed}");
    // On a port of the example's own choosing.
    let via = "via the loopback SMTP server on 127.0.0.1:";
    assert!(printed.contains(via), "{via:?} not in {printed}");
    assert!(
        printed.contains(&format!("(messages are written to {})", outbox.display())),
        "{printed}"
    );
    assert_eq!(delivered.len(), 1, "exactly one message: {delivered:?}");
    let message = std::fs::read_to_string(&delivered[0]).unwrap();
    assert!(message.contains("To: alice@example.com"), "{message}");
    assert!(message.contains("please find invoice 1042"), "{message}");
}
