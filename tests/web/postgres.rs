//! Several instances of `serve` over one PostgreSQL store, as behind a load balancer: a
//! session made on one is taken by the other (they share the session key file), and a
//! decision made through either is the store's.

use std::os::unix::fs::PermissionsExt as _;

use approval_gate::{Binding, CanonicalPayload, NewRequest};
use approval_gate_tests::http::free_port;
use approval_gate_tests::pg;
use approval_gate_tests::webauthn::SoftPasskey;

use crate::server::{Served, approve, sign_in};

#[test]
fn two_instances_over_one_postgresql_store_share_sessions_and_decisions() {
    let url = pg::create_database();
    let init = url.clone();
    pg::on_own_thread(move || approval_gate::postgres::init(&init)).expect("db init");
    let alice = SoftPasskey::new(4, "alice@example.com", "localhost");
    let dir = tempfile::tempdir().unwrap();
    let approvers = dir.path().join("approvers");
    // Each instance is a page of its own origin here, and the file trusts the passkey on
    // both (behind a real load balancer they share one).
    let ports = [free_port(), free_port()];
    let lines: Vec<String> = ports
        .iter()
        .map(|port| alice.allowed_signers_line(&format!("http://localhost:{port}")))
        .collect();
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    let key = dir.path().join("session.key");
    std::fs::write(&key, "5a".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();
    let instance = |port| {
        let extra = ["--session-key-file", key];
        let tmp = tempfile::tempdir().unwrap();
        Served::start_on(tmp, url.clone(), approvers.clone(), "*=1", port, &extra)
    };
    let first = instance(ports[0]);
    let second = instance(ports[1]);

    let id = pg::on_own_thread({
        let agent = first.agent();
        move || {
            agent
                .request_approval(
                    NewRequest::new("deploy v2", "release")
                        .operation("deploy.web")
                        .payload(CanonicalPayload::from_json_text(r#"{"v":2}"#).unwrap()),
                )
                .unwrap()
                .request
                .id()
        }
    });
    // Signed in through the first instance; the next request lands on the second.
    let mut browser = first.client();
    let signed = sign_in(&mut browser, &alice);
    assert_eq!(signed.status, 200, "{}", signed.body);
    let mut balanced = second.client();
    balanced.cookies = browser.cookies.clone();
    let listed = balanced.get("/");
    assert_eq!(
        listed.status, 200,
        "the session holds on the other instance"
    );
    assert!(listed.body.contains(id.as_str()), "{}", listed.body);
    let made = alice.made(&second.origin);
    let approved = approve(&mut balanced, &alice, id, &made);
    assert_eq!(approved.status, 200, "{}", approved.body);

    // Both instances read the decision from the store; the executor takes it, once.
    let page = browser.get(&format!("/requests/{id}"));
    assert!(
        page.body.contains("approved, not yet used"),
        "{}",
        page.body
    );
    let executor = second.executor(1);

    let spent = pg::on_own_thread(move || {
        let binding = Binding::new("deploy v2")
            .operation("deploy.web")
            .payload(CanonicalPayload::from_json_text(r#"{"v":2}"#).unwrap());
        let first = executor
            .consume::<serde_json::Value>(id, &binding)
            .map(drop);
        let again = executor
            .consume::<serde_json::Value>(id, &binding)
            .map(drop);
        (first, again)
    });
    assert!(spent.0.is_ok(), "{:?}", spent.0);
    assert!(
        matches!(spent.1, Err(approval_gate::Error::AlreadyConsumed(_))),
        "{:?}",
        spent.1
    );
    drop((first, second));
    pg::drop_database(&url);
}
