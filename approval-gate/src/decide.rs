//! Human decisions: approve, deny, revoke.

use serde_json::json;

use crate::error::Error;
use crate::faults::failpoint;
use crate::gate::Gate;
use crate::id::RequestId;
use crate::request::{Decision, Request, StatusReport};
use crate::rules::{Order, Verdict};

impl Gate {
    /// Approves a pending request. Only a human, out of band, should ever call this.
    ///
    /// The `approved` audit line is written before the approval takes effect, so an approval
    /// never exists without its record.
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] if it expired first; [`Error::WrongState`] if it is not pending.
    pub fn approve(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Verdict::Approve, None)
    }

    /// Approves a pending request only if it is still exactly `shown`, the record the human
    /// was looking at: compared under the request's lock, so nothing can change in between.
    ///
    /// # Errors
    ///
    /// [`Error::Changed`] if the stored request differs from `shown` in any field; otherwise
    /// as [`approve`](Gate::approve).
    pub fn approve_as_shown(
        &self,
        shown: &Request,
        decision: &Decision,
    ) -> Result<StatusReport, Error> {
        self.decide(shown.id(), decision, Verdict::Approve, Some(shown))
    }

    /// Denies a pending request.
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] if it expired first; [`Error::WrongState`] if it is not pending.
    pub fn deny(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Verdict::Deny, None)
    }

    /// Revokes an approval that has not been consumed.
    ///
    /// # Errors
    ///
    /// [`Error::WrongState`] unless the request is approved and unconsumed.
    pub fn revoke(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Verdict::Revoke, None)
    }

    fn decide(
        &self,
        id: RequestId,
        decision: &Decision,
        verdict: Verdict,
        shown: Option<&Request>,
    ) -> Result<StatusReport, Error> {
        decision.validate()?;
        self.load_live(id)?;
        let _lock = self.store().lock(id)?;
        let now = self.now();
        let (mut request, claimed) = self.refresh_locked(id, now)?;
        verdict.check(id, request.effective(claimed, now))?;
        if shown.is_some_and(|shown| *shown != request) {
            return Err(Error::Changed(id));
        }
        let operation = verdict.operation();
        request.decide(verdict.status(), now, Some(decision));
        let record = json!({
            "decidedBy": request.decided_by(),
            "reason": request.decision_reason(),
        });
        match verdict.order() {
            Order::RecordFirst => {
                self.audit(verdict.event(), id, record)?;
                failpoint!("decide::between_record_and_effect");
                self.store().save(&request, operation)?;
            }
            Order::EffectFirst => {
                let saved = self.store().save(&request, operation).and_then(|()| {
                    Self::between_effect_and_record().map_err(|e| e.after_effect(id, operation))
                });
                self.record_after(saved, id, operation, verdict.event(), record)?;
            }
        }
        // From here the decision has taken effect: nothing below may report a failure. An
        // index entry left behind is removed by the next scan of the pending index, and the
        // report needs no further read (a decided request was not claimed: we hold its lock).
        let _ = self.store().unindex(id);
        let effective = request.effective(claimed, now);
        Ok(StatusReport::new(request, effective))
    }

    // Fails only at its failpoint, which exists only with the `failpoints` feature.
    #[cfg_attr(not(feature = "failpoints"), allow(clippy::unnecessary_wraps))]
    fn between_effect_and_record() -> Result<(), Error> {
        failpoint!("decide::between_record_and_effect");
        Ok(())
    }
}
