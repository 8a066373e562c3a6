//! Request identifiers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Text that is not a request id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid request id {text:?}: expected 12 lowercase hex characters")]
pub struct InvalidId {
    text: String,
}

impl InvalidId {
    /// The offending text (at most 64 characters of it).
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn into_text(self) -> String {
        self.text
    }
}

/// Length of a request id in characters.
pub(crate) const ID_LEN: usize = 12;

/// The id of an approval request: exactly 12 lowercase hexadecimal characters.
///
/// A `RequestId` that exists is well-formed: parsing is the only way to make one from text,
/// so ids like `..`, `a/b` or over-long strings are rejected before they could ever name a
/// path on disk.
///
/// ```
/// use approval_gate::RequestId;
///
/// let id: RequestId = "a1b2c3d4e5f6".parse()?;
/// assert_eq!(id.as_str(), "a1b2c3d4e5f6");
/// assert!("../../etc".parse::<RequestId>().is_err());
/// # Ok::<(), approval_gate::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId([u8; ID_LEN]);

impl RequestId {
    /// `000000000000`: stands for the store as a whole in audit lines that concern no single
    /// request ([`AuditEvent::Reanchored`](crate::AuditEvent::Reanchored)). Never given to a
    /// request.
    pub const STORE: Self = Self(*b"000000000000");

    /// Parses an id, accepting only 12 lowercase hex characters.
    ///
    /// # Errors
    ///
    /// [`InvalidId`] for anything else (an [`Error::InvalidId`](crate::Error::InvalidId)
    /// through `?`).
    pub fn parse(text: &str) -> Result<Self, InvalidId> {
        let bytes = text.as_bytes();
        if bytes.len() != ID_LEN || !bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(InvalidId {
                text: text.chars().take(64).collect(),
            });
        }
        let mut id = [0u8; ID_LEN];
        id.copy_from_slice(bytes);
        Ok(Self(id))
    }

    /// A fresh id from the operating system's CSPRNG.
    pub(crate) fn random() -> Result<Self, getrandom::Error> {
        loop {
            let id = Self::draw()?;
            if id != Self::STORE {
                return Ok(id);
            }
        }
    }

    fn draw() -> Result<Self, getrandom::Error> {
        let mut raw = [0u8; ID_LEN / 2];
        getrandom::fill(&mut raw)?;
        let mut id = [0u8; ID_LEN];
        for (pair, byte) in id.chunks_exact_mut(2).zip(raw) {
            pair[0] = HEX[usize::from(byte >> 4)];
            pair[1] = HEX[usize::from(byte & 0x0f)];
        }
        Ok(Self(id))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever stored.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl FromStr for RequestId {
    type Err = InvalidId;

    fn from_str(text: &str) -> Result<Self, InvalidId> {
        Self::parse(text)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.as_str())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_twelve_lowercase_hex() {
        assert!(RequestId::parse("a1b2c3d4e5f6").is_ok());
        for bad in [
            "",
            "..",
            "../a1b2c3d4e",
            "a1b2c3d4e5f/",
            "a1b2c3d4e5f\0",
            "A1B2C3D4E5F6",
            "a1b2c3d4e5f67",
            "a1b2c3d4e5f",
            "g1b2c3d4e5f6",
            "\u{ff0e}\u{ff0e}b2c3d4e5f6",
            "a1b2c3d4e5f6\n",
            " a1b2c3d4e5f6",
        ] {
            assert!(
                matches!(RequestId::parse(bad), Err(InvalidId { .. })),
                "{bad:?} must be refused"
            );
        }
    }

    #[test]
    fn random_ids_are_well_formed_and_differ() {
        let a = RequestId::random().unwrap();
        let b = RequestId::random().unwrap();
        assert_eq!(RequestId::parse(a.as_str()).unwrap(), a);
        assert_ne!(a, b);
    }

    #[test]
    fn serde_round_trip_validates() {
        let id = RequestId::parse("00ff00ff00ff").unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"00ff00ff00ff\"");
        assert_eq!(serde_json::from_str::<RequestId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<RequestId>("\"../etc/passwd\"").is_err());
    }
}
