//! Quorum policies: whose signatures make an approval, and how many (SPEC §11).
//!
//! A [`Policy`] is held by trusted code, the executor above all: its approvers come from an
//! OpenSSH `allowed_signers` file, and each operation pattern may need several distinct
//! approvers. Under a policy an approval counts only with signatures that verify, in this
//! process, against those keys and the request exactly as stored; so a process that can
//! write the store, but holds no approver's key, cannot make an approval the executor takes.

mod quorum;
mod sign;
mod signers;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use ssh_key::{HashAlg, PublicKey};

pub use self::sign::SshKeygen;
use self::signers::{Signer, glob};
use crate::error::Error;
use crate::limits::MAX_QUORUM;
use crate::request::{Request, SIGNATURE_NAMESPACE, SignedApproval};
use crate::time::Timestamp;

/// Trusted approvers and how many of them each operation needs.
///
/// ```
/// # fn main() -> Result<(), approval_gate::Error> {
/// use approval_gate::Policy;
/// let policy = Policy::from_allowed_signers(
///     "alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz\n",
/// )?
/// .require("payments.*", 2)?
/// .require("deploy.production", 3)?
/// .require("*", 1)?; // what every other operation needs: a table must say it
/// assert_eq!(policy.required_approvals(Some("payments.refund")), 2);
/// assert_eq!(policy.required_approvals(Some("mail.send")), 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Policy {
    signers: Arc<[Signer]>,
    quorum: Vec<(String, u32)>,
}

/// What a signature check found wrong, before it is tied to a request.
enum Problem {
    Bad(String),
    Untrusted(String),
}

impl Policy {
    /// A policy trusting the keys of an OpenSSH `allowed_signers` text (see ssh-keygen(1),
    /// ALLOWED SIGNERS), needing one approval for every operation until
    /// [`require`](Policy::require) says otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `allowed_signers`) naming the first bad line: a key
    /// that does not parse, an unknown option, a `cert-authority` line or a DSA key (not
    /// supported: they would trust nothing here), a timestamp in local time. A text with no
    /// key at all is refused too.
    pub fn from_allowed_signers(text: &str) -> Result<Self, Error> {
        let invalid = |problem: String| Error::InvalidInput {
            field: "allowed_signers",
            problem,
        };
        let signers = signers::parse(text).map_err(invalid)?;
        if signers.is_empty() {
            return Err(invalid("no trusted key in it".into()));
        }
        Ok(Self {
            signers: signers.into(),
            quorum: Vec::new(),
        })
    }

