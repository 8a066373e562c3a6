//! A signed allowance, and what makes it count: as many distinct trusted approvers'
//! signatures over its statement as the operation it is used for needs, verified here,
//! offline, by whoever holds the [`Policy`].

use std::collections::HashSet;
use std::fmt;

use serde_json::{Value, json};

use super::{Allowance, patterns_overlap};
use crate::policy::{Policy, Problem, Signed};
use crate::time::Timestamp;

/// One approver's signature over an allowance's statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowanceSignature {
    /// The principal signed as (an `allowed_signers` identity).
    pub principal: String,
    /// The armored SSHSIG over [`Allowance::statement`], or the passkey assertion over its
    /// challenge.
    pub signature: String,
}

/// An allowance, the quorum its approvers signed it as part of, and their signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedAllowance {
    /// What is allowed.
    pub allowance: Allowance,
    /// The number of approvers each signed as one of (part of every statement).
    pub required: u32,
    /// Their signatures.
    pub signatures: Vec<AllowanceSignature>,
}

/// Why a signed allowance does not count for an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forged {
    /// It carries no signature at all.
    Unsigned,
    /// It was signed as one of fewer approvers than the operation needs.
    QuorumTooLow {
        /// The quorum signed.
        signed: u32,
        /// What the operation needs under the policy.
        required: u32,
    },
    /// A signature does not verify over its statement (the first such).
    BadSignature {
        /// Who it claims to be.
        principal: String,
        /// What is wrong.
        problem: String,
    },
    /// A signature verifies by a key the policy does not trust for its principal.
    Untrusted {
        /// Who it claims to be.
        principal: String,
        /// The key's fingerprint.
        key: String,
    },
    /// Fewer distinct trusted approvers than needed.
    Insufficient {
        /// Distinct trusted approvers whose signatures verify.
        counted: u32,
        /// What the operation needs.
        required: u32,
    },
}

impl fmt::Display for Forged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Forged::Unsigned => f.write_str("it carries no signature"),
            Forged::QuorumTooLow { signed, required } => write!(
                f,
                "it was signed as one of {signed} approvers, and the operation needs {required}"
            ),
            Forged::BadSignature { principal, problem } => {
                write!(f, "{principal}'s signature: {problem}")
            }
            Forged::Untrusted { principal, key } => write!(
                f,
                "{principal}'s signature is by {key}, a key the approvers file does not trust for {principal}"
            ),
            Forged::Insufficient { counted, required } => write!(
                f,
                "{counted} trusted approvers signed it, and the operation needs {required}"
            ),
        }
    }
}

impl Policy {
    /// The quorum an allowance for `operation` (a name or a pattern) must be signed with: the
    /// most that any row of the table it overlaps asks, so that `payments.*` needs what
    /// `payments.refund` needs when the table says more for it.
    #[must_use]
    pub fn allowance_quorum(&self, operation: &str) -> u32 {
        self.quorum_rows()
            .filter(|(pattern, _)| patterns_overlap(operation, pattern))
            .map(|(_, n)| n)
            .max()
            .unwrap_or(1)
    }
}

impl SignedAllowance {
    /// Whether it counts for a use by `operation` at `now` under `policy`: signed as one of at
    /// least as many approvers as `operation` needs, with as many distinct trusted approvers'
    /// signatures as that quorum (or as it was signed as part of, if more) (a principal, or a key, counts once) verifying over its statement
    /// exactly. Whether it covers the request, and whether a use fits its bounds, are asked
    /// apart ([`Allowance::covers`], [`Bounds::admit`](super::Bounds::admit)).
    ///
    /// # Errors
    ///
    /// [`Forged`]: unsigned, a quorum signed too low; short of the quorum, the first bad
    /// signature, else the first untrusted one, else too few.
    pub fn verify(&self, policy: &Policy, operation: &str, now: Timestamp) -> Result<(), Forged> {
        self.verify_quorum(policy, policy.required_approvals(Some(operation)), now)
    }

    /// Whether it may be granted at `now` under `policy`: [`verify`](SignedAllowance::verify)
    /// for its own operation pattern at the quorum [`Policy::allowance_quorum`] asks of it
    /// (the most any row of the table the pattern reaches asks), so that an allowance for
    /// `payments.*` is made only as a payment is approved.
    ///
    /// # Errors
    ///
    /// As [`verify`](SignedAllowance::verify).
    pub fn verify_grant(&self, policy: &Policy, now: Timestamp) -> Result<(), Forged> {
        let required = policy.allowance_quorum(&self.allowance.terms().operation);
        self.verify_quorum(policy, required, now)
    }

    /// How many distinct trusted approvers' signatures verify over its statement under
    /// `policy` at `now` (a principal, or a key, counts once): what a report of an allowance
    /// still waiting for signatures counts, and what [`verify`](SignedAllowance::verify)
    /// compares with the quorum.
    #[must_use]
    pub fn counted(&self, policy: &Policy, now: Timestamp) -> u32 {
        self.tally(policy, now).counted
    }

    /// Whether `signature` is one more approver's, good to add to it: it verifies over the
    /// statement as `signature.principal` signs it (every term, and this quorum), by a key
    /// `policy` trusts for that principal at `now`, and neither that principal nor that key
    /// has signed it already.
    ///
    /// # Errors
    ///
    /// [`Forged::BadSignature`] if it does not verify or its signer signed already,
    /// [`Forged::Untrusted`] if the key is not trusted for the principal.
    pub fn check_another(
        &self,
        signature: &AllowanceSignature,
        policy: &Policy,
        now: Timestamp,
    ) -> Result<(), Forged> {
        let by = self.check_one(signature, policy, now)?;
        let before = self.tally(policy, now);
        let bad = |problem: &str| Forged::BadSignature {
            principal: signature.principal.clone(),
            problem: problem.to_owned(),
        };
        if before.principals.contains(&signature.principal) {
            return Err(bad("this principal has signed this allowance already"));
        }
        if before.keys.contains(&by) {
            return Err(bad(
                "this key has signed this allowance already, as another principal",
            ));
        }
        Ok(())
    }

