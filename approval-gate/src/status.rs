//! Where a request stands: its stored status, and the combined view with its claim and the
//! clock. A leaf: the error type names these, so they depend on nothing else of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The persisted status of a request.
///
/// Consumption is not a status: it is a separate, durable, single-use claim. See
/// [`EffectiveStatus`] for the combined view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a human decision.
    Pending,
    /// A human approved it; usable once, until it expires.
    Approved,
    /// Denied.
    Denied,
    /// Its time to live passed while it was pending.
    Expired,
    /// A human withdrew the approval before it was consumed.
    Revoked,
}

/// Where a request stands, combining its status, its claim and the clock.
///
/// None of these authorizes anything: only a successful consume does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EffectiveStatus {
    /// Waiting for a human decision.
    Pending,
    /// Approved, not yet consumed, not yet expired.
    ApprovedUnconsumed,
    /// Approved, never consumed, and now past its expiry: unusable.
    ApprovedExpired,
    /// Approved and consumed: spent.
    Consumed,
    /// Denied.
    Denied,
    /// Expired while pending.
    Expired,
    /// Revoked after approval.
    Revoked,
}

impl EffectiveStatus {
    /// The snake-case name used in JSON and on the command line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::ApprovedUnconsumed => "approved_unconsumed",
            Self::ApprovedExpired => "approved_expired",
            Self::Consumed => "consumed",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }

    /// Whether nothing can change this request any more.
    #[must_use]
    pub fn is_finished(self) -> bool {
        !matches!(self, Self::Pending | Self::ApprovedUnconsumed)
    }
}

impl fmt::Display for EffectiveStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Status {
    /// The snake-case name used in JSON and in the request file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_match_their_json() {
        for status in [
            Status::Pending,
            Status::Approved,
            Status::Denied,
            Status::Expired,
            Status::Revoked,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(status.to_string(), status.as_str());
        }
        for status in [
            EffectiveStatus::Pending,
            EffectiveStatus::ApprovedUnconsumed,
            EffectiveStatus::ApprovedExpired,
            EffectiveStatus::Consumed,
            EffectiveStatus::Denied,
            EffectiveStatus::Expired,
            EffectiveStatus::Revoked,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
    }
}
