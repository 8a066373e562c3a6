//! The text of a store location as the `postgres` crate reads it, a URL or a `key=value`
//! conninfo string, split into what the crate is given and the two TLS options it does not
//! know (`sslmode`, `sslrootcert`), each of which the text may name only once.

use std::collections::HashSet;
use std::ops::Range;

use crate::store::percent;

/// The text with `sslmode` and `sslrootcert` taken out, and what they said.
pub(super) struct Split {
    /// What `postgres::Config::from_str` is given.
    pub(super) rest: String,
    /// `sslmode`'s value, decoded (named once: see [`once`]).
    pub(super) sslmode: Option<String>,
    /// `sslrootcert`'s value, decoded.
    pub(super) sslrootcert: Option<String>,
    /// The parameter names the text sets (URL query parameters or conninfo keywords).
    pub(super) keys: HashSet<String>,
    /// Where a URL's host list is in `rest`, when no host in it has a port. (The crate gives
    /// such a host port 5432, where libpq would take `PGPORT`.)
    pub(super) hosts_without_port: Option<Range<usize>>,
}

/// Sets a TLS option named once. libpq takes the last of two; a store's text that says two
/// things about how its connection is secured is a mistake or an attack (a `sslmode=disable`
/// appended after the operator's `verify-full`), so it is refused. The values are not shown:
/// either may be a password pasted in the wrong place.
fn once(slot: &mut Option<String>, name: &str, value: String) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!(
            "the store names {name} twice: say once how its connection is secured (libpq would take the last)"
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// Splits `text` as the `postgres` crate would read it: a URL if it starts with one of its
/// two schemes, else a conninfo string.
pub(super) fn split(text: &str, secrets: &mut Vec<String>) -> Result<Split, String> {
    for scheme in ["postgres://", "postgresql://"] {
        if text.starts_with(scheme) {
            return split_url(text, scheme.len(), secrets);
        }
    }
    if let Some(scheme) = url_scheme(text) {
        return Err(format!(
            "unsupported URL scheme `{scheme}`: a PostgreSQL store URL starts postgres:// or \
             postgresql://"
        ));
    }
    split_conninfo(text, secrets)
}

/// The scheme of something that looks like a URL (`scheme://`), if `text` does.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.trim_start().split_once("://")?;
    let mut chars = scheme.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_well = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (starts_well && rest_well).then_some(scheme)
}

/// A URL: the query parameters other than ours are kept verbatim.
///
/// The crate reads everything up to the first `@` as the credentials, then the host list up to
/// `/` or `?`, the database up to `?`, and `&`-separated `key=value` parameters; so does this.
fn split_url(text: &str, body_at: usize, secrets: &mut Vec<String>) -> Result<Split, String> {
    let body = &text[body_at..];
    let after_credentials = match body.find('@') {
        Some(at) => {
            if let Some((_, password)) = body[..at].split_once(':') {
                secrets.push(password.to_owned());
                secrets.push(String::from_utf8_lossy(&percent::decode(password)).into_owned());
            }
            at + 1
        }
        None => 0,
    };
    let hosts_at = body_at + after_credentials;
    let hosts_end = text[hosts_at..]
        .find(['/', '?'])
        .map_or(text.len(), |end| hosts_at + end);
    let has_port = |host: &str| match host.strip_prefix('[') {
        Some(bracketed) => bracketed
            .split_once(']')
            .is_some_and(|(_, after)| after.starts_with(':')),
        None => host.contains(':'),
    };
    let hosts = &text[hosts_at..hosts_end];
    let mut split = Split {
        rest: text.to_owned(),
        sslmode: None,
        sslrootcert: None,
        keys: HashSet::new(),
        hosts_without_port: (!hosts.is_empty() && !hosts.split(',').any(has_port))
            .then_some(hosts_at..hosts_end),
    };
    let Some(question) = body[after_credentials..].find('?') else {
        return Ok(split);
    };
    let query_at = body_at + after_credentials + question + 1;

    let mut kept: Vec<&str> = Vec::new();
    let mut rest = &text[query_at..];
    while !rest.is_empty() {
        let Some(equals) = rest.find('=') else {
            return Err("invalid connection string: a URL parameter has no `=`".to_owned());
        };
        let (value, next) = match rest[equals + 1..].find('&') {
            Some(amp) => (
                &rest[equals + 1..equals + 1 + amp],
                &rest[equals + 2 + amp..],
            ),
            None => (&rest[equals + 1..], ""),
        };
        let pair = &rest[..equals + 1 + value.len()];
        let key = decode_utf8(&rest[..equals], "a URL parameter's name")?;
        match key.as_str() {
            "sslmode" => once(
                &mut split.sslmode,
                "sslmode",
                decode_utf8(value, "sslmode")?,
            )?,
            "sslrootcert" => once(
                &mut split.sslrootcert,
                "sslrootcert",
                decode_utf8(value, "sslrootcert")?,
            )?,
            _ => {
                if key == "password" {
                    secrets.push(value.to_owned());
                    secrets.push(String::from_utf8_lossy(&percent::decode(value)).into_owned());
                }
                kept.push(pair);
                split.keys.insert(key);
            }
        }
        rest = next;
    }

    // Without the `?` if nothing is left, which the crate reads the same.
    let mut rebuilt = text[..query_at - 1].to_owned();
    if !kept.is_empty() {
        rebuilt.push('?');
        rebuilt.push_str(&kept.join("&"));
    }
    split.rest = rebuilt;
    Ok(split)
}

