//! Showing agent-supplied text to a human without letting it act on the terminal.
//!
//! An agent chooses every byte of a request's action, reason, requester and payload. Printed
//! raw, those bytes could clear the screen, move the cursor, rewrite a line with `\r`, set the
//! window title, write the clipboard (OSC 52), reorder text with bidi overrides, or hide words
//! behind zero-width and tag characters, so that the human approves something other than what
//! will run. Everything here turns such characters into visible escapes instead:
//!
//! - [`escape`] for plain text: `\u{202e}` style escapes, `\n` `\t` `\r` by name, and `\\`
//!   for a backslash, so the rendering is unambiguous and [`unescape`] reverses it;
//! - [`json_safe`] for JSON text: the same characters as JSON `\uXXXX` escapes, so what is
//!   shown is still valid JSON meaning exactly the same value;
//! - [`escape_truncated`] for one-line listings: escaped, then cut to a display width with a
//!   marker giving the byte count of what was left out.
//!
//! ```
//! use approval_gate_mcp::display::{escape, unescape};
//!
//! let hostile = "pay $5\r\x1b[2Kpay $5000 \u{202e}evil";
//! let shown = escape(hostile);
//! assert_eq!(shown, r"pay $5\r\u{1b}[2Kpay $5000 \u{202e}evil");
//! assert_eq!(unescape(&shown).unwrap(), hostile);
//! ```

use std::fmt::{self, Write as _};

use approval_gate::CanonicalPayload;
use unicode_width::UnicodeWidthStr;

/// Whether `c` is shown as an escape rather than as itself.
///
/// True for every character that a terminal may act on or that a human cannot see:
/// C0 controls, DEL and C1 controls (including 8-bit CSI `U+009B`); bidi embeddings,
/// overrides, isolates and marks; zero-width, filler and other invisible format characters;
/// variation selectors; Unicode tag characters; every space other than U+0020; line and
/// paragraph separators; private-use characters, whose glyph depends on the font; and
/// noncharacters.
#[must_use]
pub fn needs_escape(c: char) -> bool {
    let code = u32::from(c);
    matches!(
        code,
        // C0 controls, DEL, C1 controls (U+0085 NEL and U+009B CSI among them).
        0x00..=0x1F | 0x7F..=0x9F
        // No-break space, soft hyphen, combining grapheme joiner.
        | 0xA0 | 0xAD | 0x34F
        // Arabic number signs and letter mark, Syriac abbreviation mark.
        | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2
        // Hangul fillers, Khmer inherent vowels, Mongolian selectors and vowel separator.
        | 0x115F | 0x1160 | 0x1680 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        // Spaces, zero-width characters, LRM/RLM, line and paragraph separators, bidi
        // embeddings and overrides, narrow no-break space.
        | 0x2000..=0x200F | 0x2028..=0x202F
        // Medium mathematical space, word joiner, invisible operators, bidi isolates,
        // deprecated format characters.
        | 0x205F..=0x206F
        // Braille blank, ideographic space, Hangul filler.
        | 0x2800 | 0x3000 | 0x3164
        // Private use area.
        | 0xE000..=0xF8FF
        // Noncharacters, variation selectors, byte order mark / zero-width no-break space,
        // halfwidth Hangul filler, interlinear annotation characters.
        | 0xFDD0..=0xFDEF | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB
        // Kaithi number signs, Egyptian hieroglyph and shorthand format controls, musical
        // symbol formatting.
        | 0x1_10BD | 0x1_10CD | 0x1_3430..=0x1_343F | 0x1_BCA0..=0x1_BCA3 | 0x1_D173..=0x1_D17A
        // Tag characters and variation selectors supplement.
        | 0xE_0000..=0xE_007F | 0xE_0100..=0xE_01EF
        // Supplementary private use areas.
        | 0xF_0000..=0x10_FFFF
    ) || code & 0xFFFE == 0xFFFE
}

