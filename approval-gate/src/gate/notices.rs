//! The notifications ledger, as a notifier and `doctor` reach it ([`crate::notices`]).

use crate::error::Error;
use crate::gate::Gate;
use crate::notices::{DeadLetter, Notices};

impl Gate {
    /// The notifications ledger, for a notifier (`approval-gate notify`): claim a message
    /// before sending it, record it delivered or dead. On a directory store one notifier runs
    /// at a time: this takes the store's notifier lock for as long as the value lives. On
    /// PostgreSQL any number may run; the session needs the `approval_gate_notifier` role.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] while another notifier holds a directory store's lock; the store's errors.
    pub fn notices(&self) -> Result<Notices, Error> {
        let ledger = self.inner.store.notices()?;
        Ok(Notices::new(ledger, self.inner.clock.clone()))
    }

    /// The messages notifiers gave up on (a permanent failure, or too many attempts), oldest
    /// first: for a human to look at (`approval-gate doctor`). Reads only.
    ///
    /// # Errors
    ///
    /// The store's errors; [`Error::Corrupt`] for a damaged ledger.
    pub fn dead_letters(&self) -> Result<Vec<DeadLetter>, Error> {
        self.inner.store.dead_letters()
    }
}
