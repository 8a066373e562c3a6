//! The directory store: a directory of request files, claims and an audit log.
//!
//! On-disk layout (all directories `0700`, all files `0600`):
//!
//! ```text
//! <dir>/
//!   gate.lock            lock for filing requests (queue cap, de-duplication)
//!   queue                the queue index: pending requests with their asks' keys, the count of
//!                        live records, the boot it holds for; its lock (`queue.rs`: never synced)
//!   journal.wal          the one file a step syncs: each step's audit line with the record or
//!                        claim it writes (`audit_log/journal.rs`); replayed onto the files
//!                        below after a power loss, then emptied (a checkpoint)
//!   audit.jsonl          hash-chained audit log, one JSON object per line (written unsynced
//!                        after the journal; the journal holds payloads, this log never does)
//!   audit.head           anchor of the audit log (last sequence number and hash, the boot and
//!                        the journal's length it was written at); its lock serialises commits
//!   requests/<id>.json   every live request: the authoritative record (unsynced; journalled)
//!   claims/<id>.used     consume claim, made by exclusive create; its existence spends the approval
//!   claims/<id>.logged   made once the `consumed` line is durable: recovery skips that claim
//!   claims/<id>.exec     held locked by a process while it executes the approved action
//!                        (both markers are hard links to the claim where the file system
//!                        allows, else empty files: only their names and locks are read)
//!   locks/<xy>.lock      256 lock files, made with the store: a request's lock is the one named
//!                        by the first two digits of its id, serialising decisions and
//!                        consumption; never renamed over or removed. A filing or a refusal
//!                        creates no lock file, and at most one request's lock is held at once
//!   locks/passkeys.lock  held while a passkey approval's counter is checked against every
//!                        stored approval and written (under a request's lock; made lazily)
//!   archive/<id>.json    archived requests (and their claims as <id>.used): never usable again
//!   notify/ledger.jsonl  one synced line per message delivered or dead-lettered (torn: dropped)
//!   notify/notifier.lock held by the one `approval-gate notify` running on this store
//!   allowances/<id>.json the signed allowance (exclusive create; replaced whole, durably,
//!                        only to add a co-signer's signature)
//!   allowances/<id>.uses its uses, one JSON line each ({request, amount, at}), appended and
//!                        fsynced in the step that spends the request they approve
//!   allowances/<id>.revoked  made (exclusive create, fsynced) when it is revoked
//!   allowances/<id>.lock held for each step of the allowance (grant, co-sign, revoke, a use)
//! ```

mod allowances;
mod audit_log;
mod boot;
mod commits;
pub(crate) mod fs;
mod health;
mod layout;
mod notices;
pub(crate) mod predecessor;
mod queue;
mod steps;
mod watch;

use std::path::{Path, PathBuf};

use self::audit_log::AuditLog;
use self::audit_log::journal::Effect;
use self::layout::{Layout, ids_in, lock_exclusive, try_lock_existing};
use self::queue::Queue;
use super::allowance::{Cosigned, Kept, Revoked, Under};
use super::{
    About, Capabilities, Caps, Chain, Entry, Filed, Filer, Guard, Loaded, Location, MarkedAllowed,
    Marks, Recovery, Refusals, Scope, Shelf, Spent, Store,
};
use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::audit::{AuditRecord, AuditSummary, Reanchored};
use crate::change::ChangeSink;
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::request::{Request, Status};
use crate::rules;
use crate::time::Timestamp;

/// Largest request file we will read; anything larger was not written by us.
pub(crate) const MAX_REQUEST_FILE: u64 = 1024 * 1024;

/// How often to retry locking an execution marker that recovery removed meanwhile.
const MARKER_ATTEMPTS: usize = 8;

/// The directory store.
#[derive(Debug)]
pub(crate) struct DirStore {
    about: About,
    layout: Layout,
    audit: AuditLog,
    queue: Queue,
}

