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
//! Letters that imitate other letters (a Cyrillic `а` in `exаmple.com`, fullwidth `ｐａｙ`,
//! Unicode TR39's mixed-script and confusable characters) are escaped the same way by all
//! three, and [`lookalike_warning`] and [`payload_lookalike_warnings`] name the fields that
//! hold them, so the human is told as well as shown. [`lookalikes`] lists them.
//!
//! ```
//! use approval_gate_cli::display::{escape, unescape};
//!
//! let hostile = "pay $5\r\x1b[2Kpay $5000 \u{202e}evil";
//! let shown = escape(hostile);
//! assert_eq!(shown, r"pay $5\r\u{1b}[2Kpay $5000 \u{202e}evil");
//! assert_eq!(unescape(&shown).unwrap(), hostile);
//!
//! let spoofed = "alice@ex\u{430}mple.com";
//! assert_eq!(escape(spoofed), r"alice@ex\u{430}mple.com");
//! assert_eq!(escape("Müller, Москва"), "Müller, Москва");
//! ```

use std::fmt::{self, Write as _};

use approval_gate::CanonicalPayload;
use unicode_script::UnicodeScript;
use unicode_width::UnicodeWidthStr;

mod lookalike;

/// Whether `c` is always shown as an escape rather than as itself, wherever it appears.
/// (Look-alike letters are escaped too, but whether a letter is one depends on the text
/// around it: see [`lookalikes`].)
///
/// True for every character that a terminal may act on or that a human cannot see, as the
/// Unicode data this build carries says (`icu_properties`): the general categories Cc
/// (controls, 8-bit CSI `U+009B` among them), Cf (format: bidi embeddings, overrides and
/// isolates, zero-width characters, tags), Co (private use, whose glyph depends on the font),
/// Zl and Zp (line and paragraph separators) and Zs (every space but U+0020);
/// `Default_Ignorable_Code_Point` (fillers, the combining grapheme joiner, code points reserved
/// to stay invisible); variation selectors; noncharacters; and U+2800 BRAILLE PATTERN BLANK,
/// which the data calls a symbol but shows as nothing.
#[must_use]
pub fn needs_escape(c: char) -> bool {
    use icu_properties::props::{
        DefaultIgnorableCodePoint, GeneralCategory, NoncharacterCodePoint, VariationSelector,
    };
    use icu_properties::{CodePointMapData, CodePointSetData};

    match CodePointMapData::<GeneralCategory>::new().get(c) {
        GeneralCategory::Control
        | GeneralCategory::Format
        | GeneralCategory::PrivateUse
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => true,
        GeneralCategory::SpaceSeparator => c != ' ',
        _ => {
            c == BRAILLE_BLANK
                || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
                || CodePointSetData::new::<VariationSelector>().contains(c)
                || CodePointSetData::new::<NoncharacterCodePoint>().contains(c)
        }
    }
}

/// U+2800 BRAILLE PATTERN BLANK: a symbol to the Unicode data, a blank on every screen.
const BRAILLE_BLANK: char = '\u{2800}';

/// Appends the displayed form of one character to `out`; `flagged` if it is a look-alike.
fn push_escaped(out: &mut String, c: char, flagged: bool) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if flagged || needs_escape(c) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// The text with every [`needs_escape`] character and every look-alike letter (see
/// [`lookalikes`]) written as `\u{hex}` (`\n`, `\t` and `\r` by name) and every backslash
/// doubled. The result contains no character that [`needs_escape`] and is on one line.
#[must_use]
pub fn escape(text: &str) -> String {
    let flags = lookalike::flags(text);
    let mut out = String::with_capacity(text.len());
    for (index, c) in text.chars().enumerate() {
        push_escaped(&mut out, c, flags.get(index));
    }
    out
}

/// One look-alike letter of a text, as [`lookalikes`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookalike {
    /// Byte offset of the character in the text.
    pub offset: usize,
    /// The character.
    pub character: char,
}

