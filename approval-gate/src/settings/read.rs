//! How each kind of setting is read: from a flag's or a variable's text, or from the config
//! file, each with the problem it reports in its own words (the caller says where it was).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Location;
use crate::limits::{MAX_QUORUM, MAX_TTL, MIN_TTL};

/// Operation patterns and the distinct approvers each needs, in the order given.
pub(super) type Quorum = Vec<(String, u32)>;

/// How a setting's value is read, from a flag's or a variable's text or from the config file.
pub(super) struct Read<T> {
    /// What an empty variable is told to do instead.
    pub(super) empty: &'static str,
    /// Reads a flag's or a variable's text (a flag's even when empty).
    pub(super) text: fn(&OsStr) -> Result<T, String>,
    /// Reads the config file's value.
    pub(super) file: fn(&toml::Value) -> Result<T, String>,
}

/// The store: a path, a `file:` URL or a `postgres://` URL; in the file, not a relative path.
pub(super) const LOCATION: Read<Location> = Read {
    empty: "give a directory or a file: URL, or unset it",
    text: |text| parse_location(utf8(text)?),
    file: |value| {
        let text = string(value, "a path or file: URL in a string")?;
        match parse_location(text)? {
            Location::Dir(dir) if dir.is_relative() => Err(format!(
                "{text:?} is relative: give an absolute path or a file:/// URL (a relative one \
                 would depend on where each binary starts)"
            )),
            location => Ok(location),
        }
    },
};
/// A limit: a whole number from 1 up.
pub(super) const COUNT: Read<usize> = Read {
    empty: "give a whole number, or unset it",
    text: |text| {
        let text = utf8(text)?;
        let number = text.parse().ok().filter(|&n| n >= 1);
        number.ok_or_else(|| format!("{text:?} is not a whole number from 1 up"))
    },
    file: |value| {
        let number = value
            .as_integer()
            .ok_or_else(|| expected("a whole number", value))?;
        let count = usize::try_from(number).ok().filter(|&n| n >= 1);
        count.ok_or_else(|| format!("{number} is not a whole number from 1 up"))
    },
};
/// The default time to live, such as `30m`.
pub(super) const TTL: Read<Duration> = Read {
    empty: "give a duration such as 30m, or unset it",
    text: |text| parse_ttl(utf8(text)?),
    file: |value| parse_ttl(string(value, "a duration in a string, such as \"30m\"")?),
};
/// The quorum table: `payments.*=2,deploy.*=3`, or a `[quorum]` table in the file.
pub(super) const QUORUM: Read<Quorum> = Read {
    empty: "give a list such as payments.*=2,deploy.*=3, or unset it",
    text: |text| parse_quorum(utf8(text)?),
    file: |value| {
        let table = value.as_table().ok_or_else(|| {
            let what = "a table of operation patterns, such as [quorum] \"payments.*\" = 2";
            expected(what, value)
        })?;
        let entry = |(pattern, n): (&String, &toml::Value)| {
            let number = n
                .as_integer()
                .ok_or_else(|| format!("{pattern:?}: {}", expected("a whole number", n)))?;
            Ok((
                pattern.clone(),
                quorum_number(pattern, &number.to_string())?,
            ))
        };
        table.iter().map(entry).collect()
    },
};
/// A file; in the config file, by absolute path.
pub(super) const FILE: Read<Option<PathBuf>> = Read {
    empty: "name a file, or unset it",
    text: |text| {
        if text.is_empty() {
            return Err("is empty: give a file".into());
        }
        Ok(Some(text.into()))
    },
    file: |value| match string(value, "a path in a string")? {
        text if Path::new(text).is_absolute() => Ok(Some(text.into())),
        text => Err(format!(
            "{text:?} is relative: give an absolute path (a relative one would depend on \
             where each binary starts)"
        )),
    },
};
/// The origin the approvers' web page is opened at, such as `https://approvals.example.com`:
/// only its form is checked here (http or https, no spaces); each front end checks it as the
/// origin it needs.
pub(super) const PUBLIC_URL: Read<Option<String>> = Read {
    empty: "give the origin the web page is opened at, such as https://approvals.example.com, \
        or unset it",
    text: |text| parse_public_url(utf8(text)?),
    file: |value| parse_public_url(string(value, "an origin in a string")?),
};
/// The `[notify]` table of `approval-gate notify`, whose contents that command reads and
/// checks itself: here only that it is a table.
pub(super) const NOTIFY: Read<()> = Read {
    empty: "",
    text: |_| Err("is set only in the config file".to_owned()),
    file: |value| {
        value
            .as_table()
            .map(drop)
            .ok_or_else(|| expected("a table, such as [notify.channels.NAME]", value))
    },
};
/// The config file, which is not a key of itself.
pub(super) const CONFIG: Read<Option<PathBuf>> = Read {
    empty: "name a file, or unset it to use the default one",
    ..FILE
};

