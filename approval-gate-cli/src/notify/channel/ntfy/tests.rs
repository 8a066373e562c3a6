use std::fmt::Write as _;

use serde_json::Value;

use super::super::test_messages::{
    HOSTILE, KEY, LINK, first, hides_or_breaks, long_action, message,
};
use super::*;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap()
}

/// The message's lines as the phone shows them.
fn lines(body: &Value) -> Vec<&str> {
    body["message"].as_str().unwrap().split('\n').collect()
}

#[test]
fn hostile_text_stays_on_its_own_line_with_nothing_hidden() {
    let long = long_action();
    for action in HOSTILE.iter().copied().chain([long.as_str()]) {
        let body = body(&message(action, true), "approvals", Some(4), KEY);
        let lines = lines(&body);
        // Eight lines, always: the agent cannot add one (a fake "Approved by alice").
        assert_eq!(lines.len(), 8, "{action:?}: {lines:?}");
        assert!(lines[0].starts_with("Action: "), "{lines:?}");
        assert!(lines[0].chars().count() <= "Action: ".len() + ACTION_SHOWN);
        assert!(lines[2].starts_with("Requester: agent <@U123> *bot*\\r\\nX-Evil: 1"));
        for line in &lines {
            assert!(!hides_or_breaks(line), "{line:?}");
        }
        let title = body["title"].as_str().unwrap();
        assert!(!hides_or_breaks(title), "{title:?}");
        assert_eq!(body["markdown"], false);
        // The only links are ours: the click and the one view action.
        assert_eq!(body["click"], LINK);
        let actions = body["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0]["action"], "view");
        assert_eq!(actions[0]["url"], LINK);
        assert_eq!(actions[0]["label"], "Open the request");
    }
}

#[test]
fn the_message_carries_every_fact_and_a_stable_sequence_id() {
    let body = body(&message("send $5", true), "approvals", None, KEY);
    assert_eq!(body["topic"], "approvals");
    assert_eq!(
        body["title"],
        "Approval requested: payments.refund_*<!here>"
    );
    assert_eq!(
        lines(&body),
        [
            "Action: send $5",
            "Operation: payments.refund_*<!here>",
            "Requester: agent <@U123> *bot*\\r\\nX-Evil: 1",
            "Payload digest: 0123456789abcdef",
            "Expires: 2026-12-07T01:00:00Z",
            "Request: a1b2c3d4e5f6",
            &format!("Page: {LINK}"),
            text::DECIDE_ON_THE_PAGE,
        ]
    );
    assert_eq!(body["sequence_id"], "a1b2c3d4e5f6_team_filed");
    assert!(body.get("priority").is_none());
    assert_eq!(body["tags"], serde_json::json!(["hourglass_flowing_sand"]));
}

#[test]
fn without_a_link_it_says_how_to_get_one_and_has_no_action() {
    let body = body(&message("x", false), "approvals", None, KEY);
    assert!(body.get("click").is_none());
    assert!(body.get("actions").is_none());
    assert_eq!(lines(&body)[6], format!("Page: {}", text::NO_LINK));
}

#[test]
fn its_table_checks_every_key() {
    let ntfy = Ntfy::from_table("phone", &table("topic = \"approvals_3f9c\"")).unwrap();
    assert_eq!(ntfy.server.as_str(), DEFAULT_SERVER);
    assert!(format!("{ntfy:?}").contains("approvals_3f9c"));
    let ntfy = Ntfy::from_table(
        "phone",
        &table("topic = \"t\"\nserver = \"https://ntfy.example.com/sub\"\npriority = 5"),
    )
    .unwrap();
    assert_eq!(ntfy.server.as_str(), "https://ntfy.example.com/sub/");
    assert_eq!(ntfy.priority, Some(5));

    for (text, expected) in [
        ("topic = \"t\"\ncolor = \"red\"", ".color: unknown key"),
        ("", ".topic: missing"),
        ("topic = \"a b\"", "not a topic name"),
        (
            &format!("topic = \"{}\"", "a".repeat(65)),
            "not a topic name",
        ),
        ("topic = \"t\"\npriority = 6", "priority"),
        ("topic = \"t\"\npriority = \"high\"", "priority"),
        (
            "topic = \"t\"\nserver = \"http://ntfy.example.com\"",
            "https://",
        ),
        (
            "topic = \"t\"\nserver = \"https://u:p@ntfy.example.com\"",
            "credentials",
        ),
        (
            "topic = \"t\"\nserver = \"https://ntfy.example.com/?x=1\"",
            "root URL",
        ),
        (
            "topic = \"t\"\ntoken = \"tk_secret\"",
            "never written in the config file",
        ),
        ("topic = { nope = 1 }", ".topic: must be a string or"),
    ] {
        let error = Ntfy::from_table("phone", &table(text)).unwrap_err();
        assert!(error.contains(expected), "{text:?}: {error}");
    }
}

#[test]
fn a_secret_topic_and_token_never_show() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("topic"), "secret_topic_3f9c\n").unwrap();
    std::fs::write(dir.path().join("token"), "tk_secret\n").unwrap();
    let text = format!(
        "topic = {{ file = {:?} }}\ntoken = {{ file = {:?} }}",
        dir.path().join("topic").to_str().unwrap(),
        dir.path().join("token").to_str().unwrap()
    );
    let ntfy = Ntfy::from_table("phone", &table(&text)).unwrap();
    let debug = format!("{ntfy:?}");
    assert!(
        !debug.contains("secret_topic") && !debug.contains("tk_secret"),
        "{debug}"
    );

    std::fs::write(dir.path().join("topic"), "not/a topic").unwrap();
    let error = Ntfy::from_table("phone", &table(&text)).unwrap_err();
    assert!(error.contains(".topic: the topic from the file"), "{error}");
    assert!(!error.contains("not/a"), "{error}");
    std::fs::write(dir.path().join("topic"), "t").unwrap();
    std::fs::write(dir.path().join("token"), "tk_a\r\nX-Evil: 1").unwrap();
    let error = Ntfy::from_table("phone", &table(&text)).unwrap_err();
    assert!(error.contains("header cannot carry"), "{error}");
    assert!(!error.contains("tk_a"), "{error}");
}

