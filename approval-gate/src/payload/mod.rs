//! Canonical JSON payloads: the exact bytes a human approves and an executor runs.
//!
//! A payload is stored in RFC 8785 (JCS) canonical form and identified by the BLAKE3 digest
//! of those bytes. Anything whose meaning would not survive canonicalization unchanged
//! (duplicate keys, integers beyond 2^53, floats that would print like integers, NUL
//! characters, excessive size or nesting) is refused rather than normalized away, so the
//! approved text is always exactly what runs.
//!
//! The bytes do not depend on `serde_json`'s `arbitrary_precision` or `preserve_order`, which any
//! crate in a user's build can switch on: keys are sorted here, and numbers are read from the
//! text whichever way `serde_json` hands them over (tests-features/serde-json-features checks the
//! shared corpus, `corpus.txt`, in such a build).
//!
//! A payload is never JSON `null` at the top level. "No payload" is already a state of its
//! own (a request without one, bound without one), and a stored `"payload":null` cannot be
//! told from it; so `null` is refused at the door, before any digest exists, with a message
//! that says to omit the payload instead. `null` inside an object or array is an ordinary
//! value.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use crate::limits::{MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH, MAX_SAFE_INTEGER};

mod parse;
#[cfg(test)]
mod tests;
mod write;

use parse::parse;
use write::Writer;
#[cfg(test)]
use write::{format_number, write_string};

/// From this magnitude on, ECMAScript prints integral doubles with an exponent, so they
/// cannot be mistaken for integers.
const EXPONENT_FORM_FROM: f64 = 1e21;

/// How many characters of an offending key or number an error message quotes.
const QUOTE_LIMIT: usize = 64;

/// Why a payload was refused. Any error means the payload is not usable as is.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadError {
    /// The JSON text or its canonical form exceeds [`MAX_PAYLOAD_BYTES`].
    #[error(
        "payload is {actual} bytes, over the limit of {limit}; send less data, or store bulky content elsewhere and reference it"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The size found, in bytes.
        actual: usize,
    },

    /// The text is not a single well-formed JSON value.
    #[error("payload is not valid json: {0}")]
    Syntax(String),

    /// Arrays and objects nest deeper than [`MAX_PAYLOAD_DEPTH`].
    #[error(
        "payload nests arrays and objects deeper than {limit} levels at {}; flatten the structure",
        at(.path)
    )]
    TooDeep {
        /// The limit.
        limit: usize,
        /// JSON Pointer to the first array or object beyond the limit.
        path: String,
    },

    /// An object names the same key twice (compared after unescaping).
    #[error(
        "duplicate object key {key:?} at {}; a key may appear only once per object, so remove or merge the repeats",
        at(.path)
    )]
    DuplicateKey {
        /// JSON Pointer to the repeated member.
        path: String,
        /// The key (at most 64 characters of it).
        key: String,
    },

    /// A string or key contains U+0000, which C-string APIs would silently cut off at.
    #[error(
        "nul character (u+0000) in the string or key at {}; remove it, or encode binary data (e.g. as base64)",
        at(.path)
    )]
    NulCharacter {
        /// JSON Pointer to the string, or to the member whose key holds the NUL.
        path: String,
    },

    /// An integer is outside ±[`MAX_SAFE_INTEGER`].
    #[error(
        "integer {value} at {} is outside ±9007199254740991, the range every json reader holds exactly; send it as a string",
        at(.path)
    )]
    IntegerOutOfRange {
        /// JSON Pointer to the number.
        path: String,
        /// The number as written (at most 64 characters of it).
        value: String,
    },

    /// A float has an integral value below 1e21, so its canonical form would read as an
    /// integer (`1.0` and `1` would be the same payload).
    #[error(
        "number {value} at {} is written as a float but has an integral value, so its canonical form would read as an integer; write it as an integer (e.g. an amount in cents) or with a non-zero fraction",
        at(.path)
    )]
    AmbiguousNumber {
        /// JSON Pointer to the number.
        path: String,
        /// The number as written (at most 64 characters of it).
        value: String,
    },

    /// A float does not fit in an IEEE 754 double.
    #[error(
        "number {value} at {} does not fit in a 64-bit float; send a smaller number, or send it as a string",
        at(.path)
    )]
    NumberOutOfRange {
        /// JSON Pointer to the number.
        path: String,
        /// The number as written (at most 64 characters of it).
        value: String,
    },

    /// The payload does not deserialize into the requested type.
    #[error("payload does not fit the expected type: {0}")]
    Deserialize(String),

    /// The requested type does not re-serialize to exactly the approved canonical bytes.
    #[error(
        "the type changes the payload at {}: serializing it again does not give back the approved bytes; use a type that keeps every field and value exactly (no skipped, defaulted, renamed or lossy fields)",
        at(.path)
    )]
    Unfaithful {
        /// JSON Pointer to the first value that differs, empty if none could be pinpointed.
        path: String,
    },

    /// A value's `Serialize` implementation failed.
    #[error("value cannot be serialized as json: {0}")]
    Serialize(String),

    /// The payload is JSON `null` at the top level, which would read back as "no payload".
    #[error(
        "payload is null at the top level; omit the payload instead of sending null (null is fine inside an object or array)"
    )]
    Null,

    /// Text that should be a payload digest is not 64 lowercase hex characters.
    #[error(
        "invalid payload digest: expected exactly 64 lowercase hex characters (the blake3 hash of the canonical bytes)"
    )]
    InvalidDigest,
}

