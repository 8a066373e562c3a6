//! How the directory store's steps write: each through the journal (one synced entry, then
//! the record, claim or marker it carries, unsynced), and the few that must stand without it.

use serde_json::json;

use super::audit_log::journal::Effect;
use super::audit_log::{self, Step};
use super::layout::{Locked, lock_file};
use super::{DirStore, MARKER_ATTEMPTS, fs};
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::request::Request;
use crate::store::{Entry, Spent};

impl DirStore {
    /// After a power loss, the journal replayed onto the log and the state files; in this
    /// boot, a commit cut short carried in.
    pub(super) fn settled(self) -> Result<Self, Error> {
        self.audit.settle()?;
        Ok(self)
    }

    /// The record of `request`, as written.
    pub(super) fn encode(&self, request: &Request) -> Result<String, Error> {
        serde_json::to_string(request).map_err(|e| Error::Corrupt {
            path: self.layout.request(request.id()),
            problem: format!("cannot encode: {e}"),
        })
    }

    /// Writes the record of an existing request, durably, without the journal: a "no" that
    /// stands when it cannot be recorded. A failure once the new record may be in place is
    /// [`Error::DurabilityUnknown`] for `operation`.
    pub(super) fn save(&self, request: &Request, operation: &'static str) -> Result<(), Error> {
        let bytes = self.encode(request)?;
        fs::write_atomic(&self.layout.request(request.id()), bytes.as_bytes())
            .map_err(|failed| failed.on(request.id(), operation))
    }

    /// Appends the line of `entry` for `id`, durably; its position in the chain.
    pub(super) fn append(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error> {
        self.audit.append(entry.ts, entry.event, id, entry.details)
    }

    /// Commits the line of `entry` for `id` with `effect`, which the caller has `made`
    /// already or the commit makes once the line is durable.
    pub(super) fn commit(
        &self,
        id: RequestId,
        entry: &Entry<'_>,
        effect: Effect,
        made: bool,
    ) -> Result<u64, fs::Failed> {
        self.audit.commit(Step {
            ts: entry.ts,
            event: entry.event,
            id,
            details: entry.details.clone(),
            effect: Some(effect),
            deferred: false,
            made,
        })
    }

    /// Records `entry` after an effect that was `saved` (a "no", or a filing). It is recorded
    /// even when its durability is unknown, and a failure to record it is reported as "took
    /// effect, not recorded", never as "nothing happened".
    pub(super) fn record_after(
        &self,
        saved: Result<(), Error>,
        id: RequestId,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<(), Error> {
        if let Err(error) = &saved
            && !error.took_effect()
        {
            return saved;
        }
        let recorded = self
            .append(id, entry)
            .map(drop)
            .map_err(|error| error.after_effect(id, operation));
        saved.and(recorded)
    }

    /// Drops `id` from the queue index's pending requests (an index to be rebuilt is left
    /// to the rebuild, which reads the records).
    pub(super) fn unindex(&self, id: RequestId) -> Result<(), Error> {
        let held = self.queue.lock()?;
        if let Some(mut index) = held.read()?
            && index.remove(id)
        {
            held.write(&index)?;
        }
        Ok(())
    }

    /// Makes the claim of `id` and writes its `consumed` line: the spend itself, once every
    /// check has passed. `Spent::before` if the claim exists.
    pub(super) fn claim_and_record(
        &self,
        id: RequestId,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        let claim = json!({ "consumedAt": entry.ts, "pid": std::process::id() }).to_string();
        // Made before its line, unsynced: from here on the approval is spent in every
        // process, whatever happens next; the journal entry makes it durable.
        let made = fs::create_exclusive_unsynced(&self.layout.claim(id), claim.as_bytes())
            .map_err(|failed| failed.on(id, "consume"))?;
        if !made {
            return Ok(Spent::before(id));
        }
        let record = || -> Result<(), fs::Failed> {
            failpoint!("consume::after_claim");
            let effect = Effect::Claim { id, bytes: claim };
            self.commit(id, entry, effect, true)?;
            failpoint!("consume::after_consumed_line");
            Ok(())
        };
        record().map_err(|failed| failed.after_made(id, "consume"))?;
        // Only a hint for recovery: a lost marker makes recovery look the line up again.
        // Not before the line is durable: a deferred consume's is marked by the start that
        // makes it durable.
        if !audit_log::durability_deferred() {
            let _ = fs::mark(&self.layout.claim(id), &self.layout.claim_logged(id));
        }
        Ok(Spent::Now)
    }

    /// Makes and locks `claims/<id>.exec`, held for the whole execution so that recovery
    /// can tell a live executor from a dead one.
    ///
    /// Recovery removes a marker it can lock. Between our open and our lock, another
    /// process's recovery may lock and unlink the file we opened; we would then hold a lock
    /// on a file no longer at the path, and a crash would leave no marker for the next
    /// recovery. So after locking, check that the path still names the locked file, and
    /// start again if not.
    pub(super) fn lock_execution_marker(&self, id: RequestId) -> Result<Locked, Error> {
        let path = self.layout.execution_marker(id);
        for _ in 0..MARKER_ATTEMPTS {
            // The marker is a second name of the claim (no new file to allocate), or a new
            // file where that cannot be made; either way it is locked, and checked to be
            // still at its name, below.
            fs::mark(&self.layout.claim(id), &path)?;
            let file = fs::open_lock(&path)?;
            failpoint!("execute::before_marker_lock");
            let held = fs::Meta::of_file(&file).map_err(|e| Error::io("inspecting", &path, e))?;
            let locked = lock_file(file, &path)?;
            if fs::still_at(&held, &path)? {
                // Not synced: the `execution_started` entry makes it again after a power
                // loss, so that recovery gives the execution an outcome.
                return Ok(locked);
            }
        }
        Err(Error::io(
            "locking",
            &path,
            std::io::Error::other(format!(
                "the execution marker was removed {MARKER_ATTEMPTS} times while being locked; nothing ran"
            )),
        ))
    }
}
