//! Asking: filing a request for a human decision, and where a request stands.

use serde_json::json;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::{Gate, Submitted, details};
use crate::id::RequestId;
use crate::request::{NewRequest, Request, Status, StatusReport};
use crate::scan::{Filing, Scan};
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
        new.validate()?;
        let limits = self.limits();
        let ttl = new.ttl.unwrap_or(limits.default_ttl);
        if let Some(submitted) = self.file_at_once(&new, ttl)? {
            return Ok(submitted);
        }
        let _filing = self.store().lock_filing()?;
        // Nothing is filed that the audit log cannot record.
        self.check_audit_appendable()?;
        let now = self.now();
        let scan = self.scan_pending(now, Filing::Serialised)?;
        if let Some(existing) = scan.requests.iter().find(|r| r.same_ask(&new)) {
            return Ok(Submitted {
                request: existing.clone(),
                deduplicated: true,
            });
        }
        // An unreadable record in the pending index may well be pending: it counts, so a
        // damaged store never lets more requests in than the cap.
        let pending_now = scan.requests.len() + scan.unreadable.len();
        if pending_now >= limits.max_pending {
            return Err(Error::QueueFull {
                pending: pending_now,
                limit: limits.max_pending,
            });
        }
        let live = self.store().count_live()?;
        if live >= limits.max_requests {
            return Err(Error::CreationLimit {
                requests: live,
                limit: limits.max_requests,
            });
        }
        let id = self.fresh_id()?;
        let request = self.new_request(id, new, now, ttl);
        self.effect_then_record(
            id,
            "request",
            AuditEvent::Requested,
            requested_fields(&request),
            |entry| self.store().insert(&request, entry),
        )?;
        Ok(Submitted {
            request,
            deduplicated: false,
        })
    }

    /// Files `new` through the store's own atomic filing step, where it has one (see
    /// [`Store::file_at_once`](crate::store::Store::file_at_once)); `None` where it has not.
    fn file_at_once(
        &self,
        new: &NewRequest,
        ttl: std::time::Duration,
    ) -> Result<Option<Submitted>, Error> {
        if !self.store().files_at_once() {
            return Ok(None);
        }
        let limits = self.limits();
        let caps = Caps {
            max_pending: limits.max_pending,
            max_requests: limits.max_requests,
        };
        loop {
            let now = self.now();
            let id = RequestId::random().map_err(|e| Error::Random(e.to_string()))?;
            let request = self.new_request(id, new.clone(), now, ttl);
            let details = details(requested_fields(&request));
            let entry = Entry {
                ts: now,
                event: AuditEvent::Requested,
                details: &details,
            };
            let Some(filed) = self.store().file_at_once(&request, caps, &entry) else {
                return Ok(None);
            };
            return match filed? {
                Filed::New => Ok(Some(Submitted {
                    request,
                    deduplicated: false,
                })),
                Filed::Duplicate(existing) => Ok(Some(Submitted {
                    request: self.load_live(existing)?,
                    deduplicated: true,
                })),
                Filed::IdTaken => continue,
            };
        }
    }

    fn new_request(
        &self,
        id: RequestId,
        new: NewRequest,
        now: Timestamp,
        ttl: std::time::Duration,
    ) -> Request {
        let required = self.required_approvals(new.operation.as_deref(), 1);
        Request::new(id, new, now, ttl, required).filed_by_as(self.store().filer())
    }

    fn fresh_id(&self) -> Result<RequestId, Error> {
        loop {
            let id = RequestId::random().map_err(|e| Error::Random(e.to_string()))?;
            if !self.store().id_taken(id)? {
                return Ok(id);
            }
        }
    }

    /// The pending requests, reading only what the pending index names. Records the expiry
    /// of those past it. Entries of decided requests are dropped; entries without a record
    /// are dropped only while filing is locked, since one may belong to a filing in progress.
    /// An entry whose record is unreadable stays, and the record is listed as such.
    pub(crate) fn scan_pending(&self, now: Timestamp, filing: Filing) -> Result<Scan, Error> {
        let store = self.store();
        let mut scan = Scan::default();
        for (id, loaded) in store.load_pending()? {
            let Some(loaded) = scan.readable(store, id, loaded)? else {
                continue;
            };
            match loaded {
                None => {
                    if filing == Filing::Serialised {
                        store.unindex(id)?;
                    }
                }
                Some(request) if request.status() != Status::Pending => {
                    store.unindex(id)?;
                }
                Some(request) if request.is_past_expiry(now) => {
                    let _lock = store.lock(id)?;
                    scan.readable(store, id, self.refresh_locked(id, now))?;
                }
                Some(request) => scan.requests.push(request),
            }
        }
        Ok(scan)
    }

    /// Where a request stands. Records the expiry of a pending request past it.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] or [`Error::Archived`] for an id not in the live store;
    /// [`Error::Unreadable`] if its record cannot be read (every other operation on the id
    /// refuses the same way).
    pub fn status(&self, id: RequestId) -> Result<StatusReport, Error> {
        let now = self.now();
        let request = self.load_live(id)?;
        let request = if request.status() == Status::Pending && request.is_past_expiry(now) {
            let _lock = self.store().lock(id)?;
            self.refresh_locked(id, now)?.request
        } else {
            request
        };
        self.report(request, now)
    }
}
