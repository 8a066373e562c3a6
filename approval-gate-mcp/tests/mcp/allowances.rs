//! Issue 41 over MCP: a request an allowance covers is approved as it is filed, and
//! `request_approval` and `check_approval` say which allowance approved it and what is left
//! of it, so the agent need not wait; a tool can deny such a request but nothing in MCP makes,
//! widens or extends an allowance.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use approval_gate::allowance::{
    Allowance, AllowanceSignature, Bounds, Budget, Constraint, SignedAllowance, Terms, Test,
};
use approval_gate::{Clock as _, Policy, RequestId, SshKeygen, SystemClock};
use serde_json::{Value, json};

use crate::support::Session;

/// Makes an ed25519 key `name` in `dir` with ssh-keygen; its public key line.
fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen is not installed: install openssh-client");
    assert!(status.success());
    let public = std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap();
    (key, public.trim().to_owned())
}

fn pay(amount: u64) -> Value {
    json!({ "action": "pay the invoice", "reason": "due", "operation": "payments.send",
            "payload": { "to": "acme@example.com", "amount": amount } })
}

fn consume(id: &Value, amount: u64) -> Value {
    json!({ "id": id, "action": "pay the invoice", "operation": "payments.send",
            "payload": { "to": "acme@example.com", "amount": amount } })
}

/// Starts the server under alice's policy, and as the human grants alice's allowance of 2
/// payments to acme@example.com, 500 in all.
async fn allowed() -> (Session, approval_gate::Gate, RequestId, tempfile::TempDir) {
    let keys = tempfile::tempdir().unwrap();
    let (alice, alice_public) = keygen(keys.path(), "alice");
    let signers = keys.path().join("allowed_signers");
    std::fs::write(&signers, format!("alice@example.com {alice_public}\n")).unwrap();
    let session = Session::start_configured(None, |command, _, _| {
        command
            .env("APPROVAL_GATE_APPROVERS", &signers)
            .env("APPROVAL_GATE_QUORUM", "*=1");
    })
    .await;
    let policy = Policy::load_allowed_signers(&signers).unwrap();
    let human = session.store.builder().policy(policy).open().unwrap();
    let now = SystemClock.now();
    let allowance = Allowance::new(
        Terms {
            operation: "payments.*".into(),
            constraints: vec![
                Constraint::new("/to", Test::OneOf(vec![json!("acme@example.com")])).unwrap(),
            ],
            bounds: Bounds {
                uses: Some(2),
                budget: Some(Budget {
                    pointer: "/amount".into(),
                    total: 500,
                }),
                rate: None,
                not_before: now,
                not_after: now.saturating_add(Duration::from_secs(3600)),
            },
            agent: None,
            reason: "acme's invoices this hour".into(),
        },
        now,
    )
    .unwrap();
    let signature = SshKeygen::system()
        .sign(
            &alice,
            &allowance.statement("alice@example.com", 1).unwrap(),
        )
        .unwrap();
    let id = allowance.id();
    human
        .allow(SignedAllowance {
            allowance,
            required: 1,
            signatures: vec![AllowanceSignature {
                principal: "alice@example.com".into(),
                signature,
            }],
        })
        .unwrap();
    (session, human, id, keys)
}

#[tokio::test]
async fn request_and_check_say_which_allowance_approved_and_what_is_left() {
    let (session, human, aid, _keys) = allowed().await;

    let filed = session.call("request_approval", pay(200)).await.ok();
    assert_eq!(filed["status"], "approved", "{filed}");
    assert_eq!(filed["effectiveStatus"], "approved_unconsumed");
    assert_eq!(filed["authorizesExecution"], false);
    assert_eq!(filed["allowance"], aid.as_str());
    assert_eq!(filed["allowanceUsesLeft"], 2, "{filed}");
    assert_eq!(filed["allowanceBudgetLeft"], 500, "{filed}");
    assert!(filed["note"].as_str().unwrap().contains("no need to wait"));

    let checked = session
        .call("check_approval", json!({ "id": filed["id"] }))
        .await
        .ok();
    assert_eq!(
        checked["effectiveStatus"], "approved_unconsumed",
        "{checked}"
    );
    assert_eq!(checked["allowance"], aid.as_str());
    assert_eq!(checked["allowanceUsesLeft"], 2);
    assert_eq!(checked["authorizesExecution"], false);
    let note = checked["note"].as_str().unwrap();
    assert!(note.contains(&format!("allowance {aid}")), "{note}");
    assert!(note.contains("consume_approval returns ok: true"), "{note}");

    // Waiting is not needed, and not harmful: it answers at once, the same way.
    let waited = session
        .call(
            "wait_for_approval",
            json!({ "id": filed["id"], "timeoutSeconds": 1 }),
        )
        .await
        .ok();
    assert_eq!(waited["allowance"], aid.as_str(), "{waited}");
    assert_eq!(waited["allowanceBudgetLeft"], 500, "{waited}");

    let consumed = session
        .call("consume_approval", consume(&filed["id"], 200))
        .await
        .ok();
    assert_eq!(consumed["ok"], true, "{consumed}");
    let after = session
        .call("check_approval", json!({ "id": filed["id"] }))
        .await
        .ok();
    assert_eq!(after["effectiveStatus"], "consumed", "{after}");
    assert_eq!(after["allowanceUsesLeft"], 1, "{after}");
    assert_eq!(after["allowanceBudgetLeft"], 300, "{after}");

    // The budget left is 300: a payment of 400 is not covered, and waits for a human.
    let waits = session.call("request_approval", pay(400)).await.ok();
    assert_eq!(waits["status"], "pending", "{waits}");
    assert!(waits.get("allowance").is_none());
    assert!(waits.get("allowanceUsesLeft").is_none());
    let pending = session
        .call("check_approval", json!({ "id": waits["id"] }))
        .await
        .ok();
    assert!(pending.get("allowanceUsesLeft").is_none(), "{pending}");
    assert!(
        pending["note"]
            .as_str()
            .unwrap()
            .contains("pending: not approved"),
        "{pending}"
    );
    assert_eq!(human.allowance(aid).unwrap().usage.uses, 1);
}

#[tokio::test]
async fn no_tool_makes_widens_or_extends_an_allowance() {
    let (session, human, aid, _keys) = allowed().await;
    let before = human.allowance(aid).unwrap();
    let tools = session.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "request_approval",
            "check_approval",
            "wait_for_approval",
            "list_pending",
            "consume_approval",
            "decide_approval",
        ]
    );
    for tool in &tools {
        let input = serde_json::to_string(&tool.input_schema).unwrap();
        assert!(
            !input.contains("allowance"),
            "{} takes no allowance",
            tool.name
        );
    }
    // A request naming an allowance is refused as an unknown argument, and none is made.
    let mut smuggled = pay(100);
    smuggled["allowance"] = json!({ "uses": 100 });
    session
        .call("request_approval", smuggled)
        .await
        .refused("invalid_arguments");
    // Approving a request an allowance approved, as decide_approval, is refused too.
    let filed = session.call("request_approval", pay(100)).await.ok();
    session
        .call(
            "decide_approval",
            json!({ "id": filed["id"], "approve": true }),
        )
        .await
        .refused("approve_not_allowed");
    let after = human.allowances().unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].allowance, before.allowance);
    assert_eq!(after[0].usage, before.usage);
}
