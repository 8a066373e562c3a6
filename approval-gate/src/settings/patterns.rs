//! Operation patterns as the config file writes them outside the quorum table (`[notify]`'s
//! channels and escalations): the quorum table's globs, checked and matched the same way.

/// Checks an operation pattern as the quorum table's are checked: lowercase `a-z0-9_`
/// segments joined by dots, with `*` (any text) and `?` (one character).
///
/// ```
/// use approval_gate::settings::check_operation_pattern;
/// assert!(check_operation_pattern("payments.*").is_ok());
/// assert!(check_operation_pattern("Payments").is_err());
/// ```
///
/// # Errors
///
/// The problem, in words, naming the pattern.
pub fn check_operation_pattern(pattern: &str) -> Result<(), String> {
    crate::policy::check_pattern(pattern)
}

/// Whether `pattern` matches the whole of `operation`, case-sensitively. A request without an
/// operation is matched as the empty name: only by `*`.
///
/// ```
/// use approval_gate::settings::operation_matches;
/// assert!(operation_matches("payments.*", Some("payments.refund")));
/// assert!(!operation_matches("payments.*", None));
/// assert!(operation_matches("*", None));
/// ```
#[must_use]
pub fn operation_matches(pattern: &str, operation: Option<&str>) -> bool {
    crate::policy::glob(operation.unwrap_or("").as_bytes(), pattern.as_bytes())
}
