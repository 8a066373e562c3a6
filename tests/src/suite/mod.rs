//! The conformance suite: what every backend must pass. Each case is a function
//! taking the [`Backend`](crate::backend::Backend) under test; [`conformance!`](macro@crate::conformance)
//! turns the whole list into `#[test]`s for one backend.
//!
//! Nothing here names a file, a table or any other part of a backend's layout: a case works
//! through `Gate`, as every front end does, and through the backend's own two looks
//! (`contents`, `claimed`). The directory store's tests of its layout (permissions,
//! damaged files, power loss, edits to `audit.jsonl`) stay in `tests/it`, `tests/faults`
//! and `tests/powerloss`.

pub mod allowance_races;
pub mod allowances;
pub mod allowed;
pub mod audit;
pub mod binding;
pub mod cosign;
pub mod execute;
pub mod lifecycle;
pub mod model;
pub mod notices;
pub mod passkeys;
pub mod races;
pub mod recovery;
pub mod signed;

use approval_gate::{AuditEvent, Gate, RequestId};

/// How many audit records of `event` the gate has for `id`.
fn count(gate: &Gate, id: RequestId, event: AuditEvent) -> usize {
    gate.audit_records()
        .unwrap()
        .iter()
        .filter(|r| r.id == id && r.event == event)
        .count()
}
