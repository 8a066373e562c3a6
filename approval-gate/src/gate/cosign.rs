//! Allowances that need more approvers than one: proposed with the first signatures, kept
//! approving nothing, and signed by co-signers one at a time until their quorum is met, as a
//! request that needs two approvals waits for the second.

use serde_json::json;

use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::allow::{AllowanceReport, forged};
use crate::gate::{Gate, details};
use crate::id::RequestId;
use crate::store::Entry;
use crate::store::allowance::Cosigned;

impl Gate {
    /// Proposes an allowance for an operation that needs more approvers than have signed it
    /// yet: every signature it carries must verify, by a key the policy trusts for its
    /// principal, each from a different approver, and it must be signed as part of the quorum
    /// its operation needs ([`Policy::allowance_quorum`](crate::Policy::allowance_quorum)).
    /// Kept with its `allowance_proposed` line, it approves nothing until
    /// [`cosign_allowance`](Gate::cosign_allowance) has brought it to its quorum. If its
    /// signatures meet the quorum already, it is granted as [`allow`](Gate::allow) grants.
    ///
    /// # Errors
    ///
    /// [`Error::NoApprovers`] without a policy; [`Error::SignatureRequired`] if it carries no
    /// signature; [`Error::InsufficientApprovals`] if it was signed as part of a smaller
    /// quorum than its operation needs; [`Error::BadSignature`] or [`Error::UntrustedSigner`]
    /// for the first signature that does not count, or one approver signing twice;
    /// [`Error::InvalidInput`] if its window has closed or its id is taken; on PostgreSQL
    /// [`Error::NotPermitted`] for any login but an approver's.
    pub fn propose_allowance(&self, signed: SignedAllowance) -> Result<AllowanceReport, Error> {
        let id = signed.allowance.id();
        let policy = self.policy().ok_or(Error::NoApprovers { id })?;
        let now = self.now();
        if signed.verify_grant(policy, now).is_ok() {
            return self.allow(signed);
        }
        self.observed("propose_allowance", Some(id), || {
            let needed = policy.allowance_quorum(&signed.allowance.terms().operation);
            if signed.signatures.is_empty() {
                return Err(Error::SignatureRequired {
                    id,
                    required: needed,
                });
            }
            if signed.required < needed {
                return Err(Error::InsufficientApprovals {
                    id,
                    valid: signed.required,
                    required: needed,
                });
            }
            // Each signature checked as if added one at a time, so one approver counts once.
            let mut so_far = SignedAllowance {
                signatures: Vec::new(),
                ..signed.clone()
            };
            for signature in &signed.signatures {
                so_far
                    .check_another(signature, policy, now)
                    .map_err(|f| forged(id, f))?;
                so_far.signatures.push(signature.clone());
            }
            let missing = signed.required.saturating_sub(signed.counted(policy, now));
            self.keep_allowance(signed, AuditEvent::AllowanceProposed, missing)
        })
    }

    /// Adds one more approver's signature to the proposed allowance `id`: `signature` must
    /// verify over the allowance's statement as its principal signs it
    /// ([`Allowance::statement`](crate::allowance::Allowance::statement) with the quorum it
    /// was proposed as part of), by a key the policy trusts for that principal, from an
    /// approver who has not signed it yet. Recorded as `allowance_signed`; once the signatures
    /// meet its quorum, the allowance approves what it covers, as one granted whole would.
    ///
    /// # Errors
    ///
    /// [`Error::NoApprovers`] without a policy; [`Error::NotFound`] if there is no allowance
    /// `id`; [`Error::InvalidInput`] if it was revoked, its window has closed, or it has all
    /// the signatures it needs; [`Error::BadSignature`] or [`Error::UntrustedSigner`] for a
    /// signature that does not count (one whose principal or key signed it already among
    /// them); on PostgreSQL [`Error::NotPermitted`] for any login but an approver's.
    pub fn cosign_allowance(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
    ) -> Result<AllowanceReport, Error> {
        self.observed("cosign_allowance", Some(id), || {
            let policy = self.policy().ok_or(Error::NoApprovers { id })?;
            let now = self.now();
            let refused = |problem: String| Error::InvalidInput {
                field: "allowance",
                problem,
            };
            let kept = self.store().allowance(id)?.ok_or(Error::NotFound(id))?;
            let report = AllowanceReport::of(kept, now, Some(policy));
            if report.revoked {
                return Err(refused(format!(
                    "allowance {id} was revoked: nothing was signed"
                )));
            }
            let not_after = report.allowance.allowance.terms().bounds.not_after;
            if report.ended {
                return Err(refused(format!(
                    "allowance {id}'s window ended at {not_after}: sign a new one"
                )));
            }
            if report.signatures_missing == 0 {
                return Err(refused(format!(
                    "allowance {id} has all the signatures it needs: nothing was signed"
                )));
            }
            report
                .allowance
                .check_another(signature, policy, now)
                .map_err(|f| forged(id, f))?;
            self.check_audit_appendable()?;
            let fields = details(json!({
                "principal": signature.principal,
                "requiredApprovals": report.allowance.required,
            }));
            let entry = Entry {
                ts: now,
                event: AuditEvent::AllowanceSigned,
                details: &fields,
            };
            let signed = match self.store().cosign_allowance(id, signature, &entry)? {
                Cosigned::Added(signed) => *signed,
                Cosigned::Already => {
                    return Err(refused(format!(
                        "{} has signed allowance {id} already: nothing was signed",
                        signature.principal
                    )));
                }
                Cosigned::Revoked => {
                    return Err(refused(format!(
                        "allowance {id} was revoked: nothing was signed"
                    )));
                }
                Cosigned::Unknown => return Err(Error::NotFound(id)),
            };
            let counted = signed.counted(policy, now);
            Ok(AllowanceReport {
                signatures_missing: signed.required.saturating_sub(counted),
                allowance: signed,
                ..report
            })
        })
    }
}
