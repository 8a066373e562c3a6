//! Allowances at the gate: granting one a human signed (or, for an operation that needs more
//! approvers than one, proposing it and adding the co-signers' signatures until its quorum is
//! met), listing them with what each has counted, revoking one.

use serde_json::{Value, json};

use crate::allowance::{Forged, SignedAllowance, Usage};
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::{Gate, details};
use crate::id::RequestId;
use crate::policy::Policy;
use crate::request::Decision;
use crate::store::Entry;
use crate::store::allowance::{Kept, Revoked};
use crate::time::Timestamp;

/// An allowance as the gate reports it: as signed, what it has counted, and whether it can
/// still approve anything.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllowanceReport {
    /// The signed allowance, as it was granted.
    pub allowance: SignedAllowance,
    /// Its uses so far.
    pub usage: Usage,
    /// Whether a human revoked it.
    pub revoked: bool,
    /// Whether its window had closed when the report was made.
    pub ended: bool,
    /// How many more approvers must sign it before it approves anything: its quorum less the
    /// distinct trusted approvers whose signatures verify under the gate's policy (0 once it
    /// is complete; without a policy, its quorum less the signatures it carries).
    pub signatures_missing: u32,
}

impl AllowanceReport {
    pub(super) fn of(kept: Kept, now: Timestamp, policy: Option<&Policy>) -> Self {
        let ended = now > kept.signed.allowance.terms().bounds.not_after;
        let signed = &kept.signed;
        let counted = policy.map_or_else(
            || u32::try_from(signed.signatures.len()).unwrap_or(u32::MAX),
            |policy| signed.counted(policy, now),
        );
        Self {
            signatures_missing: signed.required.saturating_sub(counted),
            allowance: kept.signed,
            usage: kept.usage,
            revoked: kept.revoked,
            ended,
        }
    }

    /// Uses left, if it counts uses.
    #[must_use]
    pub fn uses_left(&self) -> Option<u32> {
        let bounds = &self.allowance.allowance.terms().bounds;
        bounds.uses.map(|n| n.saturating_sub(self.usage.uses))
    }

    /// Budget left, if it has one.
    #[must_use]
    pub fn budget_left(&self) -> Option<u64> {
        let bounds = &self.allowance.allowance.terms().bounds;
        bounds
            .budget
            .as_ref()
            .map(|b| b.total.saturating_sub(self.usage.spent))
    }

    /// The report as JSON, for `approval-gate allowances --json` and the page: `id`,
    /// `operation`, `active`, `revoked`, `ended`, `uses`, `spent`, `usesLeft`, `budgetLeft`,
    /// `principals`, `requiredApprovals`, `signaturesMissing`, `words` (what it allows, a line each, as
    /// [`Allowance::describe`](crate::allowance::Allowance::describe) says it) and `terms`
    /// (the allowance as signed, without the signatures).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let allowance = &self.allowance.allowance;
        json!({
            "id": allowance.id(),
            "operation": allowance.terms().operation,
            "active": self.is_active(),
            "revoked": self.revoked,
            "ended": self.ended,
            "uses": self.usage.uses,
            "spent": self.usage.spent,
            "usesLeft": self.uses_left(),
            "budgetLeft": self.budget_left(),
            "principals": self.allowance.signatures.iter().map(|s| &s.principal).collect::<Vec<_>>(),
            "requiredApprovals": self.allowance.required,
            "signaturesMissing": self.signatures_missing,
            "words": allowance.describe(),
            "terms": allowance.to_json(),
        })
    }

    /// Whether it may approve a request now, as far as revocation, its window and its
    /// signatures say (whether one more use fits its counts is asked at each use, and its
    /// signatures are verified again there).
    #[must_use]
    pub fn is_active(&self) -> bool {
        !self.revoked && !self.ended && self.signatures_missing == 0
    }
}

/// The error a forged allowance `id` is refused with: the signature refusals of an approval.
pub(crate) fn forged(id: RequestId, forged: Forged) -> Error {
    match forged {
        Forged::Unsigned => Error::SignatureRequired { id, required: 1 },
        Forged::QuorumTooLow { signed, required } => Error::InsufficientApprovals {
            id,
            valid: signed,
            required,
        },
        Forged::BadSignature { principal, problem } => Error::BadSignature {
            id,
            principal,
            problem,
        },
        Forged::Untrusted { principal, key } => Error::UntrustedSigner { id, principal, key },
        Forged::Insufficient { counted, required } => Error::InsufficientApprovals {
            id,
            valid: counted,
            required,
        },
    }
}

