//! The audit verbs: reading the log, verifying its chain and its meaning, and re-anchoring it
//! after a human has looked.

use crate::audit::{AuditRecord, AuditSummary, Reanchored};
use crate::error::Error;
use crate::gate::Gate;
use crate::request::Decision;
use crate::trail::{Recording, check};

impl Gate {
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
        self.store().reanchor(self.now(), by)
    }

    /// Every audit record, oldest first (the chain is checked while reading).
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] with the first bad line.
    pub fn audit_records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.store().records()
    }

    /// Verifies the audit log: its hash chain and anchor, then its meaning: each request's
    /// lines must follow the state machine (`docs/authorization-states.md`), so that a
    /// `consumed` with no `approved` before it, say, is found even in a chain whose hashes
    /// are all right.
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`] with the first bad line; [`Error::AuditInconsistent`] with the
    /// first line that cannot follow the lines before it, and its request.
    pub fn verify_audit(&self) -> Result<AuditSummary, Error> {
        let (summary, records) = self.store().verify_records()?;
        let recording = if self.store().about().capabilities.atomic_lines {
            Recording::Atomic
        } else {
            Recording::Ordered
        };
        let verified =
            usize::try_from(summary.lines).map_or(records.len(), |n| n.min(records.len()));
        check(&records[..verified], recording)?;
        Ok(summary)
    }
}
