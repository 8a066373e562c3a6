//! The system policy: approvers and a quorum that the account running a front end cannot
//! change, so that an agent running as that account cannot switch the policy off.
//!
//! A policy in the user's own config file (`~/.config/approval-gate/config.toml`) is only as
//! safe as that account: an agent running as it deletes the `approvers` line, or moves the
//! folder, and an approval it wrote into the store itself is no longer checked (issue 37,
//! finding 11). The system policy file is `/etc/approval-gate/policy.toml` (or the file
//! `APPROVAL_GATE_SYSTEM_POLICY` names, in the executor's own environment: its service unit,
//! its sudo rule, its test). When it exists it is in force for every front end, whatever the
//! user's file, environment or flags say: they may add requirements (a larger quorum), never
//! lower them. It and its approvers file, and every directory above them, must be
//! unchangeable by the account reading them: owned by root (or, read by an account other than
//! root, by another account), and not writable by group or others (a sticky directory such as
//! `/tmp` aside).
//!
//! Why an environment variable may name it: the default path is fixed at build time, and the
//! tests must not write `/etc`. Whoever sets the executor's environment already runs as the
//! executor, and so could run the command without any gate; the variable cannot switch the
//! policy off either, since a file it names must exist and pass the same ownership checks. An
//! executor that must never run without a system policy says so (`exec --require-policy`).

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use super::file::{CheckFile, read_table};
use super::read::{FILE, QUORUM, Quorum};
use super::{Setting, SettingsError, Source};

/// Where the system policy is unless `APPROVAL_GATE_SYSTEM_POLICY` names another file.
pub const SYSTEM_POLICY_PATH: &str = "/etc/approval-gate/policy.toml";
/// Names the system policy file instead of [`SYSTEM_POLICY_PATH`]: for the executor's own
/// environment (its service unit or sudo rule), and tests. A file it names must exist.
pub const SYSTEM_POLICY_ENV: &str = "APPROVAL_GATE_SYSTEM_POLICY";

/// The keys a system policy file may hold.
const KEYS: [(&str, &dyn CheckFile); 2] = [("approvers", &FILE), ("quorum", &QUORUM)];

/// A system policy in force: its file, the approvers file it names, and its quorum table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPolicy {
    /// The system policy file.
    pub path: PathBuf,
    /// Where its path came from: [`SYSTEM_POLICY_ENV`] or the default.
    pub source: Source,
    /// The trusted approvers, an OpenSSH `allowed_signers` file; no user setting replaces
    /// them.
    pub approvers: PathBuf,
    /// Operation patterns and the distinct approvers each needs; a user's quorum adds to it
    /// (where several patterns match, the largest number applies).
    pub quorum: Quorum,
}

impl SystemPolicy {
    /// A problem of this policy, naming its file.
    pub(super) fn error(&self, problem: &dyn fmt::Display) -> SettingsError {
        error(&self.path, &self.source, problem)
    }
}

fn error(path: &Path, source: &Source, problem: &dyn fmt::Display) -> SettingsError {
    SettingsError(format!(
        "system policy {} ({source}): {problem}",
        path.display()
    ))
}

/// The system policy in force, if any: the file `APPROVAL_GATE_SYSTEM_POLICY` names (which
/// must exist), else the default one, if it exists.
pub(super) fn find(
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<SystemPolicy>, SettingsError> {
    let (path, source) = match env(SYSTEM_POLICY_ENV) {
        Some(path) if path.is_empty() => {
            return Err(SettingsError(format!(
                "{SYSTEM_POLICY_ENV}: is empty: name the system policy file, or unset it to use \
                 {SYSTEM_POLICY_PATH}"
            )));
        }
        Some(path) => (PathBuf::from(path), Source::Env(SYSTEM_POLICY_ENV)),
        None => (PathBuf::from(SYSTEM_POLICY_PATH), Source::Default),
    };
    let fail = |problem: &dyn fmt::Display| error(&path, &source, problem);
    match std::fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && source == Source::Default => {
            return Ok(None);
        }
        Err(e) => return Err(fail(&e)),
    }
    if !path.is_absolute() {
        return Err(fail(&"is relative: give an absolute path"));
    }
    unchangeable(&path).map_err(|problem| fail(&problem))?;
    let table = read_table(&path, &KEYS, &|_| Ok(()), &fail)?;
    let Some(approvers) = table.get("approvers") else {
        return Err(fail(
            &"names no `approvers`: a system policy is an allowed_signers file of trusted \
              approvers, and a quorum if any",
        ));
    };
    // Both were checked as the table was read.
    let approvers = (FILE.file)(approvers)
        .map_err(|problem| fail(&problem))?
        .ok_or_else(|| fail(&"approvers: names no file"))?;
    let quorum = match table.get("quorum") {
        Some(quorum) => (QUORUM.file)(quorum).map_err(|problem| fail(&problem))?,
        None => Vec::new(),
    };
    Ok(Some(SystemPolicy {
        path,
        source,
        approvers,
        quorum,
    }))
}

/// The approvers in force under `system`: its own. A user's setting (flag, variable or file)
/// naming another file is refused: it cannot replace them.
pub(super) fn approvers(
    system: &SystemPolicy,
    user: &Setting<Option<PathBuf>>,
) -> Result<Setting<Option<PathBuf>>, SettingsError> {
    match &user.value {
        Some(path) if *path != system.approvers => Err(SettingsError(format!(
            "approvers file {} ({}): the system policy {} names the approvers ({}), and a \
             user's setting cannot replace them: remove it",
            path.display(),
            user.source,
            system.path.display(),
            system.approvers.display()
        ))),
        _ => Ok(Setting {
            value: Some(system.approvers.clone()),
            source: Source::System(system.path.clone()),
        }),
    }
}

/// Refuses `path` unless the account reading it cannot change it: the file (symbolic links
/// resolved) and every directory above it are owned by root (or, for an account other than
/// root, by another account than its own), and none is writable by group or others (a sticky
/// directory, such as `/tmp`, aside: no one may replace another's entry in it). Root reads
/// only what root owns: it enforces the policy for every account, so none may change it.
pub(super) fn unchangeable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;

    let real = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    let me = rustix::process::geteuid().as_raw();
    for entry in real.ancestors() {
        let metadata = std::fs::metadata(entry).map_err(|e| format!("{}: {e}", entry.display()))?;
        let which = if entry == real {
            "it".to_owned()
        } else {
            format!("its directory {}", entry.display())
        };
        if me != 0 && metadata.uid() == me {
            return Err(format!(
                "{which} is owned by you (uid {me}), so this account could change the policy: \
                 have root (or another account) own it"
            ));
        }
        // Root enforces it for everyone: no other account may be able to change it.
        if me == 0 && metadata.uid() != 0 {
            return Err(format!(
                "{which} is owned by uid {}, not root, and that account could change the policy \
                 root enforces: have root own it",
                metadata.uid()
            ));
        }
        let sticky_dir = metadata.is_dir() && metadata.mode() & 0o1000 != 0;
        if metadata.mode() & 0o022 != 0 && !sticky_dir {
            return Err(format!(
                "{which} is writable by group or others (mode {:o}): run chmod go-w on it",
                metadata.mode() & 0o7777
            ));
        }
    }
    Ok(())
}