    /// Reads [`from_allowed_signers`](Policy::from_allowed_signers) from a file.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if it cannot be read; otherwise as `from_allowed_signers`, with the
    /// file's path in the message.
    pub fn load_allowed_signers(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io("read allowed signers", path, e))?;
        Self::from_allowed_signers(&text).map_err(|error| match error {
            Error::InvalidInput { field, problem } => Error::InvalidInput {
                field,
                problem: format!("{}: {problem}", path.display()),
            },
            other => other,
        })
    }

    /// Operations matching `operations` (a glob: `*` any text, `?` one character, so
    /// `payments.*` is every operation under `payments.`, and `*` is every request, those
    /// without an operation included) need `approvals` distinct approvers. Where several
    /// patterns match, the largest number applies.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `quorum`) for an empty or over-long pattern, one with a
    /// character no operation name has ([`check_operation_name`](crate::check_operation_name)),
    /// or a number outside 1 to [`MAX_QUORUM`]. A table must also have a `*` entry, checked
    /// when the gate opens ([`check_quorum_table`](Policy::check_quorum_table)).
    pub fn require(mut self, operations: &str, approvals: u32) -> Result<Self, Error> {
        let invalid = |problem: String| Error::InvalidInput {
            field: "quorum",
            problem,
        };
        quorum::check_pattern(operations).map_err(invalid)?;
        if !(1..=MAX_QUORUM).contains(&approvals) {
            return Err(invalid(format!(
                "{operations}: {approvals} approvals (1 to {MAX_QUORUM} are possible)"
            )));
        }
        self.quorum.push((operations.to_owned(), approvals));
        Ok(self)
    }

    /// How many distinct approvers a request for `operation` needs under this policy.
    #[must_use]
    pub fn required_approvals(&self, operation: Option<&str>) -> u32 {
        let name = operation.unwrap_or("");
        self.quorum
            .iter()
            .filter(|(pattern, _)| glob(name.as_bytes(), pattern.as_bytes()))
            .map(|&(_, n)| n)
            .max()
            .unwrap_or(1)
    }

    /// The principal patterns trusted with `public_key` (an OpenSSH public key line, as in
    /// a `.pub` file), in file order: how the CLI finds whom a key signs as.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `key`) if it is not a public key.
    pub fn principals_of(&self, public_key: &str) -> Result<Vec<String>, Error> {
        let key = PublicKey::from_openssh(public_key.trim()).map_err(|e| Error::InvalidInput {
            field: "key",
            problem: format!("not an OpenSSH public key: {e}"),
        })?;
        Ok(self
            .signers
            .iter()
            .filter(|s| s.key.key_data() == key.key_data())
            .map(|s| s.principals.clone())
            .collect())
    }

    /// Checks one approver's signature of `request` as `principal`, at `now`: that it is an
    /// SSHSIG in the `approval-gate` namespace over the request's exact decision
    /// statement, made by a key this policy trusts for that principal. Returns the key.
    fn check(
        &self,
        request: &Request,
        principal: &str,
        signature: &str,
        now: Timestamp,
    ) -> Result<PublicKey, Problem> {
        let key = check_signature(request, principal, signature).map_err(Problem::Bad)?;
        if self.trusts(&key, principal, now) {
            Ok(key)
        } else {
            Err(Problem::Untrusted(fingerprint(&key)))
        }
    }

    /// Whether this policy lets `key` sign as `principal` in our namespace at `now`.
    fn trusts(&self, key: &PublicKey, principal: &str, now: Timestamp) -> bool {
        self.signers.iter().any(|signer| {
            signer.key.key_data() == key.key_data()
                && signer.allows(principal, SIGNATURE_NAMESPACE, now)
        })
    }

    /// Checks that `key`, whose signature of `request` was verified already, is trusted for
    /// `principal`: a new approval is checked before it is recorded, so an approver hears at
    /// once what the executor would say.
    pub(crate) fn check_trusted(
        &self,
        request: &Request,
        principal: &str,
        key: &PublicKey,
        now: Timestamp,
    ) -> Result<(), Error> {
        if self.trusts(key, principal, now) {
            Ok(())
        } else {
            Err(Problem::Untrusted(fingerprint(key)).into_error(request, principal))
        }
    }

    /// What consume asks: do the stored approvals of `request` hold at least `required`
    /// distinct trusted approvers whose signatures verify against it exactly? A principal,
    /// or a key, that appears twice counts once.
    ///
    /// # Errors
    ///
    /// Short of `required`: [`Error::BadSignature`] if a signature failed to verify (the
    /// first such), else [`Error::UntrustedSigner`] if one came from a key this policy does
    /// not trust for its principal, else [`Error::InsufficientApprovals`].
    pub(crate) fn verify(
        &self,
        request: &Request,
        required: u32,
        now: Timestamp,
    ) -> Result<(), Error> {
        let mut principals = HashSet::new();
        let mut keys = HashSet::new();
        let mut bad = None;
        let mut untrusted = None;
        let mut valid = 0_u32;
        for approval in request.approvals() {
            match self.check(request, approval.principal(), approval.signature(), now) {
                Ok(key) => {
                    let fresh_key = keys.insert(key.key_data().clone());
                    let fresh_principal = principals.insert(approval.principal());
                    if fresh_key && fresh_principal {
                        valid += 1;
                    }
                }
                Err(problem @ Problem::Bad(_)) => {
                    bad.get_or_insert_with(|| problem.into_error(request, approval.principal()));
                }
                Err(problem @ Problem::Untrusted(_)) => {
                    untrusted
                        .get_or_insert_with(|| problem.into_error(request, approval.principal()));
                }
            }
        }
        if valid >= required {
            return Ok(());
        }
        Err(bad.or(untrusted).unwrap_or(Error::InsufficientApprovals {
            id: request.id(),
            valid,
            required,
        }))
    }
}

