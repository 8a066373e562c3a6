//! The predecessor's store: what approval-gate-mcp (Node) 0.1 leaves in a directory, how it is
//! told from ours, and how `approval-gate migrate` brings it over.
//!
//! Its layout (`docs/migrating.md` has the whole format):
//!
//! ```text
//! <dir>/                 0755, no locks, no fsync, no chain
//!   audit.jsonl          one `{"at","event","id",...}` object a line: requested, approved,
//!                        denied, expired
//!   requests/<id>.json   `JSON.stringify(record, null, 2)`: id, action, reason, requestedBy?,
//!                        status, createdAt, expiresAt, decidedAt?, decisionReason?
//! ```
//!
//! [`refuse_predecessor`] runs before the directory store creates or checks anything, so every
//! front end says so in one line and changes nothing. [`migrate_predecessor`] reads the store
//! strictly (anything it cannot read exactly refuses the whole store), builds the new store
//! beside it, and swaps the two atomically.

mod detect;
mod format;
mod migrate;
mod plan;

pub(crate) use detect::refuse_predecessor;
pub use migrate::{Migration, MigrationOutcome, migrate_predecessor};
pub use plan::MigratedRequest;

/// What the predecessor is called in messages.
const PREDECESSOR: &str = "approval-gate-mcp (Node)";

#[cfg(test)]
mod tests;
