//! Listing requests: a status filter, a stable order, and pagination.

use serde::Serialize;

use crate::error::Error;
use crate::fs;
use crate::id::RequestId;
use crate::request::{EffectiveStatus, Request, Status, StatusReport};
use crate::store::{Gate, MAX_REQUEST_FILE};
use crate::time::Timestamp;

/// Largest page [`Gate::list`] returns.
pub const MAX_PAGE: usize = 1000;

/// Which requests [`Gate::list`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListFilter {
    /// Waiting for a decision. Costs in proportion to the pending queue only.
    Pending,
    /// Approved and not consumed, whether or not still within its expiry.
    Approved,
    /// Approved and consumed.
    Consumed,
    /// Denied.
    Denied,
    /// Expired while pending.
    Expired,
    /// Revoked.
    Revoked,
    /// Everything in the live store.
    All,
}

impl ListFilter {
    fn admits(self, status: EffectiveStatus) -> bool {
        match self {
            Self::Pending => status == EffectiveStatus::Pending,
            Self::Approved => matches!(
                status,
                EffectiveStatus::ApprovedUnconsumed | EffectiveStatus::ApprovedExpired
            ),
            Self::Consumed => status == EffectiveStatus::Consumed,
            Self::Denied => status == EffectiveStatus::Denied,
            Self::Expired => status == EffectiveStatus::Expired,
            Self::Revoked => status == EffectiveStatus::Revoked,
            Self::All => true,
        }
    }
}

/// One page of a listing, oldest first (by creation time, then id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Page {
    /// The requests on this page.
    pub items: Vec<StatusReport>,
    /// Pass as `after` to get the next page; `None` on the last page.
    pub next_after: Option<RequestId>,
}

impl Gate {
    /// Lists requests, oldest first, `limit` at a time (1 to [`MAX_PAGE`]), after the request
    /// `after` if given.
    ///
    /// Listing [`ListFilter::Pending`] reads only the pending index and the requests it
    /// names; every other filter reads every request in the live store.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a limit of 0 or above [`MAX_PAGE`]; [`Error::NotFound`] if
    /// `after` names no request.
    pub fn list(
        &self,
        filter: ListFilter,
        after: Option<RequestId>,
        limit: usize,
    ) -> Result<Page, Error> {
        if limit == 0 || limit > MAX_PAGE {
            return Err(Error::InvalidInput {
                field: "limit",
                problem: format!("{limit} is outside 1 to {MAX_PAGE}"),
            });
        }
        let now = self.now();
        let candidates = if filter == ListFilter::Pending {
            self.scan_pending(now, false)?
        } else {
            self.scan_all(now, true)?
        };
        let mut items = Vec::new();
        for request in candidates {
            let report = self.report(request, now)?;
            if filter.admits(report.effective_status()) {
                items.push(report);
            }
        }
        let key = |r: &StatusReport| (r.request().created_at(), r.request().id());
        items.sort_by_key(key);
        if let Some(after) = after {
            let cursor = match items.iter().find(|r| r.request().id() == after) {
                Some(report) => key(report),
                None => (self.created_at_anywhere(after)?, after),
            };
            items.retain(|r| key(r) > cursor);
        }
        let more = items.len() > limit;
        items.truncate(limit);
        let next_after = if more {
            items.last().map(|r| r.request().id())
        } else {
            None
        };
        Ok(Page { items, next_after })
    }

    fn created_at_anywhere(&self, id: RequestId) -> Result<Timestamp, Error> {
        if let Some(request) = self.load(id)? {
            return Ok(request.created_at());
        }
        let path = self.layout().archived(id);
        let bytes = fs::read_bounded(&path, MAX_REQUEST_FILE)?.ok_or(Error::NotFound(id))?;
        let request: Request = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path,
            problem: e.to_string(),
        })?;
        Ok(request.created_at())
    }

    /// Every request in the live store. With `record_expiry`, pending requests past their
    /// expiry are recorded as expired on the way.
    pub(crate) fn scan_all(
        &self,
        now: Timestamp,
        record_expiry: bool,
    ) -> Result<Vec<Request>, Error> {
        let mut all = Vec::new();
        for name in fs::list_names(&self.layout().requests_dir())? {
            let Some(id) = name
                .strip_suffix(".json")
                .and_then(|s| RequestId::parse(s).ok())
            else {
                continue;
            };
            let Some(request) = self.load(id)? else {
                continue;
            };
            if record_expiry && request.status() == Status::Pending && request.is_past_expiry(now) {
                let _lock = self.lock(id)?;
                all.push(self.refresh_locked(id, now)?.0);
            } else {
                all.push(request);
            }
        }
        Ok(all)
    }
}
