use super::*;

/// Strings an agent could use to make a human see something other than what will run.
const HOSTILE: &[&str] = &[
    "\x1b[2J\x1b[Hcleared",
    "\x1b[1A\x1b[2Kmoved up",
    "\x1b]0;title\x07",
    "\x1b]52;c;ZXZpbA==\x07clipboard",
    "\x1bP1$qm\x1b\\dcs",
    "send $5\rapproved: send $5",
    "abc\x08\x08\x08xyz",
    "amount \u{202e}0001\u{202c} usd",
    "\u{2066}isolate\u{2069}\u{200e}\u{200f}\u{61c}",
    "zero\u{200b}width\u{200c}\u{200d}\u{2060}\u{feff}",
    "tag\u{e0041}\u{e0042}\u{e007f}",
    "csi\u{9b}2J c1\u{85}",
    "del\x7f nul\0",
    "back\\slash \\u{41} \\n",
    "variation\u{fe0f}\u{e0100} hangul\u{3164}\u{115f}\u{ffa0}",
    "spaces\u{a0}\u{2000}\u{3000}\u{202f} soft\u{ad}hyphen",
    "private\u{e000}\u{f8ff}\u{10fffd} nonchar\u{fffe}\u{ffff}\u{1fffe}",
    "music\u{1d173}\u{1d17a} sep\u{2028}\u{2029} interlinear\u{fff9}\u{fffb}",
    "plain text, ünïcödé, 日本語, emoji 🙂",
];

/// An independent statement of what must never reach a terminal raw.
fn forbidden(c: char) -> bool {
    let code = u32::from(c);
    code < 0x20
        || (0x7f..=0x9f).contains(&code)
        || [
            0xad, 0x34f, 0x61c, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2028, 0x2029, 0x3164, 0xfeff,
            0xffa0,
        ]
        .contains(&code)
        || (0x180b..=0x180f).contains(&code)
        || (0x200b..=0x200f).contains(&code)
        || (0x202a..=0x202e).contains(&code)
        || (0x2060..=0x206f).contains(&code)
        || (0xfe00..=0xfe0f).contains(&code)
        || (0xfff9..=0xfffb).contains(&code)
        || (0x1d173..=0x1d17a).contains(&code)
        || (0xe0000..=0xe007f).contains(&code)
        || (0xe0100..=0xe01ef).contains(&code)
}

#[test]
fn escape_leaves_nothing_forbidden_and_round_trips() {
    for text in HOSTILE {
        let shown = escape(text);
        assert!(
            !shown.chars().any(forbidden),
            "{shown:?} still holds a forbidden character"
        );
        assert!(!shown.chars().any(needs_escape), "{shown:?}");
        assert_eq!(unescape(&shown).as_deref(), Ok(*text));
    }
}

#[test]
fn escape_is_readable() {
    assert_eq!(escape("a\nb\tc\rd"), r"a\nb\tc\rd");
    assert_eq!(escape("\x1b[2J"), r"\u{1b}[2J");
    assert_eq!(escape("\u{9b}"), r"\u{9b}");
    assert_eq!(escape("x\u{202e}y"), r"x\u{202e}y");
    assert_eq!(escape("t\u{e0041}"), r"t\u{e0041}");
    assert_eq!(escape(r"C:\dir"), r"C:\\dir");
    assert_eq!(escape("ünï 日本 🙂"), "ünï 日本 🙂");
}

#[test]
fn every_listed_character_is_escaped() {
    let listed = [
        0x00..=0x1f,
        0x7f..=0x9f,
        0x202a..=0x202e,
        0x2066..=0x2069,
        0x180b..=0x180f,
        0x200b..=0x200d,
        0x2060..=0x2064,
        0x206a..=0x206f,
        0xfe00..=0xfe0f,
        0xfff9..=0xfffb,
        0x1d173..=0x1d17a,
        0xe0000..=0xe007f,
        0xe0100..=0xe01ef,
    ];
    let singles = [
        0x61c, 0x200e, 0x200f, 0xad, 0x34f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2028, 0x2029, 0x3164,
        0xfeff, 0xffa0,
    ];
    let all = listed.into_iter().flatten().chain(singles);
    for code in all {
        let c = char::from_u32(code).unwrap();
        assert!(needs_escape(c), "U+{code:04X} must be escaped");
        assert!(forbidden(c) || code == 0x7f);
    }
    assert!(!needs_escape(' '));
    assert!(!needs_escape('a'));
    assert!(!needs_escape('é'));
    assert!(!needs_escape('日'));
}

