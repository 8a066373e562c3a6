//! Where requests live: the steps a backend makes atomic and durable, each with its audit
//! line ([`Store`]), and the audit chain it keeps ([`Chain`]).
//!
//! The rules (which transition is allowed, the order of a consume's checks, what is refused
//! for which reason, which audit event records what) are stated once, in the lifecycle
//! modules (`ask`, `decide`, `consume`, `execute`, `list`, `archive`, `recover`) and in
//! [`rules`](crate::rules). A backend supplies the steps they take: file, decide, spend,
//! refuse, begin and finish an execution, recover, archive; and reading, a lock per request,
//! and change hints. Where it cannot do a step the same way, it says so once, in its
//! [`Capabilities`].
//!
//! Two backends: the directory store ([`dir`]) and `PostgreSQL` (`pg`). The trait is
//! crate-private; a backend is held to the conformance suite in `tests/conformance`, which
//! every backend runs with one line, and which fails if it never calls one of the steps.

pub(crate) mod allowance;
mod capability;
pub(crate) mod dir;
mod location;
pub(crate) mod open;
mod percent;
#[cfg(feature = "postgres")]
pub(crate) mod pg;
#[cfg(feature = "store-trace")]
pub mod traced;
#[cfg(not(feature = "store-trace"))]
mod traced;

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::audit::{AuditEvent, AuditRecord, AuditSummary, Reanchored};
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

pub use capability::{Capabilities, Filer, Refusals};
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

/// What a store is, and what it can do, as it declares it once.
#[derive(Debug, Clone)]
pub(crate) struct About {
    /// Where the store is.
    pub(crate) location: Location,
    /// The backend's name in traces: `dir` or `postgres`.
    pub(crate) backend: &'static str,
    /// Who files through this store, as far as it can tell: a request records it beside its
    /// claimed requester. How far it can be believed is [`Capabilities::filer`]: the directory
    /// store knows only the OS user (which a process on the same account can set as it
    /// likes); the PostgreSQL store names its login, and its database records the session
    /// user whatever this says.
    pub(crate) filer: Option<String>,
    /// What it can do.
    pub(crate) capabilities: Capabilities,
}

/// The audit line that goes with a step. Every step that changes something takes its line
/// and writes it with the effect: in the same transaction on a store with
/// [`atomic_lines`](Capabilities::atomic_lines), otherwise before a "yes" and after a "no", as
/// the rules order them ([`rules::recorded_first`](crate::rules::recorded_first)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    /// When, by the gate's clock.
    pub(crate) ts: Timestamp,
    /// What happened.
    pub(crate) event: AuditEvent,
    /// The event's fields.
    pub(crate) details: &'a Map<String, Value>,
}

/// The queue's caps, as [`Store::file`] applies them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// At most this many pending requests not past their expiry.
    pub(crate) max_pending: usize,
    /// At most this many live (not archived) requests.
    pub(crate) max_requests: usize,
}

/// What [`Store::file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filed {
    /// Filed the request.
    New,
    /// Filed nothing: this identical request is pending.
    Duplicate(RequestId),
    /// Filed nothing: the request's id is taken; a new one is needed.
    IdTaken,
}

/// What [`Store::spend`] did with an approval.
#[derive(Debug)]
pub(crate) enum Spent {
    /// Spent it now, with its `consumed` line: acting is authorized.
    Now,
    /// Nothing: the store refused, for this reason (a replay of an approval spent before is
    /// [`Error::AlreadyConsumed`]). A store that checks a claim again by its own rules, on its
    /// own clock, records its refusal in the same step (`recorded`); otherwise the caller
    /// records it, as it records the refusals it finds itself.
    Refused {
        /// Why.
        refusal: Error,
        /// Whether the store wrote the refusal's line.
        recorded: bool,
    },
}

impl Spent {
    /// A replay of `id`, spent before, which the caller records.
    pub(crate) fn before(id: RequestId) -> Self {
        Self::Refused {
            refusal: Error::AlreadyConsumed(id),
            recorded: false,
        }
    }
}

/// Which records [`Store::load`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shelf {
    /// The live store.
    Live,
    /// The archive.
    Archived,
}

/// Which records [`Store::scan`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Those the pending index names (among them, decided ones the store has not yet
    /// dropped from it; an entry whose record does not exist yet, mid-filing, is left out).
    Pending,
    /// Every live record.
    Live,
}

/// What a store keeps beside a request's record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// Its approval was spent (the single-use claim exists).
    pub(crate) claimed: bool,
    /// An execution of it started and has not recorded its outcome.
    pub(crate) executing: bool,
    /// It was archived.
    pub(crate) archived: bool,
}

/// The steps a backend supplies: each one atomic and durable, and each that changes
/// something writes its audit line with it ([`Entry`]), so the lifecycle has one path per
/// operation whatever the store. The lifecycle decides which step to take and when; what a
/// backend cannot do the same way it declares in [`About::capabilities`].
pub(crate) trait Store: Chain + Send + Sync + fmt::Debug {
    /// What this store is and can do.
    fn about(&self) -> &About;

