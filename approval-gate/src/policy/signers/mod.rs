//! OpenSSH `allowed_signers` files, read as `ssh-keygen -Y verify` reads them.
//!
//! Each line is `principals [options] keytype base64-key [comment]`: blank lines and lines
//! starting with `#` are ignored; principals are a comma-separated pattern list (`*`, `?`,
//! and `!` to exclude, as in `ssh_config(5)` PATTERNS), optionally in double quotes; options are
//! `namespaces="…"`, `valid-after="…"`, `valid-before="…"` and `cert-authority`.
//!
//! This is a port of what OpenSSH does (sshsig.c `parse_principals_key_and_options` and
//! `sshsigopt_parse`, misc.c `strdelimw`, `opt_dequote` and `parse_absolute_time`, match.c
//! `match_pattern_list`), checked against the real ssh-keygen by a differential test over
//! generated files (`tests/it/ssh_signing/parity.rs`): an option given twice, an epoch or
//! malformed time, `valid-before` not after `valid-after` are refused as ssh-keygen refuses
//! them, and a pattern of 1,023 bytes or more matches nothing from where it stands.
//!
//! Where this reader differs it is stricter, never trusting more: ssh-keygen skips a line it
//! cannot read, this reader refuses the whole file naming the line and the reason, so that a
//! mistake shows when the gate starts. And it refuses, on principle, lines ssh-keygen would
//! read: `cert-authority` and certificate keys (this build verifies plain keys), DSA keys,
//! timestamps in local time (ssh-keygen reads those in the verifier's time zone: write them
//! in UTC, ending in `Z`), and a carriage return or NUL inside a line (OpenSSH releases
//! differ on those).

mod key;
mod line;
mod options;
mod pattern;
#[cfg(test)]
mod tests;
mod valid_time;

use ssh_key::{LineEnding, PublicKey, SshSig};

use crate::request::SIGNATURE_NAMESPACE;
use crate::time::Timestamp;
use line::parse_line;
pub(crate) use pattern::{glob, match_pattern_list};

/// One trusted key and whom it may sign as.
#[derive(Debug, Clone)]
pub(crate) struct Signer {
    /// The principals pattern list, as written (without quotes).
    pub(crate) principals: String,
    /// Namespaces this key may sign in; `None` means all.
    pub(crate) namespaces: Option<String>,
    /// `valid-after`, in seconds since the epoch.
    valid_after: Option<i64>,
    /// `valid-before`, in seconds since the epoch.
    valid_before: Option<i64>,
    pub(crate) key: PublicKey,
    /// The one origin a passkey's approvals are made on (its line's `origin:` word); `None`
    /// for an SSH key.
    pub(crate) origin: Option<String>,
}

impl Signer {
    /// Whether this entry lets its key sign as `principal` in `namespace` at `now`.
    pub(crate) fn allows(&self, principal: &str, namespace: &str, now: Timestamp) -> bool {
        match_pattern_list(principal, &self.principals)
            && self
                .namespaces
                .as_deref()
                .is_none_or(|list| match_pattern_list(namespace, list))
            && self.in_time(now)
    }

    /// Whether `now` is inside the entry's `valid-after`/`valid-before` window.
    fn in_time(&self, now: Timestamp) -> bool {
        // ssh-keygen compares whole seconds (`time(3)`, or `-O verify-time`).
        let now = now.unix_millis().div_euclid(1000);
        self.valid_after.is_none_or(|after| now >= after)
            && self.valid_before.is_none_or(|before| now <= before)
    }
}

impl super::Policy {
    /// What `ssh-keygen -Y verify -n approval-gate -f allowed_signers -I principal -O
    /// verify-time=…` answers for `signature` (an armored SSHSIG) of `message` at `at`: true
    /// if it is a valid signature of `message` in the `approval-gate` namespace by a key this
    /// policy trusts for `principal` then.
    ///
    /// Approvals are checked by the gate itself; this is for tools that check an approver's
    /// signature of something else, and for comparing this reader with ssh-keygen's.
    #[must_use]
    pub fn verifies_message(
        &self,
        principal: &str,
        message: &[u8],
        signature: &str,
        at: Timestamp,
    ) -> bool {
        let Ok(sig) = parse_signature(signature) else {
            return false;
        };
        if sig.namespace() != SIGNATURE_NAMESPACE {
            return false;
        }
        let key = PublicKey::from(sig.public_key().clone());
        key.verify(SIGNATURE_NAMESPACE, message, &sig).is_ok()
            && self.signers.iter().any(|signer| {
                signer.key.key_data() == key.key_data()
                    && signer.allows(principal, SIGNATURE_NAMESPACE, at)
            })
    }

    /// What `ssh-keygen -Y find-principals -f allowed_signers -O verify-time=…` prints for
    /// `signature` (an armored SSHSIG; only its key is read, as ssh-keygen does) at `at`: the
    /// principals of the first entry that trusts its key then, in any namespace.
    #[must_use]
    pub fn find_principals(&self, signature: &str, at: Timestamp) -> Option<String> {
        let sig = parse_signature(signature).ok()?;
        let key = PublicKey::from(sig.public_key().clone());
        self.signers
            .iter()
            .find(|signer| signer.key.key_data() == key.key_data() && signer.in_time(at))
            .map(|signer| signer.principals.clone())
    }
}

/// Reads an armored SSHSIG as ssh-keygen reads it.
///
/// ssh-key's decoder lets a length prefix overstate what follows (of the key, of the
/// signature) where ssh-keygen refuses the signature ("incomplete message"); so the signature
/// must encode back to exactly the bytes it was read from. The differential test found this.
///
/// # Errors
///
/// What is wrong, for [`Error::BadSignature`](crate::Error::BadSignature).
pub(crate) fn parse_signature(armored: &str) -> Result<SshSig, String> {
    let sig = SshSig::from_pem(armored).map_err(|e| format!("not an SSH signature ({e})"))?;
    let canonical = sig
        .to_pem(LineEnding::LF)
        .map_err(|e| format!("not an SSH signature ({e})"))?;
    // Base64 is canonical here (the decoder refuses stray bits), so equal bytes are equal text.
    let body = |armored: &str| -> String {
        armored
            .lines()
            .filter(|line| !line.starts_with("-----"))
            .flat_map(|line| line.chars().filter(|c| !c.is_ascii_whitespace()))
            .collect()
    };
    if body(&canonical) != body(armored) {
        return Err(
            "not an SSH signature (a length in it does not match what follows, \
                    which ssh-keygen refuses)"
                .into(),
        );
    }
    Ok(sig)
}

/// Parses a whole `allowed_signers` text.
///
/// # Errors
///
/// The first bad line: `line N: what is wrong`.
pub(crate) fn parse(text: &str) -> Result<Vec<Signer>, String> {
    let mut signers = Vec::new();
    // As getline(3): lines end at `\n` only. A `\r` before it (a file from Windows) is
    // whitespace to ssh-keygen at the end of a line, so it is dropped there.
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        match parse_line(line) {
            Ok(Some(signer)) => signers.push(signer),
            Ok(None) => {}
            Err(problem) => return Err(format!("line {}: {problem}", index + 1)),
        }
    }
    Ok(signers)
}

/// What OpenSSH's `strdelim` splits words at (misc.c `WHITESPACE`).
const WHITESPACE: [char; 4] = [' ', '\t', '\r', '\n'];
/// What `sshkey_read` and the options reader stop at.
const BLANK: [char; 2] = [' ', '\t'];