/// Appends the displayed form of one character to `out`.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if needs_escape(c) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// The text with every [`needs_escape`] character written as `\u{hex}` (`\n`, `\t` and `\r`
/// by name) and every backslash doubled. The result contains no character that
/// [`needs_escape`] and is on one line.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// The longest escaped prefix of `text` that fits in `max_width` terminal columns, cut at a
/// character (never inside an escape), and the number of bytes of `text` it shows.
#[must_use]
pub fn escape_prefix(text: &str, max_width: usize) -> (String, usize) {
    let mut shown = String::new();
    let mut piece = String::new();
    let mut used = 0;
    for (at, c) in text.char_indices() {
        piece.clear();
        push_escaped(&mut piece, c);
        used += piece.width();
        if used > max_width {
            return (shown, at);
        }
        shown.push_str(&piece);
    }
    (shown, text.len())
}

/// Escaped text that fits in `max_width` terminal columns.
///
/// Text that fits is returned as [`escape`] returns it. Longer text is cut at a character
/// (never inside an escape) and ends with a marker such as `… [+1234 bytes]`: the number of
/// bytes of the original text left out. The marker is shown even if it alone is wider than
/// `max_width`.
#[must_use]
pub fn escape_truncated(text: &str, max_width: usize) -> String {
    let full = escape(text);
    if full.width() <= max_width {
        return full;
    }
    // Room for the widest marker this text can need, so the line never overflows.
    let room = max_width.saturating_sub(truncation_marker(text.len()).width());
    let (mut shown, kept) = escape_prefix(text, room);
    shown.push_str(&truncation_marker(text.len() - kept));
    shown
}

fn truncation_marker(left_out: usize) -> String {
    format!("… [+{left_out} bytes]")
}

/// Why [`unescape`] refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnescapeError {
    /// Byte offset of the offending escape in the input.
    pub offset: usize,
}

impl fmt::Display for UnescapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid escape at byte {}", self.offset)
    }
}

impl std::error::Error for UnescapeError {}

/// Reverses [`escape`]: `unescape(&escape(s)) == Ok(s)` for every string.
///
/// Accepts `\\`, `\n`, `\t`, `\r` and `\u{hex}` (1 to 6 hex digits naming a Unicode scalar
/// value).
///
/// # Errors
///
/// [`UnescapeError`] for any other backslash sequence.
pub fn unescape(shown: &str) -> Result<String, UnescapeError> {
    let mut out = String::with_capacity(shown.len());
    let mut rest = shown;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let offset = shown.len() - rest.len() + at;
        let error = UnescapeError { offset };
        let after = &rest[at + 1..];
        let (c, used) = match after.as_bytes().first() {
            Some(b'\\') => ('\\', 1),
            Some(b'n') => ('\n', 1),
            Some(b't') => ('\t', 1),
            Some(b'r') => ('\r', 1),
            Some(b'u') => {
                let body = after.strip_prefix("u{").ok_or(error.clone())?;
                let end = body.find('}').ok_or(error.clone())?;
                let hex = &body[..end];
                let valid_hex = (1..=6).contains(&hex.len())
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
                let code = valid_hex
                    .then(|| u32::from_str_radix(hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or(error)?;
                (code, 2 + end + 1)
            }
            _ => return Err(error),
        };
        out.push(c);
        rest = &after[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// JSON text with every [`needs_escape`] character inside its strings written as a JSON
/// `\uXXXX` escape (a surrogate pair above U+FFFF).
///
/// `json` must be valid JSON text. Such text holds no raw control character inside its
/// strings, and outside them only whitespace and punctuation, so the result is valid JSON
/// with exactly the same meaning: parsing it gives back the same value.
#[must_use]
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if needs_escape(c) && !matches!(c, '\n' | '\t' | '\r' | ' ') {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The canonical payload pretty-printed for a human, with [`json_safe`] escapes: valid JSON
/// that canonicalizes to exactly the approved bytes.
#[must_use]
pub fn payload_pretty(payload: &CanonicalPayload) -> String {
    json_safe(&payload.pretty())
}

#[cfg(test)]
mod tests {
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
            0x61c, 0x200e, 0x200f, 0xad, 0x34f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2028, 0x2029,
            0x3164, 0xfeff, 0xffa0,
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
}
