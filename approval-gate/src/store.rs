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

use serde_json::{Map, Value, json};

use crate::audit::{AuditEvent, AuditLog, AuditRecord, AuditSummary, Reanchored};
use crate::error::Error;
use crate::fs;
use crate::id::RequestId;
use crate::limits::Limits;
use crate::list::UnreadableRecord;
use crate::request::{Decision, NewRequest, Request, Status, StatusReport, check_ttl};
use crate::time::{Clock, SystemClock, Timestamp};

/// Largest request file we will read; anything larger was not written by us.
pub(crate) const MAX_REQUEST_FILE: u64 = 1024 * 1024;

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
        check_ttl("default_ttl", self.limits.default_ttl)?;
        let root = match self.dir {
            Some(dir) => dir,
            None => Gate::default_dir()?,
        };
        let layout = Layout { root };
        if let Some(parent) = layout.root.parent()
            && !parent.as_os_str().is_empty()
            && !parent.exists()
        {
            fs::create_dir_all(parent)?;
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
        let gate = Gate {
            inner: Arc::new(Inner {
                audit: AuditLog::new(&layout.root),
                layout,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                limits: self.limits,
            }),
        };
        match gate.recover() {
            // A broken audit log must stay inspectable (`approval-gate audit verify`); every
            // operation that needs to append to it refuses anyway.
            Ok(_) | Err(Error::AuditBroken { .. }) => Ok(gate),
            Err(other) => Err(other),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub(crate) fn requests_dir(&self) -> PathBuf {
        self.root.join("requests")
    }
    pub(crate) fn pending_dir(&self) -> PathBuf {
        self.root.join("pending")
    }
    pub(crate) fn claims_dir(&self) -> PathBuf {
        self.root.join("claims")
    }
    pub(crate) fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }
    pub(crate) fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }
    pub(crate) fn request(&self, id: RequestId) -> PathBuf {
        self.requests_dir().join(format!("{id}.json"))
    }
    pub(crate) fn marker(&self, id: RequestId) -> PathBuf {
        self.pending_dir().join(id.as_str())
    }
    pub(crate) fn claim(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.used"))
    }
    /// Made after the `consumed` line is durable, so recovery knows which claims to check.
    pub(crate) fn claim_logged(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.logged"))
    }
    /// Held locked by a process while it executes an approved action.
    pub(crate) fn execution_marker(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.exec"))
    }
    pub(crate) fn lock(&self, id: RequestId) -> PathBuf {
        self.locks_dir().join(format!("{id}.lock"))
    }
    pub(crate) fn archived(&self, id: RequestId) -> PathBuf {
        self.archive_dir().join(format!("{id}.json"))
    }
    pub(crate) fn archived_claim(&self, id: RequestId) -> PathBuf {
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

/// What a scan of the store found: the requests it could read, and the records it could not.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) requests: Vec<Request>,
    pub(crate) unreadable: Vec<UnreadableRecord>,
}

impl Scan {
    /// Sets the record of `id` aside as `None` if it cannot be read, or if it is unsafe to
    /// read (`record` is its path: an unsafe path elsewhere, such as the audit log, is the
    /// store's problem and ends the scan like any other error).
    pub(crate) fn sort<T>(
        &mut self,
        id: RequestId,
        record: &Path,
        result: Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(Error::Unreadable { problem, .. }) => {
                self.unreadable.push(UnreadableRecord::new(id, problem));
                Ok(None)
            }
            Err(unsafe_state @ Error::UnsafeState { .. }) if matches!(&unsafe_state, Error::UnsafeState { path, .. } if path == record) =>
            {
                self.unreadable
                    .push(UnreadableRecord::new(id, unsafe_state.to_string()));
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }
}

/// An exclusive lock held for the life of the value.
pub(crate) struct Locked {
    _lock: Box<fd_lock::RwLock<std::fs::File>>,
}

/// Takes the lock only if no other process holds it; `None` if one does, or if the file
/// does not exist (it is never created here).
pub(crate) fn try_lock_existing(path: &Path) -> Result<Option<Locked>, Error> {
    let Some(file) = fs::open_existing_rw(path)? else {
        return Ok(None);
    };
    let mut lock = Box::new(fd_lock::RwLock::new(file));
    match lock.try_write() {
        Ok(guard) => std::mem::forget(guard),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
        Err(e) => return Err(Error::io("locking", path, e)),
    }
    Ok(Some(Locked { _lock: lock }))
}

pub(crate) fn lock_exclusive(path: &Path) -> Result<Locked, Error> {
    lock_file(fs::open_lock(path)?, path)
}

/// Waits for an exclusive lock on an already opened file.
pub(crate) fn lock_file(file: std::fs::File, path: &Path) -> Result<Locked, Error> {
    let mut lock = Box::new(fd_lock::RwLock::new(file));
    // fd-lock hands out a guard borrowing the lock; flock(2) itself is held by the open file
    // description until it is closed, so keep the file and forget the guard.
    std::mem::forget(lock.write().map_err(|e| Error::io("locking", path, e))?);
    Ok(Locked { _lock: lock })
}

pub(crate) fn details(value: Value) -> Map<String, Value> {
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

    /// The clock every expiry decision of this gate reads.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The current time on this gate's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    pub(crate) fn audit(
        &self,
        event: AuditEvent,
        id: RequestId,
        fields: Value,
    ) -> Result<u64, Error> {
        self.inner
            .audit
            .append(self.now(), event, id, &details(fields))
    }

