//! Retention: moving finished requests out of the live store.

use serde_json::json;

use crate::audit::AuditEvent;
use crate::error::Error;
use crate::gate::Gate;
use crate::gate::list::Expiry;
use crate::id::RequestId;
use crate::request::Request;
use crate::rules;
use crate::scan::Scan;
use crate::scan::UnreadableRecord;
use crate::store::{Entry, Shelf};

/// What [`Gate::archive`] did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveReport {
    /// The requests moved out of the live store (or that would be).
    pub archived: Vec<RequestId>,
    /// Records left where they are because they cannot be read: nothing can tell whether
    /// they are finished, so they stay, refusing everything, until a human looks at them.
    pub skipped: Vec<UnreadableRecord>,
}

/// Whether [`Gate::archive_as`] moves anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    DryRun,
    Move,
}

impl Gate {
    /// Moves finished requests out of the live store: only those created at least
    /// `max(older_than_days, 8)` days ago whose expiry is at least 8 days past, so nothing
    /// archived could still be used. Archived requests can never be consumed or decided.
    ///
    /// Records that cannot be read are skipped and named in [`ArchiveReport::skipped`].
    /// [`plan_archive`](Gate::plan_archive) says what this would do and changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] before anything moves if the audit log refuses appends; any I/O
    /// error, or [`Error::DurabilityUnknown`] / [`Error::NotRecorded`] for a request that was
    /// moved but not made durable or recorded; requests archived before it stay archived.
    pub fn archive(&self, older_than_days: u32) -> Result<ArchiveReport, Error> {
        self.observed("archive", None, || {
            self.archive_as(older_than_days, Run::Move)
        })
    }

    /// What [`archive`](Gate::archive) would move now, changing nothing on disk (not even
    /// the expiry of pending requests past it, which every other read records).
    ///
    /// # Errors
    ///
    /// I/O errors reading the store.
    pub fn plan_archive(&self, older_than_days: u32) -> Result<ArchiveReport, Error> {
        self.archive_as(older_than_days, Run::DryRun)
    }

    fn archive_as(&self, older_than_days: u32, run: Run) -> Result<ArchiveReport, Error> {
        let store = self.store();
        let now = self.now();
        let due = |request: &Request| rules::archivable(request, older_than_days, now);
        let scan = match run {
            Run::DryRun => self.scan_all(now, Expiry::Leave)?,
            Run::Move => {
                // Nothing moves that the audit log cannot record.
                self.check_audit_appendable()?;
                self.scan_all(now, Expiry::Record)?
            }
        };
        let mut report = ArchiveReport {
            archived: Vec::new(),
            skipped: scan.unreadable,
        };
        let mut late = Scan::default();
        for request in scan.requests {
            if !due(&request) {
                continue;
            }
            let id = request.id();
            let _lock = match run {
                Run::DryRun => None,
                Run::Move => Some(store.lock(id)?),
            };
            // Re-read under the lock: it may have changed since the scan.
            let Some(Some(request)) = late.readable(store, id, store.load(id, Shelf::Live))? else {
                continue;
            };
            let marks = store.marks(id)?;
            let status = request.effective(marks.claimed, now);
            // An execution still running (or awaiting recovery) keeps its request live.
            if !due(&request) || !status.is_finished() || marks.executing {
                continue;
            }
            if run == Run::DryRun {
                report.archived.push(id);
                continue;
            }
            let fields = json!({ "status": status, "createdAt": request.created_at() });
            let details = crate::gate::details(fields);
            let entry = Entry {
                ts: self.now(),
                event: AuditEvent::Archived,
                details: &details,
            };
            store.archive(id, &entry)?;
            report.archived.push(id);
        }
        report.skipped.append(&mut late.unreadable);
        Ok(report)
    }
}
