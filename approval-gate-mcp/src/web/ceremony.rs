//! The browser's side of WebAuthn, as the server reads it: assertions posted by the page, and
//! the registration ceremony of `passkey enroll`.
//!
//! Assertions are verified by the library (`approval_gate::passkey`), the same code the
//! executor runs; this module only decodes what the page posts. Registration is checked here,
//! W3C WebAuthn Level 3 §7.1, each step named. Attestation is `none`: the passkey is trusted
//! because the operator gave the one-time link to its approver and adds the printed line to
//! the approvers file, not because of who made the authenticator.

use approval_gate::passkey::{Assertion, Passkey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use coset::cbor::value::Value;
use coset::iana::{self, EnumI64 as _};
use coset::{CborSerializable as _, CoseKey, KeyType, Label};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// Longest field the page may post, decoded: far above any real authenticator's.
const MAX_FIELD: usize = 4096;

/// An assertion as the page posts it: `PublicKeyCredential` fields, base64url.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PostedAssertion {
    pub(crate) credential_id: String,
    pub(crate) authenticator_data: String,
    #[serde(rename = "clientDataJSON")]
    pub(crate) client_data_json: String,
    pub(crate) signature: String,
    #[serde(default)]
    pub(crate) user_handle: Option<String>,
}

impl PostedAssertion {
    /// The library's assertion, and the user handle the authenticator returned.
    pub(crate) fn decode(&self) -> Result<(Assertion, Option<Vec<u8>>), String> {
        let assertion = Assertion {
            credential_id: field("credentialId", &self.credential_id)?,
            authenticator_data: field("authenticatorData", &self.authenticator_data)?,
            client_data_json: field("clientDataJSON", &self.client_data_json)?,
            signature: field("signature", &self.signature)?,
        };
        let handle = self
            .user_handle
            .as_deref()
            .filter(|h| !h.is_empty())
            .map(|h| field("userHandle", h))
            .transpose()?;
        Ok((assertion, handle))
    }
}

/// A registration as the enrollment page posts it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PostedRegistration {
    pub(crate) credential_id: String,
    pub(crate) authenticator_data: String,
    #[serde(rename = "clientDataJSON")]
    pub(crate) client_data_json: String,
}

fn field(name: &str, text: &str) -> Result<Vec<u8>, String> {
    let bytes = B64
        .decode(text)
        .map_err(|e| format!("{name}: not base64url ({e})"))?;
    if bytes.is_empty() || bytes.len() > MAX_FIELD {
        return Err(format!("{name}: {} bytes", bytes.len()));
    }
    Ok(bytes)
}

/// What a checked registration gives: the passkey and its credential id.
#[derive(Debug)]
pub(crate) struct Registered {
    pub(crate) passkey: Passkey,
    pub(crate) credential_id: Vec<u8>,
}

/// Flags of the authenticator data (§6.1).
const UP: u8 = 0x01;
const UV: u8 = 0x04;
const AT: u8 = 0x40;
const ED: u8 = 0x80;

