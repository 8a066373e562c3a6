use serde_json::Value;

use super::super::super::message::Kind;
use super::super::test_messages::{
    HOSTILE, KEY, LINK, first, hides_or_breaks, long_action, message,
};
use super::*;

/// Every object in `value` whose `type` is a text object's, with its path.
fn text_objects<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if matches!(
                map.get("type").and_then(Value::as_str),
                Some("plain_text" | "mrkdwn")
            ) {
                out.push(value);
            }
            map.values().for_each(|v| text_objects(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| text_objects(v, out)),
        _ => {}
    }
}

/// Every `url` anywhere in `value`.
fn urls(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "url" {
                    out.push(v.as_str().unwrap().to_owned());
                }
                urls(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| urls(v, out)),
        _ => {}
    }
}

/// What the approver sees of `action` in `body`: the action section's text.
fn action_text(body: &Value) -> &str {
    body["blocks"][2]["text"]["text"].as_str().unwrap()
}

#[test]
fn hostile_text_is_plain_text_shown_as_written_on_one_line() {
    let long = long_action();
    for action in HOSTILE.iter().copied().chain([long.as_str()]) {
        let body = body(&message(action, true), KEY);
        let mut objects = Vec::new();
        text_objects(&body["blocks"], &mut objects);
        assert!(objects.len() >= 9, "{body}");
        for object in objects {
            // No mrkdwn anywhere in the blocks: Slack parses nothing the agent wrote.
            assert_eq!(object["type"], "plain_text", "{object}");
            assert_eq!(object["emoji"], false, "{object}");
        }
        let shown = action_text(&body);
        assert!(!hides_or_breaks(shown), "{action:?} gave {shown:?}");
        assert!(
            shown.chars().count() <= "Action: ".len() + ACTION_SHOWN,
            "{shown}"
        );
        // The one link is ours.
        let mut found = Vec::new();
        urls(&body, &mut found);
        assert_eq!(found, [LINK], "{action:?}");
    }
}

#[test]
fn what_the_agent_wrote_is_shown_not_dropped() {
    let body = body(&message("*APPROVED* by alice", true), KEY);
    assert_eq!(action_text(&body), "Action: *APPROVED* by alice");
    let body = body_of("x\r\nBcc: victim@example.com");
    assert_eq!(action_text(&body), r"Action: x\r\nBcc: victim@example.com");
    let body = body_of("pay \u{202e}0001$");
    assert_eq!(action_text(&body), r"Action: pay \u{202e}0001$");
    let long = long_action();
    let shown = body_of(&long);
    assert!(action_text(&shown).ends_with('…'));
}

fn body_of(action: &str) -> Value {
    body(&message(action, true), KEY)
}

#[test]
fn the_fallback_text_parses_as_no_markup() {
    let body = body_of("<!channel> pay now");
    let fallback = body["text"].as_str().unwrap();
    for c in ['<', '>', '*', '_', '~', '`', '@', '\n', '\r'] {
        assert!(!fallback.contains(c), "{c:?} in {fallback}");
    }
    // The action is not in it at all; the (hostile) operation is, escaped.
    assert!(!fallback.contains("pay now"), "{fallback}");
    assert!(
        fallback.starts_with("Approval requested: payments.refund\u{2cd}\u{2217}&lt;!here&gt;"),
        "{fallback}"
    );
}

#[test]
fn the_header_fields_and_button_keep_within_block_kit_limits() {
    let mut message = message("x", true);
    message.operation = Some("o".repeat(10_000));
    message.requester = Some("r".repeat(10_000));
    let body = body(&message, KEY);
    let header = body["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(header.chars().count() <= HEADER_MAX, "{}", header.len());
    assert_eq!(body["blocks"][0]["block_id"], KEY);
    for field in body["blocks"][1]["fields"].as_array().unwrap() {
        assert!(field["text"].as_str().unwrap().chars().count() <= 2_000);
    }
    let fields: Vec<&str> = body["blocks"][1]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(fields[2], "Payload digest\n0123456789abcdef");
    assert_eq!(fields[3], "Expires\n2026-12-07T01:00:00Z");
    assert_eq!(fields[4], "Request\na1b2c3d4e5f6");
    let button = &body["blocks"][3]["elements"][0];
    assert_eq!(button["type"], "button");
    assert_eq!(button["text"]["text"], "Open the request");
    assert_eq!(button["url"], LINK);
    // The longest headline with the longest operation fits the header.
    for kind in [Kind::Filed, Kind::Reminder, Kind::Escalation] {
        assert!(text::headline(kind).chars().count() + 2 + FIELD_SHOWN <= HEADER_MAX);
    }
}

#[test]
fn without_a_link_it_says_how_to_get_one_and_has_no_button() {
    let body = body(&message("x", false), KEY);
    let text = body.to_string();
    assert!(text.contains(text::NO_LINK), "{text}");
    assert!(!text.contains("\"button\""), "{text}");
    let mut found = Vec::new();
    urls(&body, &mut found);
    assert!(found.is_empty(), "{found:?}");
}

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap()
}

