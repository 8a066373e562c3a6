use approval_gate::RequestId;
use approval_gate_tests::receiver::{Receiver, Reply};

use super::*;

/// The Standard Webhooks reference vector (the svix and standard-webhooks libraries' own
/// test: `TestWebhookSign`).
#[test]
fn the_signature_is_the_specs_reference_vector() {
    let key = decode_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    assert_eq!(
        sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            br#"{"test": 2432232314}"#
        ),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
}

#[test]
fn a_key_must_be_whsec_and_base64_of_24_to_64_bytes_and_is_never_quoted() {
    for bad in [
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_not base64!",
        "whsec_c2hvcnQ=",
        &format!("whsec_{}", STANDARD.encode([7u8; 65])),
    ] {
        let error = decode_key(bad).unwrap_err();
        assert!(!error.contains(bad), "{error}");
    }
    assert_eq!(
        decode_key(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).unwrap(),
        [7u8; 32]
    );
}

pub(crate) fn message(kind: Kind, action: &str) -> Message {
    Message {
        id: RequestId::parse("0123456789ab").unwrap(),
        kind,
        operation: Some("payments.refund".into()),
        action: action.into(),
        requester: Some("agent-7".into()),
        digest: Some("00112233aabbccdd".into()),
        expires_at: "2026-12-07T01:00:00Z".into(),
        link: Some("https://approvals.example.com/requests/0123456789ab".into()),
    }
}

#[test]
fn the_body_is_the_documented_json_with_the_action_cut() {
    let long = format!("refund \"x\" {}", "y".repeat(500));
    let body: serde_json::Value = serde_json::from_slice(&body(
        &message(Kind::Escalation, &long),
        "2026-12-07T00:00:00Z",
    ))
    .unwrap();
    assert_eq!(body["type"], "approval.escalated");
    assert_eq!(body["timestamp"], "2026-12-07T00:00:00Z");
    let data = &body["data"];
    assert_eq!(data["id"], "0123456789ab");
    assert_eq!(data["operation"], "payments.refund");
    assert_eq!(data["requester"], "agent-7");
    assert_eq!(data["digest"], "00112233aabbccdd");
    assert_eq!(data["expires_at"], "2026-12-07T01:00:00Z");
    assert_eq!(
        data["url"],
        "https://approvals.example.com/requests/0123456789ab"
    );
    let action = data["action"].as_str().unwrap();
    assert_eq!(action.chars().count(), text::ACTION_SHOWN);
    assert!(action.starts_with("refund \"x\" ") && action.ends_with('…'));
    assert_eq!(
        event_type(Kind::Filed),
        "approval.requested",
        "the other two names"
    );
    assert_eq!(event_type(Kind::Reminder), "approval.reminder");
}

fn webhook(url: &str, key: &[u8]) -> Webhook {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, format!("whsec_{}\n", STANDARD.encode(key))).unwrap();
    let table: toml::Table = format!("url = {url:?}\nsecret = {{ file = {path:?} }}\n")
        .parse()
        .unwrap();
    Webhook::from_table("ops", &table).unwrap()
}

#[test]
fn a_receiver_verifies_the_signature_and_sees_the_same_id_on_every_attempt() {
    let key = [42u8; 32];
    let receiver =
        Receiver::start(|_, earlier| Reply::Status(if earlier.is_empty() { 503 } else { 204 }));
    let channel = webhook(&receiver.url(), &key);
    let message = message(Kind::Filed, "send the report");
    let first = Delivery {
        key: "0123456789ab.ops.filed",
        attempt: 1,
    };
    assert!(matches!(
        channel.send(&message, &first),
        Err(Failure::Retry(_))
    ));
    let second = Delivery {
        attempt: 2,
        ..first
    };
    assert_eq!(channel.send(&message, &second), Ok(()));
    for request in receiver.wait_for(2) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.header("content-type"), Some("application/json"));
        let id = request.header("webhook-id").unwrap();
        assert_eq!(id, "0123456789ab.ops.filed");
        let timestamp = request.header("webhook-timestamp").unwrap();
        assert!(timestamp.parse::<u64>().is_ok(), "{timestamp}");
        assert_eq!(
            request.header("webhook-signature"),
            Some(sign(&key, id, timestamp, &request.body).as_str())
        );
        assert_eq!(request.json()["data"]["action"], "send the report");
    }
}

#[test]
fn a_bad_table_is_refused_naming_the_key_and_never_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, "hunter2-not-a-key").unwrap();
    for (text, needle) in [
        (
            "url = \"https://h.example\"\nsecret = { file = \"/x\" }\nto = 1\n",
            ".to: unknown key",
        ),
        ("secret = { file = \"/x\" }\n", ".url: missing"),
        (
            "url = \"http://h.example\"\nsecret = { file = \"/x\" }\n",
            ".url: must be https://",
        ),
        ("url = \"https://h.example\"\n", ".secret: missing"),
        (
            "url = \"https://h.example\"\nsecret = \"whsec_x\"\n",
            ".secret: must be { file",
        ),
        (
            "url = \"https://h.example\"\nsecret = { env = \"APPROVAL_GATE_TEST_UNSET_KEY\" }\n",
            ".secret: the environment variable APPROVAL_GATE_TEST_UNSET_KEY is not set",
        ),
        (
            &format!("url = \"https://h.example\"\nsecret = {{ file = {path:?} }}\n"),
            ".secret (the file",
        ),
    ] {
        let table: toml::Table = text.parse().unwrap();
        let error = Webhook::from_table("ops", &table).unwrap_err();
        assert!(error.starts_with(needle), "{text:?}: {error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}
