//! How each front end treats each library error code, pinned: the CLI's exit code, `exec`'s
//! exit code, the web's HTTP status and the agent's advice. The CLI's crate and the MCP
//! server's each check their own columns against this one table. The library's error table says
//! what each code is (its class and family); these front ends derive their answers from it,
//! and this table holds them to what they answered before they did. A code added to the
//! library later needs no row here: its treatment follows from its class and family.

use approval_gate::{CanonicalPayload, EffectiveStatus, Error, ErrorCode, RequestId, Timestamp};

const ID: &str = "0123456789ab";

const NOTHING_CHANGED: &str = "nothing changed";
const NOT_APPROVED: &str = "not approved; do not proceed";
const NOT_USABLE: &str =
    "not usable: do not proceed; file a new request if the action is still needed";
const SPENT: &str = "the approval is spent: do not act on it again";
const SIGNATURES: &str = "not authorized: the approval lacks the trusted signatures the executor's policy requires, and it was not spent; do not proceed, a human has to look at the store";
const MISMATCH: &str = "the approval was not spent; do only exactly what was approved (same action text, operation and payload), or file a new request for what you now intend";
const TOOK_EFFECT: &str = "it took effect, but the store needs a human's attention; call check_approval, treat nothing as approved and do not proceed";
const HUMAN: &str =
    "the approval store needs a human's attention; treat this as not approved and do not proceed";

/// `(code, CLI exit, exec exit, HTTP status, advice)` for every code the library had when the
/// front ends were made to derive their answers from the table.
pub const PINNED: &[(&str, u8, u8, u16, &str)] = &[
    (
        "invalid_id",
        2,
        125,
        400,
        "pass the id exactly as request_approval returned it; nothing changed",
    ),
    ("invalid_input", 2, 125, 400, NOTHING_CHANGED),
    ("invalid_payload", 2, 125, 400, NOTHING_CHANGED),
    ("payload_type", 1, 115, 409, MISMATCH),
    (
        "queue_full",
        1,
        125,
        409,
        "not filed: a human has to decide pending requests (or they expire) first; do not proceed",
    ),
    (
        "creation_limit",
        1,
        125,
        409,
        "not filed: a human has to archive old requests first; do not proceed",
    ),
    ("not_found", 1, 117, 404, NOT_APPROVED),
    ("archived", 1, 117, 404, NOT_APPROVED),
    (
        "not_approved",
        1,
        110,
        409,
        "do not proceed; call wait_for_approval for the human's decision",
    ),
    ("denied", 1, 111, 409, "a human said no: do not proceed"),
    ("expired", 1, 112, 409, NOT_USABLE),
    (
        "revoked",
        1,
        113,
        409,
        "a human withdrew the approval: do not proceed",
    ),
    ("already_consumed", 1, 114, 409, SPENT),
    ("approval_expired", 1, 112, 409, NOT_USABLE),
    ("expired_during_consume", 1, 112, 409, SPENT),
    ("action_mismatch", 1, 115, 409, MISMATCH),
    ("operation_mismatch", 1, 115, 409, MISMATCH),
    ("payload_mismatch", 1, 115, 409, MISMATCH),
    ("insufficient_approvals", 1, 116, 409, SIGNATURES),
    ("bad_signature", 1, 116, 403, SIGNATURES),
    ("untrusted_signer", 1, 116, 403, SIGNATURES),
    (
        "allowance_exhausted",
        1,
        114,
        409,
        "the allowance that approved it has nothing left, and nothing was spent: do not proceed; file a new request for a human to decide",
    ),
    ("allowance_not_covering", 1, 115, 409, MISMATCH),
    ("signature_required", 1, 116, 403, SIGNATURES),
    ("already_signed", 1, 125, 409, NOTHING_CHANGED),
    ("no_approvers", 2, 125, 500, HUMAN),
    ("signing", 2, 125, 500, HUMAN),
    ("changed", 1, 125, 409, NOTHING_CHANGED),
    ("wrong_state", 1, 125, 409, NOTHING_CHANGED),
    ("unsafe_state", 2, 125, 500, HUMAN),
    ("corrupt", 2, 125, 500, HUMAN),
    ("predecessor_store", 2, 125, 500, HUMAN),
    ("unreadable", 2, 125, 500, HUMAN),
    ("audit_broken", 2, 125, 500, HUMAN),
    ("audit_inconsistent", 2, 125, 500, HUMAN),
    ("durability_unknown", 3, 118, 500, TOOK_EFFECT),
    ("not_recorded", 3, 118, 500, TOOK_EFFECT),
    ("no_state_dir", 2, 125, 500, HUMAN),
    ("random", 2, 125, 500, HUMAN),
    ("database", 2, 125, 500, HUMAN),
    (
        "not_permitted",
        1,
        125,
        403,
        "the store's database does not let this login do that (its role is another's): nothing changed; do not proceed",
    ),
    (
        "blocked",
        2,
        125,
        500,
        "another session of the store's database held what this step needed and it gave up waiting: nothing changed; do not proceed, a human has to look at the session it names",
    ),
    ("io", 2, 125, 500, HUMAN),
];

