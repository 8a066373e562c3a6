//! The gate: a directory of request files, claims and an audit log.
//!
//! On-disk layout (all directories `0700`, all files `0600`):
//!
//! ```text
//! <dir>/
//!   gate.lock            lock for creating requests (queue cap, de-duplication)
//!   audit.jsonl          hash-chained audit log, one JSON object per line
//!   audit.head           anchor of the audit log (last sequence number and hash); its lock
//!   requests/<id>.json   every live request: the authoritative record
//!   pending/<id>         empty marker per pending request: the index that keeps listing
//!                        pending requests proportional to the pending queue, not to history
//!   claims/<id>.used     consume claim, made by exclusive create; its existence spends the approval
//!   locks/<id>.lock      per-request lock serialising decisions and consumption; never renamed over
//!   archive/<id>.json    archived requests (and their claims as <id>.used): never usable again
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::audit::{AuditEvent, AuditLog, AuditRecord, AuditSummary};
use crate::error::Error;
use crate::fs;
use crate::grant::Grant;
use crate::id::RequestId;
use crate::payload::CanonicalPayload;
use crate::request::{
    Binding, Decision, EffectiveStatus, NewRequest, Request, Status, StatusReport,
};
use crate::time::{Clock, SystemClock, Timestamp};

/// Largest request file we will read; anything larger was not written by us.
const MAX_REQUEST_FILE: u64 = 1024 * 1024;
/// Nothing younger than this (in creation and in expiry) is ever archived.
pub const MIN_ARCHIVE_AGE_DAYS: u32 = 8;
/// Largest page [`Gate::list`] returns.
pub const MAX_PAGE: usize = 1000;

/// Limits that keep an agent from flooding the store. They fail new requests, never a
/// human's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    max_pending: usize,
    max_requests: usize,
}

impl Default for Limits {
    /// 100 pending requests, 10 000 requests on disk.
    fn default() -> Self {
        Self {
            max_pending: 100,
            max_requests: 10_000,
        }
    }
}

impl Limits {
    /// Caps the pending queue (`approval queue full` beyond it).
    #[must_use]
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }

    /// Caps the requests kept in the live store (archive finished ones to make room).
    #[must_use]
    pub fn max_requests(mut self, max: usize) -> Self {
        self.max_requests = max;
        self
    }
}

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

/// The answer to [`Gate::request_approval`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Submitted {
    /// The request now pending.
    pub request: Request,
    /// `true` if an identical pending request already existed and is returned instead.
    pub deduplicated: bool,
}

/// Configures and opens a [`Gate`].
#[derive(Debug, Default)]
pub struct GateBuilder {
    dir: Option<PathBuf>,
    clock: Option<Arc<dyn Clock>>,
    limits: Limits,
}

impl GateBuilder {
    /// The state directory (default: `APPROVAL_GATE_DIR`, else `~/.approval-gate`).
    #[must_use]
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// The clock for every expiry decision (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Queue and store limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Opens the store, creating its directories `0700` if needed.
    ///
    /// # Errors
    ///
    /// [`Error::UnsafeState`] if the directory or a state file is a symlink, not owned by
    /// this user or writable by others; [`Error::NoStateDir`] without a directory to use;
    /// [`Error::Io`] if it cannot be created.
    pub fn open(self) -> Result<Gate, Error> {
        let root = match self.dir {
            Some(dir) => dir,
            None => Gate::default_dir()?,
        };
        let layout = Layout { root };
        if let Some(parent) = layout.root.parent()
            && !parent.as_os_str().is_empty()
            && !parent.exists()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io("creating directory", parent, e))?;
        }
        fs::ensure_dir(&layout.root)?;
        for dir in [
            layout.requests_dir(),
            layout.pending_dir(),
            layout.claims_dir(),
            layout.locks_dir(),
            layout.archive_dir(),
        ] {
            fs::ensure_dir(&dir)?;
        }
        for file in ["audit.jsonl", "audit.head", "gate.lock"] {
            fs::open_existing(&layout.root.join(file))?;
        }
        Ok(Gate {
            inner: Arc::new(Inner {
                audit: AuditLog::new(&layout.root),
                layout,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                limits: self.limits,
            }),
        })
    }
}

#[derive(Debug)]
struct Layout {
    root: PathBuf,
}