    /// One signature checked: the key it verifies by, if the policy trusts it for its
    /// principal.
    fn check_one(
        &self,
        AllowanceSignature {
            principal,
            signature,
        }: &AllowanceSignature,
        policy: &Policy,
        now: Timestamp,
    ) -> Result<ssh_key::public::KeyData, Forged> {
        let statement = || {
            self.allowance
                .statement(principal, self.required)
                .map_err(|e| e.to_string())
        };
        let signed = Signed {
            kind: "allowance statement",
            of: format!(
                "allowance {} as it stands (every term, and a quorum of {})",
                self.allowance.id(),
                self.required
            ),
            statement: &statement,
        };
        let problem = match signed.check(principal, signature) {
            Err(problem) => Problem::Bad(problem),
            Ok(by) => match policy.trust(&by, principal, now) {
                Ok(()) => return Ok(by.key.key_data().clone()),
                Err(problem) => problem,
            },
        };
        Err(match problem {
            Problem::Bad(problem) => Forged::BadSignature {
                principal: principal.clone(),
                problem,
            },
            Problem::Untrusted(key) => Forged::Untrusted {
                principal: principal.clone(),
                key,
            },
        })
    }

    /// Every signature checked: the distinct trusted signers counted, the first bad and the
    /// first untrusted one kept.
    fn tally(&self, policy: &Policy, now: Timestamp) -> Tally {
        let mut tally = Tally::default();
        for signature in &self.signatures {
            match self.check_one(signature, policy, now) {
                Ok(key) => {
                    let fresh_key = tally.keys.insert(key);
                    let fresh_principal = tally.principals.insert(signature.principal.clone());
                    if fresh_key && fresh_principal {
                        tally.counted += 1;
                    }
                }
                Err(bad @ Forged::BadSignature { .. }) => {
                    tally.first_bad.get_or_insert(bad);
                }
                Err(untrusted) => {
                    tally.first_untrusted.get_or_insert(untrusted);
                }
            }
        }
        tally
    }

    /// [`verify`](SignedAllowance::verify) at a quorum of `required`.
    fn verify_quorum(&self, policy: &Policy, required: u32, now: Timestamp) -> Result<(), Forged> {
        if self.signatures.is_empty() {
            return Err(Forged::Unsigned);
        }
        if self.required < required {
            return Err(Forged::QuorumTooLow {
                signed: self.required,
                required,
            });
        }
        // Its signers are held to the quorum they signed as part of, when that is more than
        // the operation needs: two of three approvers approve nothing.
        let required = required.max(self.required);
        let tally = self.tally(policy, now);
        if tally.counted >= required {
            return Ok(());
        }
        Err(tally
            .first_bad
            .or(tally.first_untrusted)
            .unwrap_or(Forged::Insufficient {
                counted: tally.counted,
                required,
            }))
    }
}

/// What [`SignedAllowance::tally`] found.
#[derive(Default)]
struct Tally {
    counted: u32,
    principals: HashSet<String>,
    keys: HashSet<ssh_key::public::KeyData>,
    first_bad: Option<Forged>,
    first_untrusted: Option<Forged>,
}

impl SignedAllowance {
    /// The signed allowance as a store keeps it, written once: the allowance
    /// ([`Allowance::to_json`]), the quorum it was signed as part of, and the signatures.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "allowance": self.allowance.to_json(),
            "requiredApprovals": self.required,
            "signatures": self.signatures.iter().map(|s| json!({
                "principal": s.principal,
                "signature": s.signature,
            })).collect::<Vec<_>>(),
        })
    }

    /// Reads [`to_json`](SignedAllowance::to_json)'s form back; a record that says more, or
    /// less, is refused. Nothing is verified: that is [`verify`](SignedAllowance::verify)'s,
    /// at every use.
    ///
    /// # Errors
    ///
    /// The first problem, in words.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err("a signed allowance is an object".into());
        };
        if let Some(key) = map
            .keys()
            .find(|key| !["allowance", "requiredApprovals", "signatures"].contains(&key.as_str()))
        {
            return Err(format!("a signed allowance has no {key:?}"));
        }
        let allowance = Allowance::from_json(map.get("allowance").unwrap_or(&Value::Null))?;
        let required = map
            .get("requiredApprovals")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=crate::limits::MAX_QUORUM).contains(n))
            .ok_or("a signed allowance needs \"requiredApprovals\", a quorum")?;
        let Some(Value::Array(signatures)) = map.get("signatures") else {
            return Err("a signed allowance needs \"signatures\", a list".into());
        };
        if signatures.len() > crate::limits::MAX_QUORUM as usize * 2 {
            return Err("a signed allowance carries too many signatures".into());
        }
        let signatures = signatures
            .iter()
            .map(|s| {
                let text = |key: &str| {
                    s.get(key)
                        .and_then(Value::as_str)
                        .filter(|_| s.as_object().is_some_and(|o| o.len() == 2))
                        .map(str::to_owned)
                        .ok_or_else(|| {
                            "a signature is {\"principal\", \"signature\"}, both strings".to_owned()
                        })
                };
                Ok(AllowanceSignature {
                    principal: text("principal")?,
                    signature: text("signature")?,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            allowance,
            required,
            signatures,
        })
    }
}
