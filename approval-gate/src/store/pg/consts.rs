//! The store's fixed numbers, which the schema and the Rust side share: the schema version
//! and the classes of its advisory locks. Below every other file of the store.

/// The schema version this build creates and uses.
pub const SCHEMA_VERSION: u32 = 5;

/// `wake` seals the audit rows committed since the last seal only if that seal is at least
/// this old: steps at a person's pace are each sealed at once, and a burst of steps shares
/// one seal a period instead of paying one each.
pub(super) const SEAL_EVERY_MS: u32 = 20;

/// Advisory lock class of a request's decisions and consume (`hashtext(id)` is the key).
pub(super) const LOCK_REQUEST: i32 = 1_095_192_400;
/// Advisory lock class of a running execution; the schema's recovery uses the same number.
pub(super) const LOCK_EXECUTION: i32 = 1_095_192_401;
/// Advisory lock class of filing (key 0).
pub(super) const LOCK_FILING: i32 = 1_095_192_402;
/// Advisory lock class of `db init` (transaction-scoped, key 0).
pub(super) const LOCK_INIT: i32 = 1_095_192_403;

/// Advisory lock class of identical asks while filing (taken by `file_request`).
pub(super) const LOCK_ASK: i32 = 1_095_192_404;

/// Advisory lock class of the passkeys' signature counters (key `passkeys`): held by an
/// approver while a passkey approval's counter is checked and written. Added by version 4.
pub(super) const LOCK_COUNTERS: i32 = 1_095_192_405;