impl DirStore {
    /// Opens the store in `root`, creating its directories `0700` if needed.
    ///
    /// A directory holding the predecessor's store is refused before anything in it is
    /// created or checked ([`predecessor::refuse_predecessor`]).
    pub(crate) fn open(root: PathBuf) -> Result<Self, Error> {
        predecessor::refuse_predecessor(&root)?;
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
            layout.claims_dir(),
            layout.locks_dir(),
            layout.archive_dir(),
            layout.allowances_dir(),
        ] {
            fs::ensure_dir(&dir)?;
        }
        for file in ["audit.jsonl", "audit.head", "gate.lock"] {
            fs::open_existing(&layout.root.join(file))?;
        }
        // Made once, in order: the last one's existence says they all exist (a lock file
        // removed by hand is made again when it is next locked).
        if !fs::exists(&layout.locks_dir().join("ff.lock"))? {
            for stripe in 0..=0xffu8 {
                drop(fs::open_lock(
                    &layout.locks_dir().join(format!("{stripe:02x}.lock")),
                )?);
            }
        }
        Self {
            about: About {
                location: Location::Dir(layout.root.clone()),
                backend: "dir",
                filer: Some(crate::request::os_user()),
                capabilities: Capabilities {
                    // A line is appended before a "yes" and after a "no": a crash between
                    // the two leaves the one without the other, which recovery and `audit
                    // verify` allow for.
                    atomic_lines: false,
                    // The OS user, which the filing process reports.
                    filer: Filer::Claimed,
                    // Whoever can be refused can write the store's files anyway.
                    refusals: Refusals::EachTime,
                },
            },
            audit: AuditLog::new(&layout.root),
            queue: Queue::new(&layout.root),
            layout,
        }
        .settled()?
        .with_current_index()
    }

    fn read(id: RequestId, path: &Path) -> Result<Option<Request>, Error> {
        let unreadable = |problem: String| Error::Unreadable { id, problem };
        let bytes = match fs::read_bounded(path, MAX_REQUEST_FILE) {
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
}

impl Store for DirStore {
    fn about(&self) -> &About {
        &self.about
    }

    fn load(&self, id: RequestId, place: Shelf) -> Result<Option<Request>, Error> {
        match place {
            Shelf::Live => Self::read(id, &self.layout.request(id)),
            Shelf::Archived => {
                let path = self.layout.archived(id);
                let Some(bytes) = fs::read_bounded(&path, MAX_REQUEST_FILE)? else {
                    return Ok(None);
                };
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| Error::Corrupt {
                        path,
                        problem: e.to_string(),
                    })
            }
        }
    }

    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool {
        match error {
            Error::Unreadable { .. } => true,
            Error::UnsafeState { path, .. } => *path == self.layout.request(id),
            _ => false,
        }
    }

    fn marks(&self, id: RequestId) -> Result<Marks, Error> {
        Ok(Marks {
            claimed: fs::exists(&self.layout.claim(id))?,
            executing: fs::exists(&self.layout.execution_marker(id))?,
            archived: fs::exists(&self.layout.archived(id))?,
        })
    }

    fn load_marked(&self, id: RequestId) -> Result<(Option<Request>, Marks), Error> {
        let request = self.load(id, Shelf::Live)?;
        Ok((request, self.marks(id)?))
    }

    fn load_marked_allowed(&self, id: RequestId) -> Result<MarkedAllowed, Error> {
        let (request, marks) = self.load_marked(id)?;
        let kept = match request.as_ref().and_then(Request::allowance) {
            Some(allowance) => self.read_allowance(allowance, false)?,
            None => None,
        };
        Ok((request, marks, kept))
    }

    fn scan(&self, scope: Scope) -> Result<Vec<Loaded>, Error> {
        let ids = match scope {
            Scope::Pending => self.pending_ids()?,
            Scope::Live => ids_in(&self.layout.requests_dir(), ".json")?,
        };
        let mut loaded = Vec::with_capacity(ids.len());
        for id in ids {
            let record = self.load(id, Shelf::Live);
            match &record {
                // An entry without a record may belong to a filing in progress: only
                // filing, which holds the filing lock, drops those.
                Ok(None) => continue,
                // A decided request's entry is left over from a decision cut short.
                Ok(Some(request))
                    if scope == Scope::Pending && request.status() != Status::Pending =>
                {
                    self.unindex(id)?;
                }
                _ => {}
            }
            loaded.push((id, record));
        }
        Ok(loaded)
    }

    fn lock(&self, id: RequestId) -> Result<Guard, Error> {
        lock_exclusive(&self.layout.lock(id)).map(Guard::new)
    }

    fn lock_counters(&self) -> Result<Guard, Error> {
        lock_exclusive(&self.layout.counters_lock()).map(Guard::new)
    }

    fn file(&self, request: &Request, caps: Caps, entry: &Entry<'_>) -> Result<Filed, Error> {
        self.file_serialised(request, caps, entry)
    }

    fn decide(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<Request, Error> {
        let id = request.id();
        let effect = Effect::Record {
            id,
            bytes: self.encode(request)?,
        };
        if rules::recorded_first(entry.event) {
            // A "yes" is recorded before it takes effect: it never exists without its line.
            // The commit writes the record once the line is durable.
            failpoint!("decide::between_record_and_effect");
            self.commit(id, entry, effect, false)
                .map_err(|failed| failed.on(id, operation))?;
        } else {
            // A "no" is journalled with its record like a "yes"; if nothing could be
            // journalled it takes effect anyway, durably, and stands unrecorded.
            between_effect_and_record()?;
            match self.commit(id, entry, effect, false) {
                Ok(_) => {}
                Err(fs::Failed::Before(error)) => {
                    self.save(request, operation)?;
                    return Err(error.after_effect(id, operation));
                }
                Err(failed @ fs::Failed::After(_)) => return Err(failed.on(id, operation)),
            }
        }
        // An index entry left behind is dropped by the next scan of the pending index.
        if request.status() != Status::Pending {
            let _ = self.unindex(id);
        }
        Ok(request.clone())
    }

    fn spend(&self, id: RequestId, entry: &Entry<'_>) -> Result<Spent, Error> {
        // Spending is a "yes": it is not done unless its `consumed` line can follow.
        self.audit.check_appendable()?;
        self.claim_and_record(id, entry)
    }

    fn spend_under(
        &self,
        id: RequestId,
        under: &Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        self.spend_allowed(id, under, entry)
    }

    fn refuse(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error> {
        super::refusal_operation(entry.event)?;
        self.append(id, entry)
    }

    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error> {
        let marker = self.lock_execution_marker(id).map(Guard::new)?;
        self.commit(id, entry, Effect::Start { id }, true)
            .map_err(fs::Failed::into_error)?;
        // The consume before it is durable now too (it may have been deferred): the hint
        // that recovery need not look its line up.
        let _ = fs::mark(&self.layout.claim(id), &self.layout.claim_logged(id));
        Ok(marker)
    }

    fn defer_durability(&self, on: bool) {
        audit_log::defer_durability(on);
    }

    fn flush(&self) -> Result<(), Error> {
        self.audit.flush()
    }

    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.commit(id, entry, Effect::Finish { id }, false)
            .map(drop)
            .map_err(fs::Failed::into_error)
    }

    fn recover(&self, now: Timestamp) -> Result<Recovery, Error> {
        self.recover_after_crash(now)
    }

    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.archive_request(id, entry)
    }

    fn grant_allowance(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error> {
        self.grant(signed, entry)
    }

    fn cosign_allowance(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<Cosigned, Error> {
        self.cosign(id, signature, entry)
    }

    fn revoke_allowance(&self, id: RequestId, entry: &Entry<'_>) -> Result<Revoked, Error> {
        self.revoke(id, entry)
    }

    fn allowance(&self, id: RequestId) -> Result<Option<Kept>, Error> {
        self.read_allowance(id, true)
    }

    fn allowances(&self) -> Result<Vec<Kept>, Error> {
        self.read_allowances()
    }

    fn stray_entries(&self) -> Result<Vec<PathBuf>, Error> {
        health::stray_entries(&self.layout.root)
    }

    fn notices(&self) -> Result<Box<dyn crate::notices::Ledger>, Error> {
        Ok(Box::new(notices::DirLedger::open(&self.layout.root)?))
    }

    fn dead_letters(&self) -> Result<Vec<crate::notices::DeadLetter>, Error> {
        notices::dead_letters(&self.layout.root)
    }

    fn watch(&self, sink: ChangeSink) -> Result<Guard, String> {
        watch::watch_records(&self.layout.requests_dir(), sink)
    }
}

impl Chain for DirStore {
    fn check_appendable(&self) -> Result<(), Error> {
        self.audit.check_appendable()
    }

    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        self.audit.verify_records()
    }

    fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.audit.records()
    }

    fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error> {
        self.audit.reanchor(ts, by)
    }
}

// Fails only at its failpoint, which exists only with the `failpoints` feature.
#[cfg_attr(not(feature = "failpoints"), allow(clippy::unnecessary_wraps))]
fn between_effect_and_record() -> Result<(), Error> {
    failpoint!("decide::between_record_and_effect");
    Ok(())
}

#[cfg(test)]
mod tests;
