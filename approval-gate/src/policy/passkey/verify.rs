//! Verifying an assertion: the steps of W3C Web Authentication Level 3, §7.2 "Verifying an
//! Authentication Assertion", that need no state (numbered as in the Level 3 text, w3c/webauthn
//! `index.bs`).
//!
//! What the other steps become here:
//!
//! - Steps 1 to 4 (options, `get()`, the response's type, client extension results) are the
//!   web front end's: the envelope holds an assertion response's parts, and no extension
//!   results (approval-gate requests no extension).
//! - Steps 5 and 6 (`allowCredentials`; the credential record of the identified user) are the
//!   policy's trust check: the credential record is the `allowed_signers` line, found by the
//!   assertion's public key and RP ID and trusted for the approval's principal. The credential
//!   id is not signed by the authenticator, so it names nothing the signature does not.
//! - Step 19 (backup state against the credential record) and step 22 (the signature counter
//!   against the stored one) compare with state this process does not keep: [`Verified`]
//!   returns the flags and the counter. The gate that records an approval checks the counter
//!   against the approvals its store holds (`counter.rs`); the backup state is the caller's.
//! - Step 23 (extensions): approval-gate requests none, and an assertion carrying
//!   authenticator extensions (the ED flag) is refused rather than half-read.

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Verifier;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Assertion, Passkey};

/// Flag bits of the authenticator data (§6.1).
const UP: u8 = 1 << 0;
const UV: u8 = 1 << 2;
const BE: u8 = 1 << 3;
const BS: u8 = 1 << 4;
const AT: u8 = 1 << 6;
const ED: u8 = 1 << 7;

/// Length of the authenticator data without attested credential data or extensions:
/// `rpIdHash` (32), `flags` (1), `signCount` (4).
const AUTHENTICATOR_DATA_BYTES: usize = 37;

/// The shortest challenge taken: WebAuthn asks for at least 16 random bytes (§13.4.3).
const MIN_CHALLENGE_BYTES: usize = 16;

/// What a verified assertion says besides "valid", for a caller that keeps credential
/// records: verification keeps none, so it checks neither the counter nor the backup state
/// against earlier assertions (§7.2 steps 19 and 22). A [`Gate`](crate::Gate) recording a
/// passkey approval checks the counter against the approvals its store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// The authenticator's signature counter (`signCount`). If it or the stored counter is
    /// not zero, it must be greater than the stored one, or the authenticator may be cloned
    /// (§7.2 step 22): a caller with the stored counter checks, then stores this one.
    pub sign_count: u32,
    /// The origin the browser reports (`https://` and the RP ID, perhaps a port; or
    /// `http://localhost`, perhaps a port).
    pub origin: String,
    /// The BE flag: the credential may be backed up (synced).
    pub backup_eligible: bool,
    /// The BS flag: the credential is backed up.
    pub backed_up: bool,
}

/// Why an assertion does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It is valid in every other way checked so far, but was made for another challenge:
    /// another statement, another request.
    Challenge {
        /// What the client data says, as written (shortened).
        found: String,
        /// What was expected, base64url.
        expected: String,
    },
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Challenge { found, expected } => write!(
                f,
                "its challenge {found} is not the expected {expected}: it was made for \
                 something else"
            ),
            Self::Other(problem) => f.write_str(problem),
        }
    }
}

/// The client data members §7.2 reads (§5.8.1). Other members are allowed, as browsers add
/// some; a member read here that appears twice is refused.
#[derive(Deserialize)]
struct ClientData {
    #[serde(rename = "type")]
    kind: String,
    challenge: String,
    origin: String,
    #[serde(rename = "crossOrigin", default, deserialize_with = "present")]
    cross_origin: Option<Value>,
    #[serde(rename = "topOrigin", default, deserialize_with = "present")]
    top_origin: Option<Value>,
    #[serde(rename = "tokenBinding", default, deserialize_with = "present")]
    token_binding: Option<Value>,
}

