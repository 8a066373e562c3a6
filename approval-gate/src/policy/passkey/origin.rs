//! The exact origin a passkey approves on, named by its line in the approvers file.
//!
//! WebAuthn binds a passkey to an RP ID, a host name, not to a port: a page on any port of
//! the same host gets the same passkey prompt. So the RP ID alone would let a look-alike page
//! the agent serves on another port of `localhost` (or of the approvals host) have the
//! approver sign the agent's request. The line that trusts a passkey therefore names the one
//! origin its approvals are made on, port included (`origin:http://localhost:8470`), and an
//! assertion whose client data names another origin counts for nothing.

use super::Passkey;
use super::verify::origin_expected;
use crate::policy::signers::Signer;

/// What starts the comment word naming a passkey line's origin.
pub(crate) const ORIGIN_TAG: &str = "origin:";

/// Checks that `origin` is one a browser reports for a page of `passkey`'s RP ID, serialized
/// as browsers serialize it: `https://<RP ID>[:PORT]`, or for `localhost`
/// `http://localhost[:PORT]`.
pub(crate) fn check_origin(passkey: &Passkey, origin: &str) -> Result<(), String> {
    if origin_expected(passkey.rp_id(), origin) {
        return Ok(());
    }
    Err(format!(
        "{origin:?} is not an origin of the RP ID {rp}: https://{rp} or https://{rp}:PORT{also}, \
         exactly as the browser's address bar shows it",
        rp = passkey.rp_id(),
        also = if passkey.rp_id() == "localhost" {
            ", or http://localhost:PORT"
        } else {
            ""
        }
    ))
}

/// The origin a passkey line's comment names: exactly one word `origin:<origin>`, an origin
/// of the passkey's RP ID.
fn line_origin(passkey: &Passkey, comment: &str) -> Result<String, String> {
    let mut named = comment
        .split([' ', '\t'])
        .filter_map(|word| word.strip_prefix(ORIGIN_TAG));
    let Some(origin) = named.next() else {
        return Err(format!(
            "names no origin. A passkey approves only on the one page its line names: add \
             `{ORIGIN_TAG}ORIGIN` to the line, the exact origin approvers open, port included \
             (`{ORIGIN_TAG}http://localhost:8470`, `{ORIGIN_TAG}https://{}`), as `approval-gate \
             passkey enroll` prints it",
            passkey.rp_id()
        ));
    };
    if named.next().is_some() {
        return Err(format!(
            "names two origins; list the passkey once per origin, one `{ORIGIN_TAG}` on each line"
        ));
    }
    check_origin(passkey, origin).map(|()| origin.to_owned())
}

/// Gives every passkey line of `signers` its origin, refusing a file where one names none
/// (lines from before origins were checked: fail closed, naming the fix) or a wrong one.
pub(crate) fn attach_origins(signers: &mut [Signer]) -> Result<(), String> {
    for signer in signers {
        let Ok(passkey) = Passkey::from_key_data(signer.key.key_data()) else {
            continue;
        };
        let origin = line_origin(&passkey, signer.key.comment()).map_err(|problem| {
            format!(
                "the passkey line of {} ({}) {problem}",
                signer.principals,
                super::super::fingerprint(&signer.key)
            )
        })?;
        signer.origin = Some(origin);
    }
    Ok(())
}