/// An error of each pinned code, as the library would make it: one arm a code.
/// # Panics
///
/// On a code not pinned (a code added to the library later).
#[allow(clippy::too_many_lines)]
#[must_use]
pub fn sample(code: ErrorCode) -> Error {
    use ErrorCode as C;
    let id = RequestId::parse(ID).unwrap();
    let at = Timestamp::from_unix_millis(1_700_000_000_000);
    let problem = || "bad".to_owned();
    let principal = || "alice".to_owned();
    let payload_error = || CanonicalPayload::from_json_text("{").unwrap_err();
    let inner = || Box::new(Error::NoStateDir);
    match code {
        C::InvalidId => Error::InvalidId { id: "x".into() },
        C::InvalidInput => Error::InvalidInput {
            field: "reason",
            problem: problem(),
        },
        C::InvalidPayload => Error::InvalidPayload(payload_error()),
        C::PayloadType => Error::PayloadType {
            id,
            problem: payload_error(),
        },
        C::QueueFull => Error::QueueFull {
            pending: 2,
            limit: 2,
        },
        C::CreationLimit => Error::CreationLimit {
            requests: 2,
            limit: 2,
        },
        C::NotFound => Error::NotFound(id),
        C::Archived => Error::Archived(id),
        C::NotApproved => Error::NotApproved(id),
        C::Denied => Error::Denied(id),
        C::Expired => Error::Expired(id),
        C::Revoked => Error::Revoked(id),
        C::AlreadyConsumed => Error::AlreadyConsumed(id),
        C::ApprovalExpired => Error::ApprovalExpired { id, expired_at: at },
        C::ExpiredDuringConsume => Error::ExpiredDuringConsume { id, expired_at: at },
        C::ActionMismatch => Error::ActionMismatch(id),
        C::OperationMismatch => Error::OperationMismatch {
            id,
            expected: None,
            got: Some("x.y".into()),
        },
        C::PayloadMismatch => Error::PayloadMismatch {
            id,
            expected: "none".into(),
        },
        C::InsufficientApprovals => Error::InsufficientApprovals {
            id,
            valid: 1,
            required: 2,
        },
        C::BadSignature => Error::BadSignature {
            id,
            principal: principal(),
            problem: problem(),
        },
        C::UntrustedSigner => Error::UntrustedSigner {
            id,
            principal: principal(),
            key: "SHA256:x".into(),
        },
        C::AllowanceExhausted => Error::AllowanceExhausted {
            id,
            allowance: id,
            reason: problem(),
        },
        C::AllowanceNotCovering => Error::AllowanceNotCovering {
            id,
            allowance: id,
            reason: problem(),
        },
        C::SignatureRequired => Error::SignatureRequired { id, required: 2 },
        C::AlreadySigned => Error::AlreadySigned {
            id,
            principal: principal(),
        },
        C::NoApprovers => Error::NoApprovers { id },
        C::Signing => Error::Signing(problem()),
        C::Changed => Error::Changed(id),
        C::WrongState => Error::WrongState {
            id,
            operation: "approve",
            status: EffectiveStatus::Denied,
        },
        C::UnsafeState => Error::UnsafeState {
            path: "x".into(),
            problem: problem(),
        },
        C::Corrupt => Error::Corrupt {
            path: "x".into(),
            problem: problem(),
        },
        C::PredecessorStore => Error::PredecessorStore {
            path: "x".into(),
            problem: problem(),
        },
        C::Unreadable => Error::Unreadable {
            id,
            problem: problem(),
        },
        C::AuditBroken => Error::AuditBroken {
            line: 3,
            problem: problem(),
        },
        C::AuditInconsistent => Error::AuditInconsistent {
            line: 3,
            id,
            problem: problem(),
        },
        C::DurabilityUnknown => Error::DurabilityUnknown {
            id,
            operation: "deny",
            source: inner(),
        },
        C::NotRecorded => Error::NotRecorded {
            id,
            operation: "revoke",
            source: inner(),
        },
        C::NoStateDir => Error::NoStateDir,
        C::Random => Error::Random(problem()),
        C::Database => Error::Database {
            operation: "claim",
            problem: problem(),
        },
        C::NotPermitted => Error::NotPermitted { problem: problem() },
        C::Blocked => Error::Blocked {
            operation: "claim",
            what: "a request's row".into(),
            role: None,
            pid: None,
            after: "5s".into(),
        },
        C::Io => Error::Io {
            op: "reading",
            path: "x".into(),
            source: std::io::Error::other("gone"),
        },
        // The library's `ErrorCode` is `#[non_exhaustive]`: a code added later has no pinned
        // row, and is not asked for here.
        _ => unreachable!("{code} is not pinned"),
    }
}

