//! A line's options (`cert-authority`, `namespaces`, `valid-after`, `valid-before`), read as
//! OpenSSH reads them: case-insensitive names, double-quoted values, each at most once.

use super::BLANK;
use super::valid_time::parse_time;

/// `cert-authority`, `namespaces`, `valid-after` and `valid-before`, as sshsig.c's
/// `sshsigopt_parse` reads them.
#[derive(Default)]
pub(super) struct Options {
    pub(super) cert_authority: bool,
    pub(super) namespaces: Option<String>,
    pub(super) valid_after: Option<i64>,
    pub(super) valid_before: Option<i64>,
}

impl Options {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
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
