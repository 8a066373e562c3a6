//! Checking a signature over a statement, before any policy judges its key: an SSHSIG in our
//! namespace, or a passkey assertion over the statement's challenge.

use ssh_key::PublicKey;

use super::{passkey, signers};
use crate::error::Error;
use crate::request::{Request, SIGNATURE_NAMESPACE};

/// Checks what needs no policy: `signature` is an SSHSIG in the `approval-gate` namespace,
/// or a passkey assertion envelope ([`passkey`]) whose challenge is [`passkey::challenge`]
/// of the statement, over the decision statement of `request` for `principal` as one of
/// `required` approvers, by the key it carries. Returns that key (a passkey as its
/// `sk-ecdsa-sha2-nistp256@openssh.com` key), for the policy to judge either kind alike, with
/// the origin a passkey's assertion was made on.
pub(crate) fn check_signature(
    request: &Request,
    required: u32,
    principal: &str,
    signature: &str,
) -> Result<SignedBy, String> {
    let signed = Signed {
        kind: "decision statement",
        of: format!("this request as it stands (every field shown, and a quorum of {required})"),
        statement: &|| {
            request
                .statement(principal, required)
                .map_err(|e| e.to_string())
        },
    };
    signed.check(principal, signature)
}

/// A statement someone signs, for [`Signed::check`]: what kind it is and of what, in words
/// for the refusal, and how to make its bytes (only once the signature's form is known good).
pub(crate) struct Signed<'a> {
    /// `decision statement`, `allowance statement`.
    pub(crate) kind: &'static str,
    /// What it is the statement of, as a refusal names it.
    pub(crate) of: String,
    /// The statement's bytes.
    pub(crate) statement: &'a dyn Fn() -> Result<Vec<u8>, String>,
}

impl Signed<'_> {
    /// [`check_signature`] of any statement: `signature` is an SSHSIG in our namespace or a
    /// passkey assertion over the statement's challenge, by the key it carries.
    pub(crate) fn check(&self, principal: &str, signature: &str) -> Result<SignedBy, String> {
        if passkey::looks_armored(signature) {
            return self
                .check_passkey(principal, signature)
                .map_err(|problem| format!("passkey assertion: {problem}"));
        }
        let sig = signers::parse_signature(signature.trim())?;
        if sig.namespace() != SIGNATURE_NAMESPACE {
            return Err(format!(
                "signed in namespace {:?}, not {SIGNATURE_NAMESPACE:?}",
                sig.namespace()
            ));
        }
        let statement = (self.statement)()?;
        let key = PublicKey::from(sig.public_key().clone());
        key.verify(SIGNATURE_NAMESPACE, &statement, &sig)
            .map_err(|_| {
                format!(
                    "does not verify: it is not {principal}'s signature of {}",
                    self.of
                )
            })?;
        Ok(SignedBy { key, origin: None })
    }

    /// [`check`](Signed::check) of a passkey assertion envelope.
    fn check_passkey(&self, principal: &str, signature: &str) -> Result<SignedBy, String> {
        let (passkey, assertion) =
            passkey::Assertion::dearmor(signature).map_err(|error| match error {
                Error::InvalidInput { problem, .. } => problem,
                other => other.to_string(),
            })?;
        let statement = (self.statement)()?;
        let verified = passkey
            .check(&passkey::challenge(&statement), &assertion)
            .map_err(|failure| match failure {
                passkey::Failure::Challenge { .. } => format!(
                    "does not verify: its challenge is not {principal}'s {} of {}",
                    self.kind, self.of
                ),
                passkey::Failure::Other(problem) => problem,
            })?;
        Ok(SignedBy {
            key: passkey.public_key(),
            origin: Some(verified.origin),
        })
    }
}

/// Who made a signature that verifies: the key, and for a passkey assertion the origin the
/// browser reported (`clientDataJSON.origin`), which the policy holds to the key's line.
#[derive(Debug)]
pub(crate) struct SignedBy {
    /// The key that made it.
    pub(crate) key: PublicKey,
    /// The origin of a passkey assertion; `None` for an SSH signature.
    pub(crate) origin: Option<String>,
}
