//! How a command of the human's front ends ends: its [`Exit`], the refusals they decide
//! themselves ([`Refusal`]), and the exit for each library error, derived from its class in
//! the library's error table.

use std::process::ExitCode;

/// How a command ended; the process exit code is [`Exit::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// 0: the command did what it says.
    Done,
    /// 1: refused: not found, wrong state, expired, confirmation mismatch, not a terminal;
    /// for `doctor`, the store needs a human's attention.
    Refused,
    /// 2: usage error, or an I/O, state or audit-log problem.
    Failed,
    /// 3: the change took effect, but its durability is unknown or it was not recorded.
    TookEffect,
    /// `exec`: the command's exit status, or one of `exec`'s own codes.
    Status(u8),
}

impl Exit {
    /// The process exit code: 0, 1, 2 or 3, or what `exec` reports.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Refused => 1,
            Self::Failed => 2,
            Self::TookEffect => 3,
            Self::Status(code) => code,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit.code())
    }
}

/// A refusal decided by the CLI itself (not a terminal, confirmation mismatch, request
/// changed while shown): exit code 1.
#[derive(Debug)]
pub(crate) struct Refusal {
    /// A stable code for scripts, in the style of [`approval_gate::Error::code`].
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// The exit code for a library error: its class, from the error table (no wildcard: a class
/// added to the library must be decided here).
#[deny(clippy::wildcard_enum_match_arm)]
pub(crate) fn gate_exit(error: &approval_gate::Error) -> Exit {
    use approval_gate::ErrorClass as C;
    match error.code().class() {
        C::Refused => Exit::Refused,
        // Malformed input is a usage error; damaged or unsafe state, or a store that failed,
        // is an error to look into, never a mere "no".
        C::Invalid | C::Fault => Exit::Failed,
        C::Incomplete => Exit::TookEffect,
    }
}