/// Names a location in a message. Keys are arbitrary text, so the pointer is escaped to keep
/// messages on one line and free of invisible characters.
fn at(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_owned()
    } else {
        path.escape_debug().to_string()
    }
}

/// Keeps error messages bounded when the offending text is huge.
fn quote(text: &dyn fmt::Display) -> String {
    text.to_string().chars().take(QUOTE_LIMIT).collect()
}

/// A validated JSON payload in RFC 8785 (JCS) canonical form.
///
/// Construction is the only way to get one, so its text is always canonical, and
/// canonicalizing that text again gives the same bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CanonicalPayload {
    text: String,
}

impl CanonicalPayload {
    /// Parses JSON text strictly and canonicalizes it.
    ///
    /// # Errors
    ///
    /// Any broken rule, as the matching [`PayloadError`] variant: size, syntax, depth,
    /// duplicate keys, NUL characters, unsafe integers, ambiguous or out-of-range floats,
    /// and [`PayloadError::Null`] for `null` at the top level.
    pub fn from_json_text(text: &str) -> Result<Self, PayloadError> {
        check_size(text.len())?;
        Self::from_value(&parse(text)?)
    }

    /// The canonical form of `null`, which no public constructor makes: the image of "no
    /// payload" that an executor's type is checked against.
    pub(crate) fn no_payload() -> Self {
        Self {
            text: "null".to_owned(),
        }
    }

    /// Canonicalizes a [`serde_json::Value`], applying the same rules as
    /// [`from_json_text`](Self::from_json_text) except those a `Value` cannot break
    /// (duplicate keys).
    ///
    /// # Errors
    ///
    /// As [`from_json_text`](Self::from_json_text); size applies to the canonical bytes.
    pub fn from_value(value: &Value) -> Result<Self, PayloadError> {
        if value.is_null() {
            return Err(PayloadError::Null);
        }
        Self::render(value)
    }

    /// Canonicalizes any value, top-level `null` included.
    fn render(value: &Value) -> Result<Self, PayloadError> {
        let text = Writer::render(value, false)?;
        check_size(text.len())?;
        Ok(Self { text })
    }

    /// Serializes a value to JSON and canonicalizes it.
    ///
    /// This goes through JSON text rather than a `Value` so that duplicate keys emitted by a
    /// `Serialize` implementation are refused instead of silently collapsing to one.
    ///
    /// # Errors
    ///
    /// [`PayloadError::Serialize`] if serialization fails, otherwise as
    /// [`from_json_text`](Self::from_json_text): a value that serializes to `null` (`None`,
    /// `()`) is [`PayloadError::Null`].
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, PayloadError> {
        let text =
            serde_json::to_string(value).map_err(|e| PayloadError::Serialize(e.to_string()))?;
        Self::from_json_text(&text)
    }