    // ------------------------------------------------------------------- reading

    /// The record of `id` in `place`, or `None`. A record that cannot be read is
    /// [`Error::Unreadable`] for its id alone; other trouble is any other error.
    fn load(&self, id: RequestId, place: Shelf) -> Result<Option<Request>, Error>;
    /// Whether `error`, from [`load`](Store::load) of `id`, is about that record alone (so a
    /// scan lists it as unreadable and goes on), not about the store.
    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool;
    /// What the store keeps beside the record of `id`.
    fn marks(&self, id: RequestId) -> Result<Marks, Error>;
    /// The live record of `id` (as [`load`](Store::load) gives it) and its
    /// [`marks`](Store::marks): the lifecycle's read of a request under its lock. A store that
    /// can read both at once does so in one read.
    fn load_marked(&self, id: RequestId) -> Result<(Option<Request>, Marks), Error>;
    /// [`load_marked`](Store::load_marked), and for a request an allowance approved that
    /// allowance as [`allowance`](Store::allowance) gives it uncounted (`None` if it names
    /// none, or none is kept): what a consume reads under the request's lock. A store that can
    /// read them at once does so in one read.
    fn load_marked_allowed(&self, id: RequestId) -> Result<MarkedAllowed, Error>;
    /// Each id in `scope` with its live record as [`load`](Store::load) gives it, in no order.
    fn scan(&self, scope: Scope) -> Result<Vec<Loaded>, Error>;

    // --------------------------------------------------------------------- steps

