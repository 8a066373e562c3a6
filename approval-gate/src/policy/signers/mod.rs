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

use ssh_key::{LineEnding, PublicKey, SshSig};

use crate::request::SIGNATURE_NAMESPACE;
use crate::time::Timestamp;

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

/// One line, as sshsig.c's `parse_principals_key_and_options` reads it; `None` for a blank
/// line or a comment.
fn parse_line(line: &str) -> Result<Option<Signer>, String> {
    // OpenSSH 9.2 reads a line that starts with `\r` as one with empty principals, later
    // releases skip the `\r`; C stops at a NUL. Neither means one thing: refuse both.
    if line.contains(['\r', '\0']) {
        return Err("contains a carriage return or a NUL byte inside the line".into());
    }
    let text = line.trim_start_matches(BLANK);
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let (principals, rest) = principals_field(text)?;
    // As ssh-keygen: if what follows the principals is not a key, it is the options.
    let (options, key) = match read_key(rest) {
        Ok(key) => ("", key),
        Err(KeyError::Refused(problem)) => return Err(problem),
        Err(first) => {
            let after_options = options_end(rest).and_then(|end| {
                let key_text = rest[end + 1..].trim_start_matches(BLANK);
                match read_key(key_text) {
                    Ok(key) => Ok((&rest[..end], key)),
                    Err(KeyError::Refused(problem) | KeyError::Bad(problem)) => Err(problem),
                    Err(KeyError::NotAKey) => {
                        Err(format!("no key after the options {:?}", &rest[..end]))
                    }
                }
            });
            match (after_options, first) {
                (Ok(found), _) => found,
                // A line that starts like a key is most likely a broken key, not options.
                (Err(_), KeyError::Bad(problem)) | (Err(problem), _) => return Err(problem),
            }
        }
    };
    let options = Options::parse(options)?;
    if options.cert_authority {
        return Err(
            "cert-authority: certificates are not supported here; list each \
                    approver's own key instead"
                .into(),
        );
    }
    Ok(Some(Signer {
        principals,
        namespaces: options.namespaces,
        valid_after: options.valid_after,
        valid_before: options.valid_before,
        key,
        origin: None,
    }))
}

/// The principals: the first word, where a double quote opens a part that runs to the next
/// double quote, blanks included (misc.c `strdelimw`). Returns them and what follows.
fn principals_field(text: &str) -> Result<(String, &str), String> {
    let Some(at) = text.find([' ', '\t', '"']) else {
        return Err("no key after the principals".into());
    };
    if text[at..].starts_with('"') {
        let quoted = &text[at + 1..];
        let close = quoted
            .find('"')
            .ok_or("the principals' opening quote is never closed")?;
        Ok((
            format!("{}{}", &text[..at], &quoted[..close]),
            quoted[close + 1..].trim_start_matches(WHITESPACE),
        ))
    } else {
        Ok((
            text[..at].to_owned(),
            text[at + 1..].trim_start_matches(WHITESPACE),
        ))
    }
}

/// Where the options end: at the first blank outside double quotes, `\"` escaping a quote
/// (authfile.c `sshkey_advance_past_options`).
fn options_end(text: &str) -> Result<usize, String> {
    let bytes = text.as_bytes();
    let mut quoted = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if bytes.get(at + 1) == Some(&b'"') => at += 1,
            b'"' => quoted = !quoted,
            b' ' | b'\t' if !quoted => return Ok(at),
            _ => {}
        }
        at += 1;
    }
    Err(if quoted {
        "an option's quote is never closed".into()
    } else {
        "no key after the options".into()
    })
}

/// `cert-authority`, `namespaces`, `valid-after` and `valid-before`, as sshsig.c's
/// `sshsigopt_parse` reads them.
#[derive(Default)]
struct Options {
    cert_authority: bool,
    namespaces: Option<String>,
    valid_after: Option<i64>,
    valid_before: Option<i64>,
}

