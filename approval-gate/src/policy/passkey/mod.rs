//! Approvals made with a passkey: WebAuthn assertions, verified offline by the executor.
//!
//! An approver approves in a browser with a passkey (ES256, P-256 only). The web front end
//! asks for an assertion whose challenge is [`challenge`] of the request's decision statement
//! ([`Request::decision_statement`](crate::Request::decision_statement)), with
//! `userVerification: "required"`, and stores it [armored](Assertion::armor) as the approval's
//! signature ([`Decision::signed`](crate::Decision::signed)). The executor's
//! [`Policy`](crate::Policy) then verifies it in this process
//! ([`Passkey::verify`]: the offline steps of WebAuthn Level 3 §7.2) against the statement
//! rebuilt from the stored request, and counts it toward the quorum as it counts an SSH
//! signature: by principal and by key, so one approver with an SSH key and a passkey counts
//! once.
//!
//! A passkey is registered in the same OpenSSH `allowed_signers` file as SSH keys: as an
//! `sk-ecdsa-sha2-nistp256@openssh.com` key whose FIDO *application* is the WebAuthn RP ID,
//! with the credential id in the comment ([`Passkey::allowed_signers_line`]):
//!
//! ```text
//! alice@example.com namespaces="approval-gate" sk-ecdsa-sha2-nistp256@openssh.com AAAA… passkey:<credential id, base64url> origin:https://approvals.example.com
//! ```
//!
//! The RP ID is part of the key: the same point under another RP ID is another key, trusted
//! only if listed. The origin is part of the trust: an assertion counts only if the browser
//! made it on exactly the origin the line names, port included (a page on another port of
//! the same host gets the same passkey prompt). A passkey line without an origin is refused
//! when the file is read.

pub(crate) mod counter;
mod envelope;
mod origin;
mod verify;

#[cfg(test)]
pub(crate) mod authenticator;
#[cfg(test)]
mod gate_tests;
#[cfg(test)]
mod origin_tests;
#[cfg(test)]
mod tests;

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use sha2::{Digest, Sha256};
use ssh_key::public::{KeyData, SkEcdsaSha2NistP256};
use ssh_key::{Algorithm, PublicKey};

pub(crate) use self::envelope::looks_armored;
pub use self::envelope::{
    Assertion, MAX_AUTHENTICATOR_DATA_BYTES, MAX_CLIENT_DATA_JSON_BYTES, MAX_CREDENTIAL_ID_BYTES,
};
pub(crate) use self::origin::attach_origins;
pub(crate) use self::verify::Failure;
pub use self::verify::Verified;
use super::signers::match_pattern_list;
use crate::error::Error;
use crate::limits::MAX_NAME_BYTES;
use crate::request::SIGNATURE_NAMESPACE;
use crate::time::Timestamp;

/// The WebAuthn challenge that approves with a passkey: SHA-256 of `statement`, the bytes of
/// a [decision statement](crate::Request::decision_statement).
///
/// Pass it as `publicKey.challenge` to `navigator.credentials.get()`.
///
/// ```
/// let challenge = approval_gate::passkey::challenge(b"{}");
/// assert_eq!(challenge[..4], [0x44, 0x13, 0x6f, 0xa3]);
/// ```
#[must_use]
pub fn challenge(statement: &[u8]) -> [u8; 32] {
    Sha256::digest(statement).into()
}

/// A passkey's public key: a P-256 point and the WebAuthn RP ID it is bound to.
///
/// In OpenSSH terms it is an `sk-ecdsa-sha2-nistp256@openssh.com` key whose application is
/// the RP ID ([`to_openssh`](Passkey::to_openssh)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    rp_id: String,
    point: p256::PublicKey,
}

