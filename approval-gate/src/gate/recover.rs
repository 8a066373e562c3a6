//! Recovery: make the audit log agree with the claims on disk after a crash.
//!
//! Two windows can be cut by a crash (or a kill, or an I/O error):
//! - between a consume's claim and its `consumed` line: the approval is spent (the claim
//!   exists) but the log does not say so;
//! - between `execution_started` and `execution_finished`: the action may or may not have
//!   happened.
//!
//! A store that writes each step with its line in one transaction (PostgreSQL) can be cut
//! only in the second. The directory store finds both cheaply from what it keeps next to the
//! claims (`<id>.logged` once the `consumed` line is durable; `<id>.exec`, held locked while
//! an executor runs) and reads the log only for the few ids that need it. It adds `consumed` with `"recovered": true`
//! for an unlogged claim, and `execution_finished` with outcome `unknown` for an execution
//! whose process is gone. It never re-runs anything and never un-spends a claim. It runs on
//! every open and is idempotent.
//!
//! A power loss can also leave a torn last audit line (an append that never returned);
//! recovery cuts it when the anchor proves it was never acknowledged, as the next append
//! would, and otherwise leaves the log for `audit verify` to report.

use crate::error::Error;
use crate::gate::Gate;

pub use crate::store::Recovery;

impl Gate {
    /// Makes the audit log agree with the claims in the store after a crash; see the module
    /// docs. Runs on every open; safe to run again at any time, from any process.
    ///
    /// # Errors
    ///
    /// I/O errors, and [`Error::AuditBroken`] if the log must be repaired by a human first.
    pub fn recover(&self) -> Result<Recovery, Error> {
        self.observed("recover", None, || self.store().recover(self.now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RequestId;

    #[test]
    fn a_recovery_is_empty_only_when_it_repaired_nothing() {
        assert!(Recovery::default().is_empty());
        let id: RequestId = "a1b2c3d4e5f6".parse().unwrap();
        let consumed = Recovery {
            consumed: vec![id],
            ..Recovery::default()
        };
        assert!(!consumed.is_empty());
        let unknown = Recovery {
            unknown_outcomes: vec![id],
            ..Recovery::default()
        };
        assert!(!unknown.is_empty());
    }
}
