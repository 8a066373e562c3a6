//! Where requests live: the steps a backend must make atomic and durable.
//!
//! The rules (which transition is allowed, the order of a consume's checks, what is refused
//! for which reason, which audit event records what) are stated once, in the lifecycle
//! modules (`ask`, `decide`, `consume`, `execute`, `list`, `archive`, `recover`) and in
//! [`rules`](crate::rules). A backend supplies only what they ask of it: read and write a
//! record, serialise the decisions on one request, make a single-use claim, keep an
//! execution's liveness visible, append to the audit chain, and say when something changed.
//!
//! The directory store ([`dir`]) is the first backend. The trait is crate-private while the
//! second (`PostgreSQL`) is built: a backend is held to the conformance suite in
//! `tests/conformance`, which every backend runs with one line.

pub(crate) mod dir;
mod location;
pub(crate) mod open;
mod percent;
#[cfg(feature = "postgres")]
pub(crate) mod pg;

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::audit::{AuditEvent, AuditRecord, AuditSummary, Reanchored};
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

pub use location::Location;

/// A lock or liveness token held for as long as the value lives.
pub(crate) struct Guard(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Guard {
    pub(crate) fn new(guard: impl Send + Sync + 'static) -> Self {
        Self(Box::new(guard))
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guard")
    }
}

/// The audit record that goes with an effect. A backend that [records
/// effects](Store::records_effects) writes it in the same transaction as the effect; the
/// directory store leaves it to the lifecycle, which appends it before or after.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct Entry<'a> {
    /// When, by the gate's clock.
    pub(crate) ts: Timestamp,
    /// What happened.
    pub(crate) event: AuditEvent,
    /// The event's fields.
    pub(crate) details: &'a Map<String, Value>,
}

/// The queue's caps, as [`Store::file_at_once`] applies them.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct Caps {
    /// At most this many pending requests not past their expiry.
    pub(crate) max_pending: usize,
    /// At most this many live (not archived) requests.
    pub(crate) max_requests: usize,
}

/// What [`Store::file_at_once`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum Filed {
    /// Filed the request.
    New,
    /// Filed nothing: this identical request is pending.
    Duplicate(RequestId),
    /// Filed nothing: the request's id is taken; a new one is needed.
    IdTaken,
}

/// The steps a backend supplies. Every method is one atomic, durable step unless it says
/// otherwise; the lifecycle code decides their order and what they mean.
pub(crate) trait Store: Send + Sync + fmt::Debug {
    /// Where this store is.
    fn location(&self) -> &Location;

    /// Whether the effect steps ([`insert`](Store::insert), [`save`](Store::save),
    /// [`claim`](Store::claim), [`begin_execution`](Store::begin_execution),
    /// [`finish_execution`](Store::finish_execution))
    /// write their audit [`Entry`] themselves, atomically with the effect. When they do, the
    /// lifecycle appends nothing of its own for them; when not, it appends each entry in the
    /// order the rules give (a "yes" recorded first, a "no" after).
    fn records_effects(&self) -> bool {
        false
    }

    /// Who files through this store, as far as it can tell: a request records it beside its
    /// claimed requester. The directory store knows only the OS user (which a process on the
    /// same account can set as it likes); the PostgreSQL store names its login here and its
    /// database records the session user whatever this says.
    fn filer(&self) -> Option<String> {
        Some(crate::request::os_user())
    }

    // ------------------------------------------------------------------- records

