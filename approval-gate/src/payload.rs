//! Canonical JSON payloads: the exact bytes a human approves and an executor runs.
//!
//! A payload is stored in RFC 8785 (JCS) canonical form and identified by the BLAKE3 digest
//! of those bytes. Anything whose meaning would not survive canonicalization unchanged
//! (duplicate keys, integers beyond 2^53, floats that would print like integers, NUL
//! characters, excessive size or nesting) is refused rather than normalized away, so the
//! approved text is always exactly what runs.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// Largest accepted payload, both as input JSON text and as canonical bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// Deepest accepted nesting of arrays and objects: a scalar is depth 0, `{}` or `[]` depth 1.
pub const MAX_PAYLOAD_DEPTH: usize = 32;

/// Largest integer magnitude every JSON reader (including JavaScript's) holds exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

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
    /// duplicate keys, NUL characters, unsafe integers, ambiguous or out-of-range floats.
    pub fn from_json_text(text: &str) -> Result<Self, PayloadError> {
        check_size(text.len())?;
        Self::from_value(&parse(text)?)
    }

    /// Canonicalizes a [`serde_json::Value`], applying the same rules as
    /// [`from_json_text`](Self::from_json_text) except those a `Value` cannot break
    /// (duplicate keys).
    ///
    /// # Errors
    ///
    /// As [`from_json_text`](Self::from_json_text); size applies to the canonical bytes.
    pub fn from_value(value: &Value) -> Result<Self, PayloadError> {
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
    /// [`from_json_text`](Self::from_json_text).
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, PayloadError> {
        let text =
            serde_json::to_string(value).map_err(|e| PayloadError::Serialize(e.to_string()))?;
        Self::from_json_text(&text)
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
        match Self::from_serialize(&typed) {
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
    // Without `arbitrary_precision` every other number has an f64 view; NaN keeps an
    // impossible case a refusal.
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

/// Parses JSON text into a `Value`, refusing what a `Value` would silently lose: duplicate
/// keys, the integer/float distinction, and correctly rounded floats.
///
/// `serde_json` does the tokenizing, string unescaping and syntax errors; a seeded visitor adds
/// the rules; and because serde's visitor API hides how a number was written, each number is
/// re-read from the text by [`NumberTokens`].
fn parse(text: &str) -> Result<Value, PayloadError> {
    let mut state = ParseState {
        numbers: NumberTokens { text, pos: 0 },
        path: Vec::new(),
        refusal: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Node {
        state: &mut state,
        depth: 0,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|error| {
        state
            .refusal
            .take()
            .unwrap_or_else(|| PayloadError::Syntax(error.to_string().to_lowercase()))
    })
}

struct ParseState<'t> {
    numbers: NumberTokens<'t>,
    path: Vec<String>,
    /// The structured refusal behind the last visitor error; `serde_json` can only carry a
    /// message through.
    refusal: Option<PayloadError>,
}

impl ParseState<'_> {
    fn refuse<E: de::Error>(&mut self, refusal: PayloadError) -> E {
        let error = E::custom(&refusal);
        self.refusal = Some(refusal);
        error
    }

    /// Reads the next number token from the text and converts it under the number rules.
    fn number(&mut self) -> Result<Value, PayloadError> {
        let Some(token) = self.numbers.next() else {
            return Err(PayloadError::Syntax(
                "number token out of step with the parser".to_owned(),
            ));
        };
        let path = || pointer(&self.path);
        let number = if token.contains(['.', 'e', 'E']) {
            // Rust's float parsing is correctly rounded, unlike serde_json's default; it only
            // "fails" here by overflowing to infinity, which `from_f64` turns away.
            token
                .parse()
                .ok()
                .and_then(Number::from_f64)
                .ok_or_else(|| PayloadError::NumberOutOfRange {
                    path: path(),
                    value: quote(&token),
                })?
        } else {
            integer_token(token).ok_or_else(|| PayloadError::IntegerOutOfRange {
                path: path(),
                value: quote(&token),
            })?
        };
        check_number(&number, &token, &self.path)?;
        Ok(Value::Number(number))
    }
}

/// Converts an integer token, or `None` if it is beyond `i64` (and so out of range anyway).
fn integer_token(token: &str) -> Option<Number> {
    let (negative, digits) = token
        .strip_prefix('-')
        .map_or((false, token), |d| (true, d));
    let magnitude = i64::try_from(digits.parse::<u64>().ok()?).ok()?;
    Some(Number::from(if negative { -magnitude } else { magnitude }))
}

/// Seed and visitor for one JSON value whose enclosing containers are `depth` deep.
struct Node<'s, 't> {
    state: &'s mut ParseState<'t>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Seed for an array element or member value: extends the path while the child is parsed.
/// After an error the path is left as is, since parsing stops and the refusal already holds
/// its pointer.
struct Child<'s, 't> {
    state: &'s mut ParseState<'t>,
    depth: usize,
    segment: String,
}

impl<'de> DeserializeSeed<'de> for Child<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.state.path.push(self.segment);
        let value = Node {
            state: &mut *self.state,
            depth: self.depth,
        }
        .deserialize(deserializer)?;
        self.state.path.pop();
        Ok(value)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    // serde hands over only the value; the number rules need the spelling (and a correctly
    // rounded float), so each number is taken from the text instead.
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        check_nul(value, || pointer(&self.state.path)).map_err(|r| self.state.refuse(r))?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = enter(self.depth, &self.state.path).map_err(|r| self.state.refuse(r))?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Child {
            state: &mut *self.state,
            depth,
            segment: items.len().to_string(),
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = enter(self.depth, &self.state.path).map_err(|r| self.state.refuse(r))?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            check_member_key(&members, &key, &self.state.path).map_err(|r| self.state.refuse(r))?;
            let value = map.next_value_seed(Child {
                state: &mut *self.state,
                depth,
                segment: key.clone(),
            })?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

fn check_member_key(
    members: &Map<String, Value>,
    key: &str,
    path: &[String],
) -> Result<(), PayloadError> {
    check_nul(key, || member_pointer(path, key))?;
    if members.contains_key(key) {
        return Err(PayloadError::DuplicateKey {
            path: member_pointer(path, key),
            key: quote(&key),
        });
    }
    Ok(())
}

/// Yields the number tokens of JSON text in document order, which is the order `serde_json`
/// visits numbers in. Only ever consulted on a prefix `serde_json` has already accepted, so it
/// only has to be right for valid JSON: outside strings, `-` and digits start numbers.
struct NumberTokens<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Iterator for NumberTokens<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.pos) {
            match byte {
                b'"' => self.pos = string_end(bytes, self.pos + 1),
                b'-' | b'0'..=b'9' => {
                    let start = self.pos;
                    self.pos = number_end(bytes, start);
                    return self.text.get(start..self.pos);
                }
                _ => self.pos += 1,
            }
        }
        None
    }
}

/// Index just past the closing quote of a string whose contents start at `pos`.
fn string_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b'\\' => pos += 2,
            b'"' => return pos + 1,
            _ => pos += 1,
        }
    }
    pos
}

