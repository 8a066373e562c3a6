//! The arguments of `allow`, and the parsers of its constraints and bounds: each refuses a bad
//! value with what is wrong before anything is opened, signed or written.

// Doc comments here are `--help` text, not rustdoc: backticks would be printed as they are.
#![allow(clippy::doc_markdown)]

use std::path::PathBuf;
use std::time::Duration;

use approval_gate::Timestamp;
use approval_gate::allowance::{MAX_WINDOW, Test};
use approval_gate::limits::MAX_SAFE_INTEGER;
use clap::{Args, ValueHint};
use serde_json::Value;

pub(super) const ALLOW_HELP: &str = "\
allow makes an allowance: instead of approving each request, you sign once that requests for
OPERATION whose payload meets every constraint are approved as they are filed, within the
bounds (at least one of --uses, --budget, --rate) and the window (from --from, default now,
to --until, default 24h, at most 7 days after it is made). See docs/allowances.md.

Constraints, each on the value at a JSON Pointer (RFC 6901) of the payload; POINTER=VALUE is
split at the first '=':
  --is /to=alice@example.com      is one of the values given (repeat it for a list: every
                                  --is of one pointer makes one list)
  --matches '/to=*@example.com'   a string matching the glob (* any run, ? one character;
                                  neither stands for white space, a comma, a semicolon or
                                  an angle bracket)
  --at-most /amount=5000          an exact integer at most that
  --at-least /amount=1            an exact integer at least that