#[test]
fn unescape_round_trips_generated_strings() {
    // A small deterministic generator biased towards the interesting ranges.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let ranges = [
        (0x00, 0x20),
        (0x20, 0x7f),
        (0x7f, 0xa0),
        (0xa0, 0x800),
        (0x2000, 0x2070),
        (0xfe00, 0x1_0000),
        (0xe0000, 0xe0200),
        (0x1_0000, 0x11_0000),
    ];
    for _ in 0..2000 {
        let len = next() % 24;
        let text: String = (0..len)
            .filter_map(|_| {
                let (lo, hi) = ranges[(next() % ranges.len() as u64) as usize];
                let pick = lo + (next() % u64::from(hi - lo)) as u32;
                if next() % 8 == 0 {
                    Some('\\')
                } else {
                    char::from_u32(pick)
                }
            })
            .collect();
        let shown = escape(&text);
        assert!(!shown.chars().any(needs_escape));
        assert_eq!(unescape(&shown).as_deref(), Ok(text.as_str()), "{shown}");
    }
}

#[test]
fn unescape_refuses_malformed_escapes() {
    for bad in [
        r"\",
        r"\x",
        r"\u",
        r"\u{",
        r"\u{}",
        r"\u{110000}",
        r"\u{d800}",
        r"\u{1234567}",
        r"\u{4G}",
        r"\u{4A}",
        r"a\qb",
    ] {
        assert!(unescape(bad).is_err(), "{bad:?} must be refused");
    }
    assert_eq!(unescape(r"\u{41}\\\n"), Ok("A\\\n".to_owned()));
}

#[test]
fn truncation_marks_what_was_left_out() {
    assert_eq!(escape_truncated("short", 80), "short");
    let long = "x".repeat(1000);
    let shown = escape_truncated(&long, 40);
    assert!(shown.width() <= 40, "{shown}");
    let kept = shown.find('…').unwrap();
    assert_eq!(shown[kept..], format!("… [+{} bytes]", 1000 - kept));
    // Never inside an escape: the kept part unescapes on its own.
    let hostile = "\u{202e}".repeat(50);
    let shown = escape_truncated(&hostile, 30);
    assert!(shown.width() <= 30, "{shown}");
    let kept = &shown[..shown.find('…').unwrap()];
    let original = unescape(kept).unwrap();
    assert!(!original.is_empty() && hostile.starts_with(&original));
    let expected = format!("… [+{} bytes]", hostile.len() - original.len());
    assert!(shown.ends_with(&expected), "{shown}");
    // Wide characters count as two columns.
    let wide = "日".repeat(100);
    assert!(escape_truncated(&wide, 40).width() <= 40);
    // Even a marker wider than the room is shown.
    assert_eq!(escape_truncated(&long, 3), "… [+1000 bytes]");
    assert_eq!(escape_prefix("ab\u{1b}c", 6), ("ab".to_owned(), 2));
    assert_eq!(escape_prefix("ab\u{1b}c", 8), ("ab\\u{1b}".to_owned(), 3));
}

