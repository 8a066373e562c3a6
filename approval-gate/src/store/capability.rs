//! What a backend declares about how it does its steps: the one place the lifecycle, and a
//! front end through [`Gate::capabilities`](crate::Gate::capabilities), asks how a store
//! differs, so that nobody branches on which store it has (no match on
//! [`Location`](crate::Location) decides a behaviour).

/// A store's capabilities, as its backend declares them once when it opens.
///
/// ```
/// use approval_gate::{Filer, Gate, Refusals};
/// # let dir = tempfile::tempdir()?;
/// let gate = Gate::open(dir.path().join("gate"))?;
/// let capabilities = gate.capabilities();
/// // The directory store: lines apart from effects, the filer only claimed, every refusal kept.
/// assert!(!capabilities.atomic_lines);
/// assert_eq!(capabilities.filer, Filer::Claimed);
/// assert_eq!(capabilities.refusals, Refusals::EachTime);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Each step writes its effect and its audit line in one transaction: none is ever left
    /// without the other (the PostgreSQL store). A store without it writes a "yes" line
    /// before its effect and a "no" line after, and a crash between leaves exactly those
    /// gaps, which recovery and `audit verify` allow for (the directory store).
    pub atomic_lines: bool,
    /// How far the filer the store records beside a request
    /// ([`Request::filed_by`](crate::Request::filed_by)) can be believed.
    pub filer: Filer,
    /// How often the store records the same refused decision.
    pub refusals: Refusals,
}

/// Who vouches for the filer a store records beside a request
/// ([`Request::filed_by`](crate::Request::filed_by)), as against the requester the agent
/// names ([`Request::requested_by`](crate::Request::requested_by)), which is always its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Filer {
    /// The store authenticated it: the PostgreSQL store's database records its session user
    /// (the login that filed), whatever the caller wrote.
    Authenticated,
    /// The store records what the filing process says: the directory store's OS user, which
    /// any process running as that account can claim or set.
    Claimed,
}

impl Filer {
    /// Whether the store authenticated the filer it records.
    #[must_use]
    pub fn is_authenticated(self) -> bool {
        self == Self::Authenticated
    }
}

/// How a store records a refused decision (`decision_refused`) that repeats one it holds.
/// Refused consumes are recorded each time on every store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusals {
    /// Each time: one line per refusal (the directory store, whose writers already own it).
    EachTime,
    /// Once per role: the same session user's same refusal (operation and reason) of the same
    /// request is kept once, so that the lines an agent can add by being refused are bounded
    /// by the requests there are, not by how often it tries (the PostgreSQL store).
    OncePerRole,
}
