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
