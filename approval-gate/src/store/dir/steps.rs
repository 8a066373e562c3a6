//! The directory store's two steps that take more than a file or two: filing under the
//! filing lock, and recovery after a crash.

use std::collections::HashSet;
use std::path::Path;

use serde_json::json;

use super::audit_log::journal::Effect;
use super::queue::{self, Index};
use super::{DirStore, fs, ids_in, lock_exclusive, try_lock_existing};
use crate::audit::{AuditEvent, AuditRecord, Outcome, details};
use crate::error::Error;
use crate::id::RequestId;
use crate::request::{Request, Status};
use crate::store::{Caps, Entry, Filed, Recovery, Shelf, Store};
use crate::time::Timestamp;

impl DirStore {
    /// [`Store::archive`](crate::store::Store::archive): its line journalled first, then the
    /// record and its claim moved to the archive (by the commit, once the entry is durable),
    /// then the request taken out of the queue index. Never the move without its entry: a
    /// replay after a power loss would bring the record back from the journal's earlier
    /// entries; the entry without the move, the replay completes.
    pub(super) fn archive_request(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.commit(id, entry, Effect::Archive { id }, false)
            .map_err(|failed| failed.on(id, "archive"))?;
        let unindexed = || -> Result<(), Error> {
            let held = self.queue.lock()?;
            if let Some(mut index) = held.read()? {
                index.live = index.live.saturating_sub(1);
                index.remove(id);
                held.write(&index)?;
            }
            Ok(())
        };
        unindexed().map_err(|error| error.after_effect(id, "archive"))
    }

    /// [`Store::file`]: under the filing lock, so that the caps, de-duplication and fresh
    /// ids hold against every other filing process. It reads the queue index, not the queue:
    /// the same one small file at any queue length (the queue's records only when the index
    /// says it is full), and creates no file but the record.
    pub(super) fn file_serialised(
        &self,
        request: &Request,
        caps: Caps,
        entry: &Entry<'_>,
    ) -> Result<Filed, Error> {
        let filing = lock_exclusive(&self.layout.filing_lock())?;
        // Nothing is filed that the audit log cannot record.
        self.audit.check_appendable()?;
        let now = request.created_at();
        let id = request.id();
        let layout = &self.layout;
        {
            let held = self.queue.lock()?;
            let mut index = match held.read()? {
                Some(index) => index,
                None => self.rebuild_index(&held)?,
            };
            if let Some(existing) = index.filed_as(request)
                && let Ok(Some(found)) = self.load(existing, Shelf::Live)
                && found.status() == Status::Pending
                && !found.is_past_expiry(now)
                && found.same_ask(request)
            {
                return Ok(Filed::Duplicate(existing));
            }
            if index.pending.len() >= caps.max_pending {
                // The index may name requests past their expiry, decided ones whose entries
                // a crash left, and filings that never finished: count again, exactly,
                // before refusing.
                index = self.recount(&held, index, now)?;
                if index.pending.len() >= caps.max_pending {
                    return Err(Error::QueueFull {
                        pending: index.pending.len(),
                        limit: caps.max_pending,
                    });
                }
            }
            if index.live >= caps.max_requests {
                index.live = fs::count_entries(&layout.requests_dir())?;
                held.write(&index)?;
                if index.live >= caps.max_requests {
                    return Err(Error::CreationLimit {
                        requests: index.live,
                        limit: caps.max_requests,
                    });
                }
            }
            let taken = index.has(id)
                || fs::exists(&layout.request(id))?
                || fs::exists(&layout.archived(id))?
                || fs::exists(&layout.claim(id))?;
            if taken {
                return Ok(Filed::IdTaken);
            }
            // Indexed before the record exists, so that a crash can only leave an entry too
            // many.
            index.add(request);
            index.live += 1;
            held.write(&index)?;
        }
        // A filing takes effect first and is recorded after: the record, made findable by
        // its index entry, then its line. The filing lock is let go once the record is in
        // place (the next filing sees it); its name is made durable after.
        let path = layout.request(id);
        let bytes = self.encode(request)?;
        // Unsynced: its journal entry, synced with the other steps committing meanwhile,
        // makes it durable, and writes it again after a power loss.
        fs::write_atomic_unsynced(&path, bytes.as_bytes())?;
        drop(filing);
        self.commit(id, entry, Effect::Record { id, bytes }, true)
            .map_err(|failed| failed.after_made(id, "request"))?;
        Ok(Filed::New)
    }

    /// Opens the store with its queue index current, rebuilding it if it was written in
    /// another boot of the machine (or never, or cut short).
    pub(super) fn with_current_index(self) -> Result<Self, Error> {
        if self.queue.lock()?.read()?.is_none() {
            self.rebuild_under_filing_lock()?;
        }
        Ok(self)
    }

