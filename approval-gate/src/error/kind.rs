//! The two columns of the error table that front ends read: each code's [`ErrorClass`] (what a
//! front end must do about it) and [`ErrorFamily`] (which refusal or failure it is).
//!
//! Every front end (the CLI's exit codes, `exec`'s, the web's HTTP statuses, the agent's
//! advice, the Python binding's exception classes) derives its answer from these two, matching
//! them exhaustively: a code added to the table is treated as its class and family say, and a
//! class or family added here is a compile error in every front end until each decides. Neither
//! enum is `#[non_exhaustive]`, for that reason.

/// What a front end must do about an error: the coarse verdict, one of four.
///
/// None of them authorizes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The gate's rules said no (the request's state, its binding, its signatures, a limit, a
    /// role): nothing changed; do not proceed. The CLI exits 1.
    Refused,
    /// The caller's input is malformed (an id, a field, a payload): nothing changed; fix the
    /// input. The CLI exits 2.
    Invalid,
    /// The store, its state or the host failed: nothing changed, and a human has to look. The
    /// CLI exits 2.
    Fault,
    /// The operation took effect, but not completely (its durability is unknown or it was not
    /// recorded): check where the request stands before acting again. The CLI exits 3.
    Incomplete,
}

/// Which refusal or failure an error is: the finer grouping, one exit code of `exec` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorFamily {
    /// Malformed input: an id, a field, a payload.
    Input,
    /// No such request in the live store: never filed, or archived.
    Missing,
    /// Still waiting for a human decision.
    Pending,
    /// A human denied it.
    Denied,
    /// The request, or its approval, expired.
    Expired,
    /// A human revoked the approval.
    Revoked,
    /// The approval was used before.
    Spent,
    /// What was offered differs from what was approved: action, operation, payload, or the
    /// payload's type.
    Binding,
    /// A signature does not hold: missing, bad, or by a key the policy does not trust.
    Signature,
    /// Fewer valid signed approvals than the policy needs.
    Quorum,
    /// A decision the request's state does not allow: wrong state, changed since shown,
    /// approved twice by one approver.
    State,
    /// A limit of the store: the pending queue or the live store is full.
    Capacity,
    /// The database refused the session user's role.
    Permission,
    /// The state on disk or in the audit log is damaged or unsafe.
    Damage,
    /// The gate cannot do this as set up: no state directory, no trusted approvers, signing
    /// or the random source failed.
    Setup,
    /// The store failed: I/O, the database, a wait that ran out.
    Store,
    /// It took effect, but its durability is unknown or it was not recorded.
    Incomplete,
}

impl ErrorClass {
    /// Every class.
    pub const ALL: &'static [Self] = &[Self::Refused, Self::Invalid, Self::Fault, Self::Incomplete];

    /// The stable name, e.g. `refused`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Invalid => "invalid",
            Self::Fault => "fault",
            Self::Incomplete => "incomplete",
        }
    }
}

impl ErrorFamily {
    /// Every family.
    pub const ALL: &'static [Self] = &[
        Self::Input,
        Self::Missing,
        Self::Pending,
        Self::Denied,
        Self::Expired,
        Self::Revoked,
        Self::Spent,
        Self::Binding,
        Self::Signature,
        Self::Quorum,
        Self::State,
        Self::Capacity,
        Self::Permission,
        Self::Damage,
        Self::Setup,
        Self::Store,
        Self::Incomplete,
    ];

    /// The stable name, e.g. `binding`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Missing => "missing",
            Self::Pending => "pending",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
            Self::Spent => "spent",
            Self::Binding => "binding",
            Self::Signature => "signature",
            Self::Quorum => "quorum",
            Self::State => "state",
            Self::Capacity => "capacity",
            Self::Permission => "permission",
            Self::Damage => "damage",
            Self::Setup => "setup",
            Self::Store => "store",
            Self::Incomplete => "incomplete",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for ErrorFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