    /// As [`from_serialize`](Self::from_serialize), but `null` is allowed: the echo of an
    /// executor's value, compared with [`no_payload`](Self::no_payload) for a request without
    /// one.
    fn echo<T: Serialize + ?Sized>(value: &T) -> Result<Self, PayloadError> {
        let text =
            serde_json::to_string(value).map_err(|e| PayloadError::Serialize(e.to_string()))?;
        check_size(text.len())?;
        Self::render(&parse(&text)?)
    }

    /// The canonical JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The canonical bytes: what a human approves and what the digest covers.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// BLAKE3 digest of the canonical bytes.
    #[must_use]
    pub fn digest(&self) -> PayloadDigest {
        PayloadDigest(*blake3::hash(self.as_bytes()).as_bytes())
    }

    /// The payload as a [`serde_json::Value`], with every float correctly rounded.
    ///
    /// # Panics
    ///
    /// Never: the canonical text was produced by this module and always parses again.
    #[must_use]
    pub fn to_value(&self) -> Value {
        // Our own parse rather than serde_json's: its default float parsing may be off by one
        // unit in the last place, and then the value would not be the one approved.
        parse(&self.text).expect("canonical text parses again")
    }

    /// Deserializes the payload into `T`.
    ///
    /// Prefer [`deserialize_faithful`](Self::deserialize_faithful) before acting on the
    /// result: this method accepts types that ignore or default fields.
    ///
    /// # Errors
    ///
    /// [`PayloadError::Deserialize`] if the payload does not fit `T`.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        serde_json::from_value(self.to_value())
            .map_err(|e| PayloadError::Deserialize(e.to_string()))
    }

    /// Deserializes the payload into `T` and checks that serializing `T` again gives back
    /// exactly these canonical bytes.
    ///
    /// A type that drops a field, adds a defaulted one, or turns an integer into a float would
    /// run something other than what the human saw, so it is refused with
    /// [`PayloadError::Unfaithful`].
    ///
    /// # Errors
    ///
    /// [`PayloadError::Deserialize`] if the payload does not fit `T`,
    /// [`PayloadError::Unfaithful`] if `T` does not carry it exactly.
    pub fn deserialize_faithful<T: DeserializeOwned + Serialize>(&self) -> Result<T, PayloadError> {
        let typed: T = self.deserialize()?;
        match Self::echo(&typed) {
            Ok(echo) if echo == *self => Ok(typed),
            _ => Err(PayloadError::Unfaithful {
                path: self.difference_from(&typed),
            }),
        }
    }

    /// An indented rendering for humans: keys in canonical order, strings escaped as in the
    /// canonical text, numbers spelled identically.
    ///
    /// # Panics
    ///
    /// Never: the canonical text was produced by this module and always renders again.
    #[must_use]
    pub fn pretty(&self) -> String {
        Writer::render(&self.to_value(), true).expect("canonical value renders again")
    }

    /// Best-effort pointer to where `typed` departs from this payload, for the error message.
    fn difference_from<T: Serialize>(&self, typed: &T) -> String {
        let echoed = serde_json::to_value(typed).unwrap_or(Value::Null);
        first_difference(&self.to_value(), &echoed).map_or_else(String::new, |p| pointer(&p))
    }
}

impl fmt::Display for CanonicalPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for CanonicalPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CanonicalPayload({})", self.text)
    }
}

impl Serialize for CanonicalPayload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A RawValue is written verbatim; going through a Value would re-encode the text with
        // serde_json's own number and escaping rules.
        let raw = RawValue::from_string(self.text.clone()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// BLAKE3 digest of canonical payload bytes.
///
/// Written as 64 lowercase hex characters in text and in serde formats.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PayloadDigest([u8; 32]);

impl PayloadDigest {
    /// The digest as 64 lowercase hex characters.
    #[must_use]
    pub fn to_hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        out
    }

    /// The raw digest bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for PayloadDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for PayloadDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PayloadDigest({})", self.to_hex())
    }
}

