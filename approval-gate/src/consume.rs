//! Consume: the single-use claim, the only thing that authorizes acting.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::faults::failpoint;
use crate::fs;
use crate::grant::Grant;
use crate::id::RequestId;
use crate::payload::CanonicalPayload;
use crate::request::{Binding, Request, Status};
use crate::store::Gate;
use crate::time::Timestamp;

impl Gate {
    /// Consumes an approval: the only thing that authorizes acting.
    ///
    /// Succeeds once, and only if, in this order: the request exists; it is approved; it
    /// has not been consumed or revoked; the clock is at or before its expiry; the action
    /// text is byte-for-byte equal; the operation is equal; the payload is equal as
    /// canonical JSON; and the approved payload round-trips through `T` exactly. Then the
    /// claim is made durable, the `consumed` line is written and fsynced, and the clock is
    /// read again: if the approval expired meanwhile the call refuses, and the approval stays
    /// spent.
    ///
    /// A refusal before the claim does not spend the approval; every refusal is audited, and
    /// a replay of a consumed approval is audited as `consume_replayed`.
    ///
    /// For a request without a payload, `T` is deserialized from `null` (use `()`).
    ///
    /// # Errors
    ///
    /// One variant per refusal: [`Error::NotApproved`], [`Error::Denied`], [`Error::Expired`],
    /// [`Error::Revoked`], [`Error::AlreadyConsumed`], [`Error::ApprovalExpired`],
    /// [`Error::ActionMismatch`], [`Error::OperationMismatch`], [`Error::PayloadMismatch`],
    /// [`Error::PayloadType`], [`Error::ExpiredDuringConsume`]; [`Error::AuditBroken`] if the
    /// audit log refuses appends (nothing is spent); [`Error::DurabilityUnknown`] or
    /// [`Error::NotRecorded`] if the claim was made but could not be made durable or
    /// recorded (the approval is spent, nothing is authorized); and any I/O error before
    /// the claim (nothing is spent).
    pub fn consume<T>(&self, id: RequestId, binding: &Binding) -> Result<Grant<T>, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        self.load_live(id)?;
        let _lock = self.lock(id)?;
        let now = self.now();
        let (request, claimed) = self.refresh_locked(id, now)?;
        let payload = match Self::check_consumable::<T>(&request, claimed, binding, now) {
            Ok(payload) => payload,
            Err(refusal) => {
                let event = if matches!(refusal, Error::AlreadyConsumed(_)) {
                    AuditEvent::ConsumeReplayed
                } else {
                    AuditEvent::ConsumeRefused
                };
                // The refusal stands whether or not its record can be written.
                let _ = self.audit(
                    event,
                    id,
                    json!({ "reason": refusal.code(), "detail": refusal.to_string() }),
                );
                return Err(refusal);
            }
        };

        // The claim is a "yes": it is not made unless its `consumed` line can follow.
        self.check_audit_appendable()?;
        failpoint!("consume::before_claim");
        let claim = json!({ "consumedAt": now, "pid": std::process::id() }).to_string();
        match fs::create_exclusive(&self.layout().claim(id), claim.as_bytes()) {
            Ok(true) => {}
            Ok(false) => {
                let _ = self.audit(
                    AuditEvent::ConsumeReplayed,
                    id,
                    json!({ "reason": "already_consumed" }),
                );
                return Err(Error::AlreadyConsumed(id));
            }
            // The claim exists but may not survive a crash: spent, and authorizing nothing
            // (acting needs a durable claim). Recovery writes its line if the claim survives.
            Err(failed) => return Err(failed.on(id, "consume")),
        }
        // From here on the approval is spent, whatever happens next.
        self.record_consumed(&request)
            .map_err(|error| error.after_effect(id, "consume"))?;
        let after = self.now();
        if request.is_past_expiry(after) {
            let refusal = Error::ExpiredDuringConsume {
                id,
                expired_at: request.expires_at(),
            };
            let _ = self.audit(
                AuditEvent::ConsumeRefused,
                id,
                json!({ "reason": refusal.code(), "detail": refusal.to_string() }),
            );
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

    fn record_consumed(&self, request: &Request) -> Result<(), Error> {
        failpoint!("consume::after_claim");
        self.audit(
            AuditEvent::Consumed,
            request.id(),
            json!({
                "operation": request.operation(),
                "payloadDigest": request.payload_digest(),
            }),
        )?;
        failpoint!("consume::after_consumed_line");
        // Only a hint for recovery: a lost marker makes recovery look the line up again.
        let _ = fs::touch(&self.layout().claim_logged(request.id()));
        failpoint!("consume::before_expiry_recheck");
        Ok(())
    }

    fn check_consumable<T>(
        request: &Request,
        claimed: bool,
        binding: &Binding,
        now: Timestamp,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        let id = request.id();
        match request.status() {
            Status::Pending => return Err(Error::NotApproved(id)),
            Status::Denied => return Err(Error::Denied(id)),
            Status::Expired => return Err(Error::Expired(id)),
            Status::Revoked => return Err(Error::Revoked(id)),
            Status::Approved => {}
        }
        if claimed {
            return Err(Error::AlreadyConsumed(id));
        }
        if request.is_past_expiry(now) {
            return Err(Error::ApprovalExpired {
                id,
                expired_at: request.expires_at(),
            });
        }
        if binding.action.as_bytes() != request.action().as_bytes() {
            return Err(Error::ActionMismatch(id));
        }
        if binding.operation.as_deref() != request.operation() {
            return Err(Error::OperationMismatch {
                id,
                expected: request.operation().map(str::to_owned),
                got: binding.operation.clone(),
            });
        }
        if binding.payload.as_ref() != request.payload() {
            return Err(Error::PayloadMismatch {
                id,
                expected: request
                    .payload_digest()
                    .map_or_else(|| "none".to_owned(), |d| d.to_string()),
            });
        }
        // Without a payload the executor's type must be a faithful image of `null`, e.g. `()`.
        let null;
        let approved = if let Some(payload) = request.payload() {
            payload
        } else {
            null = CanonicalPayload::no_payload();
            &null
        };
        approved
            .deserialize_faithful::<T>()
            .map_err(|problem| Error::PayloadType { id, problem })
    }
}