/// The string `value` holds, else what it should have been.
fn string<'a>(value: &'a toml::Value, what: &str) -> Result<&'a str, String> {
    value.as_str().ok_or_else(|| expected(what, value))
}

fn expected(what: &str, value: &toml::Value) -> String {
    format!("expected {what}, got {} {value}", value.type_str())
}

/// `payments.*=2,deploy.*=3`: patterns and numbers, in the order given.
fn parse_quorum(text: &str) -> Result<Quorum, String> {
    let mut quorum = Vec::new();
    for entry in text.split(',') {
        let entry = entry.trim();
        let Some((pattern, number)) = entry.rsplit_once('=') else {
            return Err(format!(
                "{entry:?} is not PATTERN=N; write it as payments.*=2,deploy.*=3"
            ));
        };
        let pattern = pattern.trim();
        quorum.push((pattern.to_owned(), quorum_number(pattern, number.trim())?));
    }
    Ok(quorum)
}

/// The number of approvers `pattern` needs, from 1 to the library's limit.
fn quorum_number(pattern: &str, text: &str) -> Result<u32, String> {
    if pattern.is_empty() {
        return Err(format!(
            "an empty operation pattern (before ={text}): name the operations, such as payments.*"
        ));
    }
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_QUORUM).contains(n))
        .ok_or_else(|| {
            format!("{pattern}: {text:?} is not a number of approvers from 1 to {MAX_QUORUM}")
        })
}

/// An origin: `http://` or `https://` and a host, nothing that could not be in a URL.
fn parse_public_url(text: &str) -> Result<Option<String>, String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    match rest {
        Some(rest)
            if !rest.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            Ok(Some(text.to_owned()))
        }
        _ => Err(format!(
            "{text:?} is not an origin such as https://approvals.example.com"
        )),
    }
}

/// The library's problem, without the field name it was given.
pub(super) fn library(error: crate::Error) -> String {
    match error {
        crate::Error::InvalidInput { problem, .. } => problem,
        other => other.to_string(),
    }
}

/// A store location, with the library's problem as the message.
fn parse_location(text: &str) -> Result<Location, String> {
    Location::parse(text).map_err(library)
}

/// A default TTL such as `30m` or `2h 30m`: whole seconds, within the library's range.
fn parse_ttl(text: &str) -> Result<Duration, String> {
    let ttl = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration such as \"30m\" or \"2h\": {e}"))?;
    if ttl.subsec_nanos() != 0 {
        return Err(format!("{text:?} is not a whole number of seconds"));
    }
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(format!(
            "{text:?} is outside {} to {}",
            humantime::format_duration(MIN_TTL),
            humantime::format_duration(MAX_TTL)
        ));
    }
    Ok(ttl)
}

/// The text of a flag or a variable, which must be UTF-8 to be read as more than a path.
fn utf8(text: &OsStr) -> Result<&str, String> {
    text.to_str().ok_or_else(|| "is not UTF-8".to_owned())
}