    /// Reads a request of the live store; `None` if it has no record. A record that cannot
    /// be read is [`Error::Unreadable`] for its id alone. A record that is a symlink or
    /// writable by others stays [`Error::UnsafeState`] (a sign of tampering, reported as
    /// such), which scans also set aside as unreadable; trouble beyond the record (the
    /// directory, the OS) is any other error.
    pub(crate) fn load(&self, id: RequestId) -> Result<Option<Request>, Error> {
        let path = self.layout().request(id);
        let unreadable = |problem: String| Error::Unreadable { id, problem };
        let bytes = match fs::read_bounded(&path, MAX_REQUEST_FILE) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(Error::Corrupt { problem, .. }) => return Err(unreadable(problem)),
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                return Err(unreadable(format!("cannot be read: {source}")));
            }
            Err(other) => return Err(other),
        };
        Request::decode(id, &bytes).map(Some).map_err(unreadable)
    }

    /// Loads a request of the live store, telling "archived" from "never existed".
    pub(crate) fn load_live(&self, id: RequestId) -> Result<Request, Error> {
        match self.load(id)? {
            Some(request) => Ok(request),
            None if fs::exists(&self.layout().archived(id))? => Err(Error::Archived(id)),
            None => Err(Error::NotFound(id)),
        }
    }

    pub(crate) fn lock(&self, id: RequestId) -> Result<Locked, Error> {
        lock_exclusive(&self.layout().lock(id))
    }

    pub(crate) fn is_claimed(&self, id: RequestId) -> Result<bool, Error> {
        fs::exists(&self.layout().claim(id))
    }

    /// Writes a request durably; a failure once the new record is in place is
    /// [`Error::DurabilityUnknown`] for `operation`.
    pub(crate) fn save(&self, request: &Request, operation: &'static str) -> Result<(), Error> {
        let bytes = serde_json::to_vec(request).map_err(|e| Error::Corrupt {
            path: self.layout().request(request.id()),
            problem: format!("cannot encode: {e}"),
        })?;
        fs::write_atomic(&self.layout().request(request.id()), &bytes)
            .map_err(|failed| failed.on(request.id(), operation))
    }

    /// Records `operation` after it took effect (a "no", or the filing of a request). It is
    /// recorded even when its durability is unknown, and a failure to record it is reported
    /// as "took effect, not recorded", never as "nothing happened".
    pub(crate) fn record_after(
        &self,
        saved: Result<(), Error>,
        id: RequestId,
        operation: &'static str,
        event: AuditEvent,
        fields: Value,
    ) -> Result<(), Error> {
        if let Err(error) = &saved
            && !error.took_effect()
        {
            return saved;
        }
        let recorded = self
            .audit(event, id, fields)
            .map(drop)
            .map_err(|error| error.after_effect(id, operation));
        saved.and(recorded)
    }

    /// Fails if the audit log would refuse an append (broken, or unanchored): checked before
    /// a "yes" takes effect, so that none ever happens without its line.
    pub(crate) fn check_audit_appendable(&self) -> Result<(), Error> {
        self.inner.audit.check_appendable()
    }

    /// Records the expiry of a pending request that is past it. Call with the request locked.
    pub(crate) fn expire_if_due(
        &self,
        mut request: Request,
        now: Timestamp,
    ) -> Result<Request, Error> {
        if request.status() == Status::Pending && request.is_past_expiry(now) {
            request.decide(Status::Expired, now, None);
            // A "no" takes effect first and is recorded after.
            let saved = self.save(&request, "expire");
            self.record_after(
                saved,
                request.id(),
                "expire",
                AuditEvent::Expired,
                json!({ "expiresAt": request.expires_at() }),
            )?;
            // A marker left behind is removed by the next scan of the pending index.
            let _ = fs::remove_if_exists(&self.layout().marker(request.id()));
        }
        Ok(request)
    }

    /// Re-reads a request under its lock, recording its expiry if due.
    pub(crate) fn refresh_locked(
        &self,
        id: RequestId,
        now: Timestamp,
    ) -> Result<(Request, bool), Error> {
        let request = self.expire_if_due(self.load_live(id)?, now)?;
        let claimed = self.is_claimed(id)?;
        Ok((request, claimed))
    }

    pub(crate) fn report(&self, request: Request, now: Timestamp) -> Result<StatusReport, Error> {
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
        let ttl = new.ttl.unwrap_or(self.inner.limits.default_ttl);
        let _creation = lock_exclusive(&self.layout().root.join("gate.lock"))?;
        // Nothing is filed that the audit log cannot record.
        self.check_audit_appendable()?;
        let now = self.now();
        let scan = self.scan_pending(now, true)?;
        if let Some(existing) = scan.requests.iter().find(|r| r.same_ask(&new)) {
            return Ok(Submitted {
                request: existing.clone(),
                deduplicated: true,
            });
        }
        let limits = self.inner.limits;
        // An unreadable record in the pending index may well be pending: it counts, so a
        // damaged store never lets more requests in than the cap.
        let pending_now = scan.requests.len() + scan.unreadable.len();
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
        let request = Request::new(id, new, now, ttl);
        // The marker goes first: a crash leaves at worst a marker without a request, which
        // the next creation cleans up, never a pending request missing from the index.
        fs::open_lock(&self.layout().lock(id))?;
        // A marker without its request is harmless, durable or not.
        fs::create_exclusive(&self.layout().marker(id), b"").map_err(fs::Failed::into_inner)?;
        let saved = self.save(&request, "request");
        self.record_after(
            saved,
            id,
            "request",
            AuditEvent::Requested,
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
    /// progress. A marker whose record is unreadable stays, and the record is listed as such.
    pub(crate) fn scan_pending(
        &self,
        now: Timestamp,
        creation_locked: bool,
    ) -> Result<Scan, Error> {
        let mut scan = Scan::default();
        for name in fs::list_names(&self.layout().pending_dir())? {
            let Ok(id) = RequestId::parse(&name) else {
                continue;
            };
            let record = self.layout().request(id);
            let Some(loaded) = scan.sort(id, &record, self.load(id))? else {
                continue;
            };
            match loaded {
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
                    scan.sort(id, &record, self.refresh_locked(id, now))?;
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
            let _lock = self.lock(id)?;
            self.refresh_locked(id, now)?.0
        } else {
            request
        };
        self.report(request, now)
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

    /// Accepts the audit log as it is now, after its anchor went missing or stopped agreeing
    /// with it: only a human who has looked should call this (`approval-gate audit
    /// reanchor`). Cuts a torn last line, appends a `reanchored` line recording `by`, the
    /// problem found, the lines and last hash found and the old anchor, and anchors the log
    /// there. Until then every append is refused, so nothing is added to a log whose tail may
    /// have been cut.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if the log and its anchor agree (nothing to do) or `by` is not
    /// an acceptable name; [`Error::AuditBroken`] if the lines themselves do not chain
    /// (re-anchoring cannot repair an edited log); I/O errors.
    pub fn reanchor_audit(&self, by: &str) -> Result<Reanchored, Error> {
        Decision::by(by).validate()?;
        self.inner.audit.reanchor(self.now(), by)
    }

    /// Every audit record, oldest first (the chain is checked while reading).
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] with the first bad line.
    pub fn audit_records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.inner.audit.records()
    }

    pub(crate) fn repair_audit_tail(&self) -> Result<(), Error> {
        self.inner.audit.repair_torn_tail()
    }
}
