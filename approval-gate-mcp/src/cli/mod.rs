//! The `approval-gate` command line, for humans.
//!
//! [`Cli`] is the parsed command line, [`run`] carries it out and returns its [`Exit`]; the
//! binary is nothing more. Exit codes are part of the interface:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | refused: not found, wrong state, expired, confirmation mismatch, not a terminal; for `doctor`, a problem found |
//! | 2 | usage or I/O error, including an unsafe state directory, a corrupt state file or a broken audit log |
//! | 3 | took effect, but not completely: the change is in place but its durability is unknown (a directory fsync failed) or its audit line could not be written; check with `show ID` and `audit verify` |
//!
//! Errors are one line on stderr, with agent-supplied text escaped. Any error on the
//! approve path means nothing was approved.

use std::io;
use std::path::Path;
use std::process::ExitCode;

use approval_gate::Gate;

mod approve;
mod archive;
mod args;
mod audit;
mod decide;
mod doctor;
mod list;
mod output;
mod render;
mod show;
mod watch;

pub use args::Cli;
use args::{AuditCommand, Command};

use crate::display::escape;

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
}

impl Exit {
    /// The process exit code: 0, 1, 2 or 3.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Refused => 1,
            Self::Failed => 2,
            Self::TookEffect => 3,
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
pub(crate) struct Refusal(pub(crate) String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Runs a parsed command line, reporting any error on stderr.
#[must_use]
pub fn run(cli: Cli) -> Exit {
    match dispatch(cli) {
        Ok(exit) => exit,
        Err(error) => report(&error),
    }
}

/// Reports a command line that did not parse (or `--help` / `--version`, which succeed).
#[must_use]
pub fn usage_error(error: &clap::Error) -> Exit {
    output::clap_message(error);
    if error.use_stderr() {
        Exit::Failed
    } else {
        Exit::Done
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    let Cli { dir, command } = cli;
    let dir = dir.as_deref();
    match command {
        Command::List(args) => list::list(&open(dir)?, &args),
        Command::Show { id, json } => show::show(&open(dir)?, id, json),
        // `approve` checks for a terminal before it even opens the store.
        Command::Approve { id, reason } => approve::approve(dir, id, &reason.join(" ")),
        Command::Deny { id, reason } => decide::deny(&open(dir)?, id, &reason.join(" ")),
        Command::Revoke { id, reason } => decide::revoke(&open(dir)?, id, &reason.join(" ")),
        Command::Archive {
            older_than_days,
            dry_run,
        } => archive::archive(&open(dir)?, older_than_days, dry_run),
        Command::Audit(AuditCommand::Verify { json }) => audit::verify(&open(dir)?, json),
        Command::Audit(AuditCommand::Reanchor { yes, json }) => {
            audit::reanchor(&open(dir)?, yes, json)
        }
        Command::Watch(args) => watch::watch(&open(dir)?, &args),
        Command::Doctor { json } => doctor::doctor(&open(dir)?, json),
    }
}

/// Opens the store in `dir`, else in `APPROVAL_GATE_DIR`, else `~/.approval-gate`.
pub(crate) fn open(dir: Option<&Path>) -> Result<Gate, approval_gate::Error> {
    match dir {
        Some(dir) if !dir.as_os_str().is_empty() => Gate::open(dir),
        _ => Gate::open_default(),
    }
}

/// Prints the error as one escaped line and picks the exit code.
fn report(error: &anyhow::Error) -> Exit {
    if is_broken_pipe(error) {
        // Whoever read our output has gone (`approval-gate list | head`): nothing to say.
        return Exit::Done;
    }
    let exit = classify(error);
    let kind = match exit {
        Exit::Refused => "refused",
        // Not a failure to act on: the change happened; the reader must know that.
        Exit::TookEffect => "took effect, but",
        Exit::Done | Exit::Failed => "error",
    };
    output::stderr_line(&format!(
        "approval-gate: {kind}: {}",
        escape(&format!("{error:#}"))
    ));
    exit
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Refusals exit 1; everything else, including anything unexpected, exits 2.
fn classify(error: &anyhow::Error) -> Exit {
    for cause in error.chain() {
        if cause.is::<Refusal>() {
            return Exit::Refused;
        }
        if let Some(error) = cause.downcast_ref::<approval_gate::Error>() {
            return gate_exit(error);
        }
    }
    Exit::Failed
}

// The explicit arm records the decision for every variant known today; the wildcard keeps
// variants added later failing until someone decides otherwise.
#[allow(clippy::match_same_arms)]
fn gate_exit(error: &approval_gate::Error) -> Exit {
    use approval_gate::Error as E;
    match error {
        E::NotFound(_)
        | E::Archived(_)
        | E::NotApproved(_)
        | E::Denied(_)
        | E::Expired(_)
        | E::Revoked(_)
        | E::AlreadyConsumed(_)
        | E::ApprovalExpired { .. }
        | E::ExpiredDuringConsume { .. }
        | E::ActionMismatch(_)
        | E::OperationMismatch { .. }
        | E::PayloadMismatch { .. }
        | E::WrongState { .. }
        | E::Changed(_)
        | E::QueueFull { .. }
        | E::CreationLimit { .. } => Exit::Refused,
        E::DurabilityUnknown { .. } | E::NotRecorded { .. } => Exit::TookEffect,
        // Malformed input is a usage error; damaged or unsafe state is an error to look
        // into, never a mere "no"; and a variant added later is an error until mapped.
        E::InvalidId { .. }
        | E::InvalidInput { .. }
        | E::InvalidPayload(_)
        | E::PayloadType { .. }
        | E::UnsafeState { .. }
        | E::Corrupt { .. }
        | E::Unreadable { .. }
        | E::AuditBroken { .. }
        | E::NoStateDir
        | E::Random(_)
        | E::Io { .. } => Exit::Failed,
        _ => Exit::Failed,
    }
}

#[cfg(test)]
mod tests {
    use approval_gate::RequestId;

    use super::*;

    #[test]
    fn refusals_exit_1_and_problems_exit_2() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let refused = [
            approval_gate::Error::NotFound(id),
            approval_gate::Error::Expired(id),
            approval_gate::Error::Archived(id),
        ];
        for error in refused {
            assert_eq!(classify(&error.into()), Exit::Refused);
        }
        let failed = [
            approval_gate::Error::NoStateDir,
            approval_gate::Error::AuditBroken {
                line: 3,
                problem: "altered".into(),
            },
            approval_gate::Error::Corrupt {
                path: "x".into(),
                problem: "bad".into(),
            },
        ];
        for error in failed {
            assert_eq!(classify(&error.into()), Exit::Failed);
        }
        let took_effect = [
            approval_gate::Error::DurabilityUnknown {
                id,
                operation: "deny",
                source: Box::new(approval_gate::Error::NoStateDir),
            },
            approval_gate::Error::NotRecorded {
                id,
                operation: "revoke",
                source: Box::new(approval_gate::Error::NoStateDir),
            },
        ];
        for error in took_effect {
            assert_eq!(classify(&error.into()), Exit::TookEffect);
            assert_eq!(Exit::TookEffect.code(), 3);
        }
        let wrapped = anyhow::Error::new(Refusal("no terminal".into())).context("approving");
        assert_eq!(classify(&wrapped), Exit::Refused);
        assert_eq!(classify(&anyhow::anyhow!("something else")), Exit::Failed);
    }
}