/// An ntfy channel publishing to `url` on the topic `approvals`, with a token if given.
fn ntfy_at(dir: &std::path::Path, url: &str, token: Option<&str>) -> Ntfy {
    let mut text = format!("server = {url:?}\ntopic = \"approvals\"\npriority = 4");
    if let Some(token) = token {
        let path = dir.join("token");
        std::fs::write(&path, token).unwrap();
        let path = path.to_str().unwrap();
        let _ = write!(text, "\ntoken = {{ file = {path:?} }}");
    }
    Ntfy::from_table("phone", &table(&text)).unwrap()
}

#[test]
fn the_receiver_gets_json_at_the_root_with_the_bearer_token_and_no_agent_header() {
    use approval_gate_tests::receiver::Receiver;
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::accepting();
    let ntfy = ntfy_at(dir.path(), &receiver.url(), Some("tk_AgE3n7\n"));
    for action in HOSTILE {
        ntfy.send(&message(action, true), &first()).unwrap();
    }
    let second = super::super::super::message::Delivery {
        key: KEY,
        attempt: 2,
    };
    ntfy.send(&message("again", true), &second).unwrap();
    let seen = receiver.wait_for(HOSTILE.len() + 1);
    for (request, action) in seen.iter().zip(HOSTILE) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/");
        assert_eq!(request.header("authorization"), Some("Bearer tk_AgE3n7"));
        assert_eq!(
            request.header("content-type"),
            Some("application/json; charset=utf-8")
        );
        // No ntfy header form (Title, Click, Actions, ...): nothing the agent wrote is a header.
        for name in request.headers.keys() {
            assert!(
                [
                    "host",
                    "authorization",
                    "content-type",
                    "content-length",
                    "user-agent",
                    "accept",
                    "accept-encoding",
                    "connection"
                ]
                .contains(&name.as_str()),
                "{name}"
            );
        }
        let json = request.json();
        assert_eq!(
            json,
            body(&message(action, true), "approvals", Some(4), KEY)
        );
        assert_eq!(json["priority"], 4);
    }
    // A retry carries the same sequence id, so ntfy replaces rather than adds.
    assert_eq!(
        seen[HOSTILE.len()].json()["sequence_id"],
        seen[0].json()["sequence_id"]
    );
}

#[test]
fn without_a_token_no_authorization_is_sent() {
    use approval_gate_tests::receiver::Receiver;
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::accepting();
    ntfy_at(dir.path(), &receiver.url(), None)
        .send(&message("x", false), &first())
        .unwrap();
    assert_eq!(receiver.wait_for(1)[0].header("authorization"), None);
}

#[test]
fn a_503_is_retried_and_a_400_is_not() {
    use approval_gate_tests::receiver::{Receiver, Reply};
    let dir = tempfile::tempdir().unwrap();
    for (status, retry) in [(503, true), (429, true), (400, false), (401, false)] {
        let receiver = Receiver::start(move |_, _| Reply::Status(status));
        let failure = ntfy_at(dir.path(), &receiver.url(), Some("tk_x"))
            .send(&message("x", true), &first())
            .unwrap_err();
        assert_eq!(
            matches!(failure, Failure::Retry(_)),
            retry,
            "{status}: {failure:?}"
        );
        assert!(!failure.reason().contains("tk_x"), "{failure:?}");
    }
}

#[test]
fn the_longest_sequence_id_is_a_valid_ntfy_id() {
    use super::super::super::message::{Kind, delivery_key};
    let longest = delivery_key(
        "a1b2c3d4e5f6".parse().unwrap(),
        &"z".repeat(32),
        Kind::Escalation,
    );
    let id = sequence_id(&longest);
    assert_eq!(id.len(), 56);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{id}"
    );
}
