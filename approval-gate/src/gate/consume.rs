//! Consume: the single-use claim, the only thing that authorizes acting.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::audit::AuditEvent;
use crate::audit::refusal_detail;
use crate::error::Error;
use crate::faults::failpoint;
use crate::gate::{Gate, Refreshed};
use crate::grant::Grant;
use crate::id::RequestId;
use crate::request::{Binding, Request, Status};
use crate::rules;
use crate::store::allowance::Kept;
use crate::store::{Entry, Guard, Spent};
use crate::time::Timestamp;

/// What a consume checked before it claims: the request, its payload as `T`, the time of
/// the checks, its lock, and the allowance that approved it with the amount of this use.
type Checked<T> = (Request, T, Timestamp, Guard, Option<(Kept, Option<u64>)>);

impl Gate {
    /// Consumes an approval: the only thing that authorizes acting.
    ///
    /// Succeeds once, and only if, in this order: the request exists; it is approved (under
    /// a [`Policy`](crate::Policy): its stored approvals carry signatures, each verified here
    /// against the request as stored, by enough distinct approvers the policy trusts); it
    /// has not been consumed or revoked; the clock is at or before its expiry; the action
    /// text is byte-for-byte equal; the operation is equal; the payload is equal as
    /// canonical JSON; and the approved payload round-trips through `T` exactly. Then the
    /// claim is made durable, the `consumed` line is written and fsynced, and the clock is
    /// read again: if the approval expired meanwhile the call refuses, and the approval stays
    /// spent.
    ///
    /// A refusal before the claim does not spend the approval. Every refusal is audited, with
    /// its error code as the reason, also of a record that cannot be read, an id nobody filed
    /// or an archived request; a replay of a consumed approval is audited as
    /// `consume_replayed`.
    ///
    /// For a request without a payload, `T` is deserialized from `null` (use `()`).
    ///
    /// # Errors
    ///
    /// One variant per refusal: [`Error::NotApproved`], [`Error::InsufficientApprovals`],
    /// [`Error::BadSignature`], [`Error::UntrustedSigner`], [`Error::Denied`], [`Error::Expired`],
    /// [`Error::Revoked`], [`Error::AlreadyConsumed`], [`Error::ApprovalExpired`],
    /// [`Error::ActionMismatch`], [`Error::OperationMismatch`], [`Error::PayloadMismatch`],
    /// [`Error::PayloadType`], [`Error::ExpiredDuringConsume`]; [`Error::NotFound`],
    /// [`Error::Archived`] or [`Error::Unreadable`] for a request it cannot consume at all;
    /// [`Error::InvalidInput`] (field `operation`) if the binding's operation is not a valid
    /// operation name ([`check_operation_name`](crate::check_operation_name));
    /// [`Error::AuditBroken`] if the
    /// audit log refuses appends (nothing is spent); [`Error::DurabilityUnknown`] or
    /// [`Error::NotRecorded`] if the claim was made but could not be made durable or
    /// recorded (the approval is spent, nothing is authorized); and any I/O error before
    /// the claim (nothing is spent).
    pub fn consume<T>(&self, id: RequestId, binding: &Binding) -> Result<Grant<T>, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        self.observed("consume", Some(id), || self.consume_once::<T>(id, binding))
    }

    fn consume_once<T>(&self, id: RequestId, binding: &Binding) -> Result<Grant<T>, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        let (request, payload, now, _lock, allowed) = match self.check_consume::<T>(id, binding) {
            Ok(checked) => checked,
            Err(refusal) => {
                self.record_refused_consume(id, &refusal);
                return Err(refusal);
            }
        };
        failpoint!("consume::before_claim");
        let mut consumed = json!({
            "operation": request.operation(),
            "payloadDigest": request.payload_digest(),
        });
        if let Some((kept, amount)) = &allowed {
            consumed["allowance"] = json!(kept.signed.allowance.id());
            if let Some(amount) = amount {
                consumed["amount"] = json!(amount);
            }
        }
        let consumed = crate::gate::details(consumed);
        let entry = Entry {
            ts: now,
            event: AuditEvent::Consumed,
            details: &consumed,
        };
        let spent = match &allowed {
            // The use, the budget and the rate are counted in the step that spends it.
            Some((kept, amount)) => {
                self.store()
                    .spend_under(id, &Gate::under(kept, *amount), &entry)
            }
            None => self.store().spend(id, &entry),
        };
        match spent {
            Ok(Spent::Now) => {}
            // A replay, or the store's own rules; recorded once, by whoever found it.
            Ok(Spent::Refused { refusal, recorded }) => {
                if !recorded {
                    self.record_refused_consume(id, &refusal);
                }
                return Err(refusal);
            }
            Err(error) => {
                // An error that spent nothing is a refusal like the others.
                if !error.took_effect() {
                    self.record_refused_consume(id, &error);
                }
                return Err(error);
            }
        }
        // From here on the approval is spent, whatever happens next.
        failpoint!("consume::before_expiry_recheck");
        let after = self.now();
        if request.is_past_expiry(after) {
            let refusal = Error::ExpiredDuringConsume {
                id,
                expired_at: request.expires_at(),
            };
            self.record_refused_consume(id, &refusal);
            return Err(refusal);
        }
        Ok(Grant::new(
            id,
            request.operation().map(str::to_owned),
            request.payload_digest(),
            request.expires_at(),
            payload,
            Arc::clone(self.clock()),
        ))
    }

    /// Everything a consume checks before it claims, in order (`docs/authorization-states.md`):
    /// the request, read under its lock (held until the claim is made), the payload as `T`,
    /// and the time the checks were made at.
    ///
    /// A request an allowance approved has no human approvals to verify: the allowance is
    /// verified instead, in their place (read, not revoked, its signatures counted under this
    /// gate's policy for the request's operation, covering the exact payload, its window
    /// open), and what it has left is counted by the store's spend.
    fn check_consume<T>(&self, id: RequestId, binding: &Binding) -> Result<Checked<T>, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        let lock = self.store().lock(id)?;
        let now = self.now();
        let (Refreshed { request, claimed }, kept) = self.refresh_locked_allowed(id, now)?;
        let allowed = match request.allowance() {
            Some(allowance) if request.status() == Status::Approved && !claimed => {
                Some(self.check_allowance(&request, allowance, kept, now)?)
            }
            _ => None,
        };
        // An allowance stands in for the approvals (checked above unless the claim is made,
        // and a made claim refuses as a replay).
        let by_allowance = request.allowance().is_some();
        let policy = self.policy().filter(|_| !by_allowance).map(|policy| {
            let required =
                self.required_approvals(request.operation(), request.required_approvals());
            (policy, required)
        });
        let payload = rules::check_consumable::<T>(&request, claimed, binding, policy, now)?;
        Ok((request, payload, now, lock, allowed))
    }

    /// Records that a consume of `id` was refused with `refusal`, as `consume_refused` (or
    /// `consume_replayed`) with its code as the reason. [`consume`](Gate::consume) and the
    /// guarded functions of `#[requires_approval]` record every refusal themselves; a front
    /// end that refuses a consume before it can ask (a payload it cannot read, of a
    /// well-formed id) calls this, so that every refusal leaves a line, also when nothing
    /// else can be said of the request, since the line is all that shows the attempt.
    ///
    /// Best effort: the refusal stands whether or not the line can be written, and a log
    /// that refuses appends ([`Error::AuditBroken`]) is not asked. On PostgreSQL only an
    /// executor's login may write refusals.
    pub fn record_refused_consume(&self, id: RequestId, refusal: &Error) {
        if matches!(refusal, Error::AuditBroken { .. }) {
            return;
        }
        self.record_refusal(
            rules::refusal_event(refusal),
            id,
            json!({ "reason": refusal.code(), "detail": refusal_detail(refusal) }),
        );
    }
}
