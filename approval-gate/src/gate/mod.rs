//! The gate: the API every front end and executor calls, over one [`Store`].
//!
//! This file holds the [`Gate`] itself and the steps its verbs share (loading a live request,
//! recording a due expiry, reporting); each verb is a file of its own: `builder` (opening a
//! gate), `ask`, `status`, `decide`, `consume`, `claim` (the macro's), `execute`, `list`,
//! `wait`, `archive`, `health`, `recover` and `audit`.

mod allow;
mod allowed;
mod archive;
mod ask;
mod audit;
mod builder;
mod claim;
mod consume;
mod cosign;
mod decide;
#[cfg(test)]
mod decide_tests;
mod execute;
mod health;
mod list;
mod notices;
mod recover;
mod status;
mod wait;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::id::RequestId;
use crate::limits::Limits;
use crate::policy::Policy;
use crate::request::{Request, Status, StatusReport};
use crate::store::{Capabilities, Entry, Location, Shelf, Store};
use crate::time::{Clock, Timestamp};

pub use allow::AllowanceReport;
pub use archive::ArchiveReport;
pub use builder::GateBuilder;
#[doc(hidden)]
pub use claim::__private;
pub use claim::Claim;
pub use health::HealthReport;
pub use list::{ListFilter, ListItem, Page};
pub use recover::Recovery;
pub use wait::{
    Arrivals, Changes, Closer, FALLBACK, FALLBACK_WITHOUT_EVENTS, QueueEvent, QueueEvents, Waited,
    Waiting, Watch, WatchBuilder,
};

/// The answer to [`Gate::request_approval`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Submitted {
    /// The request now pending.
    pub request: Request,
    /// `true` if an identical pending request already existed and is returned instead.
    pub deduplicated: bool,
}

#[derive(Debug)]
struct Inner {
    store: Box<dyn Store>,
    clock: Arc<dyn Clock>,
    limits: Limits,
    policy: Option<Policy>,
}

/// The approval gate: requests, decisions and single-use consumes, over a store.
///
/// Cheap to clone; clones share configuration. Every operation is safe to run from many
/// threads and processes at once: decisions and consumption of one request are serialised by
/// the store.
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

/// A request as re-read under its lock ([`Gate::refresh_locked`]).
#[derive(Debug)]
pub(crate) struct Refreshed {
    /// The live record, its expiry recorded if it was due.
    pub(crate) request: Request,
    /// Whether its approval was claimed (consumed).
    pub(crate) claimed: bool,
}

/// The fields of an audit record, from a JSON object (anything else has none).
pub(crate) use crate::audit::details;