impl Passkey {
    /// The passkey with the public key `point` (an uncompressed SEC1 point, 65 bytes starting
    /// with `0x04`: the x and y of a COSE EC2 key) for the RP ID `rp_id` (a lowercase domain
    /// name, such as `approvals.example.com` or `localhost`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `passkey`) if `rp_id` is not a domain name, or `point`
    /// is not an uncompressed point on P-256 (the identity is refused).
    pub fn from_sec1(rp_id: &str, point: &[u8]) -> Result<Self, Error> {
        let invalid = |problem: String| Error::InvalidInput {
            field: "passkey",
            problem,
        };
        check_rp_id(rp_id).map_err(invalid)?;
        if point.len() != 65 || point[0] != 0x04 {
            return Err(invalid(format!(
                "the public key is {} bytes; a passkey's is an uncompressed P-256 point \
                 (65 bytes starting with 0x04)",
                point.len()
            )));
        }
        let point = p256::PublicKey::from_sec1_bytes(point)
            .map_err(|_| invalid("the public key is not a point on P-256".into()))?;
        Ok(Self {
            rp_id: rp_id.to_owned(),
            point,
        })
    }

    /// Reads a passkey written as an OpenSSH public key,
    /// `sk-ecdsa-sha2-nistp256@openssh.com AAAA… [comment]`, whose application is the RP ID
    /// (what [`to_openssh`](Passkey::to_openssh) writes; the comment is ignored).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `passkey`) if it is not such a key, or as
    /// [`from_sec1`](Passkey::from_sec1) for its application and point: an SSH security key's
    /// application (`ssh:`) is not an RP ID.
    pub fn from_openssh(text: &str) -> Result<Self, Error> {
        let key = PublicKey::from_openssh(text.trim()).map_err(|e| Error::InvalidInput {
            field: "passkey",
            problem: format!("not an OpenSSH public key: {e}"),
        })?;
        Self::from_key_data(key.key_data()).map_err(|problem| Error::InvalidInput {
            field: "passkey",
            problem,
        })
    }

    /// The passkey an OpenSSH key is, if it is one.
    pub(crate) fn from_key_data(key: &KeyData) -> Result<Self, String> {
        let Some(sk) = key.sk_ecdsa_p256() else {
            return Err(format!(
                "a {} key is not a passkey: a passkey is a {} key whose application is the RP ID",
                key.algorithm(),
                Algorithm::SkEcdsaSha2NistP256
            ));
        };
        Self::from_sec1(sk.application(), sk.ec_point().as_bytes()).map_err(|e| match e {
            Error::InvalidInput { problem, .. } => problem,
            other => other.to_string(),
        })
    }

    /// The WebAuthn RP ID the passkey is bound to.
    #[must_use]
    pub fn rp_id(&self) -> &str {
        &self.rp_id
    }

    /// The passkey as an OpenSSH public key, `sk-ecdsa-sha2-nistp256@openssh.com AAAA…`,
    /// without a comment.
    #[must_use]
    pub fn to_openssh(&self) -> String {
        // Encoding a key held in memory cannot fail: no I/O, and every length fits.
        self.public_key()
            .to_openssh()
            .unwrap_or_else(|e| unreachable!("an sk-ecdsa key always encodes: {e}"))
    }

    /// The passkey as the SSH key the policy trusts.
    pub(crate) fn public_key(&self) -> PublicKey {
        let point = self.point.to_encoded_point(false);
        PublicKey::from(KeyData::SkEcdsaSha2NistP256(SkEcdsaSha2NistP256::new(
            point,
            self.rp_id.clone(),
        )))
    }

    /// The ECDSA key that checks the passkey's signatures.
    pub(crate) fn verifying_key(&self) -> p256::ecdsa::VerifyingKey {
        p256::ecdsa::VerifyingKey::from(&self.point)
    }

