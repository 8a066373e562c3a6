//! Quorum policies: whose signatures make an approval, and how many.
//!
//! A [`Policy`] is held by trusted code, the executor above all: its approvers come from an
//! OpenSSH `allowed_signers` file, and each operation pattern may need several distinct
//! approvers. Under a policy an approval counts only with signatures that verify, in this
//! process, against those keys and the request exactly as stored; so a process that can
//! write the store, but holds no approver's key, cannot make an approval the executor takes.

pub mod passkey;
pub(crate) mod quorum;
mod sign;
mod signers;
mod statement;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use ssh_key::{HashAlg, PublicKey};

#[cfg(feature = "settings")]
pub(crate) use self::quorum::check_pattern;
pub use self::sign::SshKeygen;
use self::signers::Signer;
pub(crate) use self::signers::glob;
pub(crate) use self::statement::{Signed, SignedBy, check_signature};
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
pub(crate) enum Problem {
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
        let mut signers = signers::parse(text).map_err(invalid)?;
        passkey::attach_origins(&mut signers).map_err(invalid)?;
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

    /// The quorum table's rows, in the order given.
    pub(crate) fn quorum_rows(&self) -> impl Iterator<Item = (&str, u32)> {
        self.quorum
            .iter()
            .map(|(pattern, n)| (pattern.as_str(), *n))
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

    /// Whether this policy lets `signed`'s key sign as `principal` in our namespace at `now`,
    /// and, for a passkey, on the origin its assertion was made on: the one its line names.
    /// A key trusted for the principal but on another origin is a bad signature, saying so.
    pub(crate) fn trust(
        &self,
        signed: &SignedBy,
        principal: &str,
        now: Timestamp,
    ) -> Result<(), Problem> {
        let mut lines = self.signers.iter().filter(|signer| {
            signer.key.key_data() == signed.key.key_data()
                && signer.allows(principal, SIGNATURE_NAMESPACE, now)
        });
        let Some(first) = lines.next() else {
            return Err(Problem::Untrusted(fingerprint(&signed.key)));
        };
        let mut origins = vec![first.origin.as_deref()];
        origins.extend(lines.map(|signer| signer.origin.as_deref()));
        if origins.contains(&signed.origin.as_deref()) {
            return Ok(());
        }
        let named: Vec<&str> = origins.into_iter().flatten().collect();
        Err(Problem::Bad(match &signed.origin {
            Some(made_on) => format!(
                "passkey assertion: made on {made_on}, but the approvers file trusts this passkey \
                 for {principal} on {} only: an approval made on another page (another port) \
                 does not count",
                named.join(", ")
            ),
            None => format!(
                "a passkey's key signed outside a passkey assertion; its line trusts it on {} \
                 only",
                named.join(", ")
            ),
        }))
    }

    /// Checks that `signed`, a signature of `request` verified already, is trusted for
    /// `principal`: a new approval is checked before it is recorded, so an approver hears at
    /// once what the executor would say.
    pub(crate) fn check_trusted(
        &self,
        request: &Request,
        principal: &str,
        signed: &SignedBy,
        now: Timestamp,
    ) -> Result<(), Error> {
        self.trust(signed, principal, now)
            .map_err(|problem| problem.into_error(request, principal))
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
        let standings = standings(Some(self), request, required, now);
        let valid = counted(&standings);
        if valid >= required {
            return Ok(());
        }
        let first = |bad: bool| {
            request
                .approvals()
                .iter()
                .zip(&standings)
                .find_map(|(approval, standing)| match standing {
                    Standing::Bad(problem) if bad => Some(
                        Problem::Bad(problem.clone()).into_error(request, approval.principal()),
                    ),
                    Standing::Untrusted(key) if !bad => Some(
                        Problem::Untrusted(key.clone()).into_error(request, approval.principal()),
                    ),
                    _ => None,
                })
        };
        Err(first(true)
            .or_else(|| first(false))
            .unwrap_or(Error::InsufficientApprovals {
                id: request.id(),
                valid,
                required,
            }))
    }
}

/// Where one stored approval stands, as a gate holding a policy (or none) reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Standing {
    /// It verifies, the policy trusts its key for its principal, and it is the first of its
    /// principal and of its key: it counts toward the quorum.
    Counts,
    /// It verifies and is trusted, but its principal or its key approved earlier: counted
    /// once, with the earlier one.
    Repeat,
    /// The signature does not verify over this request as it stands (the problem).
    Bad(String),
    /// The signature verifies, by a key (its fingerprint) the policy does not trust for the
    /// principal. It counts for nothing and blocks nobody.
    Untrusted(String),
    /// The signature verifies, by a key (its fingerprint) that the reading gate cannot judge:
    /// it holds no policy. It counts for nothing there.
    Unjudged(String),
}