/// Index just past the number starting at `pos`, following the JSON number grammar exactly
/// so that the token ends where `serde_json`'s did.
fn number_end(bytes: &[u8], mut pos: usize) -> usize {
    let digits = |mut pos: usize| {
        while bytes.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        pos
    };
    if bytes.get(pos) == Some(&b'-') {
        pos += 1;
    }
    pos = if bytes.get(pos) == Some(&b'0') {
        pos + 1
    } else {
        digits(pos)
    };
    if bytes.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    if matches!(bytes.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(bytes.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = digits(pos);
    }
    pos
}

/// Writes a `Value` as canonical (or indented) JSON, checking the rules as it goes so that
/// values built in code are held to the same standard as parsed text.
struct Writer {
    out: String,
    path: Vec<String>,
    pretty: bool,
}

impl Writer {
    fn render(value: &Value, pretty: bool) -> Result<String, PayloadError> {
        let mut writer = Self {
            out: String::new(),
            path: Vec::new(),
            pretty,
        };
        writer.value(value, 0)?;
        Ok(writer.out)
    }

    fn value(&mut self, value: &Value, depth: usize) -> Result<(), PayloadError> {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(true) => self.out.push_str("true"),
            Value::Bool(false) => self.out.push_str("false"),
            Value::Number(number) => {
                check_number(number, number, &self.path)?;
                self.out.push_str(&number_text(number));
            }
            Value::String(text) => {
                check_nul(text, || pointer(&self.path))?;
                write_string(&mut self.out, text);
            }
            Value::Array(items) => self.array(items, enter(depth, &self.path)?)?,
            Value::Object(members) => self.object(members, enter(depth, &self.path)?)?,
        }
        Ok(())
    }

    fn array(&mut self, items: &[Value], depth: usize) -> Result<(), PayloadError> {
        self.out.push('[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            self.line_break(depth);
            self.path.push(index.to_string());
            self.value(item, depth)?;
            self.path.pop();
        }
        if !items.is_empty() {
            self.line_break(depth - 1);
        }
        self.out.push(']');
        Ok(())
    }

    fn object(&mut self, members: &Map<String, Value>, depth: usize) -> Result<(), PayloadError> {
        let mut sorted: Vec<_> = members.iter().collect();
        // RFC 8785 orders keys by UTF-16 code units, which differs from UTF-8 byte order
        // (and so from serde_json's map order) once keys go beyond U+FFFF.
        sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
        self.out.push('{');
        for (index, (key, value)) in sorted.into_iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            self.line_break(depth);
            check_nul(key, || member_pointer(&self.path, key))?;
            write_string(&mut self.out, key);
            self.out.push_str(if self.pretty { ": " } else { ":" });
            self.path.push(key.clone());
            self.value(value, depth)?;
            self.path.pop();
        }
        if !members.is_empty() {
            self.line_break(depth - 1);
        }
        self.out.push('}');
        Ok(())
    }

    fn line_break(&mut self, level: usize) {
        if self.pretty {
            self.out.push('\n');
            self.out.push_str(&"  ".repeat(level));
        }
    }
}

