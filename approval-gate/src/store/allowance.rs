//! What a store keeps of an allowance: the signed record, written once; its uses, added one
//! at a time in the same atomic step as the spend each approves; and whether it was revoked.

use crate::allowance::{Exhausted, SignedAllowance, Usage};
use crate::error::Error;
use crate::id::RequestId;
use crate::time::Timestamp;

/// An allowance as a store keeps it, with what it has counted so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The signed allowance, as it was granted (never changed after).
    pub(crate) signed: SignedAllowance,
    /// Its uses so far.
    pub(crate) usage: Usage,
    /// Whether it was revoked.
    pub(crate) revoked: bool,
}

/// One use of an allowance, as a store records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Use {
    /// The request it approved.
    pub(crate) request: RequestId,
    /// What it spent of the budget (`None` without one).
    pub(crate) amount: Option<u64>,
    /// When, by the gate's clock.
    pub(crate) at: Timestamp,
}

/// What [`Store::cosign_allowance`](super::Store::cosign_allowance) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cosigned {
    /// Added the signature, with its line: the allowance as it now stands.
    Added(Box<SignedAllowance>),
    /// Nothing: this principal had signed it already.
    Already,
    /// Nothing: it was revoked.
    Revoked,
    /// Nothing: no allowance has this id.
    Unknown,
}

/// What [`Store::revoke_allowance`](super::Store::revoke_allowance) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Revoked {
    /// Revoked it now, with its line.
    Now,
    /// Nothing: it was revoked before.
    Before,
    /// Nothing: no allowance has this id.
    Unknown,
}

impl Usage {
    /// The usage after `uses`, in any order.
    pub(crate) fn of(uses: impl IntoIterator<Item = Use>) -> Self {
        let mut usage = Self::default();
        for one in uses {
            usage.uses = usage.uses.saturating_add(1);
            usage.spent = usage.spent.saturating_add(one.amount.unwrap_or(0));
            usage.recent.push(one.at);
        }
        usage
    }
}

/// What [`Store::spend_under`](super::Store::spend_under) counts: one use of an allowance,
/// admitted by its bounds against the usage the store reads under the allowance's lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Under<'a> {
    /// The allowance.
    pub(crate) allowance: RequestId,
    /// Its bounds, as signed.
    pub(crate) bounds: &'a crate::allowance::Bounds,
    /// What this use spends of the budget.
    pub(crate) amount: Option<u64>,
}

/// The refusal a bound that does not fit stands for: a closed window is the approval's
/// expiry, one not yet open is not covering, the rest is exhausted.
pub(crate) fn exhausted(id: RequestId, allowance: RequestId, why: &Exhausted) -> Error {
    match why {
        Exhausted::Ended { not_after } => Error::ApprovalExpired {
            id,
            expired_at: *not_after,
        },
        Exhausted::NotYet { .. } | Exhausted::Amount { .. } => Error::AllowanceNotCovering {
            id,
            allowance,
            reason: why.to_string(),
        },
        Exhausted::Uses { .. } | Exhausted::Budget { .. } | Exhausted::Rate { .. } => {
            Error::AllowanceExhausted {
                id,
                allowance,
                reason: why.to_string(),
            }
        }
    }
}