impl Problem {
    fn into_error(self, request: &Request, principal: &str) -> Error {
        match self {
            Self::Bad(problem) => Error::BadSignature {
                id: request.id(),
                principal: principal.to_owned(),
                problem,
            },
            Self::Untrusted(key) => Error::UntrustedSigner {
                id: request.id(),
                principal: principal.to_owned(),
                key,
            },
        }
    }
}

/// Checks what needs no policy: `signature` is an SSHSIG in the `approval-gate` namespace,
/// over the decision statement of `request` for `principal`, by the key it carries. Returns
/// that key.
pub(crate) fn check_signature(
    request: &Request,
    principal: &str,
    signature: &str,
) -> Result<PublicKey, String> {
    let sig = signers::parse_signature(signature.trim())?;
    if sig.namespace() != SIGNATURE_NAMESPACE {
        return Err(format!(
            "signed in namespace {:?}, not {SIGNATURE_NAMESPACE:?}",
            sig.namespace()
        ));
    }
    let statement = request
        .decision_statement(principal)
        .map_err(|e| e.to_string())?;
    let key = PublicKey::from(sig.public_key().clone());
    key.verify(SIGNATURE_NAMESPACE, &statement, &sig)
        .map_err(|_| {
            format!(
                "does not verify: it is not {principal}'s signature of this request as it stands"
            )
        })?;
    Ok(key)
}

/// The key's SHA256 fingerprint, as `ssh-keygen -l` shows it.
fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// What the record keeps of an approval that was checked.
pub(crate) fn approval_record(
    principal: &str,
    decided_by: &str,
    now: Timestamp,
    signature: &str,
) -> SignedApproval {
    SignedApproval::new(
        principal.to_owned(),
        decided_by.to_owned(),
        now,
        signature.trim().to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_OPERATION_BYTES;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";

    #[test]
    fn the_largest_matching_quorum_applies() {
        let policy = Policy::from_allowed_signers(&format!("a@x {ED}"))
            .unwrap()
            .require("payments.*", 2)
            .unwrap()
            .require("payments.big.*", 3)
            .unwrap()
            .require("*", 1)
            .unwrap();
        assert_eq!(policy.required_approvals(Some("payments.send")), 2);
        assert_eq!(policy.required_approvals(Some("payments.big.wire")), 3);
        assert_eq!(policy.required_approvals(Some("payment")), 1);
        assert_eq!(policy.required_approvals(None), 1);
        let strict = Policy::from_allowed_signers(&format!("a@x {ED}"))
            .unwrap()
            .require("*", 2)
            .unwrap();
        assert_eq!(strict.required_approvals(None), 2);
    }

    #[test]
    fn bad_quorums_and_empty_files_are_refused() {
        let policy = || Policy::from_allowed_signers(&format!("a@x {ED}")).unwrap();
        for (pattern, n) in [("", 2), ("p", 0), ("p", MAX_QUORUM + 1)] {
            let err = policy().require(pattern, n).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidInput {
                        field: "quorum",
                        ..
                    }
                ),
                "{err}"
            );
        }
        let longest = "p".repeat(MAX_OPERATION_BYTES);
        assert_eq!(
            policy()
                .require(&longest, 2)
                .unwrap()
                .required_approvals(Some(&longest)),
            2
        );
        let over = policy().require(&format!("{longest}*"), 2).unwrap_err();
        assert!(over.to_string().contains("1 to 128 bytes"), "{over}");
        let err = Policy::from_allowed_signers("# nobody\n").unwrap_err();
        assert!(err.to_string().contains("no trusted key"), "{err}");
        assert_eq!(policy().principals_of(ED).unwrap(), ["a@x"]);
        assert!(policy().principals_of("ssh-ed25519 AAAA").is_err());
    }
}