/// Spells a number that already passed [`check_number`].
fn number_text(number: &Number) -> String {
    if let Some(integer) = number.as_u64() {
        integer.to_string()
    } else if let Some(integer) = number.as_i64() {
        integer.to_string()
    } else {
        format_number(number.as_f64().unwrap_or(f64::NAN))
    }
}

/// Writes a JSON string the way RFC 8785 (and ECMAScript's `JSON.stringify`) does: only
/// `"`, `\` and control characters are escaped, everything else is literal UTF-8.
fn write_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0'..='\u{1f}' => {
                let code = c as u8;
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(code >> 4)]));
                out.push(char::from(HEX[usize::from(code & 0xf)]));
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript `Number.prototype.toString`, as RFC 8785 §3.2.2.3 requires for doubles.
pub(crate) fn format_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        // Covers -0 as well, which ECMAScript prints as "0".
        return "0".to_owned();
    }
    let mut buffer = ryu::Buffer::new();
    let (digits, exponent) = shortest_digits(buffer.format_finite(value.abs()));
    let sign = if value < 0.0 { "-" } else { "" };
    format!("{sign}{}", es_layout(&digits, exponent))
}

/// Splits ryu's output into significant digits `d` (no leading or trailing zeros) and `n`
/// with value = 0.d × 10^n, the form ECMAScript's layout rules are stated in.
fn shortest_digits(shortest: &str) -> (String, i32) {
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((shortest, "0"));
    let exponent: i32 = exponent.parse().expect("ryu writes a decimal exponent");
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{whole}{fraction}");
    let significant = all.trim_start_matches('0');
    let leading_zeros = all.len() - significant.len();
    let n = exponent + small(whole.len()) - small(leading_zeros);
    (significant.trim_end_matches('0').to_owned(), n)
}

/// Lays out digits `d` with value 0.d × 10^n following ECMA-262 `Number::toString`.
fn es_layout(digits: &str, n: i32) -> String {
    let k = small(digits.len());
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k).unsigned_abs() as usize))
    } else if 0 < n && n <= 21 {
        let (whole, fraction) = digits.split_at(n.unsigned_abs() as usize);
        format!("{whole}.{fraction}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(n.unsigned_abs() as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let sign = if n > 0 { '+' } else { '-' };
        format!("{first}{point}{rest}e{sign}{}", (n - 1).unsigned_abs())
    }
}

