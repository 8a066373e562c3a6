//! The quorum table: operation patterns and how many approvers each needs.
//!
//! A table must say what the operations it does not name need, with a `*` entry: an
//! operation left out by a typo, or named by the agent in a way the table did not foresee,
//! then needs what the operator chose for "everything else", never silently one.

use super::Policy;
use crate::error::Error;
use crate::limits::MAX_OPERATION_BYTES;

impl Policy {
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
pub(super) fn check_pattern(pattern: &str) -> Result<(), String> {
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