    /// Serialises decisions, spending and archiving of one request, for as long as the
    /// value lives: the lifecycle reads the record, applies the rules and takes its step
    /// under it.
    fn lock(&self, id: RequestId) -> Result<Guard, Error>;
    /// Serialises the recording of passkey approvals across the whole store, for as long as
    /// the value lives: the lifecycle reads the signature counters of the approvals stored
    /// and writes the new one under it (WebAuthn §7.2 step 22). Taken while holding a
    /// request's [`lock`](Store::lock), never before one.
    fn lock_counters(&self) -> Result<Guard, Error>;
    /// Files a new pending request with its `requested` line, in one step that also applies
    /// the queue's caps (pending requests not past their expiry, live requests; a record
    /// that cannot be read counts) and finds an identical pending request not past its
    /// expiry. Errors once the record may exist are [`Error::DurabilityUnknown`].
    fn file(&self, request: &Request, caps: Caps, entry: &Entry<'_>) -> Result<Filed, Error>;
    /// Replaces the record of a request the caller holds the [`lock`](Store::lock) of with
    /// its decision (approved, an approval added, denied, revoked, expired) and the line
    /// that records it; the record as stored (a store may set the decision's time and name
    /// from its own clock and session). A failure once the new record may be in place is
    /// [`Error::DurabilityUnknown`] or [`Error::NotRecorded`] for `operation`.
    fn decide(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<Request, Error>;
    /// Spends the approval of `id` (locked by the caller) with its `consumed` line, at
    /// `entry.ts`. A failure once it may be spent is [`Error::DurabilityUnknown`] or
    /// [`Error::NotRecorded`]: nothing is authorized, and nothing can be spent again.
    fn spend(&self, id: RequestId, entry: &Entry<'_>) -> Result<Spent, Error>;
    /// [`spend`](Store::spend) of a request an allowance approved: under the allowance's own
    /// lock (taken inside the request's, which the caller holds), in one step, reads the
    /// allowance's uses, refuses if it was revoked or `under`'s bounds do not admit one more
    /// use of `under.amount` at `entry.ts`, else counts the use and spends the approval, with
    /// its `consumed` line. A use counted is never given back: a crash after it and before
    /// the claim costs a use, never overdraws.
    fn spend_under(
        &self,
        id: RequestId,
        under: &allowance::Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error>;
    /// Records a refusal (`consume_refused`, `consume_replayed`, `decision_refused`): a line
    /// that changes no record. Its position in the chain.
    fn refuse(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error>;
    /// Marks `id` as executing for as long as the returned value lives, durably enough that
    /// a crash leaves the mark for [`recover`](Store::recover) to find, with its
    /// `execution_started` line: no execution starts unrecorded.
    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error>;
    /// While `on`, the steps this thread takes may return before they are durable: for a
    /// consume that [`begin_execution`](Store::begin_execution) follows at once, whose own
    /// durability makes both durable before anything runs (one sync where two were). A
    /// caller that turns it off without such a step calls [`flush`](Store::flush).
    fn defer_durability(&self, on: bool) {
        let _ = on;
    }
    /// Makes every step taken so far durable (those taken while deferred included).
    fn flush(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Records an execution's outcome (its `execution_finished` line) and removes its mark:
    /// a mark whose outcome could not be recorded stays, for recovery to report as unknown.
    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error>;
    /// Repairs what a crash can leave, at `now`: a spent approval without its `consumed`
    /// line gets one (`"recovered": true`), and an execution whose executor is gone gets
    /// `execution_finished` with outcome `unknown`. Never re-runs nor un-spends anything;
    /// idempotent, and safe from any process at any time.
    fn recover(&self, now: Timestamp) -> Result<Recovery, Error>;
    /// Moves a finished request (locked by the caller) out of the live store with its
    /// `archived` line. An error once the record moved says the request is archived but not
    /// all was recorded ([`Error::NotRecorded`] or [`Error::DurabilityUnknown`]).
    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error>;

    // ---------------------------------------------------------------- allowances

    /// Keeps a signed allowance (verified by the caller) with its `allowance_granted` line, or
    /// `allowance_proposed` while it carries fewer signatures than its quorum: its terms
    /// written once, never changed (only [`cosign_allowance`](Store::cosign_allowance) adds a
    /// signature). `false` (nothing kept, no line) if its id is taken.
    fn grant_allowance(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error>;
    /// Adds one more approver's signature (checked by the caller against the allowance as
    /// kept) to the allowance `id`, with its `allowance_signed` line (whose details the store
    /// completes with `signatures`, how many it then carries): under the allowance's lock, so
    /// approvers signing at once all count. Nothing is added to a revoked allowance, or twice
    /// for one principal.
    fn cosign_allowance(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<allowance::Cosigned, Error>;
    /// Revokes the allowance `id` with its `allowance_revoked` line, for every use not yet
    /// counted: under the allowance's lock, so a use counted at the same moment is either
    /// before it or refused.
    fn revoke_allowance(
        &self,
        id: RequestId,
        entry: &Entry<'_>,
    ) -> Result<allowance::Revoked, Error>;
    /// The allowance `id` with its uses and whether it is revoked, or `None`.
    fn allowance(&self, id: RequestId) -> Result<Option<allowance::Kept>, Error>;
    /// Every allowance kept (revoked and ended ones too), in no order.
    fn allowances(&self) -> Result<Vec<allowance::Kept>, Error>;

    // ------------------------------------------------------------- health, watch

    /// Entries of the store that it did not write, for a human to look at (names relative
    /// to the store); a store that keeps nothing of its own beside its records has none.
    fn stray_entries(&self) -> Result<Vec<PathBuf>, Error>;
    /// The notifications ledger, for a notifier ([`crate::Notices`]): on a store that takes
    /// one notifier at a time (a directory), refused while another process holds it.
    fn notices(&self) -> Result<Box<dyn crate::notices::Ledger>, Error>;
    /// The messages notifiers gave up on, oldest first.
    fn dead_letters(&self) -> Result<Vec<crate::notices::DeadLetter>, Error>;
    /// Starts sending change hints to `sink` (from the store's own thread) until the
    /// returned value is dropped; `Err` saying why if it cannot, and then waits poll. Hints
    /// may be lost or spurious: whoever wakes reads the store again.
    fn watch(&self, sink: crate::change::ChangeSink) -> Result<Guard, String>;
}

/// The audit chain a store keeps: every [`Store`] step appends to it; these read, check and
/// re-anchor it.
pub(crate) trait Chain {
    /// Fails if an append would be refused (a broken or unanchored chain).
    fn check_appendable(&self) -> Result<(), Error>;
    /// Verifies the chain and its anchor, with the records of at least the lines it
    /// verified, oldest first, read once (a log read twice may have grown, or, mid-append,
    /// end in a torn line).
    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error>;
    /// Every record, oldest first, checked while reading.
    fn records(&self) -> Result<Vec<AuditRecord>, Error>;
    /// Accepts the chain as it is; see [`Gate::reanchor_audit`](crate::Gate::reanchor_audit).
    fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error>;
}

/// What a recovery pass repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovery {
    /// Claims whose `consumed` line was missing and has been added.
    pub consumed: Vec<RequestId>,
    /// Executions whose process ended without an outcome, now recorded as `unknown`.
    pub unknown_outcomes: Vec<RequestId>,
}

impl Recovery {
    /// Whether anything was repaired.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.consumed.is_empty() && self.unknown_outcomes.is_empty()
    }
}

/// The operation a refusal line is of ([`Store::refuse`]): `consume` or `decide`. Any other
/// event is written by the step it records, never on its own.
pub(crate) fn refusal_operation(event: AuditEvent) -> Result<&'static str, Error> {
    match event {
        AuditEvent::ConsumeRefused | AuditEvent::ConsumeReplayed => Ok("consume"),
        AuditEvent::DecisionRefused => Ok("decide"),
        other => Err(Error::InvalidInput {
            field: "event",
            problem: format!("{other:?} is written by the step it records, not as a refusal"),
        }),
    }
}

/// A live record, its marks, and the allowance that approved it
/// ([`Store::load_marked_allowed`]).
pub(crate) type MarkedAllowed = (Option<Request>, Marks, Option<allowance::Kept>);

/// An id and what loading its live record gave.
pub(crate) type Loaded = (RequestId, Result<Option<Request>, Error>);