/// A member that is present, `null` included (serde reads a `null` option as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl Passkey {
    /// Verifies `assertion` as made by this passkey over `challenge`, with user verification:
    /// the steps of WebAuthn Level 3 §7.2 that apply without stored state. For an approval,
    /// `challenge` is [`challenge`](super::challenge) of the decision statement (the policy
    /// does that itself); for a web front end's sign-in, it is the random challenge it sent.
    ///
    /// Taken: `type` `webauthn.get`; exactly the challenge; an origin of exactly
    /// `https://<RP ID>`, with a port or not, or for the RP ID `localhost` also
    /// `http://localhost`, with a port or not (nothing else: no subdomain, path or user); not
    /// in a cross-origin frame (`crossOrigin` true or a `topOrigin` refused); no Token Binding
    /// in use; the RP ID's hash; user presence *and* user verification; a backup state only
    /// where the credential is backup-eligible; neither attested credential data nor
    /// extensions; an ES256 signature (DER, as browsers give it, high or low S) over the
    /// authenticator data and the SHA-256 of the client data JSON.
    ///
    /// The counter and the backup flags are returned, not judged: see [`Verified`]. So is the
    /// origin: any port of the RP ID passes here, and the caller holds it to the one page it
    /// expects (the policy, to the origin the passkey's line names; a web front end, to its
    /// own).
    ///
    /// # Errors
    ///
    /// What failed, as a sentence: e.g. `origin http://evil.example is not one of the RP ID
    /// localhost's (…)`.
    pub fn verify(&self, challenge: &[u8], assertion: &Assertion) -> Result<Verified, String> {
        self.check(challenge, assertion).map_err(|f| f.to_string())
    }

    /// [`verify`](Passkey::verify), telling a wrong challenge apart.
    pub(crate) fn check(
        &self,
        challenge: &[u8],
        assertion: &Assertion,
    ) -> Result<Verified, Failure> {
        if challenge.len() < MIN_CHALLENGE_BYTES {
            return Err(Failure::Other(format!(
                "the expected challenge is {} bytes; WebAuthn challenges are at least \
                 {MIN_CHALLENGE_BYTES}",
                challenge.len()
            )));
        }
        // Step 7: cData, authData and sig are the assertion's parts.
        let c_data = &assertion.client_data_json;
        let auth_data = &assertion.authenticator_data;
        let client = self.check_client_data(challenge, c_data)?;
        let flags = self.check_authenticator_data(auth_data)?;

        // Step 19 (backup state against the credential record) is the caller's: returned.

        // Step 20: hash is the SHA-256 of cData, the bytes as given.
        let hash = Sha256::digest(c_data);

        // Step 21: sig is a valid signature over authData || hash by the credential's key.
        // ES256 signatures are ASN.1 DER; high-S values are valid ECDSA and some
        // authenticators make them, so they are accepted (p256 does not refuse them, and
        // counting approvals does not rest on signature bytes).
        let Ok(signature) = p256::ecdsa::Signature::from_der(&assertion.signature) else {
            return Err(Failure::Other(
                "the signature is not a DER-encoded P-256 ECDSA signature".into(),
            ));
        };
        let mut signed = Vec::with_capacity(auth_data.len() + hash.len());
        signed.extend_from_slice(auth_data);
        signed.extend_from_slice(&hash);
        if self.verifying_key().verify(&signed, &signature).is_err() {
            return Err(Failure::Other(
                "the signature does not verify: this passkey did not sign this authenticator \
                 data and client data"
                    .into(),
            ));
        }

        // Step 22: the signature counter, big-endian, for the caller to compare.
        let sign_count =
            u32::from_be_bytes([auth_data[33], auth_data[34], auth_data[35], auth_data[36]]);
        Ok(Verified {
            sign_count,
            origin: client.origin,
            backup_eligible: flags & BE != 0,
            backed_up: flags & BS != 0,
        })
    }

    /// Steps 8 to 14 (and Level 2's Token Binding step): the client data.
    fn check_client_data(&self, challenge: &[u8], c_data: &[u8]) -> Result<ClientData, Failure> {
        // Step 8: UTF-8 decode of cData, a leading byte order mark stripped.
        let Ok(json_text) = std::str::from_utf8(c_data) else {
            return Err(Failure::Other("the client data JSON is not UTF-8".into()));
        };
        let json_text = json_text.strip_prefix('\u{feff}').unwrap_or(json_text);

        // Step 9: C, the client data, parsed from the JSON text.
        let client: ClientData = match serde_json::from_str(json_text) {
            Ok(client) => client,
            Err(e) => {
                return Err(Failure::Other(format!(
                    "the client data JSON is not client data: {e}"
                )));
            }
        };

        // Step 10: C.type is "webauthn.get".
        if client.kind != "webauthn.get" {
            return Err(Failure::Other(format!(
                "the client data's type is {}, not webauthn.get",
                shown(&client.kind)
            )));
        }

        // Step 11: C.challenge equals the base64url encoding of the challenge. One encoding
        // is right (no padding, canonical), so the strings are compared.
        let expected = Base64UrlUnpadded::encode_string(challenge);
        if client.challenge != expected {
            return Err(Failure::Challenge {
                found: shown(&client.challenge),
                expected,
            });
        }

        // Step 12: C.origin is an origin the relying party expects (§13.4.9): the RP ID's
        // own, over https (for localhost, http too), with or without a port.
        if !origin_expected(&self.rp_id, &client.origin) {
            return Err(Failure::Other(format!(
                "origin {} is not one of the RP ID {}'s (https://{} or https://{}:PORT{})",
                shown(&client.origin),
                self.rp_id,
                self.rp_id,
                self.rp_id,
                if self.rp_id == "localhost" {
                    ", or http://localhost with or without a port"
                } else {
                    ""
                }
            )));
        }

        // Step 13: crossOrigin true means a frame not same-origin with its ancestors, which
        // approval-gate never expects: an approval page is not framed.
        match &client.cross_origin {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                return Err(Failure::Other(
                    "crossOrigin is true: the assertion was made in a frame of another \
                     origin, which an approval never is"
                        .into(),
                ));
            }
            Some(_) => return Err(Failure::Other("crossOrigin is not a boolean".into())),
        }

        // Step 14: a topOrigin is present only in such a frame: refused whatever it says.
        if client.top_origin.is_some() {
            return Err(Failure::Other(
                "topOrigin is present: the assertion was made in a frame, which an approval \
                 never is"
                    .into(),
            ));
        }

        // Level 2 §7.2 step 14 (the member is reserved in Level 3, §5.8.1): Token Binding's
        // status must match the TLS connection's; nothing here saw that connection, and no
        // current browser uses Token Binding, so "present" is refused.
        if let Some(binding) = &client.token_binding {
            match binding.get("status").and_then(Value::as_str) {
                Some("supported" | "not-supported") => {}
                Some("present") => {
                    return Err(Failure::Other(
                        "tokenBinding.status is present: a Token Binding this verifier \
                         cannot check"
                            .into(),
                    ));
                }
                _ => {
                    return Err(Failure::Other(
                        "tokenBinding is not {\"status\": …} with a known status".into(),
                    ));
                }
            }
        }

        Ok(client)
    }

    /// The authenticator data's layout (§6.1), and steps 23 (extensions), 15 to 18: its
    /// flags.
    fn check_authenticator_data(&self, auth_data: &[u8]) -> Result<u8, Failure> {
        // §6.1: the authenticator data is rpIdHash, flags, signCount, then attested
        // credential data if AT is set and extensions if ED is set.
        if auth_data.len() < AUTHENTICATOR_DATA_BYTES {
            return Err(Failure::Other(format!(
                "the authenticator data is {} bytes; it holds at least {AUTHENTICATOR_DATA_BYTES}",
                auth_data.len()
            )));
        }
        let flags = auth_data[32];
        // AT: attested credential data belongs in a registration, never in an assertion.
        if flags & AT != 0 {
            return Err(Failure::Other(
                "the AT flag is set: an assertion carries no attested credential data".into(),
            ));
        }
        // Step 23: extension outputs are the relying party's to process; approval-gate
        // requests no extension, and refuses outputs rather than skip what it cannot read.
        if flags & ED != 0 {
            return Err(Failure::Other(
                "the ED flag is set: authenticator extensions are not accepted in an approval"
                    .into(),
            ));
        }
        if auth_data.len() != AUTHENTICATOR_DATA_BYTES {
            return Err(Failure::Other(format!(
                "the authenticator data is {} bytes, with neither attested credential data nor \
                 extensions flagged: it must be {AUTHENTICATOR_DATA_BYTES}",
                auth_data.len()
            )));
        }

        // Step 15: rpIdHash is the SHA-256 of the RP ID (the passkey's application).
        if auth_data[..32] != Sha256::digest(self.rp_id.as_bytes())[..] {
            return Err(Failure::Other(format!(
                "the authenticator data's rpIdHash is not the SHA-256 of the RP ID {}: the \
                 assertion is for another RP ID",
                self.rp_id
            )));
        }

        // Step 16: the UP (user present) flag is set.
        if flags & UP == 0 {
            return Err(Failure::Other(
                "the UP flag is not set: the user was not present".into(),
            ));
        }

        // Step 17: user verification is required for an approval (the front end asks for it
        // with userVerification "required"), so the UV flag must be set.
        if flags & UV == 0 {
            return Err(Failure::Other(
                "the UV flag is not set: the user was not verified (PIN or biometric), which \
                 an approval requires"
                    .into(),
            ));
        }

        // Step 18: BS (backed up) is never set without BE (backup eligible).
        if flags & BS != 0 && flags & BE == 0 {
            return Err(Failure::Other(
                "the BS flag is set without BE: a credential that cannot be backed up is \
                 said to be backed up"
                    .into(),
            ));
        }

        Ok(flags)
    }
}

/// Whether `origin` is one the relying party `rp_id` expects: exactly `https://` and the RP
/// ID, or, for `localhost` only, `http://localhost`; then nothing, or `:` and a port as a
/// browser serializes it (1 to 65535, no leading zero, not the scheme's default port).
pub(crate) fn origin_expected(rp_id: &str, origin: &str) -> bool {
    let (rest, default_port) = if let Some(rest) = origin.strip_prefix("https://") {
        (rest, 443)
    } else if let Some(rest) = origin.strip_prefix("http://")
        && rp_id == "localhost"
    {
        (rest, 80)
    } else {
        return false;
    };
    let Some(after_host) = rest.strip_prefix(rp_id) else {
        return false;
    };
    if after_host.is_empty() {
        return true;
    }
    let Some(port) = after_host.strip_prefix(':') else {
        return false;
    };
    let serialized = !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && !port.starts_with('0');
    serialized
        && port
            .parse::<u32>()
            .is_ok_and(|n| n <= 65_535 && n != default_port)
}

/// Text from the client data as an error shows it: escaped, and cut after 100 characters.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(100)
        .collect::<String>()
        .escape_debug()
        .collect();
    if text.chars().nth(100).is_some() {
        out.push('…');
    }
    out
}
