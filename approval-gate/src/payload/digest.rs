//! The payload digest: BLAKE3 of the canonical bytes, written as 64 lowercase hex characters.

use std::fmt;
use std::str::FromStr;

use serde::de;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::PayloadError;

/// BLAKE3 digest of canonical payload bytes.
///
/// Written as 64 lowercase hex characters in text and in serde formats.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PayloadDigest([u8; 32]);

impl PayloadDigest {
    /// The digest of `bytes`, canonical payload bytes.
    pub(super) fn of(bytes: &[u8]) -> Self {
        Self(*blake3::hash(bytes).as_bytes())
    }

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
