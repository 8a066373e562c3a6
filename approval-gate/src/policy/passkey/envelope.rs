//! A passkey assertion as the text an approval's signature holds.
//!
//! ```text
//! -----BEGIN APPROVAL-GATE WEBAUTHN-----
//! <Base64 of {"version":1,"publicKey":"sk-ecdsa-sha2-nistp256@openssh.com AAAA…",
//!   "credentialId":"…","authenticatorData":"…","clientDataJSON":"…","signature":"…"},
//!  padded, in lines of 70 characters>
//! -----END APPROVAL-GATE WEBAUTHN-----
//! ```
//!
//! The JSON's byte strings are base64url without padding, as WebAuthn writes them. There is
//! one text per assertion and key: the Base64 must be canonical and wrapped exactly so, the
//! JSON must hold each member once and nothing else, the key is written as
//! [`Passkey::to_openssh`] writes it. Nothing in the envelope is trusted: the key it carries is
//! checked against the policy like an SSHSIG's.

use base64ct::{Base64, Base64UrlUnpadded, Encoding};
use serde::{Deserialize, Serialize};

use super::Passkey;
use crate::error::Error;
use crate::limits::MAX_SIGNATURE_BYTES;

/// The envelope's first line.
const BEGIN: &str = "-----BEGIN APPROVAL-GATE WEBAUTHN-----";
/// The envelope's last line.
const END: &str = "-----END APPROVAL-GATE WEBAUTHN-----";
/// Width of the Base64 lines, as an SSHSIG's.
const WIDTH: usize = 70;
/// The envelope's format version.
const VERSION: u32 = 1;

/// Longest credential id taken, in bytes: WebAuthn's own bound (§5.4.3: relying parties
/// refuse longer ones).
pub const MAX_CREDENTIAL_ID_BYTES: usize = 1023;
/// Longest authenticator data taken, in bytes (an assertion's is 37 without extensions,
/// and extensions are refused).
pub const MAX_AUTHENTICATOR_DATA_BYTES: usize = 512;
/// Longest client data JSON taken, in bytes (a browser's is a few hundred).
pub const MAX_CLIENT_DATA_JSON_BYTES: usize = 2048;
/// Longest DER encoding of a P-256 ECDSA signature.
const MAX_DER_SIGNATURE_BYTES: usize = 72;
/// Longest public key text: an sk-ecdsa key with an RP ID of 253 bytes is 541.
const MAX_PUBLIC_KEY_CHARS: usize = 600;

/// A WebAuthn assertion as the browser returns it (`AuthenticatorAssertionResponse`, with the
/// credential's raw id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    /// The credential's raw id (`PublicKeyCredential.rawId`).
    pub credential_id: Vec<u8>,
    /// `response.authenticatorData`.
    pub authenticator_data: Vec<u8>,
    /// `response.clientDataJSON`, the bytes exactly as returned.
    pub client_data_json: Vec<u8>,
    /// `response.signature`: for ES256, an ASN.1 DER ECDSA signature.
    pub signature: Vec<u8>,
}

/// The envelope's JSON, its members in the order they are written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    version: u32,
    #[serde(rename = "publicKey")]
    public_key: String,
    #[serde(rename = "credentialId")]
    credential_id: String,
    #[serde(rename = "authenticatorData")]
    authenticator_data: String,
    #[serde(rename = "clientDataJSON")]
    client_data_json: String,
    signature: String,
}

impl Assertion {
    /// This assertion by `passkey`, as the text an approval's signature holds
    /// ([`Decision::signed`](crate::Decision::signed)): `-----BEGIN APPROVAL-GATE
    /// WEBAUTHN-----`, the Base64 of a JSON object carrying the key and the assertion in lines
    /// of 70 characters, `-----END APPROVAL-GATE WEBAUTHN-----`. It fits
    /// [`MAX_SIGNATURE_BYTES`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `assertion`) if a part is empty or longer than the
    /// envelope takes ([`MAX_CREDENTIAL_ID_BYTES`], [`MAX_AUTHENTICATOR_DATA_BYTES`],
    /// [`MAX_CLIENT_DATA_JSON_BYTES`], 72 bytes of signature): what [`dearmor`] would refuse is
    /// never written.
    ///
    /// [`dearmor`]: Assertion::dearmor
    pub fn armor(&self, passkey: &Passkey) -> Result<String, Error> {
        self.check_sizes().map_err(invalid)?;
        let envelope = Envelope {
            version: VERSION,
            public_key: passkey.to_openssh(),
            credential_id: Base64UrlUnpadded::encode_string(&self.credential_id),
            authenticator_data: Base64UrlUnpadded::encode_string(&self.authenticator_data),
            client_data_json: Base64UrlUnpadded::encode_string(&self.client_data_json),
            signature: Base64UrlUnpadded::encode_string(&self.signature),
        };
        let json = serde_json::to_vec(&envelope)
            .map_err(|e| invalid(format!("cannot be written as JSON: {e}")))?;
        let body = Base64::encode_string(&json);
        let mut text = String::with_capacity(body.len() + body.len() / WIDTH + 80);
        text.push_str(BEGIN);
        text.push('\n');
        for line in body.as_bytes().chunks(WIDTH) {
            // Base64 is ASCII, so any chunk of it is UTF-8.
            text.push_str(std::str::from_utf8(line).unwrap_or_default());
            text.push('\n');
        }
        text.push_str(END);
        Ok(text)
    }