impl FromStr for PayloadDigest {
    type Err = PayloadError;

    /// Accepts exactly 64 lowercase hex characters, so each digest has one spelling.
    fn from_str(text: &str) -> Result<Self, PayloadError> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return Err(PayloadError::InvalidDigest);
        }
        let mut digest = [0; 32];
        for (out, pair) in digest.iter_mut().zip(bytes.chunks_exact(2)) {
            *out = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Ok(Self(digest))
    }
}

fn hex_digit(byte: u8) -> Result<u8, PayloadError> {
    match byte {
        b'0'..=b'9' => Ok(byte - b'0'),
        b'a'..=b'f' => Ok(byte - b'a' + 10),
        _ => Err(PayloadError::InvalidDigest),
    }
}

impl Serialize for PayloadDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for PayloadDigest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(de::Error::custom)
    }
}

fn check_size(actual: usize) -> Result<(), PayloadError> {
    if actual > MAX_PAYLOAD_BYTES {
        return Err(PayloadError::TooLarge {
            limit: MAX_PAYLOAD_BYTES,
            actual,
        });
    }
    Ok(())
}

/// Renders path segments as a JSON Pointer (RFC 6901).
fn pointer(segments: &[String]) -> String {
    let mut out = String::new();
    for segment in segments {
        push_segment(&mut out, segment);
    }
    out
}

fn push_segment(out: &mut String, segment: &str) {
    out.push('/');
    out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
}

fn member_pointer(segments: &[String], key: &str) -> String {
    let mut out = pointer(segments);
    push_segment(&mut out, key);
    out
}

/// Returns the depth of a container opened at `depth`, or refuses it.
fn enter(depth: usize, path: &[String]) -> Result<usize, PayloadError> {
    if depth >= MAX_PAYLOAD_DEPTH {
        return Err(PayloadError::TooDeep {
            limit: MAX_PAYLOAD_DEPTH,
            path: pointer(path),
        });
    }
    Ok(depth + 1)
}

fn check_nul(text: &str, path: impl FnOnce() -> String) -> Result<(), PayloadError> {
    if text.contains('\0') {
        return Err(PayloadError::NulCharacter { path: path() });
    }
    Ok(())
}

/// Applies the number rules; `spelled` is how the number is shown in a refusal.
fn check_number(
    number: &Number,
    spelled: &dyn fmt::Display,
    path: &[String],
) -> Result<(), PayloadError> {
    let magnitude = number
        .as_u64()
        .or_else(|| number.as_i64().map(i64::unsigned_abs));
    if let Some(magnitude) = magnitude {
        if magnitude > MAX_SAFE_INTEGER {
            return Err(PayloadError::IntegerOutOfRange {
                path: pointer(path),
                value: quote(spelled),
            });
        }
        return Ok(());
    }
    // Every other number has an f64 view, except, under serde_json's `arbitrary_precision`, one
    // whose digits overflow or do not parse: NaN makes that a refusal.
    let float = number.as_f64().unwrap_or(f64::NAN);
    if !float.is_finite() {
        return Err(PayloadError::NumberOutOfRange {
            path: pointer(path),
            value: quote(spelled),
        });
    }
    if float.fract() == 0.0 && float.abs() < EXPONENT_FORM_FROM {
        return Err(PayloadError::AmbiguousNumber {
            path: pointer(path),
            value: quote(spelled),
        });
    }
    Ok(())
}

/// Pointer segments to the first place `echoed` differs from `approved`, if any. Recursion
/// only follows structure both share, so it is bounded by the approved payload's depth.
fn first_difference(approved: &Value, echoed: &Value) -> Option<Vec<String>> {
    let nested = |segment: String, difference: Option<Vec<String>>| {
        difference.map(|mut path| {
            path.insert(0, segment);
            path
        })
    };
    match (approved, echoed) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .find_map(|key| match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => nested(key.clone(), first_difference(x, y)),
                    _ => Some(vec![key.clone()]),
                })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(index, (x, y))| nested(index.to_string(), first_difference(x, y))),
        _ => (approved != echoed).then(Vec::new),
    }
}