impl Layout {
    fn requests_dir(&self) -> PathBuf {
        self.root.join("requests")
    }
    fn pending_dir(&self) -> PathBuf {
        self.root.join("pending")
    }
    fn claims_dir(&self) -> PathBuf {
        self.root.join("claims")
    }
    fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }
    fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }
    fn request(&self, id: RequestId) -> PathBuf {
        self.requests_dir().join(format!("{id}.json"))
    }
    fn marker(&self, id: RequestId) -> PathBuf {
        self.pending_dir().join(id.as_str())
    }
    fn claim(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.used"))
    }
    fn lock(&self, id: RequestId) -> PathBuf {
        self.locks_dir().join(format!("{id}.lock"))
    }
    fn archived(&self, id: RequestId) -> PathBuf {
        self.archive_dir().join(format!("{id}.json"))
    }
    fn archived_claim(&self, id: RequestId) -> PathBuf {
        self.archive_dir().join(format!("{id}.used"))
    }
}

#[derive(Debug)]
struct Inner {
    layout: Layout,
    audit: AuditLog,
    clock: Arc<dyn Clock>,
    limits: Limits,
}

/// The approval gate: a file-backed store of requests, decisions and single-use consumes.
///
/// Cheap to clone; clones share configuration. Every operation is safe to run from many
/// threads and processes at once: decisions and consumption of one request are serialised by
/// a lock file.
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

/// An exclusive lock held for the life of the value.
struct Locked {
    _lock: Box<fd_lock::RwLock<std::fs::File>>,
}

fn lock_exclusive(path: &Path) -> Result<Locked, Error> {
    let file = fs::open_lock(path)?;
    let mut lock = Box::new(fd_lock::RwLock::new(file));
    // fd-lock hands out a guard borrowing the lock; flock(2) itself is held by the open file
    // description until it is closed, so keep the file and forget the guard.
    std::mem::forget(lock.write().map_err(|e| Error::io("locking", path, e))?);
    Ok(Locked { _lock: lock })
}

