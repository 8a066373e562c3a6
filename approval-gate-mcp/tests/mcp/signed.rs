//! The server under a quorum policy (`APPROVAL_GATE_APPROVERS`, `APPROVAL_GATE_QUORUM`): a
//! request gathering signed approvals stays pending and says k of M to the agent, and an
//! approval written into the store without signatures is refused at consume, unspent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use approval_gate::{Decision, Policy, RequestId};
use serde_json::json;

use crate::support::{Session, backend};

const ACTION: &str = "wire 1200 EUR to ACME Ltd";

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

#[tokio::test]
async fn a_quorum_in_progress_is_pending_and_says_k_of_m() {
    let keys = tempfile::tempdir().unwrap();
    let (alice, alice_public) = keygen(keys.path(), "alice");
    let (_, bob_public) = keygen(keys.path(), "bob");
    let signers = keys.path().join("allowed_signers");
    std::fs::write(
        &signers,
        format!("alice@example.com {alice_public}\nbob@example.com {bob_public}\n"),
    )
    .unwrap();
    let session = Session::start_configured(None, |command, _, _| {
        command
            .env("APPROVAL_GATE_APPROVERS", &signers)
            .env("APPROVAL_GATE_QUORUM", "payments.*=2,*=1");
    })
    .await;
    let filed = session
        .call(
            "request_approval",
            json!({ "action": ACTION, "reason": "invoice due", "operation": "payments.wire" }),
        )
        .await
        .ok();
    let id: RequestId = filed["id"].as_str().unwrap().parse().unwrap();

    // The server's gate held the policy when it filed the request.
    let policy = Policy::load_allowed_signers(&signers)
        .unwrap()
        .require("payments.*", 2)
        .unwrap()
        .require("*", 1)
        .unwrap();
    let human = session.store.builder().policy(policy).open().unwrap();
    let shown = human.status(id).unwrap();
    assert_eq!(shown.required_approvals(), 2);
    let statement = shown
        .request()
        .decision_statement("alice@example.com")
        .unwrap();
    let signature = approval_gate::SshKeygen::system()
        .sign(&alice, &statement)
        .unwrap();
    human
        .approve_as_shown(
            shown.request(),
            &Decision::by("alice").signed("alice@example.com", signature),
        )
        .unwrap();

    let checked = session
        .call("check_approval", json!({ "id": id.to_string() }))
        .await
        .ok();
    assert_eq!(checked["effectiveStatus"], "pending");
    assert_eq!(checked["requiredApprovals"], 2);
    assert_eq!(checked["approvals"][0]["principal"], "alice@example.com");
    let note = checked["note"].as_str().unwrap();
    assert!(note.starts_with("1 of 2 signed approvals so far"), "{note}");

    let waited = session
        .call(
            "wait_for_approval",
            json!({ "id": id.to_string(), "timeoutSeconds": 1 }),
        )
        .await
        .refused("timeout");
    let message = waited["message"].as_str().unwrap();
    assert!(
        message.contains("(1 of 2 signed approvals so far"),
        "{message}"
    );

    // Written into the store by hand, "approved" is still one signature short.
    backend().tamper(&session.store, id, &mut |forged| {
        forged["status"] = json!("approved");
        forged["decidedAt"] = forged["createdAt"].clone();
        forged["decidedBy"] = json!("agent");
    });
    let refused = session
        .call(
            "consume_approval",
            json!({ "id": id.to_string(), "action": ACTION, "operation": "payments.wire" }),
        )
        .await
        .refused("insufficient_approvals");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("1 valid signed approvals of the 2"),
        "{message}"
    );
    assert!(message.contains("it was not spent"), "{message}");
}

/// Issue 41: a request an allowance a human signed covers is approved as it is filed, and
/// the answer says so, so the agent need not wait; the consume counts the use. One it does
/// not cover waits for a human. No tool makes, widens or revokes an allowance.
#[tokio::test]
async fn an_allowance_approves_a_covered_request_as_it_is_filed_and_no_tool_makes_one() {
    use approval_gate::allowance::{
        Allowance, AllowanceSignature, Bounds, Constraint, SignedAllowance, Terms, Test,
    };
    use approval_gate::{Clock as _, SystemClock};

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
            operation: "mail.send".into(),
            constraints: vec![Constraint::new("/to", Test::Glob("*@example.com".into())).unwrap()],
            bounds: Bounds {
                uses: Some(1),
                budget: None,
                rate: None,
                not_before: now,
                not_after: now.saturating_add(std::time::Duration::from_secs(3600)),
            },
            agent: None,
            reason: "one invoice".into(),
        },
        now,
    )
    .unwrap();
    let signature = approval_gate::SshKeygen::system()
        .sign(
            &alice,
            &allowance.statement("alice@example.com", 1).unwrap(),
        )
        .unwrap();
    let aid = allowance.id();
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

    let ask = |to: &str| {
        json!({ "action": "send the invoice", "reason": "due", "operation": "mail.send",
                "payload": { "to": to } })
    };
    let filed = session
        .call("request_approval", ask("bob@example.com"))
        .await
        .ok();
    assert_eq!(filed["status"], "approved", "{filed}");
    assert_eq!(filed["effectiveStatus"], "approved_unconsumed");
    assert_eq!(filed["allowance"], aid.as_str());
    assert!(
        filed["note"].as_str().unwrap().contains("no need to wait"),
        "{filed}"
    );
    let consumed = session
        .call(
            "consume_approval",
            json!({ "id": filed["id"], "action": "send the invoice", "operation": "mail.send",
                    "payload": { "to": "bob@example.com" } }),
        )
        .await
        .ok();
    assert_eq!(consumed["ok"], true, "{consumed}");
    assert_eq!(human.allowance(aid).unwrap().usage.uses, 1);

    let waits = session
        .call("request_approval", ask("eve@evil.example"))
        .await
        .ok();
    assert_eq!(waits["status"], "pending");
    assert!(waits.get("allowance").is_none());

    let tools = session.client.peer().list_all_tools().await.unwrap();
    assert!(
        tools.iter().all(|tool| !tool.name.contains("allow")),
        "{:?}",
        tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
    );
}
