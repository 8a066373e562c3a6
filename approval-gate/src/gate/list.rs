//! Listing requests: a status filter, a stable order, and pagination.

use serde::Serialize;

use crate::error::Error;
use crate::gate::Gate;
use crate::id::RequestId;
use crate::limits::MAX_PAGE;
use crate::request::{EffectiveStatus, Status, StatusReport};
use crate::scan::{Scan, UnreadableRecord};
use crate::store::{Scope, Shelf};
use crate::time::Timestamp;

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

/// One entry of a listing: a request and where it stands, or a record that cannot be read.
///
/// Serialized as the [`StatusReport`] or the [`UnreadableRecord`] itself; an unreadable entry
/// is the one with `"unreadable": true`.
// Nearly every entry is a request: boxing it would cost an allocation per entry to save
// space in the rare unreadable one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ListItem {
    /// A request that was read.
    Request(StatusReport),
    /// A record that could not be read; its id refuses everything.
    Unreadable(UnreadableRecord),
}

impl ListItem {
    /// The request id, readable or not.
    #[must_use]
    pub fn id(&self) -> RequestId {
        match self {
            Self::Request(report) => report.request().id(),
            Self::Unreadable(record) => record.id(),
        }
    }

    /// The request and where it stands, if its record could be read.
    #[must_use]
    pub fn report(&self) -> Option<&StatusReport> {
        match self {
            Self::Request(report) => Some(report),
            Self::Unreadable(_) => None,
        }
    }

    /// What is wrong, if the record could not be read.
    #[must_use]
    pub fn unreadable(&self) -> Option<&UnreadableRecord> {
        match self {
            Self::Request(_) => None,
            Self::Unreadable(record) => Some(record),
        }
    }

    /// Listing order: unreadable records first (they have no readable creation time, and a
    /// human should see them), then by creation time, then by id.
    fn key(&self) -> (Option<Timestamp>, RequestId) {
        (self.report().map(|r| r.request().created_at()), self.id())
    }
}

/// One page of a listing: unreadable records first, then requests oldest first (by creation
/// time, then id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Page {
    /// The entries on this page.
    pub items: Vec<ListItem>,
    /// Pass as `after` to get the next page; `None` on the last page.
    pub next_after: Option<RequestId>,
}

impl Gate {
    /// Lists requests, unreadable records first, then oldest first, `limit` at a time (1 to
    /// [`MAX_PAGE`]), after the entry `after` if given.
    ///
    /// Listing [`ListFilter::Pending`] reads only the pending index and the requests it
    /// names; every other filter reads every request in the live store. A record that cannot
    /// be read is listed as [`ListItem::Unreadable`] under every filter (its status is
    /// unknown): under [`ListFilter::Pending`] if the pending index names it, under the others
    /// wherever it is in the live store.
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
        let scan = if filter == ListFilter::Pending {
            self.scan_pending(now)?
        } else {
            self.scan_all(now, Expiry::Record)?
        };
        let mut items: Vec<ListItem> = scan
            .unreadable
            .into_iter()
            .map(ListItem::Unreadable)
            .collect();
        for request in scan.requests {
            let report = self.report(request, now)?;
            if filter.admits(report.effective_status()) {
                items.push(ListItem::Request(report));
            }
        }
        items.sort_by_key(ListItem::key);
        if let Some(after) = after {
            let cursor = match items.iter().find(|item| item.id() == after) {
                Some(item) => item.key(),
                None => (self.created_at_anywhere(after)?, after),
            };
            items.retain(|item| item.key() > cursor);
        }
        let more = items.len() > limit;
        items.truncate(limit);
        let next_after = if more {
            items.last().map(ListItem::id)
        } else {
            None
        };
        Ok(Page { items, next_after })
    }

    /// Where `id` sits in listing order when it is not on the list: its creation time, or
    /// `None` (the place of unreadable records) if its record cannot be read.
    fn created_at_anywhere(&self, id: RequestId) -> Result<Option<Timestamp>, Error> {
        let store = self.store();
        match store.load(id, Shelf::Live) {
            Ok(Some(request)) => return Ok(Some(request.created_at())),
            Ok(None) => {}
            Err(error) if store.concerns_record_only(id, &error) => return Ok(None),
            Err(other) => return Err(other),
        }
        let archived = store
            .load(id, Shelf::Archived)?
            .ok_or(Error::NotFound(id))?;
        Ok(Some(archived.created_at()))
    }

    /// Every request in the live store, and the records that cannot be read, recording on
    /// the way (with [`Expiry::Record`]) the expiry of pending requests past it.
    pub(crate) fn scan_all(&self, now: Timestamp, expiry: Expiry) -> Result<Scan, Error> {
        let store = self.store();
        let mut scan = Scan::default();
        for (id, loaded) in store.scan(Scope::Live)? {
            let Some(Some(request)) = scan.readable(store, id, loaded)? else {
                continue;
            };
            if expiry == Expiry::Record
                && request.status() == Status::Pending
                && request.is_past_expiry(now)
            {
                let _lock = store.lock(id)?;
                if let Some(refreshed) = scan.readable(store, id, self.refresh_locked(id, now))? {
                    scan.requests.push(refreshed.request);
                }
            } else {
                scan.requests.push(request);
            }
        }
        Ok(scan)
    }

    /// The pending requests, reading only what the pending index names. Records the expiry
    /// of those past it. An entry whose record is unreadable is listed as such.
    pub(crate) fn scan_pending(&self, now: Timestamp) -> Result<Scan, Error> {
        let store = self.store();
        let mut scan = Scan::default();
        for (id, loaded) in store.scan(Scope::Pending)? {
            match scan.readable(store, id, loaded)? {
                Some(Some(request)) if request.status() != Status::Pending => {}
                Some(Some(request)) if request.is_past_expiry(now) => {
                    let _lock = store.lock(id)?;
                    scan.readable(store, id, self.refresh_locked(id, now))?;
                }
                Some(Some(request)) => scan.requests.push(request),
                Some(None) | None => {}
            }
        }
        Ok(scan)
    }
}

/// Whether a scan records the expiry of the pending requests it finds past it (every read
/// does, except those promised to change nothing: a dry run, a health check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    Record,
    Leave,
}
