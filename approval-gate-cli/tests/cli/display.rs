//! `show` and `list` print agent-supplied text only escaped, whole in `show` and visibly cut
//! in `list`.

use approval_gate::{CanonicalPayload, Decision, NewRequest};
use approval_gate_cli::term::display::escape;

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
            .split_once("invisible and look-alike characters as \\u escapes:\n")
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
    let left_out = action.len()
        - approval_gate_cli::term::display::unescape(kept)
            .unwrap()
            .len();
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

/// A request spoofing letters in every agent-supplied field, denied by an agent whose name
/// and reason spoof letters too, and an honest one in several scripts.
fn lookalike_store() -> (Store, approval_gate::RequestId, approval_gate::RequestId) {
    let store = Store::new();
    let gate = store.gate();
    let payload = serde_json::json!({
        "to": "alice@ex\u{430}mple.com",
        "cc": ["bob@example.com", "c\u{430}rol@example.com"],
        "\u{ff53}ubject": "Invoice 1042",
        "body": "Sehr geehrte Frau Müller, Москва, 件名：来週の会議",
    });
    let ask = NewRequest::new(
        "send invoice 1042 to alice@ex\u{430}mple.com",
        "p\u{430}ypal asked",
    )
    .requested_by("bill\u{456}ng-agent")
    .operation("smtp.send")
    .payload(CanonicalPayload::from_value(&payload).unwrap());
    let spoofed = gate.request_approval(ask).unwrap().request.id();
    gate.deny(
        spoofed,
        &Decision::by("\u{13aa}dmin").reason("g\u{585}\u{585}gle said no"),
    )
    .unwrap();
    let honest_payload = serde_json::json!({"to": "jürgen@example.de", "city": "Москва"});
    let ask = NewRequest::new("Überweisung an Zoë Müller", "Ελλάδα, 件名：来週の会議")
        .requested_by("agent")
        .payload(CanonicalPayload::from_value(&honest_payload).unwrap());
    let honest = gate.request_approval(ask).unwrap().request.id();
    (store, spoofed, honest)
}

#[test]
fn show_escapes_lookalikes_and_names_every_field_holding_them() {
    let (store, spoofed, honest) = lookalike_store();
    let output = store.run(&["show", spoofed.as_str()]);
    assert_success(&output);
    assert_clean("show", &output.stdout);
    let shown = stdout(&output);
    // Raw only in the honest Russian of the body.
    for line in shown.lines().filter(|l| !l.contains("Москва")) {
        for spoof in ['\u{430}', '\u{456}', '\u{ff53}', '\u{13aa}', '\u{585}'] {
            assert!(!line.contains(spoof), "{spoof:?} raw in {line}");
        }
    }
    for escaped in [
        r"action          send invoice 1042 to alice@ex\u{430}mple.com",
        r"reason          p\u{430}ypal asked",
        r"requested by    bill\u{456}ng-agent",
        r"decided by      \u{13aa}dmin",
        r"decision reason g\u{585}\u{585}gle said no",
        r#""to": "alice@ex\u0430mple.com""#,
        r#""c\u0430rol@example.com""#,
        r#""\uff53ubject": "Invoice 1042""#,
        // Honest text in the same payload stays readable.
        "Sehr geehrte Frau Müller, Москва, 件名：来週の会議",
    ] {
        assert!(shown.contains(escaped), "{escaped:?} not in {shown}");
    }
    let warnings: Vec<_> = shown
        .lines()
        .filter_map(|l| l.strip_prefix("warning: look-alike letters in "))
        .collect();
    assert_eq!(
        warnings,
        [
            r#"action: \u{430} (Cyrillic, like "a")"#,
            r#"reason: \u{430} (Cyrillic, like "a")"#,
            r#"requested by: \u{456} (Cyrillic, like "i")"#,
            r#"decided by: \u{13aa} (Cherokee, like "A")"#,
            r#"decision reason: \u{585} (Armenian, like "o")"#,
            r#"payload.cc[1]: \u{430} (Cyrillic, like "a")"#,
            r#"payload.to: \u{430} (Cyrillic, like "a")"#,
            r#"payload["\u{ff53}ubject"] (key): \u{ff53} (Latin, like "s")"#,
        ],
        "{shown}"
    );
    // The payload, as printed, is still JSON for exactly the approved bytes.
    let json_text = shown
        .split_once("invisible and look-alike characters as \\u escapes:\n")
        .unwrap()
        .1;
    let json_text = &json_text[..json_text.find("\nwarning: ").unwrap()];
    let again = CanonicalPayload::from_json_text(json_text).unwrap();
    let request = store.gate().status(spoofed).unwrap();
    assert_eq!(
        again.as_bytes(),
        request.request().payload().unwrap().as_bytes()
    );

    let shown = stdout(&store.run(&["show", honest.as_str()]));
    assert!(!shown.contains("warning"), "{shown}");
    assert!(
        !shown.contains(r"\u{") && !shown.contains(r"\u0"),
        "{shown}"
    );
    for honest in [
        "Überweisung an Zoë Müller",
        "Ελλάδα, 件名：来週の会議",
        "Москва",
    ] {
        assert!(shown.contains(honest), "{honest:?} not in {shown}");
    }
}

