//! The library in one screen: an agent asks, a human decides, trusted code acts once.
//!
//! `cargo run --example quickstart` uses a throwaway store and approves in-process, standing
//! in for the human who would run `approval-gate approve <id>` in their own terminal.
#![allow(clippy::print_stdout)]

use approval_gate::{Binding, CanonicalPayload, Decision, Error, Gate, Grant, NewRequest, Status};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Transfer {
    to_iban: String,
    amount_cents: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let gate = Gate::open(dir.path().join("approvals"))?;

    let transfer = Transfer {
        to_iban: "DE89370400440532013000".into(),
        amount_cents: 12_500,
    };
    let action = "transfer 125.00 EUR to DE89370400440532013000";
    let submitted = gate.request_approval(
        NewRequest::new(action, "supplier invoice 1042")
            .requested_by("billing-agent")
            .operation("bank.transfer")
            .payload(CanonicalPayload::from_serialize(&transfer)?),
    )?;
    let id = submitted.request.id();
    println!("requested {id}: {action}");
    println!(
        "payload  {}",
        submitted.request.payload().map_or("", |p| p.as_str())
    );

    // Standing in for the human at the CLI.
    let report = gate.approve(id, &Decision::by("alice").reason("invoice checked"))?;
    assert_eq!(report.request().status(), Status::Approved);
    println!(
        "approved by alice; authorizes execution by itself: {}",
        report.authorizes_execution()
    );

    let binding = Binding::new(action)
        .operation("bank.transfer")
        .payload_of(&transfer)?;
    gate.execute_approved(id, &binding, |run: &Grant<Transfer>| {
        run.assert_active()?;
        println!("executing exactly what was approved: {:?}", run.payload());
        Ok::<_, Error>(())
    })?;

    match gate.execute_approved(id, &binding, |_: &Grant<Transfer>| Ok::<_, Error>(())) {
        Err(Error::AlreadyConsumed(_)) => println!("second attempt refused: already consumed"),
        other => return Err(format!("a replay must be refused, got {other:?}").into()),
    }
    for record in gate.audit_records()? {
        println!("audit #{} {:?}", record.seq, record.event);
    }
    gate.verify_audit()?;
    Ok(())
}