#[test]
fn safe_payload_is_valid_json_with_the_same_canonical_bytes() {
    let mut object = serde_json::Map::new();
    for (index, text) in HOSTILE.iter().filter(|t| !t.contains('\0')).enumerate() {
        object.insert(format!("{text}{index}"), serde_json::Value::from(*text));
    }
    object.insert(
        "numbers".into(),
        serde_json::json!([0.1, 1e-7, 1.5e300, -2.5, 9_007_199_254_740_991_i64, 3]),
    );
    object.insert(
        "nested".into(),
        serde_json::json!({"a": [[{"\u{202e}": null}]]}),
    );
    let payload = CanonicalPayload::from_value(&serde_json::Value::Object(object)).unwrap();
    let shown = payload_pretty(&payload);
    for line in shown.lines() {
        assert!(!line.chars().any(forbidden), "{line:?}");
        assert!(!line.chars().any(needs_escape), "{line:?}");
    }
    assert!(shown.contains(r"\u202e"));
    assert!(
        shown.contains(r"\udb40\udc41"),
        "tag characters as surrogate pairs"
    );
    let again = CanonicalPayload::from_json_text(&shown).unwrap();
    assert_eq!(again.as_bytes(), payload.as_bytes());
}

#[test]
fn payload_warnings_name_every_path_with_lookalikes() {
    let payload = CanonicalPayload::from_value(&serde_json::json!({
        "to": "alice@ex\u{430}mple.com",
        "t\u{43e}": "x",
        "items": [{"name": "p\u{430}ypal"}, "fine"],
        "x-\u{438}\u{434}": "\u{41c}\u{43e}\u{441}\u{43a}\u{432}\u{430}",
        "honest": ["M\u{fc}ller", "Zo\u{eb}", "\u{41c}\u{43e}\u{441}\u{43a}\u{432}\u{430}"],
        "deep": {"a": [[{"b": "\u{ff50}\u{ff41}\u{ff59}"}]]},
        "tab\t\"q": "\u{13aa}pple",
    }))
    .unwrap();
    let fields: Vec<_> = payload_lookalike_warnings(&payload)
        .into_iter()
        .map(|w| w.field)
        .collect();
    assert_eq!(
        fields,
        [
            r"payload.deep.a[0][0].b",
            r"payload.items[0].name",
            r#"payload["tab\t\u{22}q"]"#,
            r"payload.to",
            r#"payload["t\u{43e}"] (key)"#,
        ]
    );
    let top = CanonicalPayload::from_json_text("\"\u{430}pple\"").unwrap();
    let warnings = payload_lookalike_warnings(&top);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].field, "payload");
}

