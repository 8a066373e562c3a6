//! Make an agent's consequential actions wait for a human decision that is bound to the exact
//! operation and payload, expires, and can be used once.
//!
//! An agent (possibly prompt-injected) may *ask*. Only a human, out of band, may *decide*.
//! Only trusted executor code may *act*, and it acts only through a successful
//! [`consume`](Gate::consume) of an approved request, bound to the exact action text,
//! operation and canonical payload the human saw. Pending, approved-but-not-consumed, denied,
//! expired, revoked, timed out, any error: all of them mean **no**.
//!
//! ```
//! use approval_gate::{Binding, Decision, Error, Gate, Grant, NewRequest, CanonicalPayload};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Email { to: String, subject: String }
//!
//! # let dir = tempfile::tempdir()?;
//! let gate = Gate::open(dir.path().join("approvals"))?;
//!
//! // The agent asks...
//! let email = Email { to: "alice@example.com".into(), subject: "Invoice 1042".into() };
//! let action = "send email to alice@example.com, subject: Invoice 1042";
//! let ask = NewRequest::new(action, "the invoice is due")
//!     .operation("smtp.send")
//!     .payload(CanonicalPayload::from_serialize(&email)?);
//! let id = gate.request_approval(ask)?.request.id();
//!
//! // ...a human decides, in their own terminal (`approval-gate approve <id>`)...
//! gate.approve(id, &Decision::by("alice").reason("looks right"))?;
//!
//! // ...and trusted code acts, exactly once, on exactly what was approved.
//! let binding = Binding::new(action).operation("smtp.send").payload_of(&email)?;
//! let sent_to = gate.execute_approved(id, &binding, |grant: &Grant<Email>| {
//!     grant.assert_active()?; // re-check expiry immediately before the side effect
//!     Ok::<_, Error>(grant.payload().to.clone()) // smtp.send(grant.payload()) goes here
//! })?;
//! assert_eq!(sent_to, "alice@example.com");
//!
//! // A second attempt is a replay, refused and audited.
//! let again = gate.execute_approved(id, &binding, |_: &Grant<Email>| Ok::<_, Error>(()));
//! assert!(matches!(again, Err(Error::AlreadyConsumed(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The gate never executes anything itself, and it is not a boundary against processes
//! running as the same OS user: see `docs/threat-model.md`. The states and their transitions
//! are in `docs/authorization-states.md`.

// On docs.rs (`--cfg docsrs`), each feature-gated item is marked with its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The directory store's durability and locking rest on Unix: fsync of files and directories,
// rename over an existing file, and advisory file locks.
#[cfg(not(unix))]
compile_error!(
    "approval-gate supports Unix only (Linux is tested; macOS builds but is untested): the directory store's durability rests on fsync of files and directories, rename and advisory file locks"
);

// The lifecycle states the rules once, with `rules`: `gate` holds the `Gate`, its builder and
// its verbs a file each (ask, status, decide, consume, claim, execute, list, wait, archive,
// health, recover, audit), and `trail` checks what the audit lines
// say against the rules; `store` holds the two traits a backend implements
// (docs/architecture.md), `store::dir` the directory store and `store::pg` PostgreSQL.
// `request`, `status`, `id`, `payload`, `time`, `limits` and `error` are the vocabulary, and
// import nothing from the lifecycle.
pub mod allowance;
mod audit;
mod change;
mod error;
mod faults;
#[cfg(feature = "fs-trace")]
pub mod fs_trace;
#[cfg(feature = "store-trace")]
pub use store::traced as store_trace;
mod gate;
mod grant;
mod id;
pub mod limits;
mod notices;
mod offload;
mod payload;
mod policy;
mod request;
mod rules;
mod scan;
#[cfg(feature = "schemars")]
mod schema;
#[cfg(feature = "settings")]
pub mod settings;
mod status;
mod store;
mod time;
mod trail;

#[cfg(feature = "macros")]
pub use approval_gate_macros::requires_approval;
pub use audit::{AuditEvent, AuditRecord, AuditSummary, Reanchored};
pub use error::{Error, ErrorClass, ErrorCode, ErrorFamily};
pub use gate::__private;
#[doc(hidden)]
pub use gate::Claim;
pub use gate::{
    AllowanceReport, ArchiveReport, Gate, GateBuilder, HealthReport, ListFilter, ListItem, Page,
    Recovery, Submitted,
};
pub use grant::Grant;
pub use id::{InvalidId, RequestId};
pub use limits::Limits;
pub use notices::{
    DeadLetter, MAX_NOTICE_KEY_BYTES, MAX_NOTICE_REASON_BYTES, NoticeClaim, Notices,
};
pub use payload::{CanonicalPayload, PayloadDigest, PayloadError};
pub use policy::passkey;
pub use policy::{Policy, SshKeygen, Standing};
pub use request::{
    ApprovalJson, Binding, Decision, EffectiveStatus, NewRequest, NotAuthorized,
    OPERATION_NAME_PATTERN, PayloadShown, ReportJson, Request, SIGNATURE_NAMESPACE,
    STATEMENT_VERSION, SignedApproval, Status, StatusReport, check_operation_name, os_user,
};
pub use scan::UnreadableRecord;
pub use store::dir::predecessor::{
    MigratedRequest, Migration, MigrationOutcome, migrate_predecessor,
};
pub use store::{Capabilities, Filer, Location, Refusals};

/// The PostgreSQL store's schema: what `approval-gate db init` applies. Open a
/// gate on it with a `postgres://` [`Location`]; `docs/postgres.md` shows an operator's
/// whole set-up.
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use crate::store::pg::{SCHEMA_VERSION, init, init_with_limits};
}
pub use change::Change;
pub use gate::{
    Arrivals, Changes, Closer, FALLBACK, FALLBACK_WITHOUT_EVENTS, QueueEvent, QueueEvents, Waited,
    Waiting, Watch, WatchBuilder,
};
pub use time::{Clock, ManualClock, SystemClock, Timestamp};

/// Entry points for the fuzz targets in `fuzz/`. Not a public API.
#[doc(hidden)]
pub mod __fuzz {
    /// Parses a whole audit log, checking every line's hash, sequence number and link.
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`](crate::Error::AuditBroken) at the first bad line.
    pub fn parse_audit_log(bytes: &[u8]) -> Result<Vec<crate::AuditRecord>, crate::Error> {
        crate::audit::parse_chain(bytes).map(|(records, _)| records)
    }

    /// Parses a whole audit log as [`parse_audit_log`] does, then checks what its lines say
    /// against the state machine, as a store that writes lines apart from their effects.
    ///
    /// # Errors
    ///
    /// [`Error::AuditBroken`](crate::Error::AuditBroken) at the first bad line,
    /// [`Error::AuditInconsistent`](crate::Error::AuditInconsistent) at the first line that
    /// cannot follow the ones before it.
    pub fn check_audit_log(bytes: &[u8]) -> Result<Vec<crate::AuditRecord>, crate::Error> {
        let records = parse_audit_log(bytes)?;
        crate::trail::check(&records, crate::trail::Recording::Ordered)?;
        Ok(records)
    }
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