impl Standing {
    /// Its stable name in JSON: `counts`, `repeat`, `bad_signature`, `untrusted`,
    /// `unjudged`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Counts => "counts",
            Self::Repeat => "repeat",
            Self::Bad(_) => "bad_signature",
            Self::Untrusted(_) => "untrusted",
            Self::Unjudged(_) => "unjudged",
        }
    }

    /// What is wrong, for one that does not count on its own: a bad signature's problem, or
    /// the fingerprint of a key that is not trusted or cannot be judged.
    #[must_use]
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Counts | Self::Repeat => None,
            Self::Bad(text) | Self::Untrusted(text) | Self::Unjudged(text) => Some(text),
        }
    }

    /// Whether a trusted approver made it (it counts, or counted already): only such an
    /// approval can make another one a repeat.
    #[must_use]
    pub fn is_trusted(&self) -> bool {
        matches!(self, Self::Counts | Self::Repeat)
    }
}

/// The standing of each of `request`'s approvals, in order, as one of `required`: what a
/// gate counts, shows, and lets block a repeat. An approval that does not verify, or that
/// the policy does not trust (or that no policy is there to trust), counts for nothing and
/// blocks nobody: anyone who can write the store can store such a one, claiming any
/// principal.
pub(crate) fn standings(
    policy: Option<&Policy>,
    request: &Request,
    required: u32,
    now: Timestamp,
) -> Vec<Standing> {
    judged(policy, request, required, now)
        .into_iter()
        .map(|(standing, _)| standing)
        .collect()
}

/// [`standings`], each with the key of a signature that verifies.
pub(crate) fn judged(
    policy: Option<&Policy>,
    request: &Request,
    required: u32,
    now: Timestamp,
) -> Vec<(Standing, Option<PublicKey>)> {
    let mut principals = HashSet::new();
    let mut keys = HashSet::new();
    request
        .approvals()
        .iter()
        .map(|approval| {
            let principal = approval.principal();
            let signed = match check_signature(request, required, principal, approval.signature()) {
                Ok(signed) => signed,
                Err(problem) => return (Standing::Bad(problem), None),
            };
            let key = signed.key.clone();
            let standing = match policy.map(|policy| policy.trust(&signed, principal, now)) {
                None => Standing::Unjudged(fingerprint(&key)),
                Some(Err(Problem::Untrusted(key))) => Standing::Untrusted(key),
                Some(Err(Problem::Bad(problem))) => return (Standing::Bad(problem), None),
                Some(Ok(())) => {
                    let fresh_key = keys.insert(key.key_data().clone());
                    let fresh_principal = principals.insert(principal);
                    if fresh_key && fresh_principal {
                        Standing::Counts
                    } else {
                        Standing::Repeat
                    }
                }
            };
            (standing, Some(key))
        })
        .collect()
}

/// How many of `standings` count.
pub(crate) fn counted(standings: &[Standing]) -> u32 {
    let n = standings.iter().filter(|s| **s == Standing::Counts).count();
    u32::try_from(n).unwrap_or(u32::MAX)
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
    fn a_quorum_needs_approvers_and_is_required_of_them() {
        let refused = Policy::with_quorum(None, [("p.*", 2)]).unwrap_err();
        assert!(
            matches!(&refused, Error::InvalidInput { field: "quorum", problem }
                if problem.starts_with("needs trusted approvers")),
            "{refused:?}"
        );
        assert!(Policy::with_quorum(None, []).unwrap().is_none());
        let approvers = || Policy::from_allowed_signers(&format!("a@x {ED}")).unwrap();
        let policy = Policy::with_quorum(Some(approvers()), [("p.*", 2), ("*", 1)])
            .unwrap()
            .unwrap();
        assert_eq!(policy.required_approvals(Some("p.send")), 2);
        assert_eq!(policy.required_approvals(Some("q.send")), 1);
        let plain = Policy::with_quorum(Some(approvers()), []).unwrap().unwrap();
        assert_eq!(plain.required_approvals(Some("p.send")), 1);
        // What `require` refuses, it refuses here.
        let bad = Policy::with_quorum(Some(approvers()), [("p.*", 0)]).unwrap_err();
        assert!(
            matches!(
                bad,
                Error::InvalidInput {
                    field: "quorum",
                    ..
                }
            ),
            "{bad:?}"
        );
    }

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

    #[test]
    fn standings_have_stable_names_details_and_trust() {
        let cases = [
            (Standing::Counts, "counts", None, true),
            (Standing::Repeat, "repeat", None, true),
            (Standing::Bad("p".into()), "bad_signature", Some("p"), false),
            (
                Standing::Untrusted("k".into()),
                "untrusted",
                Some("k"),
                false,
            ),
            (Standing::Unjudged("u".into()), "unjudged", Some("u"), false),
        ];
        for (standing, name, detail, trusted) in cases {
            assert_eq!(standing.as_str(), name);
            assert_eq!(standing.detail(), detail, "{name}");
            assert_eq!(standing.is_trusted(), trusted, "{name}");
        }
    }

    #[test]
    fn a_quorum_table_must_say_what_operations_it_does_not_name_need() {
        let policy = || Policy::from_allowed_signers(&format!("a@x {ED}")).unwrap();
        assert!(policy().check_quorum_table().is_ok());
        let with_default = policy().require("pay.*", 2).unwrap().require("*", 1);
        assert!(with_default.unwrap().check_quorum_table().is_ok());
        let error = policy()
            .require("pay.*", 2)
            .unwrap()
            .require("deploy", 3)
            .unwrap()
            .check_quorum_table()
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "quorum",
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("names pay.*, deploy but not `*`"),
            "{error}"
        );
    }
}
