//! Signing a decision statement with the real `ssh-keygen`, named by an absolute path.
//!
//! The signer is never looked up through `PATH`. Whoever can put a program earlier on the
//! approver's `PATH` (an agent with a shell on the same account, through `~/.local/bin`) would
//! otherwise be handed the key file, its passphrase and the statement, and could sign another
//! request with the human's own confirmation (`ssh-add -c`, a FIDO touch). So the program is
//! an absolute path the operator chose ([`SshKeygen::at`]) or the system's
//! ([`SshKeygen::SYSTEM`]), and it runs with a fixed `PATH` of its own.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::Error;
use crate::request::SIGNATURE_NAMESPACE;

/// The `PATH` the signer runs with: the system's directories, never the caller's.
const SIGNER_PATH: &str = "/usr/bin:/bin";

/// The `ssh-keygen` program that signs decision statements, at an absolute path.
///
/// ```
/// use approval_gate::SshKeygen;
/// assert_eq!(SshKeygen::system().program(), std::path::Path::new("/usr/bin/ssh-keygen"));
/// assert!(SshKeygen::at("ssh-keygen").is_err()); // would be found through PATH
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshKeygen {
    program: PathBuf,
}

impl SshKeygen {
    /// Where OpenSSH's `ssh-keygen` lives on Debian, Fedora, macOS and most other systems.
    pub const SYSTEM: &'static str = "/usr/bin/ssh-keygen";

    /// The system's `ssh-keygen`, [`SYSTEM`](Self::SYSTEM).
    #[must_use]
    pub fn system() -> Self {
        Self {
            program: PathBuf::from(Self::SYSTEM),
        }
    }

    /// The `ssh-keygen` at `program`, which must be an absolute path: a bare name or a
    /// relative path would be resolved through `PATH` or the working directory, which others
    /// on the account may control.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `ssh_keygen`) if `program` is not absolute.
    pub fn at(program: impl Into<PathBuf>) -> Result<Self, Error> {
        let program = program.into();
        if !program.is_absolute() {
            return Err(Error::InvalidInput {
                field: "ssh_keygen",
                problem: format!(
                    "{} is not an absolute path: the signer is never looked up through PATH",
                    program.display()
                ),
            });
        }
        Ok(Self { program })
    }

    /// The program this runs.
    #[must_use]
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Signs `statement` (a [`Request::decision_statement`](crate::Request::decision_statement))
    /// with `ssh-keygen -Y sign -n approval-gate -f key`, returning the armored SSHSIG.
    ///
    /// Going through ssh-keygen means every way OpenSSH keeps a key works: a passphrase
    /// asked on the terminal, a key held by `ssh-agent` (give the public key file; `ssh-add
    /// -c` asks for a confirmation per use), FIDO `sk-` keys that need a touch.
    ///
    /// # Errors
    ///
    /// [`Error::Signing`] if the program cannot be run, fails (its message is included), or
    /// prints no signature.
    pub fn sign(&self, key: &Path, statement: &[u8]) -> Result<String, Error> {
        let program = self.program.display();
        let failed = |problem: String| Error::Signing(problem);
        let mut child = Command::new(&self.program)
            .args(["-q", "-Y", "sign", "-n", SIGNATURE_NAMESPACE, "-f"])
            .arg(key)
            .env("PATH", SIGNER_PATH)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(statement));
        let output = child
            .wait_with_output()
            .map_err(|e| failed(format!("{program}: {e}")))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(failed(format!(
                "{program} -Y sign with {} failed ({}): {}",
                key.display(),
                output.status,
                stderr.trim()
            )));
        }
        if let Some(Err(e)) = written {
            return Err(failed(format!("writing the statement to {program}: {e}")));
        }
        let signature = String::from_utf8(output.stdout)
            .map_err(|_| failed(format!("{program} printed a signature that is not text")))?;
        if !signature
            .trim_start()
            .starts_with("-----BEGIN SSH SIGNATURE-----")
        {
            return Err(failed(format!(
                "{program} printed no signature: {}",
                stderr.trim()
            )));
        }
        Ok(signature.trim().to_owned())
    }
}

impl Default for SshKeygen {
    fn default() -> Self {
        Self::system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_programs_are_taken() {
        for relative in ["ssh-keygen", "./ssh-keygen", "bin/ssh-keygen", ""] {
            let err = SshKeygen::at(relative).unwrap_err();
            assert!(
                err.to_string().contains("never looked up through PATH"),
                "{err}"
            );
        }
        let at = SshKeygen::at("/opt/openssh/bin/ssh-keygen").unwrap();
        assert_eq!(at.program(), Path::new("/opt/openssh/bin/ssh-keygen"));
        assert_eq!(SshKeygen::default(), SshKeygen::system());
    }

    /// A stand-in for `ssh-keygen` that prints `stdout` and exits with `status`.
    fn stand_in(dir: &Path, stdout: &str, status: u8) -> SshKeygen {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join(format!("keygen-{status}-{}", stdout.len()));
        std::fs::write(
            &program,
            format!("#!/bin/sh\ncat >/dev/null\nprintf '%s' '{stdout}'\nexit {status}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let keygen = SshKeygen::at(&program).unwrap();
        // A script just written can be "busy" while a child forked meanwhile by another test
        // thread still holds the writer's descriptor, until that child's own exec.
        for _ in 0..100 {
            match keygen.sign(Path::new("/nonexistent/probe"), b"") {
                Err(error) if error.to_string().contains("Text file busy") => {
                    std::thread::yield_now();
                }
                _ => break,
            }
        }
        keygen
    }

    #[test]
    fn only_a_signature_printed_by_a_successful_run_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let armor = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n";
        let key = dir.path().join("key");
        let signed = stand_in(dir.path(), armor, 0).sign(&key, b"{}").unwrap();
        assert_eq!(signed, armor.trim());
        for (stdout, status, says) in [
            (armor, 1, "failed (exit status: 1)"),
            ("", 0, "printed no signature"),
            ("Signing file (stdin)", 0, "printed no signature"),
        ] {
            let error = stand_in(dir.path(), stdout, status)
                .sign(&key, b"{}")
                .unwrap_err();
            assert!(matches!(error, Error::Signing(_)), "{error}");
            assert!(error.to_string().contains(says), "{error}");
        }
    }

    #[test]
    fn a_missing_program_is_a_signing_error_naming_it() {
        let err = SshKeygen::at("/nonexistent/ssh-keygen")
            .unwrap()
            .sign(Path::new("/nonexistent/key"), b"{}")
            .unwrap_err();
        assert!(matches!(err, Error::Signing(_)), "{err}");
        assert!(err.to_string().contains("/nonexistent/ssh-keygen"), "{err}");
    }
}