impl Gate {
    /// Grants an allowance a human signed: only if this gate holds a policy, and the
    /// signatures count under it as an approval's would for every operation the allowance
    /// reaches ([`SignedAllowance::verify_grant`]: as many distinct trusted approvers as the
    /// most any row of the quorum table its operation pattern reaches asks). Kept once, with
    /// its `allowance_granted` line; never changed after (changing one is signing a new one).
    ///
    /// # Errors
    ///
    /// [`Error::NoApprovers`] without a policy; [`Error::SignatureRequired`] if it carries no
    /// signature; [`Error::InsufficientApprovals`], [`Error::BadSignature`] or
    /// [`Error::UntrustedSigner`] as for an approval; [`Error::InvalidInput`] if its window
    /// has closed or its id is taken; [`Error::AuditBroken`] if the log refuses appends
    /// (nothing is kept); on PostgreSQL [`Error::NotPermitted`] for any login but an
    /// approver's.
    pub fn allow(&self, signed: SignedAllowance) -> Result<AllowanceReport, Error> {
        let id = signed.allowance.id();
        self.observed("allow", Some(id), || {
            let policy = self.policy().ok_or(Error::NoApprovers { id })?;
            let now = self.now();
            signed
                .verify_grant(policy, now)
                .map_err(|f| forged(id, f))?;
            self.keep_allowance(signed, AuditEvent::AllowanceGranted, 0)
        })
    }

    /// Keeps `signed` (verified by the caller, `missing` signatures short of its quorum) with
    /// its `event` line, unless its window has closed or its id is taken.
    pub(super) fn keep_allowance(
        &self,
        signed: SignedAllowance,
        event: AuditEvent,
        missing: u32,
    ) -> Result<AllowanceReport, Error> {
        let id = signed.allowance.id();
        let now = self.now();
        let bounds = &signed.allowance.terms().bounds;
        if now > bounds.not_after {
            return Err(Error::InvalidInput {
                field: "allowance",
                problem: format!("its window ended at {}: sign a new one", bounds.not_after),
            });
        }
        self.check_audit_appendable()?;
        let principals: Vec<&str> = signed
            .signatures
            .iter()
            .map(|s| s.principal.as_str())
            .collect();
        let fields = details(json!({
            "operation": signed.allowance.terms().operation,
            "requiredApprovals": signed.required,
            "principals": principals,
            "notAfter": bounds.not_after,
        }));
        let entry = Entry {
            ts: now,
            event,
            details: &fields,
        };
        if !self.store().grant_allowance(&signed, &entry)? {
            return Err(Error::InvalidInput {
                field: "allowance",
                problem: format!("id {id} is taken: sign a new one"),
            });
        }
        Ok(AllowanceReport {
            allowance: signed,
            usage: Usage::default(),
            revoked: false,
            ended: false,
            signatures_missing: missing,
        })
    }

    /// Every allowance of the store (revoked and ended ones too), each with its uses and
    /// whether it was revoked or has ended, oldest first. Anyone who can read the store may
    /// list them; only a human with an approver's key makes one.
    ///
    /// # Errors
    ///
    /// Trouble reading the store, or a record that cannot be read.
    pub fn allowances(&self) -> Result<Vec<AllowanceReport>, Error> {
        self.observed("allowances", None, || {
            let now = self.now();
            let mut all: Vec<_> = self
                .store()
                .allowances()?
                .into_iter()
                .map(|kept| AllowanceReport::of(kept, now, self.policy()))
                .collect();
            all.sort_by_key(|r| {
                (
                    r.allowance.allowance.created_at(),
                    r.allowance.allowance.id(),
                )
            });
            Ok(all)
        })
    }

    /// The allowance `id`, with its uses.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] if there is none; trouble reading the store.
    pub fn allowance(&self, id: RequestId) -> Result<AllowanceReport, Error> {
        self.observed("allowance", Some(id), || {
            let kept = self.store().allowance(id)?.ok_or(Error::NotFound(id))?;
            Ok(AllowanceReport::of(kept, self.now(), self.policy()))
        })
    }

    /// Revokes an allowance at once: no use not yet counted is approved by it from now on
    /// (a use is counted in the same step as its spend, under the allowance's lock, so a use
    /// racing the revocation either was counted before it or is refused). Recorded as
    /// `allowance_revoked`; revoking a revoked allowance changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `decision` is not acceptable; [`Error::NotFound`] if no
    /// allowance has this id; on PostgreSQL [`Error::NotPermitted`] for any login but an
    /// approver's.
    pub fn revoke_allowance(
        &self,
        id: RequestId,
        decision: &Decision,
    ) -> Result<AllowanceReport, Error> {
        self.observed("revoke_allowance", Some(id), || {
            decision.validate()?;
            let fields = details(json!({
                "revokedBy": decision.decided_by(),
                "reason": decision.decision_reason(),
            }));
            let entry = Entry {
                ts: self.now(),
                event: AuditEvent::AllowanceRevoked,
                details: &fields,
            };
            match self.store().revoke_allowance(id, &entry)? {
                Revoked::Unknown => return Err(Error::NotFound(id)),
                Revoked::Now | Revoked::Before => {}
            }
            let kept = self.store().allowance(id)?.ok_or(Error::NotFound(id))?;
            Ok(AllowanceReport::of(kept, self.now(), self.policy()))
        })
    }
}
