//! The one error type of the crate.
//!
//! Every refusal on the authorization path has its own variant, so callers (and the agent
//! reading an MCP result) can tell "denied" from "expired" from "already consumed". Any
//! error at all means **no**.

use std::io;
use std::path::PathBuf;

use crate::id::RequestId;
use crate::payload::PayloadError;
use crate::status::EffectiveStatus;
use crate::time::Timestamp;

mod about;
mod build;
mod kind;
mod table;
mod wording;

pub use kind::{ErrorClass, ErrorFamily};
use table::error_table;
use wording::{consequence, holder};

// One table names every kind once: each variant with its docs, its message, its code (the
// stable name, its class, its family and the code's doc line) and its fields. `ErrorCode` with
// its `ALL`, `as_str`, `class` and `family`, and `Error::code`, follow from it (see
// `table.rs`); every front end derives its treatment of an error from the class and family.
error_table! {
    /// The kind of an [`Error`], with a stable `snake_case` name (`as_str`, `Display` and serde
    /// all give it): one per error variant, so no front end lists the variants or matches on
    /// strings.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    #[non_exhaustive]
    pub enum ErrorCode;

    /// Everything that can go wrong, each refusal in its own variant.
    ///
    /// Messages are lowercase and say what happened; none of them authorizes anything.
    #[derive(Debug, thiserror::Error)]
    #[non_exhaustive]
    pub enum Error {
        /// The text is not a request id (12 lowercase hex characters).
        #[error("invalid request id {id:?}: expected 12 lowercase hex characters")]
        #[code("invalid_id", Invalid, Input, "an id that is not 12 lowercase letters and digits.")]
        InvalidId {
            /// The offending text (at most 64 characters of it).
            id: String,
        },

        /// A field of a new request or decision is not acceptable.
        #[error("invalid {field}: {problem}")]
        #[code("invalid_input", Invalid, Input, "a field of a request or decision is unacceptable.")]
        InvalidInput {
            /// Which field.
            field: &'static str,
            /// What is wrong with it and how to fix it.
            problem: String,
        },

        /// The payload is not acceptable canonical JSON.
        #[error("invalid payload: {0}")]
        #[code("invalid_payload", Invalid, Input, "the payload is not acceptable JSON.")]
        InvalidPayload(#[from] PayloadError),

        /// The approved payload cannot be carried faithfully by the executor's payload type.
        #[error(
            "approved payload of request {id} does not round-trip through the executor's type: {problem}"
        )]
        #[code("payload_type", Refused, Binding, "the approved payload does not round-trip through the executor's type.")]
        PayloadType {
            /// The request.
            id: RequestId,
            /// What did not round-trip.
            problem: PayloadError,
        },

        /// Too many pending requests: a human has to decide some, or they have to expire.
        #[error("approval queue full: {pending} pending requests (limit {limit})")]
        #[code("queue_full", Refused, Capacity, "the pending queue is at its cap.")]
        QueueFull {
            /// Pending requests now.
            pending: usize,
            /// The configured cap.
            limit: usize,
        },

        /// Too many requests on disk: archive finished ones.
        #[error(
            "approval store full: {requests} requests on disk (limit {limit}); run `approval-gate archive`"
        )]
        #[code("creation_limit", Refused, Capacity, "the live store holds as many requests as allowed.")]
        CreationLimit {
            /// Requests on disk now.
            requests: usize,
            /// The configured cap.
            limit: usize,
        },

        /// No request with this id in the live store.
        #[error("request {0} not found")]
        #[code("not_found", Refused, Missing, "no such request.")]
        NotFound(RequestId),

        /// The request was archived and can never be used again.
        #[error("request {0} is archived and can no longer be used")]
        #[code("archived", Refused, Missing, "the request was archived.")]
        Archived(RequestId),

        /// The request is still waiting for a human decision.
        #[error("request {0} is pending: not approved")]
        #[code("not_approved", Refused, Pending, "the request is still pending.")]
        NotApproved(RequestId),

        /// A human denied the request.
        #[error("request {0} was denied")]
        #[code("denied", Refused, Denied, "a human denied it.")]
        Denied(RequestId),

        /// The request expired before a human approved it.
        #[error("request {0} expired before it was approved")]
        #[code("expired", Refused, Expired, "it expired while pending.")]
        Expired(RequestId),

        /// A human revoked the approval before it was consumed.
        #[error("approval of request {0} was revoked")]
        #[code("revoked", Refused, Revoked, "the approval was revoked.")]
        Revoked(RequestId),

        /// The approval was already consumed: a replay.
        #[error("approval of request {0} was already consumed")]
        #[code("already_consumed", Refused, Spent, "the approval was already used.")]
        AlreadyConsumed(RequestId),

        /// The approval expired before it was consumed.
        #[error("approval of request {id} expired at {expired_at}")]
        #[code("approval_expired", Refused, Expired, "the approval expired before it was used.")]
        ApprovalExpired {
            /// The request.
            id: RequestId,
            /// When it expired.
            expired_at: Timestamp,
        },

        /// The approval expired while the consume was being made durable; it is spent.
        #[error(
            "approval of request {id} expired at {expired_at} while the consume was being recorded; it is spent"
        )]
        #[code("expired_during_consume", Refused, Expired, "the approval expired while being consumed (it is spent).")]
        ExpiredDuringConsume {
            /// The request.
            id: RequestId,
            /// When it expired.
            expired_at: Timestamp,
        },

        /// The action text differs from the approved one.
        #[error("action text does not match the approved request {0}")]
        #[code("action_mismatch", Refused, Binding, "the action text differs from the approved one.")]
        ActionMismatch(RequestId),

        /// The operation differs from the approved one.
        #[error(
            "operation does not match the approved request {id}: expected {expected:?}, got {got:?}"
        )]
        #[code("operation_mismatch", Refused, Binding, "the operation differs from the approved one.")]
        OperationMismatch {
            /// The request.
            id: RequestId,
            /// The approved operation.
            expected: Option<String>,
            /// The operation supplied.
            got: Option<String>,
        },

        /// The payload differs from the approved one.
        #[error("payload does not match the approved request {id} (approved digest {expected})")]
        #[code("payload_mismatch", Refused, Binding, "the payload differs from the approved one.")]
        PayloadMismatch {
            /// The request.
            id: RequestId,
            /// Digest of the approved payload, or `none`.
            expected: String,
        },

        /// Under a policy, the approvals of the request do not add up to the distinct trusted
        /// approvers it needs (every signature that is there verified and is trusted).
        #[error(
            "request {id} has {valid} valid signed approvals of the {required} its policy requires: nothing is authorized"
        )]
        #[code("insufficient_approvals", Refused, Quorum, "fewer valid signed approvals than the policy needs.")]
        InsufficientApprovals {
            /// The request.
            id: RequestId,
            /// Distinct trusted approvers whose signatures verify.
            valid: u32,
            /// How many the policy requires.
            required: u32,
        },

        /// A stored or offered signature does not verify against the request as it stands.
        #[error("the approval of request {id} by {principal} has a bad signature: {problem}")]
        #[code("bad_signature", Refused, Signature, "a signature does not verify against the request.")]
        BadSignature {
            /// The request.
            id: RequestId,
            /// The principal the approval claims.
            principal: String,
            /// What is wrong with it.
            problem: String,
        },

        /// A signature verifies, but the policy does not trust its key for its principal.
        #[error(
            "the approval of request {id} by {principal} is signed by {key}, which the policy does not trust for {principal}"
        )]
        #[code("untrusted_signer", Refused, Signature, "a signature by a key the policy does not trust.")]
        UntrustedSigner {
            /// The request.
            id: RequestId,
            /// The principal the approval claims.
            principal: String,
            /// The key's SHA256 fingerprint.
            key: String,
        },

        /// The allowance that approved the request has no use left for it: its uses, its
        /// budget or its rate are spent (counted in the step that would have spent this one).
        /// Nothing was spent; file the request again for a human to decide.
        #[error(
            "request {id}: allowance {allowance} has nothing left for it: {reason}; file it again for a human to decide"
        )]
        #[code("allowance_exhausted", Refused, Spent, "the allowance that approved it has no use, budget or rate left.")]
        AllowanceExhausted {
            /// The request.
            id: RequestId,
            /// The allowance.
            allowance: RequestId,
            /// Which bound, in words.
            reason: String,
        },

        /// The allowance named by the request does not cover it: its operation, a constraint
        /// on the exact payload, the agent allowed, its window not yet open, or the allowance
        /// itself is gone. A constraint that cannot be evaluated does not hold. Nothing was
        /// spent.
        #[error("request {id}: allowance {allowance} does not cover it: {reason}")]
        #[code("allowance_not_covering", Refused, Binding, "the allowance that approved it does not cover it.")]
        AllowanceNotCovering {
            /// The request.
            id: RequestId,
            /// The allowance.
            allowance: RequestId,
            /// Why not, in words.
            reason: String,
        },

        /// An approval without a signature, where signed approvals are required.
        #[error(
            "request {id} needs signed approvals ({required} distinct approvers): approve with an approver's key"
        )]
        #[code("signature_required", Refused, Signature, "an unsigned approval where signatures are required.")]
        SignatureRequired {
            /// The request.
            id: RequestId,
            /// How many distinct approvers it needs.
            required: u32,
        },

        /// The principal, or the key, already approved this request: each approver counts once.
        #[error("{principal} already approved request {id}: each approver counts once")]
        #[code("already_signed", Refused, State, "the approver already approved.")]
        AlreadySigned {
            /// The request.
            id: RequestId,
            /// Who approved it before.
            principal: String,
        },

        /// A signed approval offered to a gate that holds no trusted approvers: it could not
        /// tell a trusted signature from one made by anyone's key, so it records none.
        #[error(
            "request {id}: a signed approval needs the trusted approvers (an allowed_signers file) on the gate that records it, so that only trusted signatures count; nothing was recorded"
        )]
        #[code("no_approvers", Fault, Setup, "a signed approval offered to a gate without trusted approvers.")]
        NoApprovers {
            /// The request.
            id: RequestId,
        },

        /// Signing a decision statement failed.
        #[error("signing failed: {0}")]
        #[code("signing", Fault, Setup, "signing a decision statement failed.")]
        Signing(String),

        /// The request is no longer the one the human was shown.
        #[error("request {0} changed since it was shown: nothing was approved")]
        #[code("changed", Refused, State, "the request changed after it was shown.")]
        Changed(RequestId),

        /// A decision was attempted on a request in a state that does not allow it.
        #[error("cannot {operation} request {id}: it is {status}")]
        #[code("wrong_state", Refused, State, "the request is not in a state that allows this.")]
        WrongState {
            /// The request.
            id: RequestId,
            /// What was attempted (`approve`, `deny`, `revoke`).
            operation: &'static str,
            /// Where the request stands.
            status: EffectiveStatus,
        },

        /// A state directory or file is a symlink, not ours, or writable by others.
        #[error("refusing unsafe state path {path}: {problem}")]
        #[code("unsafe_state", Fault, Damage, "a state file is unsafe (symlink, foreign owner, open permissions).")]
        UnsafeState {
            /// The path.
            path: PathBuf,
            /// Why it is refused.
            problem: String,
        },

        /// A state file does not hold what this crate writes.
        #[error("corrupt state file {path}: {problem}")]
        #[code("corrupt", Fault, Damage, "a state file is damaged.")]
        Corrupt {
            /// The path.
            path: PathBuf,
            /// What is wrong.
            problem: String,
        },

        /// The directory holds a store of the predecessor, approval-gate-mcp (Node): its
        /// `requests/*.json` and `audit.jsonl`, not ours. Nothing in it was changed; `approval-gate
        /// migrate` brings it over. Also a store that mixes its records with ours, and a store
        /// `migrate` cannot bring over exactly (the problem names the file and why).
        #[error("refusing {path}: {problem}; nothing in it was changed")]
        #[code("predecessor_store", Fault, Setup, "the directory holds a store of approval-gate-mcp (Node), not ours yet.")]
        PredecessorStore {
            /// The store, or the file in it that is the problem.
            path: PathBuf,
            /// What it is, and what to do.
            problem: String,
        },

        /// A request's record cannot be read (damaged, truncated, of an unknown format version,
        /// or failing its own consistency checks). It refuses everything about its own id and
        /// nothing else: listings show it as unreadable, other requests keep working.
        #[error(
            "request {id} is unreadable: {problem}; it refuses everything until a human repairs or removes its record (`approval-gate doctor` lists such records)"
        )]
        #[code("unreadable", Fault, Damage, "the request's record cannot be read.")]
        Unreadable {
            /// The request.
            id: RequestId,
            /// What is wrong with its record.
            problem: String,
        },

        /// The audit log fails verification.
        #[error("audit log broken at line {line}: {problem}")]
        #[code("audit_broken", Fault, Damage, "the audit log fails verification or refuses appends.")]
        AuditBroken {
            /// 1-based line number of the first bad line.
            line: u64,
            /// What is wrong there.
            problem: String,
        },

        /// The audit log's lines chain and verify, but what they say could not have happened: a
        /// request's events do not follow the state machine (`docs/authorization-states.md`),
        /// such as `consumed` with no `approved` before it. The log was written by someone other
        /// than the gate, or by a gate that broke its own rules; either way a human must look.
        #[error("audit log inconsistent at line {line}: request {id}: {problem}")]
        #[code("audit_inconsistent", Fault, Damage, "the audit log's events break the state machine.")]
        AuditInconsistent {
            /// 1-based line number of the first line that makes no sense.
            line: u64,
            /// The request the line is about.
            id: RequestId,
            /// What the line says and why it cannot follow what came before.
            problem: String,
        },

        /// The operation took effect on disk, but the directory fsync that makes it survive a
        /// crash failed: after a power loss it may be as if it never happened. It is not a
        /// refusal: check where the request stands (`approval-gate show ID`) before acting
        /// again. A consume reported this way is spent and authorizes nothing.
        #[error(
            "{operation} of request {id} took effect ({}), but its durability is unknown: {source}; check the request with `approval-gate show {id}`",
            consequence(operation)
        )]
        #[code("durability_unknown", Incomplete, Incomplete, "it took effect, but may not survive a crash.")]
        DurabilityUnknown {
            /// The request.
            id: RequestId,
            /// What was done: `request`, `approve`, `deny`, `revoke`, `expire`, `consume`,
            /// `execute` or `archive`.
            operation: &'static str,
            /// The failure after the change was in place.
            source: Box<Error>,
        },

        /// The operation took effect, but what follows it (its audit line, or for `execute` the
        /// start of the execution) failed. A "no" (deny, revoke, expire) stands even when it
        /// cannot be recorded; a consume reported this way is spent and authorizes nothing.
        #[error(
            "{operation} of request {id} took effect ({}), but recording it failed: {source}; run `approval-gate audit verify`",
            consequence(operation)
        )]
        #[code("not_recorded", Incomplete, Incomplete, "it took effect, but its audit line could not be written.")]
        NotRecorded {
            /// The request.
            id: RequestId,
            /// What was done, as for [`Error::DurabilityUnknown`].
            operation: &'static str,
            /// What failed.
            source: Box<Error>,
        },

        /// The store has no directory to use.
        #[error("no state directory: set APPROVAL_GATE_DIR or HOME")]
        #[code("no_state_dir", Fault, Setup, "no state directory to use.")]
        NoStateDir,

        /// The operating system's random source failed.
        #[error("random source failed: {0}")]
        #[code("random", Fault, Setup, "the OS random source failed.")]
        Random(String),

        /// The database store failed or refused: the connection, the server, or a check the
        /// database makes itself (a change it does not allow, a schema it does not have).
        #[error("database: {operation}: {problem}")]
        #[code("database", Fault, Store, "the database store failed or refused a change.")]
        Database {
            /// What was being done.
            operation: &'static str,
            /// What the database or the connection said.
            problem: String,
        },

        /// The database refused the session user: its login lacks the role this step needs
        /// (`approval_gate_agent`, `approval_gate_approver` or `approval_gate_executor`).
        #[error("not permitted: {problem}")]
        #[code("not_permitted", Refused, Permission, "the database refused the session user's role.")]
        NotPermitted {
            /// What was refused, and which roles would allow it.
            problem: String,
        },

        /// A wait of the database store ran out (its `lock_timeout`, a few seconds unless the
        /// store URL sets another): another session held what this step needed, such as an agent
        /// sitting inside an open transaction after a step of its own. The step was rolled back
        /// whole: nothing changed. The holder is found after the fact, best effort.
        #[error(
            "{operation}: blocked: gave up after {after} waiting for {what}, held by {}; nothing changed",
            holder(role.as_deref(), *pid)
        )]
        #[code("blocked", Fault, Store, "a wait of the database store ran out; nothing changed.")]
        Blocked {
            /// What was being done.
            operation: &'static str,
            /// What it waited for (a request's row or lock, the audit chain's head row, a filing
            /// slot), as far as could be found.
            what: String,
            /// The role of the session that held it, if found.
            role: Option<String>,
            /// That session's backend pid, if found (`pg_terminate_backend` ends it).
            pid: Option<i32>,
            /// How long it waited: the session's bound.
            after: String,
        },

        /// A filesystem operation failed.
        #[error("{op} {path}: {source}")]
        #[code("io", Fault, Store, "an I/O error.")]
        Io {
            /// What was being done.
            op: &'static str,
            /// On which path.
            path: PathBuf,
            /// The OS error.
            #[source]
            source: io::Error,
        },
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
