//! The store's health, for a human: records that cannot be read, an audit log that fails
//! verification, and entries the store did not write.
//!
//! Nothing here changes the store: it is safe to run at any time, next to live processes.
//! Front ends show the report; only the store knows which names belong where.

use std::path::PathBuf;

use crate::audit::AuditSummary;
use crate::error::Error;
use crate::gate::Gate;
use crate::gate::list::Expiry;
use crate::scan::UnreadableRecord;

/// What [`Gate::check_health`] found.
#[derive(Debug)]
#[non_exhaustive]
pub struct HealthReport {
    /// Records of the live store that cannot be read; each refuses everything about its id.
    pub unreadable: Vec<UnreadableRecord>,
    /// The audit log's verification ([`Gate::verify_audit`]): its summary, or why it fails.
    pub audit: Result<AuditSummary, Error>,
    /// What the store holds that it does not write, in name order: entries of a directory
    /// store's directories (relative to it), or objects in a PostgreSQL store's schema that
    /// `db init` does not create (`approval_gate.<name>`).
    pub stray: Vec<PathBuf>,
}

impl HealthReport {
    /// Whether nothing needs a human's attention.
    #[must_use]
    pub fn is_healthy(&self) -> bool {
        self.unreadable.is_empty() && self.audit.is_ok() && self.stray.is_empty()
    }
}

impl Gate {
    /// Checks the store without changing it: every record of the live store is read, the
    /// audit log is verified, and the store is searched for what it does not write (files in
    /// its directories; objects in its database schema).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if a directory of the store cannot be listed; what is wrong inside the
    /// store is the report, not an error.
    pub fn check_health(&self) -> Result<HealthReport, Error> {
        let scan = self.scan_all(self.now(), Expiry::Leave)?;
        let mut unreadable = scan.unreadable;
        unreadable.sort_by_key(UnreadableRecord::id);
        let stray = self.store().stray_entries()?;
        Ok(HealthReport {
            unreadable,
            audit: self.verify_audit(),
            stray,
        })
    }
}
