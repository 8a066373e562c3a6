//! A line's key: the key types OpenSSH reads, and the keys this reader refuses on principle
//! (certificates, DSA).

use ssh_key::PublicKey;

use super::BLANK;

/// Why a text is not a key.
pub(super) enum KeyError {
    /// It does not start with a key type: perhaps it is options.
    NotAKey,
    /// A key type with a key that does not parse.
    Bad(String),
    /// A key this reader does not trust on principle.
    Refused(String),
}

/// Every name OpenSSH reads as a key type (sshkey.c `keyimpls`), with the type ssh-key knows
/// it by: the RSA signature names name RSA keys too.
const KEY_TYPES: [(&str, &str); 9] = [
    ("ssh-ed25519", "ssh-ed25519"),
    ("sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519@openssh.com"),
    ("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"),
    ("ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"),
    ("ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521"),
    (
        "sk-ecdsa-sha2-nistp256@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    ),
    (
        "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    ),
    ("ssh-rsa", "ssh-rsa"),
    ("rsa-sha2-256", "ssh-rsa"),
];

/// `type base64 [comment]`, as `sshkey_read` reads it; the key keeps the comment (blanks
/// around it dropped), where a passkey's line names its credential id.
pub(super) fn read_key(text: &str) -> Result<PublicKey, KeyError> {
    let Some(space) = text.find(BLANK) else {
        return Err(if key_type(text).is_some() {
            KeyError::Bad(format!("{text} without its base64 key"))
        } else {
            KeyError::NotAKey
        });
    };
    let name = &text[..space];
    if name.ends_with("-cert-v01@openssh.com") {
        return Err(KeyError::Refused(format!(
            "{name}: certificates are not supported here"
        )));
    }
    if name == "ssh-dss" {
        return Err(KeyError::Refused(
            "ssh-dss: DSA keys are not accepted (OpenSSH dropped them too)".into(),
        ));
    }
    let Some(kind) = key_type(name) else {
        return Err(KeyError::NotAKey);
    };
    let rest = text[space..].trim_start_matches(BLANK);
    let end = rest.find(BLANK).unwrap_or(rest.len());
    let base64 = &rest[..end];
    // The key's own encoding names its algorithm; ssh-key refuses one that disagrees.
    let mut key = PublicKey::from_openssh(&format!("{kind} {base64}"))
        .map_err(|e| KeyError::Bad(format!("not a valid {name} key: {e}")))?;
    key.set_comment(rest[end..].trim_matches(BLANK));
    Ok(key)
}

fn key_type(name: &str) -> Option<&'static str> {
    match name {
        "rsa-sha2-512" => Some("ssh-rsa"),
        _ => KEY_TYPES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|&(_, kind)| kind),
    }
}
