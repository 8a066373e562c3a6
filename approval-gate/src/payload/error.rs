//! Why a payload was refused, and how a refusal quotes what it refused: bounded, on one line.

use std::fmt;

/// How many characters of an offending key or number an error message quotes.
const QUOTE_LIMIT: usize = 64;

/// Why a payload was refused. Any error means the payload is not usable as is.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadError {
    /// The JSON text or its canonical form exceeds [`MAX_PAYLOAD_BYTES`](crate::limits::MAX_PAYLOAD_BYTES).
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

    /// Arrays and objects nest deeper than [`MAX_PAYLOAD_DEPTH`](crate::limits::MAX_PAYLOAD_DEPTH).
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

    /// An integer is outside ±[`MAX_SAFE_INTEGER`](crate::limits::MAX_SAFE_INTEGER).
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
pub(super) fn at(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_owned()
    } else {
        path.escape_debug().to_string()
    }
}

/// Keeps error messages bounded when the offending text is huge.
pub(super) fn quote(text: &dyn fmt::Display) -> String {
    text.to_string().chars().take(QUOTE_LIMIT).collect()
}
