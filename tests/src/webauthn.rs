//! A software passkey, and the requests a browser makes with it: for the web server's tests
//! that need no browser (the attacks, each a hand-made request). The browser tests use
//! Chromium's own virtual authenticator instead.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// Flags of the authenticator data.
pub const UP: u8 = 0x01;
/// User verified.
pub const UV: u8 = 0x04;
/// Attested credential data included.
pub const AT: u8 = 0x40;

/// One passkey: a P-256 key pair, its credential id and the principal it was made for.
pub struct SoftPasskey {
    key: SigningKey,
    /// The credential id.
    pub credential_id: Vec<u8>,
    /// The user handle: the principal's bytes.
    pub principal: String,
    /// The RP ID it was made for.
    pub rp_id: String,
    counter: std::cell::Cell<u32>,
    counts: bool,
}

/// What a browser would put in an assertion, each part changeable.
#[derive(Debug, Clone)]
pub struct Made {
    /// `clientDataJSON.origin`.
    pub origin: String,
    /// The RP ID whose hash goes into the authenticator data.
    pub rp_id: String,
    /// The flags byte.
    pub flags: u8,
    /// `clientDataJSON.type`.
    pub kind: String,
}

impl SoftPasskey {
    /// A passkey with private scalar `seed` repeated, for `principal` at `rp_id`.
    ///
    /// # Panics
    ///
    /// If `seed` is 0.
    #[must_use]
    pub fn new(seed: u8, principal: &str, rp_id: &str) -> Self {
        Self {
            key: SigningKey::from_slice(&[seed; 32]).expect("a valid P-256 scalar"),
            credential_id: format!("soft-credential-{seed}").into_bytes(),
            principal: principal.to_owned(),
            rp_id: rp_id.to_owned(),
            counter: std::cell::Cell::new(0),
            counts: true,
        }
    }

    /// The same passkey as one that does not count its signatures (a synced passkey): its
    /// counter is always 0.
    #[must_use]
    pub fn without_counter(mut self) -> Self {
        self.counts = false;
        self
    }

    /// The defaults a browser at `origin` would use.
    #[must_use]
    pub fn made(&self, origin: &str) -> Made {
        Made {
            origin: origin.to_owned(),
            rp_id: self.rp_id.clone(),
            flags: UP | UV,
            kind: "webauthn.get".to_owned(),
        }
    }

    /// The uncompressed SEC1 point of the public key.
    #[must_use]
    pub fn point(&self) -> Vec<u8> {
        self.key
            .verifying_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec()
    }

    /// The `allowed_signers` line trusting it on the page at `origin` (as `passkey enroll
    /// --serve-url ORIGIN` prints it).
    ///
    /// # Panics
    ///
    /// If the library refuses the key or the origin.
    #[must_use]
    pub fn allowed_signers_line(&self, origin: &str) -> String {
        approval_gate::passkey::Passkey::from_sec1(&self.rp_id, &self.point())
            .unwrap()
            .allowed_signers_line(&self.principal, &self.credential_id, origin)
            .unwrap()
    }

    /// An assertion over `challenge`, as the page posts it (`credentialId`,
    /// `authenticatorData`, `clientDataJSON`, `signature`, `userHandle`, base64url).
    #[must_use]
    pub fn assertion(&self, challenge: &[u8], made: &Made) -> Value {
        let client_data = format!(
            r#"{{"type":"{}","challenge":"{}","origin":"{}","crossOrigin":false}}"#,
            made.kind,
            B64.encode(challenge),
            made.origin
        );
        if self.counts {
            self.counter.set(self.counter.get() + 1);
        }
        let mut auth_data = Sha256::digest(made.rp_id.as_bytes()).to_vec();
        auth_data.push(made.flags);
        auth_data.extend(self.counter.get().to_be_bytes());
        let mut signed = auth_data.clone();
        signed.extend(Sha256::digest(client_data.as_bytes()));
        let signature: Signature = self.key.sign(&signed);
        json!({
            "credentialId": B64.encode(&self.credential_id),
            "authenticatorData": B64.encode(&auth_data),
            "clientDataJSON": B64.encode(client_data.as_bytes()),
            "signature": B64.encode(signature.to_der().as_bytes()),
            "userHandle": B64.encode(self.principal.as_bytes()),
        })
    }

    /// An approval of `statement` (a request's decision statement) made at `origin`, armored
    /// as the approval's signature ([`approval_gate::Decision::signed`]), as a web front end
    /// stores it.
    ///
    /// # Panics
    ///
    /// If the library refuses the key or the assertion.
    #[must_use]
    pub fn approval(&self, statement: &[u8], origin: &str) -> String {
        let challenge = approval_gate::passkey::challenge(statement);
        let posted = self.assertion(&challenge, &self.made(origin));
        let part = |name: &str| B64.decode(posted[name].as_str().unwrap()).unwrap();
        let assertion = approval_gate::passkey::Assertion {
            credential_id: part("credentialId"),
            authenticator_data: part("authenticatorData"),
            client_data_json: part("clientDataJSON"),
            signature: part("signature"),
        };
        let passkey =
            approval_gate::passkey::Passkey::from_sec1(&self.rp_id, &self.point()).unwrap();
        assertion.armor(&passkey).unwrap()
    }

    /// A registration response for `challenge` at `origin`, as the enrollment page posts it.
    ///
    /// # Panics
    ///
    /// If the credential id is longer than 65,535 bytes.
    #[must_use]
    pub fn registration(&self, challenge: &[u8], origin: &str, flags: u8) -> Value {
        let client_data = format!(
            r#"{{"type":"webauthn.create","challenge":"{}","origin":"{origin}","crossOrigin":false}}"#,
            B64.encode(challenge),
        );
        let mut auth_data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        auth_data.push(flags);
        auth_data.extend(0u32.to_be_bytes());
        auth_data.extend([0u8; 16]);
        let length = u16::try_from(self.credential_id.len()).unwrap();
        auth_data.extend(length.to_be_bytes());
        auth_data.extend(&self.credential_id);
        auth_data.extend(self.cose_key());
        json!({
            "credentialId": B64.encode(&self.credential_id),
            "authenticatorData": B64.encode(&auth_data),
            "clientDataJSON": B64.encode(client_data.as_bytes()),
        })
    }

    /// The public key as a `COSE_Key` (CBOR map {1: 2, 3: -7, -1: 1, -2: x, -3: y}).
    fn cose_key(&self) -> Vec<u8> {
        let point = self.point();
        let mut cbor = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20];
        cbor.extend(&point[1..33]);
        cbor.extend([0x22, 0x58, 0x20]);
        cbor.extend(&point[33..65]);
        cbor
    }
}
