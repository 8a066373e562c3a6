//! `cargo run --example smtp -- --approvers FILE --allowance KEY` end to end (issue 41): the
//! approver's key signs "up to 3 invoices to @example.com for a day", and the example files
//! four invoices: exactly three go out to a real SMTP server on loopback without anyone
//! being asked, and the fourth waits for a human (here the human says no, and it is never
//! sent).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use approval_gate::{Decision, EffectiveStatus, Gate, RequestId};
use approval_gate_tests::ssh::Keys;

use crate::smtp_run::built;
use crate::smtp_sink::SmtpSink;

#[test]
fn three_invoices_go_out_unasked_and_the_fourth_waits_for_a_human() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let signers = keys.allowed_signers(&[&alice]);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let mut child = Command::new(built("examples/smtp"))
        .arg("--approvers")
        .arg(&signers)
        .arg("--allowance")
        .arg(&alice.key)
        .env("APPROVAL_GATE_DIR", &store)
        .env("SMTP_URL", format!("smtp://{}", sink.addr()))
        .env_remove("SMTP_CA_FILE")
        .env_remove("APPROVAL_GATE_QUORUM")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let mut filed: Vec<RequestId> = Vec::new();
    // Read until the example waits for a human: everything before is done.
    loop {
        let line = lines.next().expect("the example ended early").unwrap();
        if let Some(rest) = line.strip_prefix("requested approval ") {
            filed.push(rest[..12].parse().unwrap());
        }
        let waiting = line.starts_with("waiting for the decision");
        printed.push(line);
        if waiting {
            break;
        }
    }
    let text = printed.join("\n");
    assert!(text.contains("allowance "), "{text}");
    assert!(
        text.contains("to matches"),
        "the allowance in words: {text}"
    );
    assert_eq!(filed.len(), 4, "{text}");
    assert_eq!(text.matches("sending without asking").count(), 3, "{text}");
    assert_eq!(
        text.matches("approve or deny it in another terminal")
            .count(),
        1,
        "only the fourth asks: {text}"
    );

    let delivered = |outbox: &std::path::Path| {
        let mut all: Vec<_> = std::fs::read_dir(outbox)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .collect();
        all.sort();
        all
    };
    let sent = delivered(sink.outbox());
    assert_eq!(sent.len(), 3, "exactly three went out unasked: {sent:?}");
    let mut recipients: Vec<String> = sent
        .iter()
        .map(|path| {
            let message = std::fs::read_to_string(path).unwrap();
            let to = message.lines().find(|l| l.starts_with("To: ")).unwrap();
            to.to_owned()
        })
        .collect();
    recipients.sort();
    assert_eq!(
        recipients,
        [
            "To: alice@example.com",
            "To: bob@example.com",
            "To: carol@example.com"
        ]
    );

    let human = Gate::open(&store).unwrap();
    for id in &filed[..3] {
        let report = human.status(*id).unwrap();
        assert_eq!(report.effective_status(), EffectiveStatus::Consumed);
        assert!(report.request().allowance().is_some(), "{id}");
    }
    let fourth = human.status(filed[3]).unwrap();
    assert_eq!(fourth.effective_status(), EffectiveStatus::Pending);
    assert!(fourth.request().allowance().is_none());
    let allowances = human.allowances().unwrap();
    assert_eq!(allowances.len(), 1);
    assert_eq!(allowances[0].usage.uses, 3);
    assert_eq!(allowances[0].uses_left(), Some(0));

    human
        .deny(filed[3], &Decision::by("tester").reason("enough for today"))
        .unwrap();
    for line in lines {
        printed.push(line.unwrap());
    }
    let status = child.wait().unwrap();
    let text = printed.join("\n");
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(text.contains("not sent: the request is denied"), "{text}");
    assert_eq!(delivered(sink.outbox()).len(), 3, "{text}");
}
