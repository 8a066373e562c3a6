//! A request an allowance covers: approved by it at filing, and at its consume the
//! allowance verified again, offline, and its use counted in the same step as the spend.

use serde_json::json;

use crate::allowance::Exhausted;
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::allow::forged;
use crate::gate::{Gate, Refreshed, details};
use crate::id::RequestId;
use crate::request::{Request, Status};
use crate::store::Entry;
use crate::store::allowance::{Kept, Under, exhausted};
use crate::time::Timestamp;

impl Gate {
    /// Whether the allowance `kept` approves `request` at `now`: not revoked, its signatures
    /// counted under this gate's policy for the request's operation, covering its operation,
    /// filer and exact payload; the amount a use spends. The counts are not asked here.
    fn allowance_covers(
        &self,
        request: &Request,
        kept: &Kept,
        now: Timestamp,
    ) -> Result<Option<u64>, Error> {
        let id = request.id();
        let allowance = kept.signed.allowance.id();
        if kept.revoked {
            return Err(Error::Revoked(id));
        }
        let policy = self.policy().ok_or(Error::NoApprovers { id: allowance })?;
        let operation = request.operation().unwrap_or_default();
        kept.signed
            .verify(policy, operation, now)
            .map_err(|f| forged(id, f))?;
        let amount = kept
            .signed
            .allowance
            .covers(request.operation(), request.payload(), request.filed_by())
            .map_err(|why| Error::AllowanceNotCovering {
                id,
                allowance,
                reason: why.to_string(),
            })?;
        let bounds = &kept.signed.allowance.terms().bounds;
        if now > bounds.not_after {
            return Err(exhausted(
                id,
                allowance,
                &Exhausted::Ended {
                    not_after: bounds.not_after,
                },
            ));
        }
        Ok(amount)
    }

    /// The oldest active allowance that covers `request` now with a use left, if any. An
    /// allowance that cannot be read approves nothing.
    fn covering_allowance(&self, request: &Request, now: Timestamp) -> Option<RequestId> {
        self.policy()?;
        let mut all = match self.store().allowances() {
            Ok(all) => all,
            Err(error) => {
                tracing::warn!(error = %error, "allowances could not be read: none approves");
                return None;
            }
        };
        all.sort_by_key(|k| (k.signed.allowance.created_at(), k.signed.allowance.id()));
        all.into_iter()
            .find(|kept| {
                self.allowance_covers(request, kept, now)
                    .is_ok_and(|amount| {
                        kept.signed
                            .allowance
                            .terms()
                            .bounds
                            .admit(&kept.usage, amount, now)
                            .is_ok()
                    })
            })
            .map(|kept| kept.signed.allowance.id())
    }

    /// After filing `request` (pending): approves it by an allowance that covers it now, if
    /// one does, with an `approved` line naming the allowance. Whatever goes wrong leaves it
    /// pending, for a human to decide.
    pub(crate) fn approve_if_allowed(&self, request: Request) -> Request {
        let now = self.now();
        let Some(allowance) = self.covering_allowance(&request, now) else {
            return request;
        };
        let id = request.id();
        let approve = || -> Result<Option<Request>, Error> {
            let _lock = self.store().lock(id)?;
            let Refreshed { mut request, .. } = self.refresh_locked(id, now)?;
            if request.status() != Status::Pending {
                return Ok(None);
            }
            request.approve_by_allowance(allowance, now);
            let fields = details(json!({
                "decidedBy": request.decided_by(),
                "allowance": allowance,
            }));
            let entry = Entry {
                ts: now,
                event: AuditEvent::Approved,
                details: &fields,
            };
            self.store().decide(&request, "allow", &entry).map(Some)
        };
        match approve() {
            Ok(Some(approved)) => approved,
            Ok(None) => self.load_live(id).unwrap_or(request),
            Err(error) => {
                tracing::warn!(error = %error, %allowance, "an allowance covered the request, and it stays pending");
                self.load_live(id).unwrap_or(request)
            }
        }
    }

    /// At the consume of `request`, approved by `allowance`: the allowance `kept` (read with
    /// the request), verified again and found to cover the request's exact payload at `now`;
    /// what the store's `spend_under` counts.
    pub(crate) fn check_allowance(
        &self,
        request: &Request,
        allowance: RequestId,
        kept: Option<Kept>,
        now: Timestamp,
    ) -> Result<(Kept, Option<u64>), Error> {
        let id = request.id();
        let kept = kept
            .filter(|kept| kept.signed.allowance.id() == allowance)
            .ok_or_else(|| Error::AllowanceNotCovering {
                id,
                allowance,
                reason: "no such allowance is kept".into(),
            })?;
        let amount = self.allowance_covers(request, &kept, now)?;
        Ok((kept, amount))
    }

    /// What `spend_under` counts for `request` under `kept`.
    pub(crate) fn under(kept: &Kept, amount: Option<u64>) -> Under<'_> {
        Under {
            allowance: kept.signed.allowance.id(),
            bounds: &kept.signed.allowance.terms().bounds,
            amount,
        }
    }
}