/// The code named `name`, as the error table spells it.
///
/// # Panics
///
/// If no code has that name.
#[must_use]
pub fn code(name: &str) -> ErrorCode {
    serde_json::from_value(serde_json::Value::from(name)).unwrap()
}

/// Checks that a front end's treatment, the function `function` in `source` (the file
/// `file`), is one exhaustive match on the class or family under a denied
/// `clippy::wildcard_enum_match_arm` (CI runs clippy with `-D warnings`, so a `_` arm there
/// fails the build): this holds the lint in place, so the guard cannot go quietly.
///
/// # Panics
///
/// If it is not.
pub fn assert_matches_the_table_without_a_wildcard(file: &str, source: &str, function: &str) {
    const DENY: &str = "#[deny(clippy::wildcard_enum_match_arm)]\n";
    assert!(
        source.contains(&format!("{DENY}{function}")),
        "{file}: {function} lost its {DENY}"
    );
    let body = &source[source.find(function).unwrap()..];
    let body = &body[..body.find("\n}\n").unwrap()];
    assert!(
        body.contains(".class()") || body.contains(".family()") || body.contains("family: "),
        "{file}: {function} does not read the table"
    );
}

#[cfg(test)]
mod tests {
    use super::{PINNED, code};
    use approval_gate::ErrorCode;

    #[test]
    fn every_code_pinned_is_a_code_of_the_library_and_each_is_pinned_once() {
        let mut seen = std::collections::HashSet::new();
        for (name, ..) in PINNED {
            assert!(seen.insert(code(name)), "{name} pinned twice");
        }
        // Every code of the library today; a code added later joins `ALL` and needs no row.
        assert!(ErrorCode::ALL.iter().all(|code| seen.contains(code)));
        assert_eq!(seen.len(), 43);
    }
}