    /// The live record of `id`, or `None`. A record that cannot be read is
    /// [`Error::Unreadable`] for its id alone; other trouble is any other error.
    fn load(&self, id: RequestId) -> Result<Option<Request>, Error>;
    /// Whether `error`, from [`load`](Store::load) of `id`, is about that record alone (so a
    /// scan lists it as unreadable and goes on), not about the store.
    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool;
    /// The archived record of `id`, or `None`.
    fn load_archived(&self, id: RequestId) -> Result<Option<Request>, Error>;
    /// Whether `id` was archived.
    fn is_archived(&self, id: RequestId) -> Result<bool, Error>;
    /// Replaces the record of an existing request; a failure once the new record may be in
    /// place is [`Error::DurabilityUnknown`] for `operation`.
    fn save(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<(), Error>;

    // --------------------------------------------------------------- serialising

    /// Serialises decisions, consumption and archiving of one request.
    fn lock(&self, id: RequestId) -> Result<Guard, Error>;
    /// Serialises filing (queue cap, de-duplication, fresh ids).
    fn lock_filing(&self) -> Result<Guard, Error>;

    // -------------------------------------------------------------------- filing

    /// Whether `id` was ever used here (live, archived, or mid-filing).
    fn id_taken(&self, id: RequestId) -> Result<bool, Error>;
    /// How many requests the live store holds (each unreadable record counts).
    fn count_live(&self) -> Result<usize, Error>;
    /// Files a new pending request, indexed as pending. Errors after the record may exist
    /// are [`Error::DurabilityUnknown`] for `request`.
    fn insert(&self, request: &Request, entry: &Entry<'_>) -> Result<(), Error>;
    /// Whether the store files through [`file_at_once`](Store::file_at_once), not under
    /// [`lock_filing`](Store::lock_filing) with [`insert`](Store::insert).
    fn files_at_once(&self) -> bool {
        false
    }
    /// Files `request` in one step of the store's own that also applies the queue's caps and
    /// finds an identical pending request, all atomically, so that filings need not be
    /// serialised by [`lock_filing`](Store::lock_filing). `None`: the store has no such step
    /// (see [`files_at_once`](Store::files_at_once)).
    fn file_at_once(
        &self,
        _request: &Request,
        _caps: Caps,
        _entry: &Entry<'_>,
    ) -> Option<Result<Filed, Error>> {
        None
    }
    /// The ids the pending index names, in no order. Called with `filing` held, entries
    /// without a record are dropped from the index (none can be mid-filing).
    fn pending_ids(&self) -> Result<Vec<RequestId>, Error>;
    /// Each id the pending index names with its [`load`](Store::load): what a scan of the
    /// pending queue reads, in one go where the backend can.
    fn load_pending(&self) -> Result<Vec<Loaded>, Error> {
        Ok(self
            .pending_ids()?
            .into_iter()
            .map(|id| (id, self.load(id)))
            .collect())
    }
    /// Drops `id` from the pending index (done after a decision; a leftover entry is
    /// harmless and dropped by the next scan).
    fn unindex(&self, id: RequestId) -> Result<(), Error>;
    /// Every id in the live store, in no order.
    fn live_ids(&self) -> Result<Vec<RequestId>, Error>;

    // -------------------------------------------------------------------- claims

    /// Makes the single-use claim that spends the approval of `id`: `Ok(false)` if it
    /// already exists. A failure after the claim may exist is [`Error::DurabilityUnknown`].
    /// A backend that records effects may refuse here with the consume refusal it found (the
    /// rules it enforces itself, on its own clock), having recorded it.
    fn claim(
        &self,
        id: RequestId,
        consumed_at: Timestamp,
        entry: &Entry<'_>,
    ) -> Result<bool, Error>;
    /// Whether the claim of `id` exists.
    fn is_claimed(&self, id: RequestId) -> Result<bool, Error>;
    /// Notes that the `consumed` line of `id` is durable (a hint for recovery).
    fn note_logged(&self, id: RequestId) -> Result<(), Error>;
    /// Claims not yet noted as logged: recovery checks the log for each.
    fn unlogged_claims(&self) -> Result<Vec<RequestId>, Error>;
    /// Whether the claim of `id` has been noted as logged (re-checked under the lock).
    fn is_logged(&self, id: RequestId) -> Result<bool, Error>;

    // ---------------------------------------------------------------- executions

    /// Marks `id` as executing for as long as the returned value lives, durably enough that
    /// a crash leaves the mark for [`dead_execution`](Store::dead_execution) to find, and
    /// records its `execution_started` line ([`Entry`]), as one step: no execution starts
    /// unrecorded.
    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error>;
    /// Records an execution's outcome (its `execution_finished` line) and then removes its
    /// mark, as one step: a mark whose outcome could not be recorded stays, for recovery to
    /// report as unknown.
    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error>;
    /// Records `outcome unknown` for every execution whose executor is gone, if the backend
    /// does that itself; `None` to leave it to the lifecycle ([`executions`](Store::executions),
    /// [`dead_execution`](Store::dead_execution)).
    fn recover_executions(&self, now: Timestamp) -> Option<Result<Vec<RequestId>, Error>> {
        let _ = now;
        None
    }
    /// Removes the execution mark of `id` once its outcome is recorded (recovery).
    fn end_execution(&self, id: RequestId) -> Result<(), Error>;
    /// Ids with an execution mark, live or dead.
    fn executions(&self) -> Result<Vec<RequestId>, Error>;
    /// Takes over the execution mark of `id` if its executor is gone; `None` while it lives.
    fn dead_execution(&self, id: RequestId) -> Result<Option<Guard>, Error>;
    /// Whether `id` has an execution mark.
    fn is_executing(&self, id: RequestId) -> Result<bool, Error>;

    // ------------------------------------------------------------------- archive

    /// Moves a finished request out of the live store with its `archived` line ([`Entry`]),
    /// as one step, under its [`lock`](Store::lock): the record first (so a claim left
    /// behind spends nothing, while a record left behind without its claim could look
    /// unconsumed), then its claim and index entries, the line, and what serialised it. An
    /// error once the record moved says the request is archived but not all was recorded
    /// ([`Error::NotRecorded`] or [`Error::DurabilityUnknown`]).
    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error>;

    // --------------------------------------------------------------------- audit

    /// Appends one line to the audit chain, durably; its sequence number.
    fn append(
        &self,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<u64, Error>;
    /// Fails if an append would be refused (broken or unanchored chain).
    fn check_appendable(&self) -> Result<(), Error>;
    /// Verifies the chain and its anchor.
    fn verify(&self) -> Result<AuditSummary, Error>;
    /// [`verify`](Store::verify), and the records of at least the lines it verified, oldest
    /// first (a backend that can read both at once should: a log read twice may have grown,
    /// or, mid-append, end in a torn line).
    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        let summary = self.verify()?;
        Ok((summary, self.records()?))
    }
    /// Every record, oldest first, checked while reading.
    fn records(&self) -> Result<Vec<AuditRecord>, Error>;
    /// Accepts the chain as it is; see [`Gate::reanchor_audit`](crate::Gate::reanchor_audit).
    fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error>;
    /// Cuts a torn last line that was never acknowledged.
    fn repair_torn_tail(&self) -> Result<(), Error>;

    // -------------------------------------------------------------------- health

    /// Entries the store did not write, for a human to look at (relative names).
    fn stray_entries(&self) -> Result<Vec<PathBuf>, Error>;

    // --------------------------------------------------------------------- watch

    /// Starts sending change hints to `sink` (from the store's own thread) until the
    /// returned value is dropped; `Err` saying why if it cannot, and then waits poll. Hints
    /// may be lost or spurious: whoever wakes reads the store again.
    fn watch(&self, sink: crate::change::ChangeSink) -> Result<Guard, String>;
}

/// An id and what loading its live record gave.
pub(crate) type Loaded = (RequestId, Result<Option<Request>, Error>);
