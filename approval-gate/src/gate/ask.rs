//! Asking: filing a request for a human decision.

use serde_json::json;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::{Gate, Submitted, details};
use crate::id::RequestId;
use crate::offload::off_thread;
use crate::request::{NewRequest, Request};
use crate::store::{Caps, Entry, Filed};
use crate::time::Timestamp;

/// The fields of a request's `requested` line.
fn requested_fields(request: &Request) -> serde_json::Value {
    let mut fields = json!({
            "action": request.action(),
            "reason": request.reason(),
            "requestedBy": request.requested_by(),
            "operation": request.operation(),
            "payloadDigest": request.payload_digest(),
            "expiresAt": request.expires_at(),
    });
    if request.required_approvals() > 1 {
        fields["requiredApprovals"] = request.required_approvals().into();
    }
    fields
}

impl Gate {
    /// Files a request for a human decision.
    ///
    /// An identical pending request (same action, operation, payload digest and requester)
    /// is returned instead of filing a second one. A request that does not set its time to
    /// live gets the operator's [`Limits::default_ttl`](crate::Limits::default_ttl).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for unacceptable fields (nothing is written);
    /// [`Error::QueueFull`] or [`Error::CreationLimit`] when a limit is reached.
    pub fn request_approval(&self, new: NewRequest) -> Result<Submitted, Error> {
        self.observed("request", None, || {
            new.validate()?;
            let limits = self.limits();
            let ttl = new.ttl.unwrap_or(limits.default_ttl);
            let caps = Caps {
                max_pending: limits.max_pending,
                max_requests: limits.max_requests,
            };
            let fresh = || RequestId::random().map_err(|e| Error::Random(e.to_string()));
            let mut request = self.new_request(fresh()?, new, self.now(), ttl);
            loop {
                let details = details(requested_fields(&request));
                let entry = Entry {
                    ts: request.created_at(),
                    event: AuditEvent::Requested,
                    details: &details,
                };
                match self.store().file(&request, caps, &entry)? {
                    Filed::New => {
                        // Approved at once by an allowance that covers it, if one does.
                        return Ok(Submitted {
                            request: self.approve_if_allowed(request),
                            deduplicated: false,
                        });
                    }
                    Filed::Duplicate(existing) => {
                        return Ok(Submitted {
                            request: self.load_live(existing)?,
                            deduplicated: true,
                        });
                    }
                    // Another request has this id: the same request under a new one.
                    Filed::IdTaken => request.renumber(fresh()?),
                }
            }
        })
    }

    /// The async form of [`request_approval`](Gate::request_approval): the filing (a file
    /// lock and fsyncs, or database calls) runs on a thread of its own, never on the thread
    /// polling this future, under any executor. Dropping the future never leaves a filing
    /// half done: one under way completes, and its request stays filed.
    ///
    /// # Errors
    ///
    /// As [`request_approval`](Gate::request_approval); an I/O error if no thread could be
    /// started (nothing was filed).
    pub async fn request_approval_async(&self, new: NewRequest) -> Result<Submitted, Error> {
        let gate = self.clone();
        off_thread("request", move || gate.request_approval(new)).await?
    }

    fn new_request(
        &self,
        id: RequestId,
        new: NewRequest,
        now: Timestamp,
        ttl: std::time::Duration,
    ) -> Request {
        let required = self.required_approvals(new.operation.as_deref(), 1);
        Request::new(id, new, now, ttl, required).filed_by_as(self.store().about().filer.clone())
    }
}
