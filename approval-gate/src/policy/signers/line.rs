//! One line of an `allowed_signers` file: the principals, the options if any, and the key.

use super::key::{KeyError, read_key};
use super::options::Options;
use super::{BLANK, Signer, WHITESPACE};

/// One line, as sshsig.c's `parse_principals_key_and_options` reads it; `None` for a blank
/// line or a comment.
pub(super) fn parse_line(line: &str) -> Result<Option<Signer>, String> {
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