impl Options {
    fn parse(text: &str) -> Result<Self, String> {
        let mut options = Self::default();
        let mut rest = text;
        while !rest.is_empty() && !rest.starts_with(BLANK) {
            if let Some(after) = strip_prefix_ignore_case(rest, "cert-authority") {
                options.cert_authority = true;
                rest = after;
            } else if let Some(after) = option_value(rest, "namespaces") {
                if options.namespaces.is_some() {
                    return Err("namespaces is given twice".into());
                }
                let (value, after) = dequote("namespaces", after)?;
                options.namespaces = Some(value);
                rest = after;
            } else if let Some(after) = option_value(rest, "valid-after") {
                if options.valid_after.is_some() {
                    return Err("valid-after is given twice".into());
                }
                let (value, after) = dequote("valid-after", after)?;
                options.valid_after = Some(parse_time("valid-after", &value)?);
                rest = after;
            } else if let Some(after) = option_value(rest, "valid-before") {
                if options.valid_before.is_some() {
                    return Err("valid-before is given twice".into());
                }
                let (value, after) = dequote("valid-before", after)?;
                options.valid_before = Some(parse_time("valid-before", &value)?);
                rest = after;
            }
            // As ssh-keygen, an empty option before a comma is passed over; anything else
            // that is not a comma here is an option it does not know.
            if rest.is_empty() || rest.starts_with(BLANK) {
                break;
            }
            let Some(after) = rest.strip_prefix(',') else {
                return Err(format!("unknown or malformed option at {rest:?}"));
            };
            if after.is_empty() {
                return Err(format!("the options {text:?} end with a comma"));
            }
            rest = after;
        }
        if let (Some(after), Some(before)) = (options.valid_after, options.valid_before)
            && before <= after
        {
            return Err("valid-before is not later than valid-after".into());
        }
        Ok(options)
    }
}

/// `text` after `prefix`, compared without regard to ASCII case (`strncasecmp`).
fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.as_bytes().get(..prefix.len())?;
    // The prefix is ASCII, so a match ends on a character boundary.
    head.eq_ignore_ascii_case(prefix.as_bytes())
        .then(|| &text[prefix.len()..])
}

/// The text after `name=` (misc.c `opt_match`).
fn option_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    strip_prefix_ignore_case(text, name)?.strip_prefix('=')
}

/// A double-quoted value, `\"` standing for a quote (misc.c `opt_dequote`). Returns the value
/// and what follows its closing quote.
fn dequote<'a>(option: &str, text: &'a str) -> Result<(String, &'a str), String> {
    let Some(body) = text.strip_prefix('"') else {
        return Err(format!("{option}: the value must be in double quotes"));
    };
    let bytes = body.as_bytes();
    let mut value = Vec::new();
    let mut at = 0;
    while at < bytes.len() && bytes[at] != b'"' {
        if bytes[at] == b'\\' && bytes.get(at + 1) == Some(&b'"') {
            at += 1;
        }
        value.push(bytes[at]);
        at += 1;
    }
    if at == bytes.len() {
        return Err(format!("{option}: the value's closing quote is missing"));
    }
    // Only ASCII backslashes were dropped, so the value is still UTF-8.
    let value = String::from_utf8(value).map_err(|_| format!("{option}: not UTF-8"))?;
    Ok((value, &body[at + 1..]))
}