fn details(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

impl Gate {
    /// Opens the store in `dir` with the system clock and default limits.
    ///
    /// # Errors
    ///
    /// As [`GateBuilder::open`].
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        Self::builder().dir(dir).open()
    }

    /// Opens the store in `APPROVAL_GATE_DIR`, else `~/.approval-gate`.
    ///
    /// # Errors
    ///
    /// As [`GateBuilder::open`].
    pub fn open_default() -> Result<Self, Error> {
        Self::builder().open()
    }

    /// A builder to choose the directory, clock and limits.
    #[must_use]
    pub fn builder() -> GateBuilder {
        GateBuilder::default()
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

    /// The state directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.layout.root
    }

    /// The current time on this gate's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    fn audit(&self, event: AuditEvent, id: RequestId, fields: Value) -> Result<u64, Error> {
        self.inner
            .audit
            .append(self.now(), event, id, &details(fields))
    }

    fn load(&self, id: RequestId) -> Result<Option<Request>, Error> {
        let path = self.layout().request(id);
        let Some(bytes) = fs::read_bounded(&path, MAX_REQUEST_FILE)? else {
            return Ok(None);
        };
        let corrupt = |problem: String| Error::Corrupt {
            path: path.clone(),
            problem,
        };
        let request: Request =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        request.check(id).map_err(corrupt)?;
        Ok(Some(request))
    }

    /// Loads a request of the live store, telling "archived" from "never existed".
    fn load_live(&self, id: RequestId) -> Result<Request, Error> {
        match self.load(id)? {
            Some(request) => Ok(request),
            None if fs::exists(&self.layout().archived(id))? => Err(Error::Archived(id)),
            None => Err(Error::NotFound(id)),
        }
    }

    fn lock(&self, id: RequestId) -> Result<Locked, Error> {
        lock_exclusive(&self.layout().lock(id))
    }

    fn is_claimed(&self, id: RequestId) -> Result<bool, Error> {
        fs::exists(&self.layout().claim(id))
    }

    fn save(&self, request: &Request) -> Result<(), Error> {
        let bytes = serde_json::to_vec(request).map_err(|e| Error::Corrupt {
            path: self.layout().request(request.id()),
            problem: format!("cannot encode: {e}"),
        })?;
        fs::write_atomic(&self.layout().request(request.id()), &bytes)
    }

    /// Records the expiry of a pending request that is past it. Call with the request locked.
    fn expire_if_due(&self, mut request: Request, now: Timestamp) -> Result<Request, Error> {
        if request.status() == Status::Pending && request.is_past_expiry(now) {
            request.decide(Status::Expired, now, None);
            // A "no" takes effect first and is recorded after.
            self.save(&request)?;
            self.audit(
                AuditEvent::Expired,
                request.id(),
                json!({ "expiresAt": request.expires_at() }),
            )?;
            fs::remove_if_exists(&self.layout().marker(request.id()))?;
        }
        Ok(request)
    }

    /// Re-reads a request under its lock, recording its expiry if due.
    fn refresh_locked(&self, id: RequestId, now: Timestamp) -> Result<(Request, bool), Error> {
        let request = self.expire_if_due(self.load_live(id)?, now)?;
        let claimed = self.is_claimed(id)?;
        Ok((request, claimed))
    }

    fn report(&self, request: Request, now: Timestamp) -> Result<StatusReport, Error> {
        let claimed = request.status() == Status::Approved && self.is_claimed(request.id())?;
        let effective = request.effective(claimed, now);
        Ok(StatusReport::new(request, effective))
    }

    // ---------------------------------------------------------------- requests

    /// Files a request for a human decision.
    ///
    /// An identical pending request (same action, operation, payload digest and requester)
    /// is returned instead of filing a second one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for unacceptable fields (nothing is written);
    /// [`Error::QueueFull`] or [`Error::CreationLimit`] when a limit is reached.
    pub fn request_approval(&self, new: NewRequest) -> Result<Submitted, Error> {
        new.validate()?;
        let _creation = lock_exclusive(&self.layout().root.join("gate.lock"))?;
        let now = self.now();
        let pending = self.scan_pending(now, true)?;
        if let Some(existing) = pending.iter().find(|r| r.same_ask(&new)) {
            return Ok(Submitted {
                request: existing.clone(),
                deduplicated: true,
            });
        }
        let limits = self.inner.limits;
        let pending_now = pending.len();
        if pending_now >= limits.max_pending {
            return Err(Error::QueueFull {
                pending: pending_now,
                limit: limits.max_pending,
            });
        }
        let on_disk = fs::count_entries(&self.layout().requests_dir())?;
        if on_disk >= limits.max_requests {
            return Err(Error::CreationLimit {
                requests: on_disk,
                limit: limits.max_requests,
            });
        }
        let id = self.fresh_id()?;
        let request = Request::new(id, new, now);
        // The marker goes first: a crash leaves at worst a marker without a request, which
        // the next creation cleans up, never a pending request missing from the index.
        fs::open_lock(&self.layout().lock(id))?;
        fs::create_exclusive(&self.layout().marker(id), b"")?;
        self.save(&request)?;
        self.audit(
            AuditEvent::Requested,
            id,
            json!({
                "action": request.action(),
                "reason": request.reason(),
                "requestedBy": request.requested_by(),
                "operation": request.operation(),
                "payloadDigest": request.payload_digest(),
                "expiresAt": request.expires_at(),
            }),
        )?;
        Ok(Submitted {
            request,
            deduplicated: false,
        })
    }

    fn fresh_id(&self) -> Result<RequestId, Error> {
        loop {
            let id = RequestId::random()?;
            let layout = self.layout();
            let taken = fs::exists(&layout.request(id))?
                || fs::exists(&layout.archived(id))?
                || fs::exists(&layout.marker(id))?
                || fs::exists(&layout.claim(id))?;
            if !taken {
                return Ok(id);
            }
        }
    }

    /// The pending requests, reading only what the pending index names. Records the expiry
    /// of those past it. Markers of decided requests are removed; markers without a request
    /// are removed only under the creation lock, since one may belong to a creation in
    /// progress.
    fn scan_pending(&self, now: Timestamp, creation_locked: bool) -> Result<Vec<Request>, Error> {
        let mut pending = Vec::new();
        for name in fs::list_names(&self.layout().pending_dir())? {
            let Ok(id) = RequestId::parse(&name) else {
                continue;
            };
            match self.load(id)? {
                None => {
                    if creation_locked {
                        fs::remove_if_exists(&self.layout().marker(id))?;
                    }
                }
                Some(request) if request.status() != Status::Pending => {
                    fs::remove_if_exists(&self.layout().marker(id))?;
                }
                Some(request) if request.is_past_expiry(now) => {
                    let _lock = self.lock(id)?;
                    self.refresh_locked(id, now)?;
                }
                Some(request) => pending.push(request),
            }
        }
        Ok(pending)
    }

    /// Where a request stands. Records the expiry of a pending request past it.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] or [`Error::Archived`] for an id not in the live store.
    pub fn status(&self, id: RequestId) -> Result<StatusReport, Error> {
        let now = self.now();
        let request = self.load_live(id)?;
        let request = if request.status() == Status::Pending && request.is_past_expiry(now) {
            let _lock = self.lock(id)?;
            self.refresh_locked(id, now)?.0
        } else {
            request
        };
        self.report(request, now)
    }

    // --------------------------------------------------------------- decisions

    /// Approves a pending request. Only a human, out of band, should ever call this.
    ///
    /// The `approved` audit line is written before the approval takes effect, so an approval
    /// never exists without its record.
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] if it expired first; [`Error::WrongState`] if it is not pending.
    pub fn approve(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Status::Approved)
    }

    /// Denies a pending request.
    ///
    /// # Errors
    ///
    /// [`Error::Expired`] if it expired first; [`Error::WrongState`] if it is not pending.
    pub fn deny(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Status::Denied)
    }

    /// Revokes an approval that has not been consumed.
    ///
    /// # Errors
    ///
    /// [`Error::WrongState`] unless the request is approved and unconsumed.
    pub fn revoke(&self, id: RequestId, decision: &Decision) -> Result<StatusReport, Error> {
        self.decide(id, decision, Status::Revoked)
    }

    fn decide(
        &self,
        id: RequestId,
        decision: &Decision,
        to: Status,
    ) -> Result<StatusReport, Error> {
        decision.validate()?;
        self.load_live(id)?;
        let _lock = self.lock(id)?;
        let now = self.now();
        let (mut request, claimed) = self.refresh_locked(id, now)?;
        let current = request.effective(claimed, now);
        let (operation, allowed, event) = match to {
            Status::Approved => (
                "approve",
                current == EffectiveStatus::Pending,
                AuditEvent::Approved,
            ),
            Status::Denied => (
                "deny",
                current == EffectiveStatus::Pending,
                AuditEvent::Denied,
            ),
            _ => (
                "revoke",
                matches!(
                    current,
                    EffectiveStatus::ApprovedUnconsumed | EffectiveStatus::ApprovedExpired
                ),
                AuditEvent::Revoked,
            ),
        };
        if !allowed {
            return Err(
                if current == EffectiveStatus::Expired && to != Status::Revoked {
                    Error::Expired(id)
                } else {
                    Error::WrongState {
                        id,
                        operation,
                        status: current,
                    }
                },
            );
        }
        request.decide(to, now, Some(decision));
        let record = json!({
            "decidedBy": request.decided_by(),
            "reason": request.decision_reason(),
        });
        if to == Status::Approved {
            // A "yes" is recorded before it takes effect...
            self.audit(event, id, record)?;
            self.save(&request)?;
        } else {
            // ...a "no" takes effect before it is recorded.
            self.save(&request)?;
            self.audit(event, id, record)?;
        }
        fs::remove_if_exists(&self.layout().marker(id))?;
        self.report(request, now)
    }

    // ---------------------------------------------------------------- consume

    /// Consumes an approval: the only thing that authorizes acting.
    ///
    /// Succeeds once, and only if, in this order: the request exists; it is approved; it
    /// has not been consumed or revoked; the clock is at or before its expiry; the action
    /// text is byte-for-byte equal; the operation is equal; the payload is equal as
    /// canonical JSON; and the approved payload round-trips through `T` exactly. Then the
    /// claim is made durable, the `consumed` line is written and fsynced, and the clock is
    /// read again: if the approval expired meanwhile the call refuses, and the approval stays
    /// spent.
    ///
    /// A refusal before the claim does not spend the approval; every refusal is audited, and
    /// a replay of a consumed approval is audited as `consume_replayed`.
    ///
    /// For a request without a payload, `T` is deserialized from `null` (use `()`).
    ///
    /// # Errors
    ///
    /// One variant per refusal: [`Error::NotApproved`], [`Error::Denied`], [`Error::Expired`],
    /// [`Error::Revoked`], [`Error::AlreadyConsumed`], [`Error::ApprovalExpired`],
    /// [`Error::ActionMismatch`], [`Error::OperationMismatch`], [`Error::PayloadMismatch`],
    /// [`Error::PayloadType`], [`Error::ExpiredDuringConsume`]; and any I/O error.
    pub fn consume<T>(&self, id: RequestId, binding: &Binding) -> Result<Grant<T>, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        self.load_live(id)?;
        let _lock = self.lock(id)?;
        let now = self.now();
        let (request, claimed) = self.refresh_locked(id, now)?;
        let payload = match Self::check_consumable::<T>(&request, claimed, binding, now) {
            Ok(payload) => payload,
            Err(refusal) => {
                let event = if matches!(refusal, Error::AlreadyConsumed(_)) {
                    AuditEvent::ConsumeReplayed
                } else {
                    AuditEvent::ConsumeRefused
                };
                // The refusal stands whether or not its record can be written.
                let _ = self.audit(
                    event,
                    id,
                    json!({ "reason": refusal.code(), "detail": refusal.to_string() }),
                );
                return Err(refusal);
            }
        };

        let claim = json!({ "consumedAt": now, "pid": std::process::id() }).to_string();
        if !fs::create_exclusive(&self.layout().claim(id), claim.as_bytes())? {
            let _ = self.audit(
                AuditEvent::ConsumeReplayed,
                id,
                json!({ "reason": "already_consumed" }),
            );
            return Err(Error::AlreadyConsumed(id));
        }
        // From here on the approval is spent, whatever happens next.
        self.audit(
            AuditEvent::Consumed,
            id,
            json!({
                "operation": request.operation(),
                "payloadDigest": request.payload_digest(),
            }),
        )?;
        let after = self.now();
        if request.is_past_expiry(after) {
            let refusal = Error::ExpiredDuringConsume {
                id,
                expired_at: request.expires_at(),
            };
            let _ = self.audit(
                AuditEvent::ConsumeRefused,
                id,
                json!({ "reason": refusal.code(), "detail": refusal.to_string() }),
            );
            return Err(refusal);
        }
        Ok(Grant::new(
            id,
            request.operation().map(str::to_owned),
            request.payload_digest(),
            request.expires_at(),
            payload,
            Arc::clone(&self.inner.clock),
        ))
    }

    fn check_consumable<T>(
        request: &Request,
        claimed: bool,
        binding: &Binding,
        now: Timestamp,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned + Serialize,
    {
        let id = request.id();
        match request.status() {
            Status::Pending => return Err(Error::NotApproved(id)),
            Status::Denied => return Err(Error::Denied(id)),
            Status::Expired => return Err(Error::Expired(id)),
            Status::Revoked => return Err(Error::Revoked(id)),
            Status::Approved => {}
        }
        if claimed {
            return Err(Error::AlreadyConsumed(id));
        }
        if request.is_past_expiry(now) {
            return Err(Error::ApprovalExpired {
                id,
                expired_at: request.expires_at(),
            });
        }
        if binding.action.as_bytes() != request.action().as_bytes() {
            return Err(Error::ActionMismatch(id));
        }
        if binding.operation.as_deref() != request.operation() {
            return Err(Error::OperationMismatch {
                id,
                expected: request.operation().map(str::to_owned),
                got: binding.operation.clone(),
            });
        }
        if binding.payload.as_ref() != request.payload() {
            return Err(Error::PayloadMismatch {
                id,
                expected: request
                    .payload_digest()
                    .map_or_else(|| "none".to_owned(), |d| d.to_string()),
            });
        }
        // Without a payload the executor's type must be a faithful image of `null`, e.g. `()`.
        let null;
        let approved = if let Some(payload) = request.payload() {
            payload
        } else {
            null = CanonicalPayload::from_json_text("null")?;
            &null
        };
        approved
            .deserialize_faithful::<T>()
            .map_err(|problem| Error::PayloadType { id, problem })
    }

    // ------------------------------------------------------------- execution

    /// Writes `execution_started` (fsynced) for a fresh grant; the returned guard writes
    /// `execution_finished`, or an "unknown" outcome if dropped unfinished.
    pub(crate) fn start_execution<T>(&self, grant: &Grant<T>) -> Result<ExecutionRecord, Error> {
        self.audit(
            AuditEvent::ExecutionStarted,
            grant.id(),
            json!({
                "operation": grant.operation(),
                "payloadDigest": grant.payload_digest(),
                "pid": std::process::id(),
            }),
        )?;
        Ok(ExecutionRecord {
            gate: self.clone(),
            id: grant.id(),
            open: true,
        })
    }

    // ---------------------------------------------------------------- listing

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
            self.scan_all(now)?
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

    fn scan_all(&self, now: Timestamp) -> Result<Vec<Request>, Error> {
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
            if request.status() == Status::Pending && request.is_past_expiry(now) {
                let _lock = self.lock(id)?;
                all.push(self.refresh_locked(id, now)?.0);
            } else {
                all.push(request);
            }
        }
        Ok(all)
    }

    // -------------------------------------------------------------- retention

    /// Moves finished requests out of the live store: only those created at least
    /// `max(older_than_days, 8)` days ago whose expiry is at least 8 days past, so nothing
    /// archived could still be used. Archived requests can never be consumed or decided.
    ///
    /// With `dry_run`, returns what would be archived and changes nothing.
    ///
    /// # Errors
    ///
    /// Any I/O error; requests archived before it stay archived.
    pub fn archive(&self, older_than_days: u32, dry_run: bool) -> Result<Vec<RequestId>, Error> {
        let now = self.now();
        let day = Duration::from_secs(24 * 3600);
        let min_age = day * MIN_ARCHIVE_AGE_DAYS;
        let created_cutoff = now.saturating_sub(day * older_than_days.max(MIN_ARCHIVE_AGE_DAYS));
        let expired_cutoff = now.saturating_sub(min_age);
        let due =
            |r: &Request| r.created_at() <= created_cutoff && r.expires_at() <= expired_cutoff;
        let mut archived = Vec::new();
        for request in self.scan_all(now)? {
            if !due(&request) {
                continue;
            }
            let id = request.id();
            if dry_run {
                archived.push(id);
                continue;
            }
            let _lock = self.lock(id)?;
            let Some(request) = self.load(id)? else {
                continue;
            };
            let claimed = self.is_claimed(id)?;
            let status = request.effective(claimed, now);
            if !due(&request) || !status.is_finished() {
                continue;
            }
            let layout = self.layout();
            // The request moves first: a claim left behind still spends nothing, while a
            // request left behind without its claim could look unconsumed.
            fs::rename_durable(&layout.request(id), &layout.archived(id))?;
            if claimed {
                fs::rename_durable(&layout.claim(id), &layout.archived_claim(id))?;
            }
            fs::remove_if_exists(&layout.marker(id))?;
            self.audit(
                AuditEvent::Archived,
                id,
                json!({ "status": status, "createdAt": request.created_at() }),
            )?;
            fs::remove_if_exists(&layout.lock(id))?;
            archived.push(id);
        }
        Ok(archived)
    }

    // ------------------------------------------------------------------ audit

    /// Verifies the audit log's hash chain and anchor.
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] with the first bad line.
    pub fn verify_audit(&self) -> Result<AuditSummary, Error> {
        self.inner.audit.verify()
    }

    /// Every audit record, oldest first (the chain is checked while reading).
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] with the first bad line.
    pub fn audit_records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.inner.audit.records()
    }
}