impl Lookalike {
    /// The character's script, such as `Cyrillic`.
    #[must_use]
    pub fn script(&self) -> &'static str {
        self.character.script().full_name()
    }

    /// The ASCII text it is confusable with (Unicode TR39 skeleton), such as `a` for a
    /// Cyrillic `а`; `None` when it imitates no ASCII (it only breaks its word's script).
    #[must_use]
    pub fn looks_like(&self) -> Option<String> {
        lookalike::ascii_lookalike(self.character)
    }
}

/// Every look-alike letter in `text`, in order: letters that break the script of the word
/// they are in (`pаypal`), restricted letters and digits that imitate ASCII (fullwidth,
/// mathematical, Cherokee), and whole non-Latin words that imitate a Latin one beside Latin
/// text (`alice@реуа.com`). Honest text in one writing system has none.
///
/// These are exactly the letters beyond [`needs_escape`] that [`escape`] escapes.
#[must_use]
pub fn lookalikes(text: &str) -> Vec<Lookalike> {
    let flags = lookalike::flags(text);
    if flags.is_empty() {
        return Vec::new();
    }
    text.char_indices()
        .enumerate()
        .filter(|&(index, _)| flags.get(index))
        .map(|(_, (offset, character))| Lookalike { offset, character })
        .collect()
}

/// A field of a request whose text holds look-alike letters: one line for the human.
///
/// Displayed as `look-alike letters in payload.to: \u{430} (Cyrillic, like "a")`, every
/// part escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookalikeWarning {
    /// The field, escaped: `action`, `requested by`, or a payload path such as `payload.to`
    /// (with ` (key)` when the key itself holds them).
    pub field: String,
    /// The distinct look-alike letters, escaped, with their script and what they imitate.
    pub letters: String,
}

impl fmt::Display for LookalikeWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "look-alike letters in {}: {}", self.field, self.letters)
    }
}

/// Distinct look-alike letters named in one warning before the rest are counted.
const NAMED_LETTERS: usize = 4;

/// A warning naming `field` if `text` holds look-alike letters. `field` is written by the
/// caller, not by an agent, and is shown as it is.
#[must_use]
pub fn lookalike_warning(field: &str, text: &str) -> Option<LookalikeWarning> {
    let mut distinct: Vec<Lookalike> = Vec::new();
    for found in lookalikes(text) {
        if !distinct.iter().any(|d| d.character == found.character) {
            distinct.push(found);
        }
    }
    if distinct.is_empty() {
        return None;
    }
    let mut letters = String::new();
    for (index, found) in distinct.iter().take(NAMED_LETTERS).enumerate() {
        if index > 0 {
            letters.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(
            letters,
            "\\u{{{:x}}} ({}",
            u32::from(found.character),
            found.script()
        );
        if let Some(like) = found.looks_like() {
            let _ = write!(letters, ", like \"{like}\"");
        }
        letters.push(')');
    }
    if distinct.len() > NAMED_LETTERS {
        let _ = write!(letters, " and {} more", distinct.len() - NAMED_LETTERS);
    }
    Some(LookalikeWarning {
        field: field.to_owned(),
        letters,
    })
}

/// A warning for every string of the payload, key or value at any depth, that holds
/// look-alike letters, each naming its JSON path from `payload` (`payload.to`,
/// `payload.items[2]`, `payload["x-ид"]`). Keys come in canonical order.
#[must_use]
pub fn payload_lookalike_warnings(payload: &CanonicalPayload) -> Vec<LookalikeWarning> {
    fn walk(value: &serde_json::Value, path: &str, out: &mut Vec<LookalikeWarning>) {
        match value {
            serde_json::Value::String(text) => out.extend(lookalike_warning(path, text)),
            serde_json::Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}[{index}]"), out);
                }
            }
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                // RFC 8785 order (UTF-16 code units): the order the payload is shown in.
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                for key in keys {
                    let inner = member_path(path, key);
                    out.extend(lookalike_warning(&format!("{inner} (key)"), key));
                    walk(&map[key], &inner, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&payload.to_value(), "payload", &mut out);
    out
}

/// `path.key` for a plain ASCII name, else `path["key"]` with the key escaped.
fn member_path(path: &str, key: &str) -> String {
    let plain = key
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        format!("{path}.{key}")
    } else {
        // `"` as an escape too, so the key's end is never in doubt.
        format!("{path}[\"{}\"]", escape(key).replace('"', "\\u{22}"))
    }
}