Integers and strings: a value of --at-most, --at-least or --budget must be an exact integer.
A value of --is is a string, even one that looks like a number (--is /code=042 is the
string \"042\"); write --is /amount:=5000 for the exact integer 5000. A value that is missing,
of the other type, or not an exact integer never meets a constraint.

Bounds: --uses N (at most N requests), --budget /amount=10000 (the sum of the exact integer
at /amount over every use stays at most 10000), --rate 5/1h (at most 5 uses in any hour),
--until 24h or an RFC 3339 time (at most 7 days from now), --from likewise (default now).
--agent LOGIN limits it to requests filed by that login (the PostgreSQL session user, or the
OS user on a directory store).

allow, like approve, refuses (exit 1, nothing written) unless stdin and stdout are both a
terminal, so that no agent can run it unattended. It needs the approvers file (--approvers).
It shows the allowance in words (agent-supplied text escaped as everywhere) and the quorum
the operation needs, and asks you to type an 8-character confirmation code drawn for this
prompt; only then does it sign the allowance statement with `ssh-keygen -Y sign -n
approval-gate` and --key (or APPROVAL_GATE_SIGNING_KEY), as approve signs an approval. Your
principal is the one the approvers file lists for the key, unless --as says otherwise.

An allowance for an operation (or a pattern reaching operations) whose quorum is more than
one approver needs that many approvers' signatures: your signature proposes it, and it
approves nothing until the others sign it, each at their own terminal with
`approval-gate sign-allowance ID` (or on the page's allowances list). An allowance is never changed: to change one, revoke it (revoke-allowance) and make another.";

/// `approval-gate allow ...`.
#[derive(Debug, Args)]
pub(crate) struct AllowArgs {
    /// The operation allowed: an exact name (mail.send) or a pattern (payments.*).
    #[arg(value_name = "OPERATION")]
    pub(crate) operation: String,
    /// Why you allow it (optional; signed and recorded with the allowance).
    pub(crate) reason: Vec<String>,
    /// The value at POINTER is VALUE (a string; POINTER:=N for an exact integer); repeat for
    /// a list of values.
    #[arg(long = "is", value_name = "POINTER=VALUE", value_parser = parse_is)]
    pub(crate) is: Vec<(String, Value)>,
    /// The value at POINTER is a string matching GLOB.
    #[arg(long, value_name = "POINTER=GLOB", value_parser = parse_matches)]
    pub(crate) matches: Vec<(String, Test)>,
    /// The value at POINTER is an exact integer at most N.
    #[arg(long, value_name = "POINTER=N", value_parser = parse_at_most)]
    pub(crate) at_most: Vec<(String, Test)>,
    /// The value at POINTER is an exact integer at least N.
    #[arg(long, value_name = "POINTER=N", value_parser = parse_at_least)]
    pub(crate) at_least: Vec<(String, Test)>,
    /// At most N uses.
    #[arg(long, value_name = "N")]
    pub(crate) uses: Option<u32>,
    /// The exact integers at POINTER, summed over every use, stay at most N.
    #[arg(long, value_name = "POINTER=N", value_parser = parse_budget)]
    pub(crate) budget: Option<(String, u64)>,
    /// At most COUNT uses in any PERIOD (5/1h, 100/1day).
    #[arg(long, value_name = "COUNT/PERIOD", value_parser = parse_rate)]
    pub(crate) rate: Option<(u32, Duration)>,
    /// The window ends this long from now (24h, 3days) or at this RFC 3339 time; at most 7
    /// days from now.
    #[arg(long, value_name = "WHEN", default_value = "24h", value_parser = parse_when)]
    pub(crate) until: When,
    /// The window opens this long from now or at this RFC 3339 time [default: now].
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    pub(crate) from: Option<When>,
    /// Only requests filed by this login.
    #[arg(long, value_name = "LOGIN")]
    pub(crate) agent: Option<String>,
    /// Sign with this SSH key: a private key file, or the .pub of a key in ssh-agent
    /// [default: $APPROVAL_GATE_SIGNING_KEY, else `signing_key` in the config file].
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub(crate) key: Option<PathBuf>,
    /// Sign as this principal [default: the one the approvers file lists for the key].
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub(crate) principal: Option<String>,
    /// Print the allowance made as JSON (as `allowances --json`), after the prompt.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A time given on the command line: a duration from now, or an RFC 3339 time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// This long after now.
    In(Duration),
    /// At this time.
    At(Timestamp),
}

impl When {
    /// The time it names, counted from `now`.
    pub(crate) fn at(self, now: Timestamp) -> Timestamp {
        match self {
            When::In(after) => now.saturating_add(after),
            When::At(time) => time,
        }
    }
}

/// `POINTER=VALUE`, split at the first `=`.
fn split(text: &str) -> Result<(&str, &str), String> {
    let (pointer, value) = text.split_once('=').ok_or_else(|| {
        format!("expected POINTER=VALUE, such as /to=alice@example.com, not {text:?}")
    })?;
    if !pointer.starts_with('/') {
        return Err(format!(
            "{pointer:?} is not a JSON Pointer: it starts with '/', such as /to or /items/0/price"
        ));
    }
    Ok((pointer, value))
}

/// An exact integer (within ±2^53-1), in decimal.
fn integer(pointer: &str, text: &str) -> Result<i64, String> {
    match text.parse::<i64>() {
        Ok(n) if n.unsigned_abs() <= MAX_SAFE_INTEGER => Ok(n),
        _ => Err(format!(
            "{pointer}: {text:?} is not an exact integer (decimal, at most ±{MAX_SAFE_INTEGER})"
        )),
    }
}

fn parse_is(text: &str) -> Result<(String, Value), String> {
    let (pointer, value) = split(text)?;
    match pointer.strip_suffix(':') {
        Some(pointer) => Ok((pointer.to_owned(), Value::from(integer(pointer, value)?))),
        None => Ok((pointer.to_owned(), Value::from(value))),
    }
}

fn parse_matches(text: &str) -> Result<(String, Test), String> {
    let (pointer, glob) = split(text)?;
    Ok((pointer.to_owned(), Test::Glob(glob.to_owned())))
}

fn parse_at_most(text: &str) -> Result<(String, Test), String> {
    let (pointer, n) = split(text)?;
    Ok((pointer.to_owned(), Test::AtMost(integer(pointer, n)?)))
}

fn parse_at_least(text: &str) -> Result<(String, Test), String> {
    let (pointer, n) = split(text)?;
    Ok((pointer.to_owned(), Test::AtLeast(integer(pointer, n)?)))
}

fn parse_budget(text: &str) -> Result<(String, u64), String> {
    let (pointer, n) = split(text)?;
    match u64::try_from(integer(pointer, n)?) {
        Ok(total) if total > 0 => Ok((pointer.to_owned(), total)),
        _ => Err(format!("{pointer}: a budget is a positive exact integer")),
    }
}

fn parse_rate(text: &str) -> Result<(u32, Duration), String> {
    let bad = || format!("expected COUNT/PERIOD, such as 5/1h, not {text:?}");
    let (count, period) = text.split_once('/').ok_or_else(bad)?;
    let count: u32 = count.parse().map_err(|_| bad())?;
    let period = humantime::parse_duration(period).map_err(|e| format!("{text:?}: {e}"))?;
    Ok((count, period))
}

fn parse_when(text: &str) -> Result<When, String> {
    if let Ok(after) = humantime::parse_duration(text) {
        if after > MAX_WINDOW {
            return Err(format!(
                "{text} is more than 7 days: an allowance ends at most 7 days after it is made"
            ));
        }
        return Ok(When::In(after));
    }
    Timestamp::parse_rfc3339(text)
        .map(When::At)
        .map_err(|_| format!("expected a duration (24h, 3days) or an RFC 3339 time, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_a_string_unless_written_as_an_integer() {
        assert_eq!(
            parse_is("/amount=5000").unwrap(),
            ("/amount".into(), Value::from("5000"))
        );
        assert_eq!(
            parse_is("/amount:=5000").unwrap(),
            ("/amount".into(), Value::from(5000))
        );
        assert_eq!(
            parse_is("/q=a=b").unwrap(),
            ("/q".into(), Value::from("a=b"))
        );
        assert!(
            parse_is("/amount:=5e3")
                .unwrap_err()
                .contains("not an exact integer")
        );
        assert!(parse_is("to=x").unwrap_err().contains("not a JSON Pointer"));
        assert!(
            parse_at_most("/amount=1.5")
                .unwrap_err()
                .contains("not an exact integer")
        );
        assert!(parse_at_most("/amount=9007199254740992").is_err());
        assert!(parse_budget("/amount=0").is_err());
    }

    #[test]
    fn rates_and_windows_parse_and_a_window_past_seven_days_is_refused() {
        assert_eq!(parse_rate("5/1h").unwrap(), (5, Duration::from_secs(3600)));
        assert!(parse_rate("5").is_err());
        assert_eq!(
            parse_when("24h").unwrap(),
            When::In(Duration::from_secs(86_400))
        );
        assert!(
            parse_when("8days")
                .unwrap_err()
                .contains("more than 7 days")
        );
        assert!(matches!(
            parse_when("2030-01-01T00:00:00Z").unwrap(),
            When::At(_)
        ));
        assert!(parse_when("tomorrow").is_err());
    }
}