    /// The `allowed_signers` line an operator adds to trust this passkey for `principal` on
    /// the page at `origin`: `principal namespaces="approval-gate"
    /// sk-ecdsa-sha2-nistp256@openssh.com AAAA… passkey:<credential id, base64url>
    /// origin:<origin>`. [`Policy::passkeys_of`](crate::Policy::passkeys_of) reads the
    /// credential id back; the policy counts only assertions made on exactly `origin`.
    ///
    /// ```
    /// # fn main() -> Result<(), approval_gate::Error> {
    /// use approval_gate::Policy;
    /// use approval_gate::passkey::Passkey;
    /// # let point = [0x04, 0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5, 0x63, 0xa4, 0x40, 0xf2, 0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a, 0x7f, 0x9b, 0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33, 0x57, 0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51, 0xf5];
    /// let passkey = Passkey::from_sec1("approvals.example.com", &point)?;
    /// let line = passkey.allowed_signers_line(
    ///     "alice@example.com",
    ///     b"credential-1",
    ///     "https://approvals.example.com",
    /// )?;
    /// let policy = Policy::from_allowed_signers(&line)?;
    /// let now = approval_gate::Timestamp::from_unix_millis(0);
    /// assert_eq!(
    ///     policy.passkeys_of("alice@example.com", now),
    ///     [(passkey, Some(b"credential-1".to_vec()))]
    /// );
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `principal`) for a principal an approver could not
    /// sign as: empty, longer than [`MAX_NAME_BYTES`], or holding a blank, a control
    /// character, a quote, a comma or a pattern character (`*`, `?`, `!`), or starting with
    /// `#`; (field `credential_id`) for a credential id that is empty or longer than
    /// [`MAX_CREDENTIAL_ID_BYTES`]; (field `origin`) for an origin that is not one of the
    /// RP ID's as a browser writes it (`https://<RP ID>[:PORT]`, or for `localhost`
    /// `http://localhost[:PORT]`).
    pub fn allowed_signers_line(
        &self,
        principal: &str,
        credential_id: &[u8],
        origin: &str,
    ) -> Result<String, Error> {
        check_principal(principal).map_err(|problem| Error::InvalidInput {
            field: "principal",
            problem,
        })?;
        if credential_id.is_empty() || credential_id.len() > MAX_CREDENTIAL_ID_BYTES {
            return Err(Error::InvalidInput {
                field: "credential_id",
                problem: format!(
                    "is {} bytes; a credential id is 1 to {MAX_CREDENTIAL_ID_BYTES} bytes",
                    credential_id.len()
                ),
            });
        }
        origin::check_origin(self, origin).map_err(|problem| Error::InvalidInput {
            field: "origin",
            problem,
        })?;
        Ok(format!(
            "{principal} namespaces=\"{SIGNATURE_NAMESPACE}\" {} {CREDENTIAL_TAG}{} {}{origin}",
            self.to_openssh(),
            Base64UrlUnpadded::encode_string(credential_id),
            origin::ORIGIN_TAG
        ))
    }
}

/// What starts the comment word naming a passkey's credential id in `allowed_signers`.
const CREDENTIAL_TAG: &str = "passkey:";

impl super::Policy {
    /// Whether any key of this policy is a passkey (an `sk-ecdsa-sha2-nistp256@openssh.com`
    /// key whose application is an RP ID): what a web front end needs before it can take any
    /// approval.
    #[must_use]
    pub fn has_passkeys(&self) -> bool {
        self.signers
            .iter()
            .any(|signer| Passkey::from_key_data(signer.key.key_data()).is_ok())
    }

    /// Whether any passkey line of this policy names `origin`: whether a web front end
    /// serving `origin` can take any approval.
    #[must_use]
    pub fn has_passkeys_on(&self, origin: &str) -> bool {
        self.signers
            .iter()
            .any(|signer| signer.origin.as_deref() == Some(origin))
    }

    /// The passkeys this policy trusts for `principal` in the `approval-gate` namespace at
    /// `at`, in file order, each with the credential id its line's comment names
    /// (`passkey:<base64url>`, as [`Passkey::allowed_signers_line`] writes it), if any: what
    /// a web front end lists in `allowCredentials`. SSH keys, and security keys whose
    /// application is not an RP ID (`ssh:`), are not passkeys and are left out; a key listed
    /// twice is given once.
    #[must_use]
    pub fn passkeys_of(&self, principal: &str, at: Timestamp) -> Vec<(Passkey, Option<Vec<u8>>)> {
        self.passkeys_where(principal, at, |_| true)
    }