/// Why a text is not a key.
enum KeyError {
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
fn read_key(text: &str) -> Result<PublicKey, KeyError> {
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

/// `YYYYMMDD[HHMM[SS]]` ending in `Z` or `UTC` (any case), in seconds since the epoch, as
/// misc.c `parse_absolute_time` reads it with glibc's `strptime` and `timegm`: a field may
/// start with blanks, a day past the month's end or a 60th or 61st second rolls over, and
/// the result must be after the epoch (ssh-keygen also refuses the epoch itself).
fn parse_time(option: &str, text: &str) -> Result<i64, String> {
    let bytes = text.as_bytes();
    let (digits, utc) = if bytes.len() > 1 && bytes[bytes.len() - 1].eq_ignore_ascii_case(&b'z') {
        (&bytes[..bytes.len() - 1], true)
    } else if bytes.len() > 3 && bytes[bytes.len() - 3..].eq_ignore_ascii_case(b"utc") {
        (&bytes[..bytes.len() - 3], true)
    } else {
        (bytes, false)
    };
    let malformed = || format!("{option} time {text:?} is not YYYYMMDD[HHMM[SS]]Z");
    // (offset, width, smallest, largest) of each field, as strptime's %Y %m %d %H %M %S.
    let fields: &[(usize, usize, i64, i64)] = match digits.len() {
        8 => &[(0, 4, 0, 9999), (4, 2, 1, 12), (6, 2, 1, 31)],
        12 => &[
            (0, 4, 0, 9999),
            (4, 2, 1, 12),
            (6, 2, 1, 31),
            (8, 2, 0, 23),
            (10, 2, 0, 59),
        ],
        14 => &[
            (0, 4, 0, 9999),
            (4, 2, 1, 12),
            (6, 2, 1, 31),
            (8, 2, 0, 23),
            (10, 2, 0, 59),
            (12, 2, 0, 61),
        ],
        _ => return Err(malformed()),
    };
    let mut values = [0_i64; 6];
    for (value, &(at, width, smallest, largest)) in values.iter_mut().zip(fields) {
        *value =
            strptime_number(&digits[at..at + width], smallest, largest).ok_or_else(malformed)?;
    }
    let [year, month, day, hour, minute, second] = values;
    let seconds =
        (days_from_civil(year, month) + day - 1) * 86_400 + hour * 3600 + minute * 60 + second;
    if seconds < 0 {
        return Err(format!("{option} time {text:?} is before 1970"));
    }
    if !utc {
        return Err(format!(
            "{option} time {text:?} is in local time: write it in UTC with a trailing Z \
             (e.g. 20270101Z)"
        ));
    }
    if seconds == 0 {
        return Err(format!(
            "{option} time {text:?} is the epoch itself, which ssh-keygen refuses"
        ));
    }
    Ok(seconds)
}

/// One field as glibc's `strptime` reads a number: blanks, then at least one digit, no more
/// than the field holds, and nothing after (the separator that follows in ssh-keygen's
/// reformatted text would not match).
fn strptime_number(field: &[u8], smallest: i64, largest: i64) -> Option<i64> {
    let start = field
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let digits = &field[start..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // strptime stops reading once another digit would pass the largest value, and what is
    // left then fails to match: the same refusal as a value out of range, checked here once.
    let value = digits
        .iter()
        .fold(0_i64, |value, &digit| value * 10 + i64::from(digit - b'0'));
    (smallest..=largest).contains(&value).then_some(value)
}

/// Days from 1970-01-01 to the first of `month` in `year` (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// OpenSSH's `match_pattern_list`: true if `name` matches a pattern of the comma-separated
/// `list` and no negated (`!`) pattern before a match decides; case-sensitive. As OpenSSH,
/// a pattern of 1,023 bytes or more ends the search with "no match" where it stands.
pub(crate) fn match_pattern_list(name: &str, list: &str) -> bool {
    /// `sizeof(sub) - 1` in match.c.
    const LONGEST: usize = 1023;
    let list = list.as_bytes();
    let mut matched = false;
    let mut at = 0;
    while at < list.len() {
        let negated = list[at] == b'!';
        if negated {
            at += 1;
        }
        let start = at;
        while at < list.len() && at - start < LONGEST && list[at] != b',' {
            at += 1;
        }
        if at - start >= LONGEST {
            return false;
        }
        let pattern = &list[start..at];
        if at < list.len() && list[at] == b',' {
            at += 1;
        }
        if glob(name.as_bytes(), pattern) {
            if negated {
                return false;
            }
            matched = true;
        }
    }
    matched
}

/// `*` matches any run of bytes, `?` any one byte, everything else itself.
pub(crate) fn glob(name: &[u8], pattern: &[u8]) -> bool {
    let (mut n, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                n += 1;
                p += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";

    #[test]
    fn globs_match_as_openssh_patterns_do() {
        assert!(glob(b"payments.send", b"payments.*"));
        assert!(glob(b"payments.", b"payments.*"));
        assert!(!glob(b"payment", b"payments.*"));
        assert!(glob(b"a.b.c", b"*.c"));
        assert!(glob(b"abc", b"a?c"));
        assert!(!glob(b"ac", b"a?c"));
        assert!(glob(b"", b"*"));
        assert!(!glob(b"x", b""));
        assert!(glob(b"aXbXc", b"a*b*c"));
        assert!(!glob(b"aXbXd", b"a*b*c"));
        assert!(match_pattern_list(
            "alice@example.com",
            "bob@example.com,*@example.com"
        ));
        assert!(!match_pattern_list(
            "eve@example.com",
            "*@example.com,!eve@*"
        ));
        assert!(!match_pattern_list(
            "Alice@example.com",
            "alice@example.com"
        ));
    }

    #[test]
    fn reads_principals_options_keys_and_comments() {
        let text = format!(
            "# approvers\n\nalice@example.com {ED} alice's laptop\n\
             \"bob@example.com,carol@example.com\" namespaces=\"git,approval-gate\",valid-before=\"20300101Z\" {ED}\n\
             \t dave@example.com valid-after=\"202001021530Z\" {ED}\n"
        );
        let signers = parse(&text).unwrap();
        assert_eq!(signers.len(), 3);
        assert_eq!(signers[0].principals, "alice@example.com");
        assert_eq!(signers[1].principals, "bob@example.com,carol@example.com");
        assert_eq!(signers[1].namespaces.as_deref(), Some("git,approval-gate"));
        let t = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        let secs = |s: &str| t(s).unix_millis() / 1000;
        assert_eq!(signers[1].valid_before, Some(secs("2030-01-01T00:00:00Z")));
        assert_eq!(signers[2].valid_after, Some(secs("2020-01-02T15:30:00Z")));
        let now = t("2026-12-01T00:00:00Z");
        assert!(signers[1].allows("carol@example.com", "approval-gate", now));
        assert!(!signers[1].allows("carol@example.com", "file", now));
        assert!(!signers[1].allows(
            "carol@example.com",
            "approval-gate",
            t("2030-01-02T00:00:00Z")
        ));
        assert!(!signers[2].allows(
            "dave@example.com",
            "approval-gate",
            t("2020-01-02T15:29:59Z")
        ));
        assert!(signers[0].allows("alice@example.com", "anything", now));
        // A blank inside a quoted option value does not end the options (as ssh-keygen).
        let spaced = parse(&format!("erin@x namespaces=\"file, git\" {ED}")).unwrap();
        assert_eq!(spaced[0].namespaces.as_deref(), Some("file, git"));
        assert!(spaced[0].allows("erin@x", "file", now));
        assert!(!spaced[0].allows("erin@x", "approval-gate", now));
        assert!(!signers[0].allows("mallory@example.com", "approval-gate", now));
    }

    #[test]
    fn refuses_what_it_would_otherwise_trust_wrongly_with_the_line_and_reason() {
        let cases = [
            (
                format!("a@x cert-authority {ED}"),
                "cert-authority: certificates",
            ),
            (format!("a@x valid-before=\"20300101\" {ED}"), "local time"),
            (format!("a@x valid-before=\"2030Z\" {ED}"), "not YYYYMMDD"),
            // A field of blanks alone has no digit: not a year 0 (which is before 1970).
            (
                format!("a@x valid-before=\"    0101Z\" {ED}"),
                "not YYYYMMDD",
            ),
            // A letter in a field is no digit (read as one, `x` would make the year 2727).
            (
                format!("a@x valid-before=\"20x70101Z\" {ED}"),
                "not YYYYMMDD",
            ),
            // What ssh-keygen refuses too (issue 22): options twice, the epoch, bad dates,
            // a window that ends before it starts, a trailing comma.
            (
                format!("a@x valid-after=\"20270101Z\",valid-after=\"20280101Z\" {ED}"),
                "valid-after is given twice",
            ),
            (
                format!("a@x namespaces=\"git\",NAMESPACES=\"file\" {ED}"),
                "namespaces is given twice",
            ),
            (format!("a@x valid-after=\"19700101Z\" {ED}"), "the epoch"),
            (format!("a@x valid-after=\"19691231Z\" {ED}"), "before 1970"),
            (
                format!("a@x valid-after=\"20271301Z\" {ED}"),
                "not YYYYMMDD",
            ),
            (
                format!("a@x valid-after=\"202701012400Z\" {ED}"),
                "not YYYYMMDD",
            ),
            (
                format!("a@x valid-after=\"20280101Z\",valid-before=\"20280101Z\" {ED}"),
                "not later than valid-after",
            ),
            (format!("a@x namespaces=\"git\", {ED}"), "end with a comma"),
            // A backslash escapes a quote only: before a blank it is the options' last byte.
            (
                format!("a@x namespaces=\"git\"\\ {ED}"),
                "malformed option at \"\\\\\"",
            ),
            (format!("a@x namespaces=\"git {ED}"), "never closed"),
            (format!("a@x\tcomment\r x {ED}"), "carriage return"),
            (
                format!("a@x frobnicate {ED}"),
                "unknown or malformed option",
            ),
            (format!("a@x namespaces=git {ED}"), "double quotes"),
            ("a@x ssh-ed25519".to_owned(), "without its base64 key"),
            (
                "a@x ssh-ed25519 AAAAnotbase64!".to_owned(),
                "not a valid ssh-ed25519 key",
            ),
            (
                format!("a@x ssh-rsa {}", ED.split(' ').nth(1).unwrap()),
                "not a valid ssh-rsa key",
            ),
            ("a@x ssh-dss AAAAB3NzaC1kc3MAAA".to_owned(), "DSA"),
            ("\"a@x ssh-ed25519 AAAA".to_owned(), "never closed"),
            ("a@x".to_owned(), "no key"),
            (
                format!("a@x ssh-ed25519-cert-v01@openssh.com {}", &ED[12..]),
                "certificates",
            ),
        ];
        for (text, expected) in cases {
            let problem = parse(&format!("# ok\n{text}")).unwrap_err();
            assert!(
                problem.contains(expected) && problem.starts_with("line 2: "),
                "{text:?}: {problem}"
            );
        }
    }

    #[test]
    fn reads_what_ssh_keygen_reads() {
        let at = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        let secs = |s: &str| at(s).unix_millis() / 1000;
        let one = |text: String| parse(&text).unwrap().remove(0);
        // Empty options before a comma are passed over; option names have no case.
        let signer = one(format!(
            "a@x ,NAMESPACES=\"git\",,Valid-Before=\"20300101UTC\" {ED}"
        ));
        assert_eq!(signer.namespaces.as_deref(), Some("git"));
        assert_eq!(signer.valid_before, Some(secs("2030-01-01T00:00:00Z")));
        // Days past the month's end and leap seconds roll over, as timegm(3) does them;
        // fields may start with blanks, as strptime(3) reads them.
        let signer = one(format!(
            "a@x valid-after=\"20270230000061z\",valid-before=\"2030 1 1Z\" {ED}"
        ));
        assert_eq!(signer.valid_after, Some(secs("2027-03-02T00:01:01Z")));
        assert_eq!(signer.valid_before, Some(secs("2030-01-01T00:00:00Z")));
        assert_eq!(
            one(format!("a@x valid-after=\"19700101000001Z\" {ED}")).valid_after,
            Some(1)
        );
        // A quote may open inside the word; `\"` is a quote inside a value.
        let signer = one(format!("a\"b c\" namespaces=\"x\\\"y\" {ED}"));
        assert_eq!(signer.principals, "ab c");
        assert_eq!(signer.namespaces.as_deref(), Some("x\"y"));
        // RSA keys may be named by their signature algorithms; CRLF line ends are fine.
        let rsa = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQDePfvgJGm71eXaBOCyc1JNDcQQt6wY1rdYv2IPQUYuLxeg4VQZfCHt/zhaXwOLH8EbNGewuTEKUECwXK+71zT/xKetOBy0Zvq6/u30JycZK7Et6b5e1KSYyl3AN81Uo460LoYMauvdXMTC+XxypD8Z5bzpCJYh9YrSSMPSvXDZJQ==";
        let signers = parse(&format!("a@x rsa-sha2-512 {rsa}\r\n")).unwrap();
        assert_eq!(
            signers[0].key.algorithm(),
            ssh_key::Algorithm::Rsa { hash: None }
        );
        assert_eq!(parse(&format!("a@x {ED}\r\n\r\n")).unwrap().len(), 1);
        // Whole seconds, as ssh-keygen compares them.
        let signer = one(format!("a@x valid-before=\"20300101Z\" {ED}"));
        assert!(signer.allows("a@x", "approval-gate", at("2030-01-01T00:00:00.999Z")));
        assert!(!signer.allows("a@x", "approval-gate", at("2030-01-01T00:00:01Z")));
    }

    #[test]
    fn a_pattern_of_1023_bytes_or_more_stops_the_match_as_in_openssh() {
        let long = |n: usize| "*".repeat(n);
        assert!(match_pattern_list("bob", &long(1022)));
        assert!(!match_pattern_list("bob", &long(1023)));
        // Decided where it stands: a match before it is lost, a negation before it holds.
        assert!(!match_pattern_list("bob", &format!("bob,{}", long(1023))));
        assert!(!match_pattern_list("bob", &format!("!bob,{}", long(1023))));
        assert!(match_pattern_list("bob", &format!("bob,{}", long(1022))));
        assert!(match_pattern_list(
            "bob",
            &format!("!{},bob", "x".repeat(1022))
        ));
        assert!(!match_pattern_list("bob", ""));
        assert!(match_pattern_list("", "a,,b"));
    }
}
