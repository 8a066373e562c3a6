//! Where a request stands: its status as of now, recording its expiry if it is due.

use crate::error::Error;
use crate::gate::Gate;
use crate::id::RequestId;
use crate::request::StatusReport;

impl Gate {
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
        let request = if crate::rules::expiry_due(&request, now) {
            let _lock = self.store().lock(id)?;
            self.refresh_locked(id, now)?.request
        } else {
            request
        };
        self.report(request, now)
    }
}