/// The longest escaped prefix of `text` that fits in `max_width` terminal columns, cut at a
/// character (never inside an escape), and the number of bytes of `text` it shows.
#[must_use]
pub fn escape_prefix(text: &str, max_width: usize) -> (String, usize) {
    let flags = lookalike::flags(text);
    let mut shown = String::new();
    let mut piece = String::new();
    let mut used = 0;
    for (index, (at, c)) in text.char_indices().enumerate() {
        piece.clear();
        push_escaped(&mut piece, c, flags.get(index));
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

/// JSON text with every [`needs_escape`] character inside its strings, and every look-alike
/// letter (see [`lookalikes`], judged on each string's value), written as a JSON `\uXXXX`
/// escape (a surrogate pair above U+FFFF).
///
/// `json` must be valid JSON text. Such text holds no raw control character inside its
/// strings, and outside them only whitespace and punctuation, so the result is valid JSON
/// with exactly the same meaning: parsing it gives back the same value.
#[must_use]
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(open) = rest.find('"') {
        push_json_raw(&mut out, &rest[..open]);
        let literal = &rest[open..];
        let len = string_literal_len(literal);
        push_json_string(&mut out, &literal[..len]);
        rest = &literal[len..];
    }
    push_json_raw(&mut out, rest);
    out
}

/// Appends one character as JSON `\uXXXX` escapes.
fn push_json_escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        // Writing to a String cannot fail.
        let _ = write!(out, "\\u{unit:04x}");
    }
}

/// JSON text outside strings: whitespace stays, anything else [`needs_escape`] is escaped
/// (valid JSON has none there; the escape keeps even invalid input harmless on a terminal).
fn push_json_raw(out: &mut String, text: &str) {
    for c in text.chars() {
        if needs_escape(c) && !matches!(c, '\n' | '\t' | '\r' | ' ') {
            push_json_escape(out, c);
        } else {
            out.push(c);
        }
    }
}

/// Bytes of the string literal at the start of `text` (which starts with `"`), closing quote
/// included; all of `text` if it is never closed.
fn string_literal_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut at = 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    text.len()
}

/// One string literal, quotes included, with its escapes kept as written and its raw
/// characters escaped where [`needs_escape`] or the value's look-alike rules say so.
fn push_json_string(out: &mut String, literal: &str) {
    // The value the literal means is what a human reads, so look-alikes are judged on it.
    let value: Option<String> = serde_json::from_str(literal).ok();
    let flags = value.as_deref().map(lookalike::flags).unwrap_or_default();
    let mut index = 0;
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(c);
            let Some(kind) = chars.next() else { break };
            out.push(kind);
            if kind == 'u' {
                let hex: String = chars.by_ref().take(4).collect();
                out.push_str(&hex);
                let high =
                    u32::from_str_radix(&hex, 16).is_ok_and(|u| (0xD800..0xDC00).contains(&u));
                // A surrogate pair is two escapes for one character of the value.
                if high && chars.as_str().starts_with("\\u") {
                    let pair: String = chars.by_ref().take(6).collect();
                    out.push_str(&pair);
                }
            }
            index += 1;
        } else if c == '"' {
            out.push(c);
        } else {
            if needs_escape(c) || flags.get(index) {
                push_json_escape(out, c);
            } else {
                out.push(c);
            }
            index += 1;
        }
    }
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
}
