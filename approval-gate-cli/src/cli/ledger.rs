//! Whether this account can rewrite the store a signing policy guards (issue 37, findings 10
//! and 12).
//!
//! A policy makes the executor verify the approvers' signatures itself, so no one without an
//! approver's key can make an approval count. It cannot make the store remember: on a
//! directory store, any process of an account that can write it can delete the claim of a
//! spent approval (which then runs again, until it expires) or write a revoked approval back
//! to `approved` (its signatures still verify). `exec` and `doctor` cannot tell which account
//! the agent runs as, so they say so whenever this account can rewrite the store.

use approval_gate::Location;
use approval_gate::settings::Settings;

use crate::term::display::escape;

/// The warning for a policy in force over a directory store this account can rewrite;
/// `None` without a policy, on PostgreSQL (the database decides who may change what), or when
/// this account cannot write the store.
pub(crate) fn rewritable_store(settings: &Settings) -> Option<String> {
    settings.policy.as_ref()?;
    let Location::Dir(dir) = &settings.store.value else {
        return None;
    };
    let writable = [dir.clone(), dir.join("claims"), dir.join("requests")]
        .iter()
        .any(|path| rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok());
    if !writable {
        return None;
    }
    let uid = rustix::process::geteuid().as_raw();
    Some(format!(
        "warning: a signing policy is in force, but this account can rewrite the store {} \
         (uid {uid}): any process running as it can replay a spent approval (delete its claim; it \
         runs again until it expires) or undo a revocation (write the record back to \
         approved). The policy stops forged approvals only. Unless no agent runs as this \
         account, run the executor under an OS user of its own that owns the store, or use \
         PostgreSQL with the executor role (docs/threat-model.md).",
        escape(&dir.display().to_string())
    ))
}
