//! Recovery: make the audit log agree with the claims on disk after a crash.
//!
//! Two windows can be cut by a crash (or a kill, or an I/O error):
//! - between a consume's claim and its `consumed` line: the approval is spent (the claim
//!   exists) but the log does not say so;
//! - between `execution_started` and `execution_finished`: the action may or may not have
//!   happened.
//!
//! Recovery finds both cheaply from what the store keeps next to the claims (the directory
//! store: `<id>.logged` once the `consumed` line is durable; `<id>.exec`, held locked while
//! an executor runs) and reads the log only for the few ids that need it. It adds `consumed` with `"recovered": true`
//! for an unlogged claim, and `execution_finished` with outcome `unknown` for an execution
//! whose process is gone. It never re-runs anything and never un-spends a claim. It runs on
//! every open and is idempotent.
//!
//! A power loss can also leave a torn last audit line (an append that never returned);
//! recovery cuts it when the anchor proves it was never acknowledged, as the next append
//! would, and otherwise leaves the log for `audit verify` to report.

use serde_json::json;

use crate::audit::{AuditEvent, AuditRecord};
use crate::error::Error;
use crate::gate::Gate;
use crate::id::RequestId;

/// What a recovery pass repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovery {
    /// Claims whose `consumed` line was missing and has been added.
    pub consumed: Vec<RequestId>,
    /// Executions whose process ended without an outcome, now recorded as `unknown`.
    pub unknown_outcomes: Vec<RequestId>,
}

impl Recovery {
    /// Whether anything was repaired.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.consumed.is_empty() && self.unknown_outcomes.is_empty()
    }
}

fn has(records: &[AuditRecord], id: RequestId, event: AuditEvent) -> bool {
    records.iter().any(|r| r.id == id && r.event == event)
}

impl Gate {
    /// Makes the audit log agree with the claims in the store after a crash; see the module
    /// docs. Runs on every open; safe to run again at any time, from any process.
    ///
    /// # Errors
    ///
    /// I/O errors, and [`Error::AuditBroken`] if the log must be repaired by a human first.
    pub fn recover(&self) -> Result<Recovery, Error> {
        let store = self.store();
        store.repair_torn_tail()?;
        let mut recovery = Recovery::default();

        for id in store.unlogged_claims()? {
            // The consume that made the claim holds this lock until its line is written.
            let _lock = store.lock(id)?;
            if store.is_logged(id)? {
                continue;
            }
            if !has(&self.audit_records()?, id, AuditEvent::Consumed) {
                self.audit(
                    AuditEvent::Consumed,
                    id,
                    json!({ "recovered": true, "detail": "the claim exists but its line was never written" }),
                )?;
                recovery.consumed.push(id);
            }
            store.note_logged(id)?;
        }

        if let Some(recovered) = store.recover_executions(self.now()) {
            recovery.unknown_outcomes = recovered?;
            return Ok(recovery);
        }
        for id in store.executions()? {
            // A live executor holds its mark; only a dead one lets go of it.
            let Some(_held) = store.dead_execution(id)? else {
                continue;
            };
            let records = self.audit_records()?;
            let started = records
                .iter()
                .filter(|r| r.id == id && r.event == AuditEvent::ExecutionStarted)
                .count();
            let finished = records
                .iter()
                .filter(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
                .count();
            if started > finished {
                self.audit(
                    AuditEvent::ExecutionFinished,
                    id,
                    json!({
                        "outcome": crate::execute::Outcome::Unknown,
                        "recovered": true,
                        "error": "the executing process ended without recording an outcome; inspect the external system, nothing is retried",
                    }),
                )?;
                recovery.unknown_outcomes.push(id);
            }
            store.end_execution(id)?;
        }
        Ok(recovery)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