    /// The pending requests the queue index names, rebuilding it first if need be.
    pub(super) fn pending_ids(&self) -> Result<Vec<RequestId>, Error> {
        if let Some(index) = self.queue.lock()?.read()? {
            return Ok(index.ids());
        }
        self.rebuild_under_filing_lock().map(|index| index.ids())
    }

    fn rebuild_under_filing_lock(&self) -> Result<Index, Error> {
        let _filing = lock_exclusive(&self.layout.filing_lock())?;
        let held = self.queue.lock()?;
        match held.read()? {
            Some(index) => Ok(index),
            None => self.rebuild_index(&held),
        }
    }

    /// Rebuilds the queue index from every live record: the pending ones (and the
    /// unreadable ones, which may be pending) in the order they were filed, and the count.
    /// Once a boot; the caller holds the filing lock (so no filing is under way) and the
    /// index's lock.
    fn rebuild_index(&self, held: &queue::Held<'_>) -> Result<Index, Error> {
        let ids = ids_in(&self.layout.requests_dir(), ".json")?;
        let mut pending = Vec::new();
        let mut unreadable = Vec::new();
        for &id in &ids {
            match self.load(id, Shelf::Live) {
                Ok(Some(found)) if found.status() == Status::Pending => pending.push(found),
                Ok(_) => {}
                Err(error) if self.concerns_record_only(id, &error) => unreadable.push(id),
                Err(error) => return Err(error),
            }
        }
        let removed = self.drop_torn_filings(&mut unreadable)?;
        pending.sort_by_key(|request| (request.created_at(), request.id()));
        let mut index = Index {
            live: ids.len() - removed,
            pending: Vec::new(),
        };
        for request in &pending {
            index.add(request);
        }
        for id in unreadable {
            index.add_unreadable(id);
        }
        held.write(&index)?;
        Ok(index)
    }

    /// Removes the unreadable records among `unreadable` that no audit line names: filings a
    /// power loss cut short. A filing writes its record unsynced before its journal entry,
    /// so a power loss can keep the record's name without its content, and the entry never
    /// made durable: the filing was never acknowledged, and nothing else writes a record
    /// without a line. How many were removed; `unreadable` keeps the others.
    fn drop_torn_filings(&self, unreadable: &mut Vec<RequestId>) -> Result<usize, Error> {
        if unreadable.is_empty() {
            return Ok(0);
        }
        let Ok(records) = self.audit.records() else {
            // A log that does not read names nothing for sure: keep them all.
            return Ok(0);
        };
        let logged: HashSet<RequestId> = records.iter().map(|r| r.id).collect();
        let before = unreadable.len();
        let mut kept = Vec::new();
        for id in unreadable.drain(..) {
            if logged.contains(&id) {
                kept.push(id);
            } else {
                fs::remove_if_exists(&self.layout.request(id))?;
            }
        }
        *unreadable = kept;
        Ok(before - unreadable.len())
    }

    /// Keeps only the entries of `index` whose records are pending and not past their expiry
    /// at `now` (or unreadable, which may be pending): the exact queue, read from its records
    /// only. The caller holds the filing lock, so an entry without a record is left over.
    fn recount(
        &self,
        held: &queue::Held<'_>,
        mut index: Index,
        now: Timestamp,
    ) -> Result<Index, Error> {
        let mut kept = Vec::with_capacity(index.pending.len());
        for (id, ask) in index.pending {
            let keep = match self.load(id, Shelf::Live) {
                Ok(Some(found)) => found.status() == Status::Pending && !found.is_past_expiry(now),
                Ok(None) => false,
                Err(error) if self.concerns_record_only(id, &error) => true,
                Err(error) => return Err(error),
            };
            if keep {
                kept.push((id, ask));
            }
        }
        index.pending = kept;
        held.write(&index)?;
        Ok(index)
    }