#[test]
fn shown_payload_escapes_lookalikes_and_keeps_its_meaning() {
    let payload = CanonicalPayload::from_value(&serde_json::json!({
        "to": "alice@ex\u{430}mple.com\n\u{1b}[2J",
        "t\u{43e}": "\u{1d429}\u{1d41a}\u{1d432} \u{1f642}",
        "city": "\u{41c}\u{43e}\u{441}\u{43a}\u{432}\u{430}",
    }))
    .unwrap();
    let shown = payload_pretty(&payload);
    assert!(
        shown.contains(r#""alice@ex\u0430mple.com\n\u001b[2J""#),
        "{shown}"
    );
    assert!(
        shown.contains(r#""t\u043e": "\ud835\udc29\ud835\udc1a\ud835\udc32 🙂""#),
        "{shown}"
    );
    // Honest Cyrillic stays as it is.
    assert!(
        shown.contains("\"\u{41c}\u{43e}\u{441}\u{43a}\u{432}\u{430}\""),
        "{shown}"
    );
    assert_eq!(
        shown.matches('\u{430}').count(),
        1,
        "only Москва's а is raw: {shown}"
    );
    assert_eq!(
        shown.matches('\u{43e}').count(),
        1,
        "only Москва's о is raw: {shown}"
    );
    assert!(!shown.contains('\u{1d429}'), "{shown}");
    let again = CanonicalPayload::from_json_text(&shown).unwrap();
    assert_eq!(again.as_bytes(), payload.as_bytes());
}

#[test]
fn json_safe_keeps_generated_payloads_meaning() {
    // Latin, Cyrillic, Greek, fullwidth, controls, quotes, backslashes and astral
    // characters, as JSON keys and values.
    let alphabet: Vec<char> = "ap.l@ 1аорΑοｐ\"\\\n\u{1b}\u{202e}\u{1d429}🙂Müе"
        .chars()
        .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..500 {
        let mut word = || -> String {
            let len = next() % 12;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        };
        let value = serde_json::json!({ word(): [word(), {word(): word()}] });
        let payload = CanonicalPayload::from_value(&value).unwrap();
        for text in [payload.as_str().to_owned(), payload.pretty()] {
            let safe = json_safe(&text);
            for line in safe.lines() {
                assert!(!line.chars().any(needs_escape), "{line}");
            }
            let again = CanonicalPayload::from_json_text(&safe).unwrap();
            assert_eq!(again.as_bytes(), payload.as_bytes(), "{safe}");
        }
    }
}

#[test]
fn truncated_and_prefixed_text_escapes_lookalikes_too() {
    let text = format!("p\u{430}ypal {}", "x".repeat(100));
    let cut = escape_truncated(&text, 30);
    assert!(cut.starts_with(r"p\u{430}ypal "), "{cut}");
    assert_eq!(
        escape_prefix("p\u{430}ypal", 9),
        (r"p\u{430}y".to_owned(), 4)
    );
}

/// The rule as it was kept by hand before it came from the Unicode data: every code point
/// it escaped is escaped still.
fn hand_kept(c: char) -> bool {
    let code = u32::from(c);
    matches!(
        code,
        0x00..=0x1F | 0x7F..=0x9F | 0xA0 | 0xAD | 0x34F
        | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2
        | 0x115F | 0x1160 | 0x1680 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F
        | 0x2800 | 0x3000 | 0x3164 | 0xE000..=0xF8FF
        | 0xFDD0..=0xFDEF | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB
        | 0x1_10BD | 0x1_10CD | 0x1_3430..=0x1_343F | 0x1_BCA0..=0x1_BCA3 | 0x1_D173..=0x1_D17A
        | 0xE_0000..=0xE_007F | 0xE_0100..=0xE_01EF | 0xF_0000..=0x10_FFFF
    ) || code & 0xFFFE == 0xFFFE
}

/// Code points as ranges, `U+XXXX` or `U+XXXX..U+YYYY`.
fn ranges(points: impl Iterator<Item = u32>) -> Vec<String> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for code in points {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == code => *end = code,
            _ => out.push((code, code)),
        }
    }
    out.iter()
        .map(|&(a, b)| {
            if a == b {
                format!("U+{a:04X}")
            } else {
                format!("U+{a:04X}..U+{b:04X}")
            }
        })
        .collect()
}

/// The rule comes from the Unicode data; the list it replaces was kept by hand. Every
/// code point the list escaped, the data escapes too, and the data adds exactly these
/// (unassigned code points reserved as default-ignorable: invisible once assigned). A new
/// Unicode version that changes this fails here, to be looked at and noted (docs/mcp.md).
#[test]
fn the_unicode_data_escapes_all_the_hand_kept_list_did_and_these_more() {
    let chars = || (0..=0x10_FFFFu32).filter_map(char::from_u32);
    let lost = chars().filter(|c| hand_kept(*c) && !needs_escape(*c));
    assert_eq!(ranges(lost.map(u32::from)), Vec::<String>::new());
    let added = chars().filter(|c| !hand_kept(*c) && needs_escape(*c));
    assert_eq!(
        ranges(added.map(u32::from)),
        ["U+FFF0..U+FFF8", "U+E0080..U+E00FF", "U+E01F0..U+E0FFF"]
    );
}

/// Over every code point: what `escape` shows holds nothing `needs_escape`, sits on one
/// line, and reads back as the character.
#[test]
fn every_code_point_is_shown_safely_and_reads_back() {
    for c in (0..=0x10_FFFFu32).filter_map(char::from_u32) {
        let text = c.to_string();
        let shown = escape(&text);
        assert!(
            !shown.chars().any(needs_escape),
            "U+{:04X}: {shown:?}",
            u32::from(c)
        );
        assert!(!shown.contains('\n'), "U+{:04X}", u32::from(c));
        assert_eq!(
            unescape(&shown).as_deref(),
            Ok(text.as_str()),
            "U+{:04X}",
            u32::from(c)
        );
    }
}
