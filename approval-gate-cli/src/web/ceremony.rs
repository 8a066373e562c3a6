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

/// Refuses an assertion the browser made on a page other than `origin`, this server's: the
/// approvers file may trust the same passkey on other pages (other ports), whose approvals
/// this page must not take as its own.
pub(crate) fn made_here(assertion: &Assertion, origin: &str) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Client {
        origin: String,
    }
    match serde_json::from_slice::<Client>(&assertion.client_data_json) {
        Ok(client) if client.origin == origin => Ok(()),
        Ok(client) => Err(format!(
            "passkey assertion: made on {}, not on this page ({origin}): nothing was approved",
            crate::term::display::escape(&client.origin)
        )),
        Err(_) => Err("passkey assertion: its client data names no origin".into()),
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
    /// The code the enrollment's terminal shows, as the human typed it on the page.
    #[serde(default)]
    pub(crate) code: String,
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

#[cfg(test)]
mod tests {
    use approval_gate_tests::webauthn::{AT, SoftPasskey, UP, UV};
    use serde_json::Value;

    use super::*;

    const ORIGIN: &str = "http://localhost:8471";
    const CHALLENGE: [u8; 32] = [9; 32];

    fn alice() -> SoftPasskey {
        SoftPasskey::new(3, "alice@example.com", "localhost")
    }

    /// A valid registration, with `change` applied to its decoded client data and
    /// authenticator data (nothing is signed at registration: each can change alone).
    fn posted(change: impl FnOnce(&mut String, &mut Vec<u8>)) -> PostedRegistration {
        let json: Value = alice().registration(&CHALLENGE, ORIGIN, UP | UV | AT);
        let mut client = String::from_utf8(
            B64.decode(json["clientDataJSON"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        let mut auth = B64
            .decode(json["authenticatorData"].as_str().unwrap())
            .unwrap();
        change(&mut client, &mut auth);
        PostedRegistration {
            credential_id: json["credentialId"].as_str().unwrap().to_owned(),
            authenticator_data: B64.encode(&auth),
            client_data_json: B64.encode(client.as_bytes()),
            code: String::new(),
        }
    }

    /// A change to the decoded client data and authenticator data.
    type Change = dyn FnOnce(&mut String, &mut Vec<u8>);

    fn refused(change: impl FnOnce(&mut String, &mut Vec<u8>)) -> String {
        register(&posted(change), &CHALLENGE, ORIGIN, "localhost").unwrap_err()
    }

    /// Where the COSE key starts in the soft authenticator's data.
    fn cose_at(auth: &[u8]) -> usize {
        let length = usize::from(u16::from_be_bytes([auth[53], auth[54]]));
        55 + length
    }

    #[test]
    fn a_registration_gives_the_passkey_and_its_credential_id() {
        let registered = register(&posted(|_, _| {}), &CHALLENGE, ORIGIN, "localhost").unwrap();
        let alice = alice();
        assert_eq!(registered.credential_id, alice.credential_id);
        assert_eq!(
            registered.passkey,
            Passkey::from_sec1("localhost", &alice.point()).unwrap()
        );
    }

    #[test]
    fn each_step_of_the_registration_ceremony_refuses_what_breaks_it() {
        let cases: Vec<(&str, Box<Change>)> = vec![
            ("clientDataJSON: EOF", Box::new(|c, _| c.truncate(5))),
            (
                "not webauthn.create",
                Box::new(|c, _| *c = c.replace("webauthn.create", "webauthn.get")),
            ),
            (
                "not the challenge",
                Box::new(|c, _| *c = c.replace(&B64.encode(CHALLENGE), &B64.encode([8; 32]))),
            ),
            (
                "origin",
                Box::new(|c, _| *c = c.replace(ORIGIN, "http://localhost:1")),
            ),
            (
                "cross-origin",
                Box::new(|c, _| *c = c.replace("\"crossOrigin\":false", "\"crossOrigin\":true")),
            ),
            (
                "cross-origin",
                Box::new(|c, _| {
                    *c = c.replace('}', ",\"topOrigin\":\"https://evil.example\"}");
                }),
            ),
            ("too short", Box::new(|_, a| a.truncate(54))),
            // Long enough for the length, but not for the id it gives.
            ("cut short", Box::new(|_, a| a.truncate(55))),
            // The id, and nothing after it: no key.
            (
                "credential public key",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a.truncate(at);
                }),
            ),
            (
                "a coordinate is not 32 bytes",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a[at + 9] = 0x1f; // x: 31 bytes
                    a.remove(at + 10);
                }),
            ),
            ("RP ID", Box::new(|_, a| a[0] ^= 1)),
            ("not present", Box::new(|_, a| a[32] &= !UP)),
            ("not verified", Box::new(|_, a| a[32] &= !UV)),
            ("no attested", Box::new(|_, a| a[32] &= !AT)),
            ("extensions", Box::new(|_, a| a[32] |= 0x80)),
            (
                "cut short",
                Box::new(|_, a| a[53..55].copy_from_slice(&[0xff, 0xff])),
            ),
            (
                "cut short",
                Box::new(|_, a| a[53..55].copy_from_slice(&[0, 0])),
            ),
            ("another credential", Box::new(|_, a| a[55] ^= 1)),
            (
                "not an EC2 key",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a[at + 2] = 0x01; // kty: OKP
                }),
            ),
            (
                "not ES256",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a[at + 4] = 0x27; // alg: -8, EdDSA
                }),
            ),
            (
                "not on P-256",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a[at + 6] = 0x02; // crv: P-384
                }),
            ),
            (
                "credential public key",
                Box::new(|_, a| a.push(0x00)), // something after the key
            ),
            (
                "passkey",
                Box::new(|_, a| {
                    let at = cose_at(a);
                    a[at + 10] ^= 1; // x no longer on the curve with y
                }),
            ),
        ];
        for (expected, change) in cases {
            let problem = refused(change);
            assert!(problem.contains(expected), "{expected}: {problem}");
        }
        let mut bytes = posted(|_, _| {});
        bytes.client_data_json = B64.encode([0xff, 0xfe]);
        let problem = register(&bytes, &CHALLENGE, ORIGIN, "localhost").unwrap_err();
        assert!(problem.contains("not UTF-8"), "{problem}");
    }

    #[test]
    fn a_registration_is_checked_against_the_rp_id_and_origin_it_was_served_for() {
        let other = register(
            &posted(|_, _| {}),
            &CHALLENGE,
            ORIGIN,
            "approvals.example.com",
        );
        assert!(other.unwrap_err().contains("RP ID"));
        let elsewhere = register(
            &posted(|_, _| {}),
            &CHALLENGE,
            "http://localhost:8470",
            "localhost",
        );
        assert!(elsewhere.unwrap_err().contains("origin"));
    }

    #[test]
    fn posted_fields_are_base64url_of_a_bounded_length() {
        let posted = |field: &str| PostedAssertion {
            credential_id: field.to_owned(),
            authenticator_data: "AA".into(),
            client_data_json: "AA".into(),
            signature: "AA".into(),
            user_handle: Some(B64.encode("alice@example.com")),
        };
        let (assertion, handle) = posted("AQI").decode().unwrap();
        assert_eq!(assertion.credential_id, [1, 2]);
        assert_eq!(handle.as_deref(), Some(&b"alice@example.com"[..]));
        assert!(posted("").decode().unwrap_err().contains("0 bytes"));
        assert!(posted("AQI=").decode().unwrap_err().contains("base64url"));
        assert!(posted("+/").decode().unwrap_err().contains("base64url"));
        let long = B64.encode(vec![0u8; MAX_FIELD + 1]);
        assert!(posted(&long).decode().unwrap_err().contains("4097 bytes"));
        assert!(posted(&B64.encode(vec![0u8; MAX_FIELD])).decode().is_ok());
        let mut empty_handle = posted("AQI");
        empty_handle.user_handle = Some(String::new());
        assert_eq!(empty_handle.decode().unwrap().1, None);
    }
}