/// Digit counts of a double's shortest form are tiny, so they always fit an `i32`.
fn small(count: usize) -> i32 {
    i32::try_from(count).expect("digit count fits in i32")
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

#[cfg(test)]
mod tests {
    use serde::ser::SerializeMap;
    use serde_json::json;

    use super::*;

    const RFC_SAMPLE: &str = r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"#;
    const RFC_SORTING: &str = r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#;

    /// Every accepted sample used below, for the identity check.
    const ACCEPTED: &[&str] = &[
        RFC_SAMPLE,
        RFC_SORTING,
        r#"{"\u00e9": 1, "\ud83d\ude00": 2, "\ufb01": 3}"#,
        r#"{ "b" : [ 1 , { "y" : null , "x" : true } ] , "a" : "s" }"#,
        "[9007199254740991, -9007199254740991, -0, 0, 1.5, 1E30, -2.5e-8, 1e21]",
        r#""\u0001\u001f\u007f\u2028\b\f\n\r\t\"\\/""#,
        r#"{"e\u0301": "NFD", "\u00e9": "NFC"}"#,
        "[[], {}, [[]], \"\"]",
        "null",
        "0.1",
    ];

    fn canonical(text: &str) -> String {
        CanonicalPayload::from_json_text(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .as_str()
            .to_owned()
    }

    fn refusal(text: &str) -> PayloadError {
        CanonicalPayload::from_json_text(text).expect_err(text)
    }

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// Takes a deep `Value` apart iteratively; the derived drop would recurse off the stack.
    fn dismantle(mut value: Value) {
        while let Value::Array(mut items) = value {
            value = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn rfc8785_sample_canonicalizes_byte_for_byte() {
        assert_eq!(
            canonical(RFC_SAMPLE),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    #[test]
    fn rfc8785_sorting_example_orders_by_utf16() {
        let value = json!([
            "\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}"
        ]);
        let keys: Vec<&str> = value
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let text = canonical(RFC_SORTING);
        let mut positions: Vec<usize> = keys
            .iter()
            .map(|key| {
                let mut quoted = String::new();
                write_string(&mut quoted, key);
                text.find(&format!("{quoted}:")).expect(key)
            })
            .collect();
        let found = positions.clone();
        positions.sort_unstable();
        assert_eq!(found, positions, "{text}");
        assert!(text.starts_with(r#"{"\r":"Carriage Return","1":"One","#));
    }

    #[test]
    fn keys_sort_by_utf16_not_utf8() {
        // UTF-8 would put U+FB01 before U+1F600; UTF-16 surrogates (D83D) sort first.
        assert_eq!(
            canonical(r#"{"\ufb01": 3, "\ud83d\ude00": 2, "\u00e9": 1}"#),
            "{\"\u{e9}\":1,\"\u{1f600}\":2,\"\u{fb01}\":3}"
        );
        let from_value =
            CanonicalPayload::from_value(&json!({"\u{fb01}": 3, "\u{1f600}": 2, "\u{e9}": 1}))
                .unwrap();
        assert_eq!(
            from_value.as_str(),
            "{\"\u{e9}\":1,\"\u{1f600}\":2,\"\u{fb01}\":3}"
        );
    }

    #[test]
    fn rfc8785_appendix_b_numbers() {
        let table = [
            ("0000000000000000", "0"),
            ("8000000000000000", "0"),
            ("0000000000000001", "5e-324"),
            ("8000000000000001", "-5e-324"),
            ("7fefffffffffffff", "1.7976931348623157e+308"),
            ("ffefffffffffffff", "-1.7976931348623157e+308"),
            ("4340000000000000", "9007199254740992"),
            ("c340000000000000", "-9007199254740992"),
            ("4430000000000000", "295147905179352830000"),
            ("44b52d02c7e14af5", "9.999999999999997e+22"),
            ("44b52d02c7e14af6", "1e+23"),
            ("44b52d02c7e14af7", "1.0000000000000001e+23"),
            ("444b1ae4d6e2ef4e", "999999999999999700000"),
            ("444b1ae4d6e2ef4f", "999999999999999900000"),
            ("444b1ae4d6e2ef50", "1e+21"),
            ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
            ("3eb0c6f7a0b5ed8d", "0.000001"),
            ("41b3de4355555553", "333333333.3333332"),
            ("41b3de4355555554", "333333333.33333325"),
            ("41b3de4355555555", "333333333.3333333"),
            ("41b3de4355555556", "333333333.3333334"),
            ("41b3de4355555557", "333333333.33333343"),
            ("becbf647612f3696", "-0.0000033333333333333333"),
            ("43143ff3c1cb0959", "1424953923781206.2"),
        ];
        for (bits, expected) in table {
            let value = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            assert_eq!(format_number(value), expected, "{bits}");
        }
    }

    #[test]
    fn format_number_layout_boundaries() {
        for (value, expected) in [
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (0.5, "0.5"),
            (123.456, "123.456"),
            (1e20, "100000000000000000000"),
            (1.5e20, "150000000000000000000"),
            (1.5e21, "1.5e+21"),
            (-1e30, "-1e+30"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(format_number(value), expected, "{value:?}");
        }
    }

    #[test]
    fn equivalent_texts_share_bytes_and_digest() {
        let a = CanonicalPayload::from_json_text(r#"{"to":["x@y.z"],"amount":1250,"memo":"hi"}"#)
            .unwrap();
        let b = CanonicalPayload::from_json_text(
            "{\n  \"memo\" : \"h\\u0069\",\n\t\"amount\": 1250, \"to\": [ \"x@y.z\" ]\r\n}",
        )
        .unwrap();
        let c =
            CanonicalPayload::from_value(&json!({"memo": "hi", "to": ["x@y.z"], "amount": 1250}))
                .unwrap();
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a, c);
        assert_eq!(a.digest(), c.digest());
    }

    #[test]
    fn different_meanings_give_different_bytes_and_digests() {
        let base = CanonicalPayload::from_json_text(r#"{"a":{"b":[1,2]},"n":"\u00e9"}"#).unwrap();
        for other in [
            r#"{"a":{"b":[1,3]},"n":"\u00e9"}"#,
            r#"{"a":{"c":[1,2]},"n":"\u00e9"}"#,
            r#"{"a":{"b":[1,2]},"n":"e\u0301"}"#,
            r#"{"a":{"b":[2,1]},"n":"\u00e9"}"#,
        ] {
            let other = CanonicalPayload::from_json_text(other).unwrap();
            assert_ne!(base.as_bytes(), other.as_bytes());
            assert_ne!(base.digest(), other.digest());
        }
        assert!(matches!(
            refusal(r#"{"a":{"b":[1.0,2]},"n":"\u00e9"}"#),
            PayloadError::AmbiguousNumber { .. }
        ));
    }

    #[test]
    fn canonical_text_is_a_fixed_point() {
        for text in ACCEPTED {
            let once = canonical(text);
            assert_eq!(canonical(&once), once, "{text}");
            let from_value = CanonicalPayload::from_value(&serde_json::from_str(&once).unwrap());
            assert_eq!(from_value.unwrap().as_str(), once, "{text}");
            let payload = CanonicalPayload::from_json_text(text).unwrap();
            let value: Value = payload.deserialize_faithful().unwrap();
            assert_eq!(value, payload.to_value(), "{text}");
        }
    }

    #[test]
    fn strings_escape_as_json_stringify() {
        assert_eq!(
            canonical(ACCEPTED[5]),
            "\"\\u0001\\u001f\u{7f}\u{2028}\\b\\f\\n\\r\\t\\\"\\\\/\""
        );
        assert_eq!(canonical(r#""\u00e9\ud83d\ude00""#), "\"\u{e9}\u{1f600}\"");
    }

    #[test]
    fn oversized_text_is_refused() {
        let filler = |n: usize| format!("\"{}\"", "x".repeat(n - 2));
        assert!(CanonicalPayload::from_json_text(&filler(MAX_PAYLOAD_BYTES)).is_ok());
        assert_eq!(
            refusal(&filler(MAX_PAYLOAD_BYTES + 1)),
            PayloadError::TooLarge {
                limit: MAX_PAYLOAD_BYTES,
                actual: MAX_PAYLOAD_BYTES + 1
            }
        );
    }

    #[test]
    fn oversized_canonical_form_is_refused() {
        // 1e-6 is 4 bytes of input but 8 of canonical output.
        let items = vec!["1e-6"; 9000].join(",");
        let text = format!("[{items}]");
        assert!(text.len() < MAX_PAYLOAD_BYTES);
        assert!(matches!(
            refusal(&text),
            PayloadError::TooLarge { actual, .. } if actual > MAX_PAYLOAD_BYTES
        ));
        let big = Value::String("x".repeat(MAX_PAYLOAD_BYTES));
        assert!(matches!(
            CanonicalPayload::from_value(&big),
            Err(PayloadError::TooLarge { .. })
        ));
    }

    #[test]
    fn depth_limit_is_exact() {
        assert!(CanonicalPayload::from_json_text(&nested(MAX_PAYLOAD_DEPTH)).is_ok());
        assert_eq!(
            refusal(&nested(MAX_PAYLOAD_DEPTH + 1)),
            PayloadError::TooDeep {
                limit: MAX_PAYLOAD_DEPTH,
                path: "/0".repeat(MAX_PAYLOAD_DEPTH),
            }
        );
        let objects = format!("{}1{}", r#"{"k":"#.repeat(33), "}".repeat(33));
        assert!(
            matches!(refusal(&objects), PayloadError::TooDeep { path, .. } if path.len() == 64)
        );
    }

    #[test]
    fn extreme_nesting_is_too_deep_not_a_crash() {
        // 60 000 brackets (or 32 000 pairs) still fit under the size limit, so the depth rule must catch them.
        assert!(matches!(
            refusal(&"[".repeat(60_000)),
            PayloadError::TooDeep { .. }
        ));
        assert!(matches!(
            refusal(&nested(32_000)),
            PayloadError::TooDeep { .. }
        ));
        // Past the size limit the public constructor refuses on size first; the parser itself
        // must still stop at the depth limit.
        assert!(matches!(
            parse(&nested(100_000)),
            Err(PayloadError::TooDeep { .. })
        ));
        assert!(matches!(
            refusal(&nested(100_000)),
            PayloadError::TooLarge { .. }
        ));

        let mut deep = Value::Null;
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(matches!(
            CanonicalPayload::from_value(&deep),
            Err(PayloadError::TooDeep { .. })
        ));
        dismantle(deep);
    }

    #[test]
    fn duplicate_keys_are_refused() {
        assert_eq!(
            refusal(r#"{"a":1,"a":1}"#),
            PayloadError::DuplicateKey {
                path: "/a".to_owned(),
                key: "a".to_owned()
            }
        );
        assert_eq!(
            refusal(r#"{"x":[{"b/c":1,"d":2,"b/c":3}]}"#),
            PayloadError::DuplicateKey {
                path: "/x/0/b~1c".to_owned(),
                key: "b/c".to_owned()
            }
        );
        assert!(matches!(
            refusal(r#"{"a":1,"\u0061":2}"#),
            PayloadError::DuplicateKey { key, .. } if key == "a"
        ));
    }

    #[test]
    fn integers_must_be_safe() {
        assert_eq!(
            canonical("[9007199254740991,-9007199254740991]"),
            "[9007199254740991,-9007199254740991]"
        );
        for (text, path) in [
            ("9007199254740992", ""),
            ("[-9007199254740992]", "/0"),
            (r#"{"n":18446744073709551616}"#, "/n"),
            ("[100000000000000000000000]", "/0"),
            ("-9223372036854775809", ""),
        ] {
            let value = text.trim_matches(['[', ']']).trim_start_matches(r#"{"n":"#);
            assert_eq!(
                refusal(text),
                PayloadError::IntegerOutOfRange {
                    path: path.to_owned(),
                    value: value.trim_end_matches('}').to_owned()
                },
                "{text}"
            );
        }
        let unsafe_value = json!({"n": 9_007_199_254_740_992_u64});
        assert!(matches!(
            CanonicalPayload::from_value(&unsafe_value),
            Err(PayloadError::IntegerOutOfRange { path, .. }) if path == "/n"
        ));
        assert_eq!(canonical("-0"), "0");
    }

    #[test]
    fn integral_floats_are_ambiguous() {
        for text in ["1.0", "1e3", "-0.0", "0.1e1", "1E2", "1e20", "100.000"] {
            assert!(
                matches!(refusal(text), PayloadError::AmbiguousNumber { value, .. } if value == text),
                "{text}"
            );
        }
        assert_eq!(canonical("[1.5,1E30,-2.5e-8]"), "[1.5,1e+30,-2.5e-8]");
        assert!(matches!(
            CanonicalPayload::from_value(&json!({"x": [1.0]})),
            Err(PayloadError::AmbiguousNumber { path, .. }) if path == "/x/0"
        ));
        assert!(CanonicalPayload::from_value(&json!({"x": [2.5, 1e30]})).is_ok());
    }

    #[test]
    fn floats_are_correctly_rounded() {
        // serde_json's default float parsing is one unit in the last place off for these.
        for text in ["1.947700395895162e-169", "1.7599272438714224e-96"] {
            let approximate: f64 = serde_json::from_str(text).unwrap();
            assert_ne!(
                approximate.to_bits(),
                text.parse::<f64>().unwrap().to_bits()
            );
        }
        for text in [
            "1.947700395895162e-169",
            "1.7599272438714224e-96",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
            "0.30000000000000004",
            "5e-324",
        ] {
            let exact: f64 = text.parse().unwrap();
            let payload = CanonicalPayload::from_json_text(text).unwrap();
            assert_eq!(payload.as_str(), format_number(exact), "{text}");
            assert_eq!(payload.to_value().as_f64(), Some(exact), "{text}");
            assert_eq!(
                payload.deserialize::<f64>().unwrap().to_bits(),
                exact.to_bits()
            );
        }
        assert!(matches!(refusal("1e400"), PayloadError::Syntax(_)));
    }

    #[test]
    fn nul_characters_are_refused() {
        assert_eq!(
            refusal(r#"{"a":["ok","x\u0000y"]}"#),
            PayloadError::NulCharacter {
                path: "/a/1".to_owned()
            }
        );
        assert_eq!(
            refusal(r#"{"a":{"k\u0000":1}}"#),
            PayloadError::NulCharacter {
                path: "/a/k\0".to_owned()
            }
        );
        assert!(matches!(
            CanonicalPayload::from_value(&json!({"k\u{0}": 1})),
            Err(PayloadError::NulCharacter { .. })
        ));
        assert!(matches!(
            CanonicalPayload::from_value(&json!(["\u{0}"])),
            Err(PayloadError::NulCharacter { path }) if path == "/0"
        ));
    }

    #[test]
    fn malformed_text_is_a_syntax_error() {
        for text in [
            r#""\ud800""#,
            r#"["\udc00x"]"#,
            r#"{"a":1} x"#,
            "[1]]",
            "[1,]",
            "01",
            "[1-2]",
            "'a'",
            "NaN",
            "",
            "\u{feff}{}",
            "{\"a\" 1}",
        ] {
            match refusal(text) {
                PayloadError::Syntax(message) => {
                    assert_eq!(message, message.to_lowercase(), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn messages_are_lowercase_and_point_at_the_value() {
        let message = refusal(r#"{"a":[1.0]}"#).to_string();
        assert!(message.contains(" at /a/0"), "{message}");
        assert!(message.contains("integer"), "{message}");
        assert_eq!(message, message.to_lowercase());
        let message = refusal("1.0").to_string();
        assert!(message.contains("at the top level"), "{message}");
        let message = refusal("{\"a\\nb\":1,\"a\\nb\":2}").to_string();
        assert!(!message.contains('\n'), "{message}");
    }

    struct Twice;

    impl Serialize for Twice {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(2))?;
            map.serialize_entry("to", "alice")?;
            map.serialize_entry("to", "mallory")?;
            map.end()
        }
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Transfer {
        to: String,
        cents: u64,
    }

    #[derive(Serialize, Deserialize)]
    struct Lossy {
        to: String,
    }

    #[derive(Serialize, Deserialize)]
    struct Padded {
        to: String,
        cents: u64,
        #[serde(default)]
        memo: String,
    }

    #[derive(Serialize, Deserialize)]
    struct Floaty {
        to: String,
        cents: f64,
    }

    #[test]
    fn from_serialize_refuses_duplicate_keys() {
        assert!(matches!(
            CanonicalPayload::from_serialize(&Twice),
            Err(PayloadError::DuplicateKey { path, .. }) if path == "/to"
        ));
        let payload = CanonicalPayload::from_serialize(&Transfer {
            to: "bob".into(),
            cents: 5,
        })
        .unwrap();
        assert_eq!(payload.as_str(), r#"{"cents":5,"to":"bob"}"#);
    }

    #[test]
    fn deserialize_faithful_refuses_lossy_types() {
        let payload = CanonicalPayload::from_json_text(r#"{"to":"bob","cents":1250}"#).unwrap();
        assert_eq!(
            payload.deserialize_faithful::<Transfer>().unwrap(),
            Transfer {
                to: "bob".into(),
                cents: 1250
            }
        );
        assert!(payload.deserialize::<Lossy>().is_ok());
        let unfaithful = |path: &str| PayloadError::Unfaithful {
            path: path.to_owned(),
        };
        assert_eq!(
            payload.deserialize_faithful::<Lossy>().err(),
            Some(unfaithful("/cents"))
        );
        assert_eq!(
            payload.deserialize_faithful::<Padded>().err(),
            Some(unfaithful("/memo"))
        );
        assert_eq!(
            payload.deserialize_faithful::<Floaty>().err(),
            Some(unfaithful("/cents"))
        );
        assert!(matches!(
            payload.deserialize_faithful::<Vec<u8>>(),
            Err(PayloadError::Deserialize(_))
        ));
    }

    #[test]
    fn serialize_embeds_exact_canonical_bytes() {
        #[derive(Serialize)]
        struct Envelope<'a> {
            id: &'a str,
            payload: &'a CanonicalPayload,
        }
        let payload = CanonicalPayload::from_json_text(RFC_SAMPLE).unwrap();
        let text = serde_json::to_string(&Envelope {
            id: "r1",
            payload: &payload,
        })
        .unwrap();
        assert_eq!(text, format!(r#"{{"id":"r1","payload":{payload}}}"#));
        let pretty = serde_json::to_string_pretty(&Envelope {
            id: "r1",
            payload: &payload,
        })
        .unwrap();
        assert!(pretty.contains(payload.as_str()), "{pretty}");
    }

    #[test]
    fn pretty_keeps_canonical_order_and_spelling() {
        let payload = CanonicalPayload::from_json_text(
            r#"{"b":[1,{"z\n":2.50,"y":[]}],"a":{},"\u00e9":"\u2028"}"#,
        )
        .unwrap();
        assert_eq!(
            payload.pretty(),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"y\": [],\n      \"z\\n\": 2.5\n    }\n  ],\n  \"\u{e9}\": \"\u{2028}\"\n}"
        );
        assert_eq!(CanonicalPayload::from_json_text("7").unwrap().pretty(), "7");
    }

    #[test]
    fn digest_text_form_is_strict() {
        let payload = CanonicalPayload::from_json_text("[1]").unwrap();
        let digest = payload.digest();
        let hex = digest.to_hex();
        assert_eq!(hex, blake3::hash(b"[1]").to_hex().as_str());
        assert_eq!(digest.to_string(), hex);
        assert_eq!(format!("{digest:?}"), format!("PayloadDigest({hex})"));
        assert_eq!(hex.parse::<PayloadDigest>(), Ok(digest));
        assert_eq!(digest.as_bytes(), blake3::hash(b"[1]").as_bytes());
        for bad in [
            hex.to_uppercase(),
            hex[1..].to_owned(),
            format!("{hex}0"),
            format!("{}g", &hex[1..]),
            format!(" {}", &hex[1..]),
            String::new(),
        ] {
            assert_eq!(
                bad.parse::<PayloadDigest>(),
                Err(PayloadError::InvalidDigest),
                "{bad}"
            );
        }
        let json = serde_json::to_string(&digest).unwrap();
        assert_eq!(json, format!("\"{hex}\""));
        assert_eq!(
            serde_json::from_str::<PayloadDigest>(&json).unwrap(),
            digest
        );
        assert!(serde_json::from_str::<PayloadDigest>(&json.to_uppercase()).is_err());
    }

    #[test]
    fn debug_and_display_show_canonical_text() {
        let payload = CanonicalPayload::from_json_text(r#"{ "b":1, "a":2 }"#).unwrap();
        assert_eq!(payload.to_string(), r#"{"a":2,"b":1}"#);
        assert_eq!(format!("{payload:?}"), r#"CanonicalPayload({"a":2,"b":1})"#);
    }
}
