//! Who decides, and why.

use super::new::{Blank, check_text};
use crate::error::Error;
use crate::limits::{MAX_NAME_BYTES, MAX_REASON_BYTES};

/// Who decides, and why: the input to approve, deny and revoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub(super) decided_by: String,
    pub(super) reason: Option<String>,
}

impl Decision {
    /// A decision by `decided_by` (for a human at the CLI, their OS user name).
    #[must_use]
    pub fn by(decided_by: impl Into<String>) -> Self {
        Self {
            decided_by: decided_by.into(),
            reason: None,
        }
    }

    /// A decision by the current OS user (see [`os_user`]).
    #[must_use]
    pub fn by_os_user() -> Self {
        Self::by(os_user())
    }

    /// Adds a reason. An empty reason is the same as none.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        self.reason = (!reason.is_empty()).then_some(reason);
        self
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        check_text(
            "decided_by",
            &self.decided_by,
            MAX_NAME_BYTES,
            Blank::Refused,
        )?;
        if let Some(reason) = &self.reason {
            check_text("decision reason", reason, MAX_REASON_BYTES, Blank::Allowed)?;
        }
        Ok(())
    }
}

/// The name of the current OS user: `$USER`, else `$LOGNAME`, else `uid <n>`.
#[must_use]
pub fn os_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|name| !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.contains('\0'))
        .unwrap_or_else(|| format!("uid {}", rustix::process::geteuid().as_raw()))
}
