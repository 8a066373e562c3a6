//! Who decides, and why.

use super::new::{Blank, check_text};
use crate::error::Error;
use crate::limits::{MAX_NAME_BYTES, MAX_REASON_BYTES, MAX_SIGNATURE_BYTES};

/// Who decides, and why: the input to approve, deny and revoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub(super) decided_by: String,
    pub(super) reason: Option<String>,
    pub(crate) signed: Option<Signed>,
}

/// An approver's signature offered with an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signed {
    pub(crate) principal: String,
    pub(crate) signature: String,
}

impl Decision {
    /// A decision by `decided_by` (for a human at the CLI, their OS user name).
    #[must_use]
    pub fn by(decided_by: impl Into<String>) -> Self {
        Self {
            decided_by: decided_by.into(),
            reason: None,
            signed: None,
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

    /// Signs an approval: `signature` is the armored SSHSIG (namespace `approval-gate`) of
    /// [`Request::decision_statement`](crate::Request::decision_statement) for `principal`,
    /// the approver's identity in the policy's `allowed_signers`, or a passkey assertion over
    /// that statement's [challenge](crate::passkey::challenge), armored by
    /// [`Assertion::armor`](crate::passkey::Assertion::armor). Deny and revoke ignore it.
    #[must_use]
    pub fn signed(mut self, principal: impl Into<String>, signature: impl Into<String>) -> Self {
        self.signed = Some(Signed {
            principal: principal.into(),
            signature: signature.into(),
        });
        self
    }

    /// Who decides.
    #[must_use]
    pub fn decided_by(&self) -> &str {
        &self.decided_by
    }

    /// The reason given, if any.
    #[must_use]
    pub fn decision_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The principal of the signature, if the decision is signed.
    #[must_use]
    pub fn principal(&self) -> Option<&str> {
        self.signed.as_ref().map(|s| s.principal.as_str())
    }

    /// Checks every field against the library's limits (the name and the reason: length, no
    /// NUL; a signature's principal and size), as every decision is checked before it is
    /// taken: a front end may ask first, before a human spends time on a decision that would
    /// be refused. Nothing is recorded.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming the field.
    pub fn validate(&self) -> Result<(), Error> {
        check_text(
            "decided_by",
            &self.decided_by,
            MAX_NAME_BYTES,
            Blank::Refused,
        )?;
        if let Some(reason) = &self.reason {
            check_text("decision reason", reason, MAX_REASON_BYTES, Blank::Allowed)?;
        }
        if let Some(signed) = &self.signed {
            check_text(
                "principal",
                &signed.principal,
                MAX_NAME_BYTES,
                Blank::Refused,
            )?;
            let len = signed.signature.trim().len();
            if len == 0 || len > MAX_SIGNATURE_BYTES {
                return Err(Error::InvalidInput {
                    field: "signature",
                    problem: format!(
                        "must be 1 to {MAX_SIGNATURE_BYTES} bytes of armored SSHSIG or \
                         passkey assertion"
                    ),
                });
            }
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