    /// [`Store::recover`]: the claims whose `consumed` line may be missing (no `.logged`
    /// beside them), then the executions whose executor is gone (an `.exec` nobody holds).
    pub(super) fn recover_after_crash(&self, now: Timestamp) -> Result<Recovery, Error> {
        self.audit.repair_torn_tail()?;
        let mut recovery = Recovery::default();

        // One listing of the claims for both passes (it grows with every consumed request
        // until they are archived): an execution marker made after it belongs to a live
        // executor, which this pass would skip anyway, and the next open sees it.
        let ClaimFiles {
            used,
            logged,
            mut executions,
        } = claim_files(&self.layout.claims_dir())?;
        let mut unlogged: Vec<RequestId> = used.difference(&logged).copied().collect();
        unlogged.sort_unstable();
        for id in unlogged {
            // The consume that made the claim holds this lock until its line is written.
            let _lock = self.lock(id)?;
            if fs::exists(&self.layout.claim_logged(id))? {
                continue;
            }
            if !has(&self.audit.records()?, id, AuditEvent::Consumed) {
                let fields = details(json!({
                    "recovered": true,
                    "detail": "the claim exists but its line was never written",
                }));
                self.append(id, &entry(now, AuditEvent::Consumed, &fields))?;
                recovery.consumed.push(id);
            }
            fs::mark(&self.layout.claim(id), &self.layout.claim_logged(id))?;
        }

        executions.sort_unstable();
        for id in executions {
            // A live executor holds its mark; only a dead one lets go of it.
            let Some(_held) = try_lock_existing(&self.layout.execution_marker(id))? else {
                continue;
            };
            let records = self.audit.records()?;
            let count = |event| {
                records
                    .iter()
                    .filter(|r| r.id == id && r.event == event)
                    .count()
            };
            if count(AuditEvent::ExecutionStarted) > count(AuditEvent::ExecutionFinished) {
                let fields = details(json!({
                    "outcome": Outcome::Unknown,
                    "recovered": true,
                    "error": "the executing process ended without recording an outcome; inspect the external system, nothing is retried",
                }));
                self.append(id, &entry(now, AuditEvent::ExecutionFinished, &fields))?;
                recovery.unknown_outcomes.push(id);
            }
            fs::remove_if_exists(&self.layout.execution_marker(id))?;
        }
        Ok(recovery)
    }
}

fn entry(
    ts: Timestamp,
    event: AuditEvent,
    details: &serde_json::Map<String, serde_json::Value>,
) -> Entry<'_> {
    Entry { ts, event, details }
}

fn has(records: &[AuditRecord], id: RequestId, event: AuditEvent) -> bool {
    records.iter().any(|r| r.id == id && r.event == event)
}

/// The ids of the claims directory's files, by kind.
struct ClaimFiles {
    used: HashSet<RequestId>,
    logged: HashSet<RequestId>,
    executions: Vec<RequestId>,
}

fn claim_files(dir: &Path) -> Result<ClaimFiles, Error> {
    let mut files = ClaimFiles {
        used: HashSet::new(),
        logged: HashSet::new(),
        executions: Vec::new(),
    };
    for name in fs::list_names(dir)? {
        let Some((id, kind)) = name.split_once('.') else {
            continue;
        };
        let Ok(id) = RequestId::parse(id) else {
            continue;
        };
        match kind {
            "used" => {
                files.used.insert(id);
            }
            "logged" => {
                files.logged.insert(id);
            }
            "exec" => files.executions.push(id),
            _ => {}
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Map;

    use super::*;
    use crate::request::NewRequest;

    /// An id is taken wherever the store keeps it: a live record, an archived one, a claim
    /// (an index entry alone is dropped by filing, which holds the filing lock). Filing under
    /// a taken id files nothing and asks for another.
    #[test]
    fn an_id_kept_anywhere_is_taken_and_nothing_is_filed() {
        let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
        for place in [
            format!("requests/{id}.json"),
            format!("archive/{id}.json"),
            format!("claims/{id}.used"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = DirStore::open(dir.path().join("g")).unwrap();
            std::fs::write(store.layout.root.join(&place), b"{}").unwrap();
            let request = Request::new(
                id,
                NewRequest::new("rotate the key", "unit"),
                Timestamp::from_unix_millis(1_796_000_000_000),
                Duration::from_secs(600),
                1,
            );
            let details = Map::new();
            let entry = Entry {
                ts: request.created_at(),
                event: AuditEvent::Requested,
                details: &details,
            };
            let caps = Caps {
                max_pending: 10,
                max_requests: 10,
            };
            let filed = store.file_serialised(&request, caps, &entry).unwrap();
            assert_eq!(filed, Filed::IdTaken, "{place}");
            let index = store.queue.lock().unwrap().read().unwrap().unwrap();
            assert!(!index.has(id), "{place}: nothing indexed");
            assert!(
                store.audit.records().unwrap().is_empty(),
                "{place}: no line"
            );
        }
    }

    #[test]
    fn claim_files_sorts_the_claims_directory_by_kind_and_skips_strangers() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "a1b2c3d4e5f6.used",
            "a1b2c3d4e5f6.logged",
            "a1b2c3d4e5f6.exec",
            "0123456789ab.used",
            "0123456789ab.exec",
            "not-an-id.used",
            "a1b2c3d4e5f6.other",
            "a1b2c3d4e5f6",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let files = claim_files(dir.path()).unwrap();
        let a = RequestId::parse("a1b2c3d4e5f6").unwrap();
        let b = RequestId::parse("0123456789ab").unwrap();
        assert_eq!(files.used, HashSet::from([a, b]));
        assert_eq!(files.logged, HashSet::from([a]));
        let mut executions = files.executions;
        executions.sort_unstable();
        assert_eq!(executions, [b, a]);
    }
}
