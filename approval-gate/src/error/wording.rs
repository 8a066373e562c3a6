//! The phrases the error messages share: who held what a blocked step waited for, and what an
//! operation that took effect means for the reader.

/// Who held what a blocked step waited for, as [`Error::Blocked`](super::Error::Blocked) says it.
pub(super) fn holder(role: Option<&str>, pid: Option<i32>) -> String {
    match (role, pid) {
        (Some(role), Some(pid)) => format!("role {role} (backend pid {pid})"),
        (None, Some(pid)) => format!("backend pid {pid}"),
        _ => "a session that could not be found (it may have let go since)".to_owned(),
    }
}

/// What an operation that took effect means for the reader.
pub(super) fn consequence(operation: &str) -> &'static str {
    match operation {
        "request" => "the request is filed",
        "approve" => "the request is approved",
        "deny" => "the request is denied",
        "revoke" => "the approval is revoked",
        "expire" => "the request is expired",
        "consume" | "execute" => {
            "the approval is spent; nothing is authorized and nothing ran: do not act on it"
        }
        "archive" => "the request is archived",
        _ => "it changed the store",
    }
}