/// Checks a registration ceremony's response (§7.1) against the challenge the enrollment
/// page was given, the origin it was served from and the RP ID.
pub(crate) fn register(
    posted: &PostedRegistration,
    challenge: &[u8],
    origin: &str,
    rp_id: &str,
) -> Result<Registered, String> {
    let credential_id = field("credentialId", &posted.credential_id)?;
    let client_data = field("clientDataJSON", &posted.client_data_json)?;
    let auth_data = field("authenticatorData", &posted.authenticator_data)?;
    // §7.1 steps 5-6: clientDataJSON is UTF-8 JSON.
    let text = std::str::from_utf8(&client_data).map_err(|_| "clientDataJSON: not UTF-8")?;
    let c: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("clientDataJSON: {e}"))?;
    // Step 7: the type.
    if c["type"] != "webauthn.create" {
        return Err(format!(
            "clientDataJSON: type {} is not webauthn.create",
            c["type"]
        ));
    }
    // Step 8: the challenge we gave.
    if c["challenge"].as_str() != Some(B64.encode(challenge).as_str()) {
        return Err("clientDataJSON: not the challenge of this enrollment".into());
    }
    // Step 9: the origin the page was served from.
    if c["origin"].as_str() != Some(origin) {
        return Err(format!(
            "clientDataJSON: origin {} is not {origin}",
            c["origin"]
        ));
    }
    // Step 10: never from inside another origin's frame.
    if c["crossOrigin"] == true || !c["topOrigin"].is_null() {
        return Err("clientDataJSON: made inside a cross-origin frame".into());
    }
    // Step 12 onwards: the authenticator data.
    if auth_data.len() < 37 + 18 {
        return Err(format!(
            "authenticatorData: {} bytes is too short for a credential",
            auth_data.len()
        ));
    }
    // Step 13: made for our RP ID.
    if auth_data[..32] != Sha256::digest(rp_id.as_bytes())[..] {
        return Err(format!("authenticatorData: not made for the RP ID {rp_id}"));
    }
    let flags = auth_data[32];
    // Step 14: the user was present; step 15: and verified (a PIN, a fingerprint).
    if flags & UP == 0 {
        return Err("authenticatorData: the user was not present".into());
    }
    if flags & UV == 0 {
        return Err("authenticatorData: the user was not verified (no PIN or biometric)".into());
    }
    if flags & AT == 0 {
        return Err("authenticatorData: no attested credential data".into());
    }
    if flags & ED != 0 {
        return Err("authenticatorData: extensions were not asked for".into());
    }
    // Attested credential data: AAGUID (16), length (2), the id, the COSE_Key.
    let rest = &auth_data[37 + 16..];
    let length = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
    let rest = &rest[2..];
    if rest.len() < length || length == 0 {
        return Err("authenticatorData: the credential id is cut short".into());
    }
    let (id, key) = rest.split_at(length);
    // Step 21 (the credential is the one the browser named).
    if id != credential_id.as_slice() {
        return Err("authenticatorData: another credential than the one posted".into());
    }
    // Step 20 (the algorithm is one we asked for): ES256 on P-256 only.
    let point = es256_point(key)?;
    let passkey = Passkey::from_sec1(rp_id, &point).map_err(|e| e.to_string())?;
    Ok(Registered {
        passkey,
        credential_id,
    })
}

/// The uncompressed SEC1 point of an ES256 `COSE_Key` (RFC 9053 §7.1.1).
fn es256_point(cose: &[u8]) -> Result<Vec<u8>, String> {
    let key = CoseKey::from_slice(cose).map_err(|e| format!("credential public key: {e}"))?;
    if key.kty != KeyType::Assigned(iana::KeyType::EC2) {
        return Err("credential public key: not an EC2 key (only ES256 passkeys are taken)".into());
    }
    if let Some(alg) = &key.alg
        && *alg != coset::Algorithm::Assigned(iana::Algorithm::ES256)
    {
        return Err("credential public key: not ES256".into());
    }
    let param = |label: iana::Ec2KeyParameter| {
        key.params
            .iter()
            .find(|(l, _)| *l == Label::Int(label.to_i64()))
            .map(|(_, v)| v)
    };
    let crv = iana::EllipticCurve::P_256.to_i64();
    if param(iana::Ec2KeyParameter::Crv) != Some(&Value::from(crv)) {
        return Err("credential public key: not on P-256".into());
    }
    let coordinate = |label| match param(label) {
        Some(Value::Bytes(b)) if b.len() == 32 => Ok(b.clone()),
        _ => Err("credential public key: a coordinate is not 32 bytes".to_owned()),
    };
    let mut point = vec![0x04];
    point.extend(coordinate(iana::Ec2KeyParameter::X)?);
    point.extend(coordinate(iana::Ec2KeyParameter::Y)?);
    Ok(point)
}