impl Gate {
    /// Opens the directory store in `dir` with the system clock and default limits.
    ///
    /// # Errors
    ///
    /// As [`GateBuilder::open`].
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        Self::builder().dir(dir).open()
    }

    /// Opens the store [`Gate::default_location`] names.
    ///
    /// # Errors
    ///
    /// As [`GateBuilder::open`].
    pub fn open_default() -> Result<Self, Error> {
        Self::builder().open()
    }

    /// A builder to choose the store, clock and limits.
    #[must_use]
    pub fn builder() -> GateBuilder {
        GateBuilder::default()
    }

    /// `APPROVAL_GATE_STORE` if set, else the directory `APPROVAL_GATE_DIR`, else
    /// `$HOME/.approval-gate`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `APPROVAL_GATE_STORE` names no store this build has;
    /// [`Error::NoStateDir`] if none of the variables is set.
    pub fn default_location() -> Result<Location, Error> {
        if let Some(store) = std::env::var_os("APPROVAL_GATE_STORE").filter(|s| !s.is_empty()) {
            let store = store.into_string().map_err(|_| Error::InvalidInput {
                field: "store",
                problem: "APPROVAL_GATE_STORE is not UTF-8".into(),
            })?;
            return Location::parse(&store);
        }
        Self::default_dir().map(Location::Dir)
    }

    /// `APPROVAL_GATE_DIR` if set, else `$HOME/.approval-gate`.
    ///
    /// # Errors
    ///
    /// [`Error::NoStateDir`] if neither variable is set.
    pub fn default_dir() -> Result<PathBuf, Error> {
        if let Some(dir) = std::env::var_os("APPROVAL_GATE_DIR").filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(dir));
        }
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".approval-gate"))
            .ok_or(Error::NoStateDir)
    }

    /// Where this gate's store is.
    #[must_use]
    pub fn location(&self) -> &Location {
        &self.inner.store.about().location
    }

    /// What this gate's store can do, as its backend declares it: how its audit lines go
    /// with their effects, who vouches for the filer it records, how often it records a
    /// repeated refusal. A front end that shows or relies on any of these asks here rather
    /// than looking at the [`location`](Gate::location).
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        self.inner.store.about().capabilities
    }

    /// The state directory, for a directory store.
    #[must_use]
    pub fn dir(&self) -> Option<&Path> {
        match self.location() {
            Location::Dir(dir) => Some(dir),
            Location::Postgres(_) => None,
        }
    }

    /// The operator's limits this gate enforces.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The quorum policy this gate holds, if any.
    #[must_use]
    pub fn policy(&self) -> Option<&Policy> {
        self.inner.policy.as_ref()
    }

    /// How many distinct approvers a request for `operation` needs: the larger of what was
    /// `recorded` with it and what this gate's policy says.
    pub(crate) fn required_approvals(&self, operation: Option<&str>, recorded: u32) -> u32 {
        self.policy()
            .map_or(1, |policy| policy.required_approvals(operation))
            .max(recorded)
    }

    /// The clock every expiry decision of this gate reads.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The current time on this gate's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    pub(crate) fn store(&self) -> &dyn Store {
        &*self.inner.store
    }

    /// The backend's name in traces: `dir` or `postgres`.
    fn store_kind(&self) -> &'static str {
        self.inner.store.about().backend
    }

    /// Runs a public operation inside a `tracing` span (`approval_gate`, at DEBUG: the
    /// operation, the request, the store) and ends it with one event naming its outcome:
    /// `ok`, a refusal's or error's code (DEBUG), or, at WARN, the code of an error that
    /// took effect without completing. The store's steps nest inside, at TRACE.
    pub(crate) fn observed<T>(
        &self,
        operation: &'static str,
        id: Option<RequestId>,
        run: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        let span = tracing::debug_span!(
            "approval_gate",
            operation,
            store = self.store_kind(),
            id = id.as_ref().map(RequestId::as_str)
        );
        let _entered = span.enter();
        let result = run();
        match &result {
            Ok(_) => tracing::debug!(outcome = "ok"),
            Err(error) if error.took_effect() => {
                tracing::warn!(
                    outcome = error.code().as_str(),
                    "took effect, not completely"
                );
            }
            Err(error) => tracing::debug!(outcome = error.code().as_str()),
        }
        result
    }

    /// Records a refusal of `event` for `id` (a line that changes no record); best effort:
    /// the refusal stands whether or not its line can be written.
    pub(crate) fn record_refusal(&self, event: AuditEvent, id: RequestId, fields: Value) {
        let details = details(fields);
        let entry = Entry {
            ts: self.now(),
            event,
            details: &details,
        };
        let _ = self.store().refuse(id, &entry);
    }

    /// Fails if the audit log would refuse an append (broken, or unanchored): checked before
    /// a "yes" takes effect, so that none ever happens without its line.
    pub(crate) fn check_audit_appendable(&self) -> Result<(), Error> {
        self.store().check_appendable()
    }

    /// Loads a request of the live store, telling "archived" from "never existed".
    pub(crate) fn load_live(&self, id: RequestId) -> Result<Request, Error> {
        match self.store().load(id, Shelf::Live)? {
            Some(request) => Ok(request),
            None if self.store().marks(id)?.archived => Err(Error::Archived(id)),
            None => Err(Error::NotFound(id)),
        }
    }

    /// Records the expiry of a pending request that is past it. Call with the request locked.
    pub(crate) fn expire_if_due(
        &self,
        mut request: Request,
        now: Timestamp,
    ) -> Result<Request, Error> {
        if crate::rules::expiry_due(&request, now) {
            request.decide(Status::Expired, now, None);
            let details = details(json!({ "expiresAt": request.expires_at() }));
            let entry = Entry {
                ts: self.now(),
                event: AuditEvent::Expired,
                details: &details,
            };
            request = self.store().decide(&request, "expire", &entry)?;
        }
        Ok(request)
    }

    /// Re-reads a request under its lock, recording its expiry if due, with whether its
    /// approval was claimed.
    pub(crate) fn refresh_locked(&self, id: RequestId, now: Timestamp) -> Result<Refreshed, Error> {
        self.refreshed(id, self.store().load_marked(id)?, now)
    }

    /// [`refresh_locked`](Gate::refresh_locked), with the allowance the request names, as the
    /// store keeps it (uncounted), read with it: a consume's read.
    pub(crate) fn refresh_locked_allowed(
        &self,
        id: RequestId,
        now: Timestamp,
    ) -> Result<(Refreshed, Option<crate::store::allowance::Kept>), Error> {
        let (request, marks, kept) = self.store().load_marked_allowed(id)?;
        Ok((self.refreshed(id, (request, marks), now)?, kept))
    }

    fn refreshed(
        &self,
        id: RequestId,
        loaded: (Option<Request>, crate::store::Marks),
        now: Timestamp,
    ) -> Result<Refreshed, Error> {
        let (request, marks) = match loaded {
            (Some(request), marks) => (request, marks),
            (None, marks) if marks.archived => return Err(Error::Archived(id)),
            (None, _) => return Err(Error::NotFound(id)),
        };
        let request = self.expire_if_due(request, now)?;
        Ok(Refreshed {
            request,
            claimed: marks.claimed,
        })
    }

    /// The report of `request`, as of `now`.
    pub(crate) fn report(&self, request: Request, now: Timestamp) -> Result<StatusReport, Error> {
        let claimed =
            request.status() == Status::Approved && self.store().marks(request.id())?.claimed;
        Ok(self.report_claimed(request, claimed, now))
    }

    /// The report of `request`, whose claim is known (`claimed`), as of `now`: its quorum
    /// under this gate's policy, and its approvals judged by it.
    pub(crate) fn report_claimed(
        &self,
        request: Request,
        claimed: bool,
        now: Timestamp,
    ) -> StatusReport {
        let effective = request.effective(claimed, now);
        let required = self.required_approvals(request.operation(), request.required_approvals());
        StatusReport::new(request, effective, required, self.policy(), now)
    }
}
