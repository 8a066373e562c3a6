//! The exact origin of an approval. WebAuthn binds a passkey to a host name, not a port: a
//! look-alike page the agent serves on another port of `localhost` gets the same passkey
//! prompt and a valid signature over the agent's request. The page refuses it, and so does
//! the executor (its approvers file names the one origin each passkey approves on).

use approval_gate::{Binding, EffectiveStatus, Gate, Policy, RequestId};
use approval_gate_tests::http::free_port;
use approval_gate_tests::webauthn::SoftPasskey;

use crate::attacks::{binding, file, refusals, status};
use crate::server::{Served, approve, sign_in};

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

/// The executor of the store of `served`, holding `approvers` (quorum 1).
fn executor(served: &Served, approvers: &str) -> Gate {
    let policy = Policy::from_allowed_signers(approvers)
        .unwrap()
        .require("*", 1)
        .unwrap();
    Gate::builder()
        .policy(policy)
        .dir(&served.store)
        .open()
        .unwrap()
}

fn consume(gate: &Gate, id: RequestId, binding: &Binding) -> Result<(), approval_gate::Error> {
    gate.consume::<serde_json::Value>(id, binding).map(drop)
}

#[test]
fn an_approval_made_on_another_port_is_refused_by_the_page_and_audited() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let agent = served.agent();
    let mut browser = served.client();
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
    let id = file(&agent, 5);
    // The agent's page on another port had alice sign this request's statement.
    let mut made = alice.made(&served.origin);
    made.origin = format!("http://localhost:{}", free_port());
    let refused = approve(&mut browser, &alice, id, &made);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains(&made.origin), "{}", refused.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
    assert_eq!(refusals(&agent, id), ["bad_signature"]);
    // On the page's own origin the same passkey approves, and the executor takes it.
    let approved = approve(&mut browser, &alice, id, &alice.made(&served.origin));
    assert_eq!(approved.status, 200, "{}", approved.body);
    consume(&served.executor(1), id, &binding(5)).unwrap();
}

#[test]
fn the_page_takes_only_its_own_origin_even_where_the_file_trusts_another_too() {
    let alice = alice();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    Gate::open(&store).unwrap();
    let (port, other) = (free_port(), free_port());
    let lines = [port, other].map(|p| alice.allowed_signers_line(&format!("http://localhost:{p}")));
    let approvers = tmp.path().join("approvers");
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    let store = store.display().to_string();
    let served = Served::start_on(tmp, store, approvers, "*=1", port, &[]);
    let agent = served.agent();
    let mut browser = served.client();
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
    let id = file(&agent, 5);
    let mut made = alice.made(&served.origin);
    made.origin = format!("http://localhost:{other}");
    let refused = approve(&mut browser, &alice, id, &made);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(status(&agent, id), EffectiveStatus::Pending);
    // An executor whose file names only the page's origin refuses what the agent stores
    // from a page on the other port (the agent writes the store directly through a gate
    // that trusts that port).
    let signature = {
        let shown = agent.status(id).unwrap();
        let statement = shown
            .request()
            .decision_statement("alice@example.com")
            .unwrap();
        let assertion = alice.assertion(&approval_gate::passkey::challenge(&statement), &made);
        let passkey =
            approval_gate::passkey::Passkey::from_sec1("localhost", &alice.point()).unwrap();
        envelope(&assertion).armor(&passkey).unwrap()
    };
    let writer = executor(&served, &lines[1]);
    let decision = approval_gate::Decision::by("agent").signed("alice@example.com", signature);
    writer.approve(id, &decision).unwrap();
    let strict = executor(&served, &lines[0]);
    assert!(
        matches!(
            consume(&strict, id, &binding(5)),
            Err(approval_gate::Error::BadSignature { .. })
        ),
        "the executor took an approval made on another port"
    );
}

/// The library's assertion from the JSON the page posts.
fn envelope(posted: &serde_json::Value) -> approval_gate::passkey::Assertion {
    use base64::Engine as _;
    let field = |name: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(posted[name].as_str().unwrap())
            .unwrap()
    };
    approval_gate::passkey::Assertion {
        credential_id: field("credentialId"),
        authenticator_data: field("authenticatorData"),
        client_data_json: field("clientDataJSON"),
        signature: field("signature"),
    }
}
