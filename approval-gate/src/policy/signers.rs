//! OpenSSH `allowed_signers` files, read as `ssh-keygen -Y verify` reads them.
//!
//! Each line is `principals [options] keytype base64-key [comment]`: blank lines and lines
//! starting with `#` are ignored; principals are a comma-separated pattern list (`*`, `?`,
//! and `!` to exclude, as in `ssh_config(5)` PATTERNS), optionally in double quotes; options are
//! `namespaces="…"`, `valid-after="…"`, `valid-before="…"` and `cert-authority`.
//!
//! Where this reader is stricter than ssh-keygen it refuses the file with the line and the
//! reason, never trusts more: `cert-authority` lines (this build verifies plain keys, not
//! certificates) and timestamps in local time (ssh-keygen reads those in the verifier's time
//! zone; write them in UTC with a trailing `Z`) are refused.

use ssh_key::PublicKey;

use crate::time::Timestamp;

/// One trusted key and whom it may sign as.
#[derive(Debug, Clone)]
pub(crate) struct Signer {
    /// The principals pattern list, as written (without quotes).
    pub(crate) principals: String,
    /// Namespaces this key may sign in; `None` means all.
    pub(crate) namespaces: Option<String>,
    pub(crate) valid_after: Option<Timestamp>,
    pub(crate) valid_before: Option<Timestamp>,
    pub(crate) key: PublicKey,
}

impl Signer {
    /// Whether this entry lets its key sign as `principal` in `namespace` at `now`.
    pub(crate) fn allows(&self, principal: &str, namespace: &str, now: Timestamp) -> bool {
        match_pattern_list(principal, &self.principals)
            && self
                .namespaces
                .as_deref()
                .is_none_or(|list| match_pattern_list(namespace, list))
            && self.valid_after.is_none_or(|after| now >= after)
            && self.valid_before.is_none_or(|before| now <= before)
    }
}

/// Parses a whole `allowed_signers` text.
///
/// # Errors
///
/// The first bad line: `line N: what is wrong`.
pub(crate) fn parse(text: &str) -> Result<Vec<Signer>, String> {
    let mut signers = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim_matches([' ', '\t', '\r']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let signer = parse_line(trimmed).map_err(|problem| format!("line {line}: {problem}"))?;
        signers.push(signer);
    }
    Ok(signers)
}

fn parse_line(text: &str) -> Result<Signer, String> {
    let (principals, rest) = take_field(text)?;
    if principals.is_empty() {
        return Err("no principals".into());
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    // As ssh-keygen: if what follows is not a key, it is the options.
    let (options, key_text) = if looks_like_key(rest) {
        ("", rest)
    } else {
        let (options, rest) = take_options(rest)?;
        (options, rest.trim_start_matches([' ', '\t']))
    };
    let mut signer = Signer {
        principals: principals.to_owned(),
        namespaces: None,
        valid_after: None,
        valid_before: None,
        key: parse_key(key_text)?,
    };
    for option in split_options(options)? {
        let (name, value) = match option.split_once('=') {
            Some((name, value)) => (name, Some(unquote(value)?)),
            None => (option, None),
        };
        match (name.to_ascii_lowercase().as_str(), value) {
            ("cert-authority", None) => {
                return Err(
                    "cert-authority: certificates are not supported here; list each \
                            approver's own key instead"
                        .into(),
                );
            }
            ("namespaces", Some(value)) => signer.namespaces = Some(value.to_owned()),
            ("valid-after", Some(value)) => signer.valid_after = Some(parse_time(value)?),
            ("valid-before", Some(value)) => signer.valid_before = Some(parse_time(value)?),
            _ => return Err(format!("unknown or malformed option {option:?}")),
        }
    }
    Ok(signer)
}

/// The principals field: a word, or a double-quoted text.
fn take_field(text: &str) -> Result<(&str, &str), String> {
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted
            .find('"')
            .ok_or("the principals' opening quote is never closed")?;
        Ok((&quoted[..end], &quoted[end + 1..]))
    } else {
        let end = text.find([' ', '\t']).unwrap_or(text.len());
        Ok((&text[..end], &text[end..]))
    }
}