/// [`percent::decode`], as UTF-8; `what` names the part in the error.
fn decode_utf8(text: &str, what: &str) -> Result<String, String> {
    String::from_utf8(percent::decode(text))
        .map_err(|_| format!("invalid connection string: {what} is not UTF-8 once percent-decoded"))
}

/// A conninfo string: the spans of our two keywords are blanked out, the rest kept verbatim.
///
/// The grammar is the crate's: whitespace-separated `keyword = value`, a value either quoted
/// with `'` or running to the next whitespace, `\` escaping the character after it in both.
fn split_conninfo(text: &str, secrets: &mut Vec<String>) -> Result<Split, String> {
    let mut split = Split {
        rest: String::new(),
        sslmode: None,
        sslrootcert: None,
        keys: HashSet::new(),
        hosts_without_port: None,
    };
    let mut removed: Vec<Range<usize>> = Vec::new();
    let mut chars = text.char_indices().peekable();
    let position = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        chars.peek().map_or(text.len(), |&(at, _)| at)
    };
    loop {
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        let start = position(&mut chars);
        while chars
            .next_if(|&(_, c)| !c.is_whitespace() && c != '=')
            .is_some()
        {}
        let keyword = &text[start..position(&mut chars)];
        if keyword.is_empty() {
            if chars.peek().is_none() {
                break;
            }
            return Err(format!(
                "invalid connection string: `=` without a keyword at byte {start}"
            ));
        }
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|&(_, c)| c == '=').is_none() {
            return Err(format!(
                "invalid connection string: the keyword at byte {start} is not followed by `=` \
                 (nor is this a postgres:// URL)"
            ));
        }
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|&(_, c)| c == '\'').is_some() {
            loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| c)),
                    Some((_, c)) => value.push(c),
                    None => {
                        return Err(format!(
                            "invalid connection string: the quoted value of the keyword at \
                             byte {start} has no closing `'`"
                        ));
                    }
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|&(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next().map(|(_, c)| c));
                } else {
                    value.push(c);
                }
            }
            if value.is_empty() {
                return Err(format!(
                    "invalid connection string: the keyword at byte {start} has no value \
                     (write '' for an empty one)"
                ));
            }
        }
        let end = position(&mut chars);
        match keyword {
            "sslmode" => {
                once(&mut split.sslmode, "sslmode", value)?;
                removed.push(start..end);
            }
            "sslrootcert" => {
                once(&mut split.sslrootcert, "sslrootcert", value)?;
                removed.push(start..end);
            }
            _ => {
                if keyword == "password" {
                    secrets.push(value);
                }
                split.keys.insert(keyword.to_owned());
            }
        }
    }

    let mut kept = 0;
    for span in removed {
        split.rest.push_str(&text[kept..span.start]);
        split.rest.push(' ');
        kept = span.end;
    }
    split.rest.push_str(&text[kept..]);
    Ok(split)
}
