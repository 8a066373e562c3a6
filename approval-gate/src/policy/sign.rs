//! Signing a decision statement with the real `ssh-keygen`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::Error;
use crate::request::SIGNATURE_NAMESPACE;

/// Signs `statement` (a [`Request::decision_statement`](crate::Request::decision_statement))
/// with `ssh-keygen -Y sign -n approval-gate -f key`, returning the armored SSHSIG.
///
/// Going through ssh-keygen means every way OpenSSH keeps a key works: a passphrase asked on
/// the terminal, a key held by `ssh-agent` (give the public key file; `ssh-add -c` asks for
/// a confirmation per use), FIDO `sk-` keys that need a touch.
///
/// # Errors
///
/// [`Error::Signing`] if ssh-keygen cannot be run, fails (its message is included), or
/// prints no signature.
pub fn sign_with_ssh_keygen(key: &Path, statement: &[u8]) -> Result<String, Error> {
    let failed = |problem: String| Error::Signing(problem);
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", SIGNATURE_NAMESPACE, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot run ssh-keygen: {e}")))?;
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(statement));
    let output = child
        .wait_with_output()
        .map_err(|e| failed(format!("ssh-keygen: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(failed(format!(
            "ssh-keygen -Y sign with {} failed ({}): {}",
            key.display(),
            output.status,
            stderr.trim()
        )));
    }
    if let Some(Err(e)) = written {
        return Err(failed(format!("writing the statement to ssh-keygen: {e}")));
    }
    let signature = String::from_utf8(output.stdout)
        .map_err(|_| failed("ssh-keygen printed a signature that is not text".into()))?;
    if !signature
        .trim_start()
        .starts_with("-----BEGIN SSH SIGNATURE-----")
    {
        return Err(failed(format!(
            "ssh-keygen printed no signature: {}",
            stderr.trim()
        )));
    }
    Ok(signature.trim().to_owned())
}