    /// [`passkeys_of`](crate::Policy::passkeys_of), only those whose line names `origin` (the page's
    /// own, `https://approvals.example.com` or `http://localhost:8470`): the passkeys whose
    /// approvals made on that page count. What a web front end serving `origin` offers.
    #[must_use]
    pub fn passkeys_on(
        &self,
        principal: &str,
        origin: &str,
        at: Timestamp,
    ) -> Vec<(Passkey, Option<Vec<u8>>)> {
        self.passkeys_where(principal, at, |line| line == Some(origin))
    }

    fn passkeys_where(
        &self,
        principal: &str,
        at: Timestamp,
        origin: impl Fn(Option<&str>) -> bool,
    ) -> Vec<(Passkey, Option<Vec<u8>>)> {
        let mut found: Vec<(Passkey, Option<Vec<u8>>)> = Vec::new();
        for signer in self.signers.iter() {
            if !signer.allows(principal, SIGNATURE_NAMESPACE, at)
                || !origin(signer.origin.as_deref())
            {
                continue;
            }
            let Ok(passkey) = Passkey::from_key_data(signer.key.key_data()) else {
                continue;
            };
            if found.iter().any(|(known, _)| *known == passkey) {
                continue;
            }
            found.push((passkey, credential_id(signer.key.comment())));
        }
        found
    }
}

/// The credential id a comment names: its first word starting `passkey:`, if the rest of
/// the word is base64url of 1 to [`MAX_CREDENTIAL_ID_BYTES`] bytes.
fn credential_id(comment: &str) -> Option<Vec<u8>> {
    let word = comment
        .split([' ', '\t'])
        .find_map(|word| word.strip_prefix(CREDENTIAL_TAG))?;
    Base64UrlUnpadded::decode_vec(word)
        .ok()
        .filter(|id| !id.is_empty() && id.len() <= MAX_CREDENTIAL_ID_BYTES)
}

/// Checks that `rp_id` is what a browser accepts as an RP ID and writes in an origin: a
/// lowercase ASCII domain name of LDH labels (`a-z`, `0-9`, `-` not at either end), 1 to 253
/// bytes, no trailing dot, not an IPv4 address (its last label is not all digits).
pub(crate) fn check_rp_id(rp_id: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("RP ID {rp_id:?} is not a domain name: {why}"));
    if rp_id.is_empty() || rp_id.len() > 253 {
        return bad("it must be 1 to 253 bytes");
    }
    for label in rp_id.split('.') {
        if label.is_empty() || label.len() > 63 {
            return bad("each dot-separated label is 1 to 63 characters");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return bad("only lowercase a-z, digits, '-' and '.' (IDNs in their xn-- form)");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return bad("a label neither starts nor ends with '-'");
        }
    }
    if rp_id
        .rsplit('.')
        .next()
        .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()))
    {
        return bad("an IP address is not an RP ID");
    }
    Ok(())
}

/// Checks a principal as the CLI takes one to sign as, and as an `allowed_signers` line can
/// hold it unquoted: one name, not a pattern.
fn check_principal(principal: &str) -> Result<(), String> {
    if principal.is_empty() || principal.len() > MAX_NAME_BYTES {
        return Err(format!(
            "is {} bytes; a principal is 1 to {MAX_NAME_BYTES} bytes",
            principal.len()
        ));
    }
    if principal.starts_with('#') {
        return Err("starts with '#', which makes the line a comment".into());
    }
    if let Some(c) = principal
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || matches!(c, '"' | ',' | '*' | '?' | '!'))
    {
        return Err(format!(
            "{principal:?} holds {c:?}: a principal is one name, without blanks, control \
             characters, quotes, commas or pattern characters"
        ));
    }
    // What the allowed_signers reader makes of it must be exactly this one name.
    if !match_pattern_list(principal, principal) {
        return Err(format!("{principal:?} does not match itself as a pattern"));
    }
    Ok(())
}
