//! Chromium's virtual WebAuthn authenticator: a platform passkey authenticator (CTAP2,
//! internal transport, resident keys, user verification) that answers without a human.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::TIMEOUT;
use super::connection::Connection;
use super::page::Page;

/// A virtual authenticator attached to one page's session.
pub(crate) struct Authenticator {
    connection: Arc<Connection>,
    session: String,
    id: String,
}

/// A credential the authenticator holds (`WebAuthn.getCredentials`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Credential {
    /// The credential id's bytes.
    pub(crate) id: Vec<u8>,
    pub(crate) rp_id: String,
    /// The user handle's bytes (the `user.id` of `navigator.credentials.create`).
    pub(crate) user_handle: Vec<u8>,
    /// A discoverable (resident) credential.
    pub(crate) resident: bool,
    pub(crate) sign_count: u64,
}

impl Page {
    /// Turns the WebAuthn domain on for this page (no browser UI) and adds a virtual
    /// authenticator: CTAP2, internal (a platform authenticator, like a phone's or a laptop's
    /// passkeys), resident keys, user verification that succeeds, presence given at once.
    pub(crate) fn add_virtual_authenticator(&self) -> Authenticator {
        self.call("WebAuthn.enable", json!({ "enableUI": false }));
        let added = self.call(
            "WebAuthn.addVirtualAuthenticator",
            json!({ "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": true,
                "hasUserVerification": true,
                "isUserVerified": true,
                "automaticPresenceSimulation": true,
            }}),
        );
        Authenticator {
            connection: Arc::clone(&self.connection),
            session: self.session.clone(),
            id: added["authenticatorId"]
                .as_str()
                .expect("WebAuthn.addVirtualAuthenticator returns an authenticatorId")
                .to_owned(),
        }
    }
}

impl Authenticator {
    fn call(&self, method: &str, mut params: Value) -> Value {
        params["authenticatorId"] = self.id.clone().into();
        self.connection
            .call(Some(&self.session), method, params, TIMEOUT)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The credentials it holds.
    pub(crate) fn credentials(&self) -> Vec<Credential> {
        let answer = self.call("WebAuthn.getCredentials", json!({}));
        let bytes = |value: &Value| {
            base64::engine::general_purpose::STANDARD
                .decode(value.as_str().unwrap_or_default())
                .expect("WebAuthn.getCredentials returns base64")
        };
        answer["credentials"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|credential| Credential {
                id: bytes(&credential["credentialId"]),
                rp_id: credential["rpId"].as_str().unwrap_or_default().to_owned(),
                user_handle: bytes(&credential["userHandle"]),
                resident: credential["isResidentCredential"] == true,
                sign_count: credential["signCount"].as_u64().unwrap_or_default(),
            })
            .collect()
    }

    /// Whether user verification (the fingerprint, the PIN) succeeds from now on.
    pub(crate) fn set_user_verified(&self, verified: bool) {
        self.call(
            "WebAuthn.setUserVerified",
            json!({ "isUserVerified": verified }),
        );
    }

    /// Makes the authenticator misbehave from now on: a bogus signature, a UV flag claiming
    /// verification that did not happen, a UP flag claiming presence that was not given. What
    /// a server must catch.
    pub(crate) fn set_response_override_bits(
        &self,
        bogus_signature: bool,
        false_verification: bool,
        false_presence: bool,
    ) {
        self.call(
            "WebAuthn.setResponseOverrideBits",
            json!({
                "isBogusSignature": bogus_signature,
                "isBadUV": false_verification,
                "isBadUP": false_presence,
            }),
        );
    }

    /// Removes the authenticator from the page: its credentials are gone with it.
    pub(crate) fn remove(self) {
        self.call("WebAuthn.removeVirtualAuthenticator", json!({}));
    }
}
