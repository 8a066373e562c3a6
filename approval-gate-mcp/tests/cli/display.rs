//! `show` and `list` print agent-supplied text only escaped, whole in `show` and visibly cut
//! in `list`.

use approval_gate::{CanonicalPayload, Decision, NewRequest};
use approval_gate_mcp::display::escape;

use crate::support::{HOSTILE, Store, assert_clean, assert_success, stdout};

/// One request per hostile string, in every agent-supplied field; every other one denied
/// with the string as the decision reason.
fn hostile_store() -> Store {
    let store = Store::new();
    let gate = store.gate();
    for (index, text) in HOSTILE.iter().enumerate() {
        let payload = serde_json::json!({
            *text: text,
            "nested": [text, {"key": text}],
            "n": index,
        });
        let ask = NewRequest::new(format!("{index}: {text}"), *text)
            .requested_by(*text)
            .operation("smtp.send")
            .payload(CanonicalPayload::from_value(&payload).unwrap());
        let id = gate.request_approval(ask).unwrap().request.id();
        if index % 2 == 1 {
            gate.deny(id, &Decision::by(*text).reason(*text)).unwrap();
        }
    }
    store
}

#[test]
fn show_escapes_every_field() {
    let store = hostile_store();
    let page = store
        .gate()
        .list(approval_gate::ListFilter::All, None, 100)
        .unwrap();
    assert_eq!(page.items.len(), HOSTILE.len());
    for item in &page.items {
        let request = item.report().expect("readable").request();
        let output = store.run(&["show", request.id().as_str()]);
        assert_success(&output);
        assert_clean("show", &output.stdout);
        assert_clean("show stderr", &output.stderr);
        let shown = stdout(&output);
        for field in [request.action(), request.reason()] {
            assert!(shown.contains(&escape(field)), "{field:?} not in {shown}");
        }
        if let Some(reason) = request.decision_reason() {
            assert!(shown.contains(&format!("decision reason {}", escape(reason))));
            assert!(shown.contains(&format!("decided by      {}", escape(reason))));
        }
        // The payload, as printed, is JSON for exactly the approved bytes.
        let json_text = shown
            .split_once("invisible characters as \\u escapes:\n")
            .unwrap()
            .1;
        let again = CanonicalPayload::from_json_text(json_text).unwrap();
        assert_eq!(again.as_bytes(), request.payload().unwrap().as_bytes());
    }
}

#[test]
fn list_escapes_and_fits_every_line() {
    let store = hostile_store();
    for status in ["all", "pending", "denied"] {
        let output = store.run(&["list", status]);
        assert_success(&output);
        assert_clean("list", &output.stdout);
        let listed = stdout(&output);
        let lines: Vec<_> = listed.lines().collect();
        let expected = match status {
            "all" => HOSTILE.len(),
            "pending" => HOSTILE.len().div_ceil(2),
            _ => HOSTILE.len() / 2,
        };
        assert_eq!(lines.len(), expected + 1, "{listed}");
        for line in &lines {
            assert!(line.chars().count() <= 80, "{line}");
        }
    }
    let listed = stdout(&store.run(&["list", "all"]));
    assert!(listed.contains(r"  0: \u{1b}[2J\u{1b}["), "{listed}");
}

#[test]
fn every_json_output_is_escaped_too() {
    let store = hostile_store();
    let id = store
        .gate()
        .list(approval_gate::ListFilter::All, None, 1)
        .unwrap()
        .items[0]
        .id();
    for args in [
        vec!["list", "all", "--json"],
        vec!["show", id.as_str(), "--json"],
        vec!["audit", "verify", "--json"],
    ] {
        let output = store.run(&args);
        assert_success(&output);
        assert_clean(&args.join(" "), &output.stdout);
    }
}

#[test]
fn long_values_are_whole_in_show_and_marked_in_list() {
    let store = Store::new();
    let action = format!("transfer\u{202e} {}", "0123456789".repeat(400));
    let request = store.ask(&action);
    let shown = stdout(&store.run(&["show", request.id().as_str()]));
    assert!(
        shown.contains(&escape(&action)),
        "show prints the action whole"
    );
    let listed = stdout(&store.run(&["list"]));
    let line = listed.lines().nth(1).unwrap();
    assert!(line.chars().count() <= 80, "{line}");
    let (kept, marker) = line.split_once('…').unwrap();
    let kept = &kept[kept.find("transfer").unwrap()..];
    let left_out = action.len() - approval_gate_mcp::display::unescape(kept).unwrap().len();
    assert_eq!(marker, format!(" [+{left_out} bytes]"));
    // A wider terminal shows more.
    let output = store
        .command(&["list"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let wide = stdout(&output);
    assert!(wide.lines().nth(1).unwrap().chars().count() > 150);
}