#[test]
fn list_escapes_lookalikes_and_warns_under_the_line() {
    let (store, spoofed, honest) = lookalike_store();
    let output = store
        .command(&["list", "all"])
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    assert_success(&output);
    assert_clean("list", &output.stdout);
    let listed = stdout(&output);
    let lines: Vec<_> = listed.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "header, two requests, one warning: {listed}"
    );
    for line in &lines {
        assert!(line.chars().count() <= 120, "{line}");
    }
    let at = |id: approval_gate::RequestId| {
        lines
            .iter()
            .position(|l| l.starts_with(id.as_str()))
            .unwrap()
    };
    let spoofed_line = at(spoofed);
    assert!(
        lines[spoofed_line].ends_with(r"  send invoice 1042 to alice@ex\u{430}mple.com"),
        "{listed}"
    );
    assert!(!lines[spoofed_line].contains('\u{456}'), "{listed}");
    assert_eq!(
        lines[spoofed_line + 1],
        format!(
            "  warning: look-alike letters in action, reason, requested by, decided by and 4 more: \
             approval-gate show {spoofed}"
        )
    );
    assert!(
        lines[at(honest)].ends_with("  Überweisung an Zoë Müller"),
        "{listed}"
    );
    // A wider terminal names more fields.
    let output = store
        .command(&["list", "all"])
        .env("COLUMNS", "300")
        .output()
        .unwrap();
    let wide = stdout(&output);
    assert!(
        wide.contains("decision reason, payload.cc[1], payload.to, payload[\"\\u{ff53}ubject\"] (key): approval-gate show"),
        "{wide}"
    );
}

/// The listing line of a request with a long action, and the width it must fit.
fn long_listing() -> Store {
    let store = Store::new();
    store.ask(&"0123456789".repeat(50));
    store
}

/// The widest line of a listing.
fn widest(listing: &str) -> usize {
    listing
        .lines()
        .map(|l| l.trim_end_matches('\r').chars().count())
        .max()
        .unwrap()
}

#[test]
fn list_fills_the_width_columns_gives_and_no_less_than_a_minimum() {
    let store = long_listing();
    for (columns, expected) in [
        ("120", 120),
        ("200", 200),
        ("80", 80),
        ("junk", 80),
        ("0", 80),
    ] {
        let output = store
            .command(&["list"])
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        assert_success(&output);
        assert_eq!(widest(&stdout(&output)), expected, "COLUMNS={columns}");
    }
    let output = store
        .command(&["list"])
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert_eq!(widest(&stdout(&output)), 80);
    // However narrow, a line keeps its fixed columns and room for the action.
    let output = store
        .command(&["list"])
        .env("COLUMNS", "10")
        .output()
        .unwrap();
    let narrow = widest(&stdout(&output));
    assert!((40..=80).contains(&narrow), "{narrow}");
}

#[test]
fn list_in_a_terminal_uses_its_width_over_columns() {
    use rexpect::session::spawn_command;

    let store = long_listing();
    for (size, expected) in [
        ("cols 132 rows 40", 132),
        ("cols 100 rows 40", 100),
        ("cols 0 rows 0", 150),
    ] {
        // The terminal is sized by the shell inside it, before the CLI starts: no race.
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!("stty {size} && exec \"$0\" \"$@\""))
            .arg(crate::support::BIN)
            .arg("--dir")
            .arg(&store.path)
            .arg("list")
            .env_remove("APPROVAL_GATE_DIR")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            .env("COLUMNS", "150");
        let mut session = spawn_command(command, Some(15_000)).expect("spawn in a pty");
        // The pty reader turns each byte into the char of the same value.
        let bytes: Vec<u8> = session
            .exp_eof()
            .unwrap()
            .chars()
            .map(|c| c as u32 as u8)
            .collect();
        let listing = String::from_utf8(bytes).unwrap();
        assert_eq!(widest(&listing), expected, "stty {size}:\n{listing}");
    }
}
