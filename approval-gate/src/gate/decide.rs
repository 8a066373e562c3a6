//! Human decisions: approve, deny, revoke.

use serde_json::json;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::{Gate, Refreshed};
use crate::id::RequestId;
use crate::limits::MAX_QUORUM;
use crate::policy::passkey::counter;
use crate::policy::{self, Standing};
use crate::request::{Decision, EffectiveStatus, Request, StatusReport};
use crate::rules::Verdict;
use crate::store::{Entry, Scope};
use crate::time::Timestamp;

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

    /// Checks, at this gate's clock and without recording anything, that the request as
    /// `shown` (a report of this gate) may be approved: it is pending and not past its expiry,
    /// as [`approve_as_shown`](Gate::approve_as_shown) checks again under the request's lock.
    /// A front end asks before it shows a human a request to confirm, and again before it
    /// approves, since a screen may stand past the expiry.
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] if it is past its expiry; [`Error::WrongState`] if it is not pending.
    pub fn check_approvable(&self, shown: &StatusReport) -> Result<(), Error> {
        let request = shown.request();
        let claimed = shown.effective_status() == EffectiveStatus::Consumed;
        Verdict::Approve.check(request.id(), request.effective(claimed, self.now()))
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

    /// Records that an approval of `id` was refused with `refusal` by a front end, for a
    /// reason only it could see (a rule of its own about who may approve what, say; the gate
    /// checks a passkey's signature counter itself): a `decision_refused` line with its code, as
    /// [`approve`](Gate::approve) records its own refusals, so the audit trail shows the
    /// attempt. Best effort, as for a refused consume: the refusal stands whether or not the
    /// line can be written, and a log that refuses appends is not asked.
    pub fn record_refused_approval(&self, id: RequestId, refusal: &Error) {
        if matches!(refusal, Error::AuditBroken { .. }) {
            return;
        }
        self.record_refusal(
            AuditEvent::DecisionRefused,
            id,
            json!({
                "operation": Verdict::Approve.operation(),
                "reason": refusal.code(),
                "detail": crate::audit::refusal_detail(refusal),
            }),
        );
    }

    /// Takes the decision, or records why it was refused (`decision_refused`, with the
    /// operation and the refusal's code): every refusal leaves a line, so an agent probing
    /// what it may decide is seen in the trail. Best effort, as for a refused consume: the
    /// refusal stands whether or not its line can be written, a log that refuses appends is
    /// not asked, an error that took effect is no refusal, and bad input (a malformed reason,
    /// an id no request has) changes nothing, the log included.
    fn decide(
        &self,
        id: RequestId,
        decision: &Decision,
        verdict: Verdict,
        shown: Option<&Request>,
    ) -> Result<StatusReport, Error> {
        self.observed(verdict.operation(), Some(id), || {
            self.decide_once(id, decision, verdict, shown)
                .inspect_err(|refusal| {
                    // Bad input changes nothing, not even the log: it is no decision on a request;
                    // nor does an id no request has, which had nothing to decide.
                    let bad_input = matches!(
                        refusal,
                        Error::InvalidInput { .. }
                            | Error::InvalidId { .. }
                            | Error::InvalidPayload(_)
                            | Error::NotFound(_)
                    );
                    if !bad_input
                        && !refusal.took_effect()
                        && !matches!(refusal, Error::AuditBroken { .. })
                    {
                        self.record_refusal(
                            AuditEvent::DecisionRefused,
                            id,
                            json!({
                                "operation": verdict.operation(),
                                "reason": refusal.code(),
                                "detail": crate::audit::refusal_detail(refusal),
                            }),
                        );
                    }
                })
        })
    }

    fn decide_once(
        &self,
        id: RequestId,
        decision: &Decision,
        verdict: Verdict,
        shown: Option<&Request>,
    ) -> Result<StatusReport, Error> {
        decision.validate()?;
        let _lock = self.store().lock(id)?;
        let now = self.now();
        let Refreshed {
            mut request,
            claimed,
        } = self.refresh_locked(id, now)?;
        verdict.check(id, request.effective(claimed, now))?;
        // What the human saw is the request; approvals others added since do not change it.
        if shown.is_some_and(|shown| !shown.same_as_shown(&request)) {
            return Err(Error::Changed(id));
        }
        let operation = verdict.operation();
        let mut event = verdict.event();
        // Held until the approval is written: see `check_counter`.
        let mut _counters = None;
        let mut record = json!({
            "decidedBy": decision.decided_by(),
            "reason": decision.decision_reason(),
        });
        if verdict == Verdict::Approve {
            let required =
                self.required_approvals(request.operation(), request.required_approvals());
            match &decision.signed {
                Some(signed) => {
                    self.check_new_approval(
                        &request,
                        required,
                        &signed.principal,
                        &signed.signature,
                        now,
                    )?;
                    _counters =
                        self.check_counter(&request, &signed.principal, &signed.signature)?;
                    self.make_room(&mut request, required, now)?;
                    request.add_approval(policy::approval_record(
                        &signed.principal,
                        decision.decided_by(),
                        now,
                        &signed.signature,
                    ));
                    // Only approvals this gate can verify count (under its policy, only
                    // trusted ones): a forged entry claiming a principal adds nothing.
                    let count =
                        policy::counted(&policy::standings(self.policy(), &request, required, now));
                    record["principal"] = signed.principal.clone().into();
                    record["signature"] = signed.signature.trim().into();
                    record["approvals"] = count.into();
                    record["requiredApprovals"] = required.into();
                    if count < required {
                        event = AuditEvent::ApprovalAdded;
                    } else {
                        request.decide(verdict.status(), now, Some(decision));
                    }
                }
                None if required > 1 || self.policy().is_some() => {
                    return Err(Error::SignatureRequired { id, required });
                }
                None => request.decide(verdict.status(), now, Some(decision)),
            }
        } else {
            request.decide(verdict.status(), now, Some(decision));
        }
        let details = crate::gate::details(record);
        let entry = Entry {
            ts: self.now(),
            event,
            details: &details,
        };
        // The store may set the decision's time and name itself (the database's clock and
        // session user): the report is of what it holds. A decided request was not claimed
        // meanwhile: we hold its lock.
        let request = self.store().decide(&request, operation, &entry)?;
        Ok(self.report_claimed(request, claimed, now))
    }

    /// Checks an approver's signature before it is recorded: the gate holds the trusted
    /// approvers (without them it could not tell a trusted signature from anyone's); the
    /// signature verifies over this request's statement; its key is trusted for the
    /// principal; and each principal and each key approves once. Nothing is written when it
    /// fails.
    ///
    /// Only earlier approvals that verify and are trusted can make this one a repeat: an
    /// entry someone stored claiming this principal with another key blocks nobody.
    fn check_new_approval(
        &self,
        request: &Request,
        required: u32,
        principal: &str,
        signature: &str,
        now: Timestamp,
    ) -> Result<(), Error> {
        let id = request.id();
        let Some(policy) = self.policy() else {
            return Err(Error::NoApprovers { id });
        };
        let signed = policy::check_signature(request, required, principal, signature).map_err(
            |problem| Error::BadSignature {
                id,
                principal: principal.to_owned(),
                problem,
            },
        )?;
        policy.check_trusted(request, principal, &signed, now)?;
        let key = signed.key;
        let judged = policy::judged(Some(policy), request, required, now);
        for (earlier, (standing, earlier_key)) in request.approvals().iter().zip(judged) {
            if !standing.is_trusted() {
                continue;
            }
            let same_key = earlier_key.is_some_and(|k| k.key_data() == key.key_data());
            if earlier.principal() == principal || same_key {
                return Err(Error::AlreadySigned {
                    id,
                    principal: earlier.principal().to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Checks the signature counter of a passkey approval (WebAuthn §7.2 step 22) against
    /// every approval by the same key in the live store, under the store's lock of counters,
    /// which it returns for the caller to hold until the approval is written: two approvals
    /// by copies of one authenticator, with the same counter, never both pass, whichever
    /// front ends and processes make them. A signature that is not a passkey's takes no lock.
    /// A record the store cannot read holds no counter (it would stop every approval).
    fn check_counter(
        &self,
        request: &Request,
        principal: &str,
        signature: &str,
    ) -> Result<Option<crate::store::Guard>, Error> {
        let Some((passkey, now)) = counter::of_signature(signature) else {
            return Ok(None);
        };
        let guard = self.store().lock_counters()?;
        let stored = self.store().scan(Scope::Live)?;
        let requests = stored.iter().filter_map(|(_, loaded)| match loaded {
            Ok(Some(request)) => Some(request),
            _ => None,
        });
        counter::check(&passkey, now, requests).map_err(|problem| Error::BadSignature {
            id: request.id(),
            principal: principal.to_owned(),
            problem,
        })?;
        Ok(Some(guard))
    }

    /// Makes room for one more approval in a record that holds as many as a record can: the
    /// entries that count for nothing (they do not verify, the policy does not trust them,
    /// or their approver counted already) give way; they stay in the audit log, where each was recorded (only a gate
    /// holding a policy records a signed approval, so there is one here).
    /// So entries nobody can use never stop the approvers a quorum needs, and a record never
    /// grows past what a reader accepts.
    fn make_room(&self, request: &mut Request, required: u32, now: Timestamp) -> Result<(), Error> {
        if request.approvals().len() < MAX_QUORUM as usize {
            return Ok(());
        }
        let standings = policy::standings(self.policy(), request, required, now);
        request.retain_approvals(|i| standings[i] == Standing::Counts);
        if request.approvals().len() < MAX_QUORUM as usize {
            return Ok(());
        }
        Err(Error::InvalidInput {
            field: "approvals",
            problem: format!(
                "request {} already holds {MAX_QUORUM} approvals, the most a record keeps; \
                 nothing was recorded",
                request.id()
            ),
        })
    }
}