    /// Reads what [`armor`](Assertion::armor) writes: the passkey the envelope names and the
    /// assertion. Blanks around the text are ignored; nothing else is.
    ///
    /// This says nothing about the assertion: [`Passkey::verify`] does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `assertion`) for a text longer than
    /// [`MAX_SIGNATURE_BYTES`], without the envelope's first and last lines, with Base64 that
    /// is not canonical or not wrapped at 70 columns, JSON that is not exactly the envelope's
    /// members (each once, `version` 1), a key that is not a passkey or not written as
    /// [`Passkey::to_openssh`] writes it, a part that is not base64url or is empty or too long.
    pub fn dearmor(text: &str) -> Result<(Passkey, Self), Error> {
        dearmor(text).map_err(invalid)
    }

    fn check_sizes(&self) -> Result<(), String> {
        let parts = [
            (
                "credential id",
                &self.credential_id,
                MAX_CREDENTIAL_ID_BYTES,
            ),
            (
                "authenticator data",
                &self.authenticator_data,
                MAX_AUTHENTICATOR_DATA_BYTES,
            ),
            (
                "client data JSON",
                &self.client_data_json,
                MAX_CLIENT_DATA_JSON_BYTES,
            ),
            ("signature", &self.signature, MAX_DER_SIGNATURE_BYTES),
        ];
        for (name, bytes, max) in parts {
            if bytes.is_empty() || bytes.len() > max {
                return Err(format!(
                    "the {name} is {} bytes; 1 to {max} are taken",
                    bytes.len()
                ));
            }
        }
        Ok(())
    }
}

/// Whether `text` is meant as a passkey envelope (rather than an SSHSIG): it starts with the
/// envelope's first line.
pub(crate) fn looks_armored(text: &str) -> bool {
    text.trim_start().starts_with(BEGIN)
}

fn invalid(problem: String) -> Error {
    Error::InvalidInput {
        field: "assertion",
        problem,
    }
}

fn dearmor(text: &str) -> Result<(Passkey, Assertion), String> {
    let text = text.trim();
    if text.len() > MAX_SIGNATURE_BYTES {
        return Err(format!(
            "the envelope is {} bytes; at most {MAX_SIGNATURE_BYTES} are taken",
            text.len()
        ));
    }
    let body = text
        .strip_prefix(BEGIN)
        .and_then(|rest| rest.strip_prefix('\n'))
        .and_then(|rest| rest.strip_suffix(END))
        .and_then(|rest| rest.strip_suffix('\n'))
        .ok_or_else(|| {
            format!("not a passkey assertion envelope: it must be {BEGIN}, lines of Base64, {END}")
        })?;
    let lines: Vec<&str> = body.split('\n').collect();
    let (last, full) = lines.split_last().unwrap_or((&"", &[]));
    if full.iter().any(|line| line.len() != WIDTH) || last.is_empty() || last.len() > WIDTH {
        return Err(format!(
            "the envelope's Base64 must be in lines of {WIDTH} characters (the last 1 to {WIDTH})"
        ));
    }
    let json = Base64::decode_vec(&lines.concat())
        .map_err(|_| "the envelope's body is not canonical Base64".to_owned())?;
    let envelope: Envelope = serde_json::from_slice(&json)
        .map_err(|e| format!("the envelope's JSON is not what an envelope holds: {e}"))?;
    if envelope.version != VERSION {
        return Err(format!(
            "envelope version {} is not known (this build reads version {VERSION})",
            envelope.version
        ));
    }
    if envelope.public_key.len() > MAX_PUBLIC_KEY_CHARS {
        return Err(format!(
            "the public key is {} characters; at most {MAX_PUBLIC_KEY_CHARS} are taken",
            envelope.public_key.len()
        ));
    }
    let passkey = Passkey::from_openssh(&envelope.public_key).map_err(|e| match e {
        Error::InvalidInput { problem, .. } => format!("the envelope's key: {problem}"),
        other => other.to_string(),
    })?;
    if passkey.to_openssh() != envelope.public_key {
        return Err("the envelope's key is not written as `type base64`, without a comment".into());
    }
    let part = |name: &str, text: &str| {
        Base64UrlUnpadded::decode_vec(text)
            .map_err(|_| format!("the {name} is not base64url without padding"))
    };
    let assertion = Assertion {
        credential_id: part("credential id", &envelope.credential_id)?,
        authenticator_data: part("authenticator data", &envelope.authenticator_data)?,
        client_data_json: part("client data JSON", &envelope.client_data_json)?,
        signature: part("signature", &envelope.signature)?,
    };
    assertion.check_sizes()?;
    Ok((passkey, assertion))
}