/// The options field: up to the first blank outside double quotes.
fn take_options(text: &str) -> Result<(&str, &str), String> {
    let mut quoted = false;
    for (at, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return Ok((&text[..at], &text[at..])),
            _ => {}
        }
    }
    if quoted {
        Err("an option's quote is never closed".into())
    } else {
        Err("no key after the options".into())
    }
}

fn split_options(options: &str) -> Result<Vec<&str>, String> {
    if options.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (at, c) in options.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&options[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&options[start..]);
    if parts.iter().any(|part| part.is_empty()) {
        return Err(format!("empty option in {options:?}"));
    }
    Ok(parts)
}

fn unquote(value: &str) -> Result<&str, String> {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .filter(|v| !v.contains('"'))
        .ok_or_else(|| format!("option value {value:?} must be in double quotes"))
}

const KEY_TYPES: [&str; 8] = [
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-dss",
];

fn looks_like_key(text: &str) -> bool {
    let word = text.split([' ', '\t']).next().unwrap_or("");
    KEY_TYPES.contains(&word) || word.contains("-cert-v01@openssh.com")
}

fn parse_key(text: &str) -> Result<PublicKey, String> {
    let mut words = text.split([' ', '\t']).filter(|w| !w.is_empty());
    let (Some(kind), Some(base64)) = (words.next(), words.next()) else {
        return Err("expected a key type and a base64 key".into());
    };
    if kind.contains("-cert-v01@openssh.com") {
        return Err(format!("{kind}: certificates are not supported here"));
    }
    if kind == "ssh-dss" {
        return Err("ssh-dss: DSA keys are not accepted (OpenSSH dropped them too)".into());
    }
    // The key's own encoding names its algorithm; ssh-key refuses one that disagrees.
    PublicKey::from_openssh(&format!("{kind} {base64}"))
        .map_err(|e| format!("not a valid {kind} key: {e}"))
}

/// `YYYYMMDD[HHMM[SS]]Z`: ssh-keygen's timestamps, in UTC only.
fn parse_time(text: &str) -> Result<Timestamp, String> {
    let Some(digits) = text.strip_suffix(['Z', 'z']) else {
        return Err(format!(
            "timestamp {text:?} is in local time: write it in UTC with a trailing Z \
             (e.g. 20270101Z)"
        ));
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(format!("timestamp {text:?} is not YYYYMMDD[HHMM[SS]]Z"));
    }
    let field = |range: std::ops::Range<usize>| digits.get(range).unwrap_or("00");
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &digits[0..4],
        &digits[4..6],
        &digits[6..8],
        field(8..10),
        field(10..12),
        field(12..14)
    );
    Timestamp::parse_rfc3339(&rfc3339).map_err(|e| format!("timestamp {text:?}: {e}"))
}

/// OpenSSH's `match_pattern_list`: true if `name` matches a pattern of the comma-separated
/// `list` and no negated (`!`) pattern; case-sensitive.
pub(crate) fn match_pattern_list(name: &str, list: &str) -> bool {
    let mut matched = false;
    for pattern in list.split(',') {
        if let Some(negated) = pattern.strip_prefix('!') {
            if glob(name.as_bytes(), negated.as_bytes()) {
                return false;
            }
        } else if glob(name.as_bytes(), pattern.as_bytes()) {
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
        assert_eq!(signers[1].valid_before, Some(t("2030-01-01T00:00:00Z")));
        assert_eq!(signers[2].valid_after, Some(t("2020-01-02T15:30:00Z")));
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
            (
                format!("a@x frobnicate {ED}"),
                "unknown or malformed option",
            ),
            (format!("a@x namespaces=git {ED}"), "double quotes"),
            ("a@x ssh-ed25519".to_owned(), "expected a key type"),
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
        ];
        for (text, expected) in cases {
            let problem = parse(&format!("# ok\n{text}")).unwrap_err();
            assert!(
                problem.contains(expected) && problem.starts_with("line 2: "),
                "{text:?}: {problem}"
            );
        }
    }
}