/// Writes `execution_finished` once. Dropped unfinished (a panic, a cancelled future), it
/// records the outcome as unknown: the side effect may or may not have happened.
pub(crate) struct ExecutionRecord {
    gate: Gate,
    id: RequestId,
    open: bool,
}

/// Longest error text kept in an `execution_finished` line.
const MAX_OUTCOME_TEXT: usize = 1024;

impl ExecutionRecord {
    pub(crate) fn finish(mut self, outcome: &str, error: Option<String>) {
        self.open = false;
        let error = error.map(|mut text| {
            if text.len() > MAX_OUTCOME_TEXT {
                let mut cut = MAX_OUTCOME_TEXT;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str("...");
            }
            text
        });
        // The side effect has already happened or not; a failure to record it leaves a
        // started-but-unfinished execution, which reads as "outcome unknown".
        let _ = self.gate.audit(
            AuditEvent::ExecutionFinished,
            self.id,
            json!({ "outcome": outcome, "error": error }),
        );
    }
}

impl Drop for ExecutionRecord {
    fn drop(&mut self) {
        if self.open {
            let why = if std::thread::panicking() {
                "the executor panicked"
            } else {
                "the execution was abandoned (future dropped)"
            };
            let _ = self.gate.audit(
                AuditEvent::ExecutionFinished,
                self.id,
                json!({ "outcome": "unknown", "error": why }),
            );
        }
    }
}
