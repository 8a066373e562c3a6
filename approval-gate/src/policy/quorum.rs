//! The quorum table: operation patterns and how many approvers each needs.
//!
//! A table must say what the operations it does not name need, with a `*` entry: an
//! operation left out by a typo, or named by the agent in a way the table did not foresee,
//! then needs what the operator chose for "everything else", never silently one.

use super::Policy;
use crate::error::Error;
use crate::limits::MAX_OPERATION_BYTES;

/// Why a quorum without approvers is refused ([`Policy::with_quorum`]).
pub(crate) const NEEDS_APPROVERS: &str = "needs trusted approvers to count (an OpenSSH allowed_signers file): without them no \
     approval could ever meet it";

impl Policy {
    /// The policy a front end's settings make: the trusted `approvers` (an `allowed_signers`
    /// file, read), if given, with each `(pattern, approvals)` of `quorum` required of them
    /// ([`require`](Policy::require)); none with neither.
    ///
    /// A quorum counts distinct trusted approvers' signatures: without approvers there is
    /// nobody to count, and a request needing one could never be approved, so a quorum
    /// without approvers is refused rather than ignored. This is the one place that rule is
    /// stated; every front end that takes the two apart (flags, variables, files) asks here.
    ///
    /// ```
    /// use approval_gate::Policy;
    /// let refused = Policy::with_quorum(None, [("payments.*", 2), ("*", 1)]).unwrap_err();
    /// assert!(refused.to_string().contains("needs trusted approvers"), "{refused}");
    /// assert!(Policy::with_quorum(None, []).unwrap().is_none());
    /// # Ok::<(), approval_gate::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `quorum`) for a quorum without approvers, and what
    /// [`require`](Policy::require) refuses.
    pub fn with_quorum<'a>(
        approvers: Option<Policy>,
        quorum: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> Result<Option<Policy>, Error> {
        let mut quorum = quorum.into_iter().peekable();
        let Some(mut policy) = approvers else {
            if quorum.peek().is_none() {
                return Ok(None);
            }
            return Err(Error::InvalidInput {
                field: "quorum",
                problem: NEEDS_APPROVERS.to_owned(),
            });
        };
        for (pattern, approvals) in quorum {
            policy = policy.require(pattern, approvals)?;
        }
        Ok(Some(policy))
    }

    /// Checks that the quorum table says what every operation needs: either it is empty (one
    /// approval for every operation) or it has a `*` entry. [`GateBuilder::open`] and the
    /// binaries refuse to start on a table without one.
    ///
    /// [`GateBuilder::open`]: crate::GateBuilder::open
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `quorum`) naming the table's patterns.
    pub fn check_quorum_table(&self) -> Result<(), Error> {
        if self.quorum.is_empty() || self.quorum.iter().any(|(pattern, _)| pattern == "*") {
            return Ok(());
        }
        let named: Vec<&str> = self.quorum.iter().map(|(p, _)| p.as_str()).collect();
        Err(Error::InvalidInput {
            field: "quorum",
            problem: format!(
                "the quorum table names {} but not `*`: say what every other operation needs \
                 with a `*` entry (e.g. `{}=2,*=1`)",
                named.join(", "),
                named[0]
            ),
        })
    }
}

/// Refuses a pattern no operation name can match: operation names are lowercase `a-z0-9_`
/// segments joined by dots ([`check_operation_name`](crate::check_operation_name)), so a
/// pattern holds those and the wildcards `*` and `?` only.
pub(crate) fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() || pattern.len() > MAX_OPERATION_BYTES {
        return Err(format!(
            "operation pattern {pattern:?} must be 1 to {MAX_OPERATION_BYTES} bytes"
        ));
    }
    if let Some(bad) = pattern
        .chars()
        .find(|&c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | '*' | '?'))
    {
        return Err(format!(
            "operation pattern {pattern:?} has {bad:?}, which no operation name has \
             (lowercase `a-z0-9_` segments joined by dots, with `*` and `?`)"
        ));
    }
    Ok(())
}