#[test]
fn its_table_needs_a_secret_url_and_refuses_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("url");
    std::fs::write(&path, "https://hooks.slack.com/services/T0/B0/SECRET\n").unwrap();
    let file = format!("url = {{ file = {:?} }}", path.to_str().unwrap());
    let slack = Slack::from_table("team", &table(&file)).unwrap();
    assert_eq!(slack.name(), "team");
    assert!(!format!("{slack:?}").contains("SECRET"));

    let error =
        Slack::from_table("team", &table(&format!("{file}\nchannel = \"#ops\""))).unwrap_err();
    assert!(error.starts_with(".channel: unknown key"), "{error}");
    let error = Slack::from_table("team", &table("")).unwrap_err();
    assert!(error.contains(".url: missing"), "{error}");
    let error =
        Slack::from_table("team", &table("url = \"https://hooks.slack.com/x\"")).unwrap_err();
    assert!(
        error.contains("never written in the config file"),
        "{error}"
    );

    std::fs::write(&path, "http://hooks.slack.com/services/T0/B0/SECRET").unwrap();
    let error = Slack::from_table("team", &table(&file)).unwrap_err();
    assert!(error.contains("https://"), "{error}");
    assert!(!error.contains("SECRET"), "{error}");
}

/// A Slack channel posting to `url` (read from a file, as an operator would keep it).
fn slack_at(dir: &std::path::Path, url: &str) -> Slack {
    let path = dir.join("slack-url");
    std::fs::write(&path, format!("{url}\n")).unwrap();
    Slack::from_table(
        "team",
        &table(&format!("url = {{ file = {:?} }}", path.to_str().unwrap())),
    )
    .unwrap()
}

#[test]
fn the_receiver_gets_the_block_kit_message_as_json() {
    use approval_gate_tests::receiver::Receiver;
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::accepting();
    let slack = slack_at(
        dir.path(),
        &format!("{}services/T0/B0/secret", receiver.url()),
    );
    for action in HOSTILE {
        slack.send(&message(action, true), &first()).unwrap();
    }
    let seen = receiver.wait_for(HOSTILE.len());
    for (request, action) in seen.iter().zip(HOSTILE) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/services/T0/B0/secret");
        assert_eq!(
            request.header("content-type"),
            Some("application/json; charset=utf-8")
        );
        // What arrived is exactly the message built, so the escaping tests above hold of it.
        assert_eq!(request.json(), body(&message(action, true), KEY));
        assert!(!hides_or_breaks(action_text(&request.json())));
    }
}

#[test]
fn a_503_is_retried_and_a_400_is_not() {
    use approval_gate_tests::receiver::{Receiver, Reply};
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(|request, _| {
        Reply::Status(if request.path.ends_with("/busy") {
            503
        } else {
            400
        })
    });
    let busy = slack_at(dir.path(), &format!("{}busy", receiver.url()));
    let failure = busy.send(&message("x", true), &first()).unwrap_err();
    assert!(matches!(failure, Failure::Retry(_)), "{failure:?}");
    assert!(!failure.reason().contains("busy"), "{failure:?}");
    let bad = slack_at(dir.path(), &format!("{}invalid_blocks", receiver.url()));
    let failure = bad.send(&message("x", true), &first()).unwrap_err();
    assert!(matches!(failure, Failure::Permanent(_)), "{failure:?}");
}
