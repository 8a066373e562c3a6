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

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

mod check;
mod digest;
mod error;
mod parse;
#[cfg(test)]
mod tests;
mod write;

use check::{check_nul, check_number, check_size, enter, member_pointer, pointer};
pub use digest::PayloadDigest;
pub use error::PayloadError;
use error::quote;
use parse::parse;
use write::Writer;
#[cfg(test)]
use write::{format_number, write_string};

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
        PayloadDigest::of(self.as_bytes())
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
