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
//! use approval_gate_cli::term::display::{escape, unescape};
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
mod tests;
