//! `cargo run --example smtp -- --approvers FILE --quorum 2` end to end: two approvers with
//! keys made by the real ssh-keygen approve through the CLI in a pseudo-terminal with
//! `--key`, and exactly one message arrives, only after the second; an approval written
//! straight into the store, without their signatures, sends nothing and says why.

use std::path::Path;
use std::process::Command;

use approval_gate::{EffectiveStatus, Gate, RequestId};
use approval_gate_tests::ssh::{Approver, Keys};
use rexpect::process::WaitStatus;
use rexpect::session::spawn_command;

use crate::smtp_run::{Run, built, start_with};
use crate::smtp_sink::SmtpSink;

/// The example under a policy trusting `signers` and needing `quorum` of them.
fn start(signers: &Path, quorum: &str) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = format!("smtp://{}", sink.addr());
    let args = ["--approvers", signers.to_str().unwrap(), "--quorum", quorum];
    start_with(&args, tmp, sink, &[("SMTP_URL", url.as_ref())])
}

/// `approval-gate --approvers FILE approve ID --key KEY` in a pty, typing the code: what
/// it printed.
fn approve_with_key(store: &Path, signers: &Path, id: RequestId, approver: &Approver) -> String {
    let mut command = Command::new(built("approval-gate"));
    command
        .arg("--dir")
        .arg(store)
        .arg("--approvers")
        .arg(signers)
        .args(["approve", id.as_str(), "--key"])
        .arg(&approver.key)
        .env_remove("APPROVAL_GATE_QUORUM")
        .env_remove("APPROVAL_GATE_SIGNING_KEY")
        .env_remove("SSH_AUTH_SOCK")
        .env("NO_COLOR", "1")
        .env("TERM", "dumb");
    // No time limit, as in `smtp_example::approve_in_a_terminal`: the prompt or the CLI's
    // exit ends each wait, however slowly a busy machine runs it (ssh-keygen signs in here).
    let mut session = spawn_command(command, None).unwrap();
    let (_, prompt) = session
        .exp_regex(r"Type [0-9a-f]{8} to approve")
        .expect("the approval prompt");
    session.send_line(&prompt[5..13]).unwrap();
    let printed = session.exp_eof().unwrap();
    match session.process().wait().unwrap() {
        WaitStatus::Exited(_, 0) => printed,
        other => panic!("approve failed: {other:?}\n{printed}"),
    }
}

#[test]
fn two_trusted_signatures_send_the_email_once() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let bob = keys.approver("bob@example.com");
    let signers = keys.allowed_signers(&[&alice, &bob]);
    let mut run = start(&signers, "2");

    let first = approve_with_key(&run.store, &signers, run.id, &alice);
    assert!(first.contains("1 of 2, still pending"), "{first}");
    // One signature sends nothing: the example is still waiting.
    let pending = Gate::open(&run.store).unwrap().status(run.id).unwrap();
    assert_eq!(pending.effective_status(), EffectiveStatus::Pending);
    let outbox = std::fs::read_dir(run.sink.outbox()).unwrap().count();
    assert_eq!(outbox, 0, "sent before the quorum");

    let second = approve_with_key(&run.store, &signers, run.id, &bob);
    assert!(second.contains("(2 of 2)"), "{second}");
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("it needs 2 signed approval"), "{printed}");
    assert!(printed.contains("--approvers "), "{printed}");
    assert!(
        printed.contains("approve ") && printed.contains(" --key "),
        "{printed}"
    );
    assert!(printed.contains("sent to alice@example.com"), "{printed}");
    assert_eq!(delivered.len(), 1, "exactly one message: {delivered:?}");
}

#[test]
fn an_approval_forged_in_the_store_sends_nothing_and_says_why() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let bob = keys.approver("bob@example.com");
    let signers = keys.allowed_signers(&[&alice, &bob]);
    let mut run = start(&signers, "2");
    // Whoever can write the store writes "approved", as an agent with a shell could.
    let record = run.store.join("requests").join(format!("{}.json", run.id));
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    forged["status"] = "approved".into();
    forged["decidedAt"] = forged["createdAt"].clone();
    forged["decidedBy"] = "agent".into();
    // Renamed into place whole, as a careful forger would: the example is reading the
    // store meanwhile, and a half-written record would be refused as unreadable.
    let staged = run.store.parent().unwrap().join("forged.json");
    std::fs::write(&staged, serde_json::to_vec(&forged).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    std::fs::rename(&staged, &record).unwrap();

    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 1, "{printed}");
    assert!(
        delivered.is_empty(),
        "sent on a forged approval: {delivered:?}"
    );
    assert!(
        printed.contains("not sent (insufficient_approvals)")
            && printed.contains("0 valid signed approvals of the 2"),
        "it says why: {printed}"
    );
    // Nothing was spent: the forged record is still there, unused.
    let report = Gate::open(&run.store).unwrap().status(run.id).unwrap();
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
}
