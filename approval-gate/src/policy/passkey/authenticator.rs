//! A virtual authenticator and browser, for tests: it makes assertions as a browser returns
//! them, valid by default, each part changeable so that a test breaks one step at a time and
//! still signs what it changed.

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use sha2::{Digest, Sha256};

use super::{Assertion, Passkey};

pub(crate) const UP: u8 = 1 << 0;
pub(crate) const UV: u8 = 1 << 2;
pub(crate) const BE: u8 = 1 << 3;
pub(crate) const BS: u8 = 1 << 4;
pub(crate) const AT: u8 = 1 << 6;
pub(crate) const ED: u8 = 1 << 7;

/// One credential: a P-256 key pair for an RP ID, and its id.
pub(crate) struct Authenticator {
    key: SigningKey,
    rp_id: String,
    credential_id: Vec<u8>,
}

/// What the browser and the authenticator put in one assertion. [`Authenticator::ceremony`]
/// makes the valid one; tests change fields.
#[derive(Debug, Clone)]
pub(crate) struct Ceremony {
    /// `type`.
    pub(crate) kind: String,
    /// `challenge`, as written in the client data.
    pub(crate) challenge: String,
    /// `origin`.
    pub(crate) origin: String,
    /// Members after `origin`, as JSON text starting with a comma (a browser's
    /// `"crossOrigin":false`).
    pub(crate) extra: String,
    /// The client data JSON, if not built from the fields above.
    pub(crate) client_data_json: Option<Vec<u8>>,
    /// The RP ID whose hash the authenticator data holds.
    pub(crate) rp_id: String,
    /// The flags byte.
    pub(crate) flags: u8,
    /// The signature counter.
    pub(crate) sign_count: u32,
    /// Bytes after the first 37 of the authenticator data.
    pub(crate) trailing: Vec<u8>,
    /// Whether the signature gets a high S (its other valid form).
    pub(crate) high_s: bool,
}

impl Authenticator {
    /// The credential whose private scalar is `seed` repeated (1 to 255: each is a valid
    /// P-256 key), for `rp_id`.
    pub(crate) fn new(seed: u8, rp_id: &str) -> Self {
        let key = SigningKey::from_slice(&[seed; 32]).expect("a valid P-256 scalar");
        Self {
            key,
            rp_id: rp_id.to_owned(),
            credential_id: format!("credential-{seed}").into_bytes(),
        }
    }

    /// The credential's public key.
    pub(crate) fn passkey(&self) -> Passkey {
        let point = self.key.verifying_key().to_encoded_point(false);
        Passkey::from_sec1(&self.rp_id, point.as_bytes()).expect("a valid passkey")
    }

    /// The credential id.
    pub(crate) fn credential_id(&self) -> &[u8] {
        &self.credential_id
    }

    /// A valid ceremony for `challenge`: a top-level page at `https://<rp id>`, with user
    /// presence and verification, counter 7.
    pub(crate) fn ceremony(&self, challenge: &[u8]) -> Ceremony {
        let origin = if self.rp_id == "localhost" {
            "http://localhost:5173".to_owned()
        } else {
            format!("https://{}", self.rp_id)
        };
        Ceremony {
            kind: "webauthn.get".into(),
            challenge: Base64UrlUnpadded::encode_string(challenge),
            origin,
            extra: r#","crossOrigin":false"#.into(),
            client_data_json: None,
            rp_id: self.rp_id.clone(),
            flags: UP | UV,
            sign_count: 7,
            trailing: Vec::new(),
            high_s: false,
        }
    }

    /// The assertion `ceremony` makes, signed by this credential.
    pub(crate) fn assert(&self, ceremony: &Ceremony) -> Assertion {
        let client_data_json = ceremony.client_data_json.clone().unwrap_or_else(|| {
            let string = |s: &str| serde_json::to_string(s).expect("a JSON string");
            format!(
                r#"{{"type":{},"challenge":{},"origin":{}{}}}"#,
                string(&ceremony.kind),
                string(&ceremony.challenge),
                string(&ceremony.origin),
                ceremony.extra
            )
            .into_bytes()
        });
        let mut authenticator_data = Sha256::digest(ceremony.rp_id.as_bytes()).to_vec();
        authenticator_data.push(ceremony.flags);
        authenticator_data.extend_from_slice(&ceremony.sign_count.to_be_bytes());
        authenticator_data.extend_from_slice(&ceremony.trailing);
        let mut signed = authenticator_data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data_json));
        let signature: Signature = self.key.sign(&signed);
        let signature = if ceremony.high_s {
            high_s(&signature)
        } else {
            low_s(&signature)
        };
        Assertion {
            credential_id: self.credential_id.clone(),
            authenticator_data,
            client_data_json,
            signature: signature.to_der().as_bytes().to_vec(),
        }
    }

    /// The assertion of a valid ceremony for `challenge`, armored.
    pub(crate) fn approve(&self, challenge: &[u8]) -> String {
        self.assert(&self.ceremony(challenge))
            .armor(&self.passkey())
            .expect("an envelope")
    }
}

/// The signature with a low S (`s <= n/2`).
pub(crate) fn low_s(signature: &Signature) -> Signature {
    signature.normalize_s().unwrap_or(*signature)
}

/// The signature with a high S (`n - s` for a low one): as valid to ECDSA.
pub(crate) fn high_s(signature: &Signature) -> Signature {
    let low = low_s(signature);
    let (r, s) = low.split_scalars();
    Signature::from_scalars(r.to_bytes(), (-*s).to_bytes()).expect("a valid signature")
}
