use super::*;

#[test]
fn durations_read_naturally() {
    assert_eq!(duration(0), "0s");
    assert_eq!(duration(59_999), "59s");
    assert_eq!(duration(-125_000), "2m 5s");
    assert_eq!(duration(3_600_000 * 2 + 60_000 * 5), "2h 5m");
    assert_eq!(duration(86_400_000 * 3 + 3_600_000 * 4), "3d 4h");
    assert_eq!(duration_short(59_000), "59s");
    assert_eq!(duration_short(3_599_000), "59m");
    assert_eq!(duration_short(86_400_000 * 12), "12d");
    let t = Timestamp::from_unix_millis(10_000);
    assert_eq!(relative(t, Timestamp::from_unix_millis(70_000)), "in 1m 0s");
    assert_eq!(relative(t, Timestamp::from_unix_millis(0)), "10s ago");
}

#[test]
fn long_requesters_are_cut_visibly() {
    assert_eq!(short_name("bot"), "bot");
    assert_eq!(short_name("a-very-long-agent-name"), "a-very-long…");
    assert_eq!(short_name("\u{202e}x"), "\\u{202e}x");
    assert_eq!(short_name("\u{202e}\u{202e}\u{202e}"), "\\u{202e}…");
}

#[test]
fn list_lines_fit_and_show_nothing_raw() {
    use crate::term::display::needs_escape;
    use approval_gate::{Gate, ListFilter, NewRequest};

    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::open(dir.path().join("s")).unwrap();
    let action = format!("\x1b[2J\r\u{202e}{}", "x".repeat(500));
    let ask =
        NewRequest::new(action.as_str(), "why").requested_by("agent\u{200b}-with-a-long-name");
    gate.request_approval(ask).unwrap();
    let page = gate.list(ListFilter::Pending, None, 10).unwrap();
    let line = list_line(
        page.items[0].report().unwrap(),
        gate.now(),
        Style::plain(),
        80,
    );
    assert!(line.width() <= 80, "{line}");
    assert!(!line.chars().any(needs_escape), "{line:?}");
    assert!(line.contains("  \\u{1b}[2J\\r"), "{line}");
    assert!(line.contains("  agent…  "), "{line}");
    assert!(line.ends_with(" bytes]"), "{line}");
    assert!(line.contains(" pending "), "{line}");
    assert!(list_header(Style::plain()).starts_with("ID "));
}

#[test]
fn lookalikes_are_warned_about_in_full_views_and_under_list_lines() {
    use approval_gate::{CanonicalPayload, Gate, ListFilter, NewRequest};

    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::open(dir.path().join("s")).unwrap();
    let mut payload = serde_json::Map::new();
    for index in 0..30 {
        payload.insert(format!("k{index:02}"), "p\u{430}ypal".into());
    }
    payload.insert(format!("{}\u{430}", "x".repeat(60)), "long key".into());
    let ask = NewRequest::new("pay p\u{430}ypal", "because")
        .requested_by("\u{13aa}gent")
        .payload(CanonicalPayload::from_value(&payload.into()).unwrap());
    gate.request_approval(ask).unwrap();
    gate.request_approval(NewRequest::new("pay Müller in Москва", "rent"))
        .unwrap();
    let page = gate.list(ListFilter::Pending, None, 10).unwrap();
    let spoofed = page.items[0].report().unwrap();
    let honest = page.items[1].report().unwrap();

    assert_eq!(list_warning(honest, Style::plain(), 80), None);
    assert!(
        !details(
            honest,
            gate.now(),
            Style::plain(),
            gate.capabilities().filer,
            None,
        )
        .contains("warning")
    );

    let warning = list_warning(spoofed, Style::plain(), 120).unwrap();
    assert!(warning.width() <= 120, "{warning}");
    assert!(
        warning.starts_with("  warning: look-alike letters in action, requested by, payload.k00"),
        "{warning}"
    );
    // 33 fields: action, requester, 30 values, one key too long to name in a list.
    let named = warning.matches(", ").count() + 1;
    assert!(
        warning.contains(&format!(
            " and {} more: approval-gate show {}",
            33 - named,
            spoofed.request().id()
        )),
        "{warning}"
    );

    let full = details(
        spoofed,
        gate.now(),
        Style::plain(),
        gate.capabilities().filer,
        None,
    );
    let lines: Vec<_> = full
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(lines.len(), MAX_WARNINGS + 1, "{full}");
    assert_eq!(
        lines[0],
        r#"warning: look-alike letters in action: \u{430} (Cyrillic, like "a")"#
    );
    assert_eq!(
        lines[1],
        r#"warning: look-alike letters in requested by: \u{13aa} (Cherokee, like "A")"#
    );
    assert_eq!(
        lines[MAX_WARNINGS],
        format!(
            "warning: {} more fields hold look-alike letters, escaped above",
            33 - MAX_WARNINGS
        )
    );
}
