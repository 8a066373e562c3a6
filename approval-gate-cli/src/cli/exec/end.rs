//! How the command ended, as the audit log and `exec`'s exit status tell it.

use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::code;

/// How the command ended, as the audit log and the exit status tell it.
pub(super) enum End {
    Exited(ExitStatus),
    /// A signal reached exec after the claim and before the command started.
    Stopped(i32),
    /// Spawning failed after the claim.
    CouldNotStart(io::Error),
    /// The command started, and waiting for its end failed.
    Lost(io::Error),
}

impl End {
    pub(super) fn exit_code(&self) -> u8 {
        match self {
            Self::Exited(status) => match (status.code(), status.signal()) {
                // An exit status is one byte; `code` is that byte.
                (Some(code), _) => code.to_le_bytes()[0],
                (None, Some(signal)) => signal_code(signal),
                (None, None) => code::FAILED,
            },
            // After the claim, whatever kept the command from starting: the approval is
            // spent, and the code must say so (never 126 or 127, which mean nothing was).
            Self::Stopped(_) | Self::CouldNotStart(_) => code::SPENT_NOT_RUN,
            Self::Lost(_) => code::SPENT_UNKNOWN,
        }
    }

    /// What exec says on stderr about an end the command did not report itself.
    pub(super) fn note(&self) -> Option<String> {
        match self {
            Self::Exited(status) if status.code().is_some() => None,
            Self::Exited(_) => Some(self.to_string()),
            other => Some(format!("{other}; the approval is spent")),
        }
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(status) => match (status.code(), status.signal()) {
                (Some(code), _) => write!(f, "the command exited with status {code}"),
                (None, Some(signal)) => {
                    write!(f, "the command was killed by signal {signal}")?;
                    if let Some(name) = signal_hook::low_level::signal_name(signal) {
                        write!(f, " ({name})")?;
                    }
                    if status.core_dumped() {
                        write!(f, " and dumped core")?;
                    }
                    Ok(())
                }
                (None, None) => write!(f, "the command ended ({status})"),
            },
            Self::Stopped(signal) => write!(
                f,
                "not run: exec received signal {signal} before the command started"
            ),
            Self::CouldNotStart(error) => write!(f, "the command could not be started: {error}"),
            Self::Lost(error) => write!(
                f,
                "exec lost track of the command, whose outcome is unknown: {error}"
            ),
        }
    }
}

/// 128 + N for signal N, as a shell reports a command a signal ended.
fn signal_code(signal: i32) -> u8 {
    128u8.saturating_add(u8::try_from(signal).unwrap_or(u8::MAX))
}
