//! How requests look to a human: one-line list entries and the full view of `show` and
//! `approve`. Every agent-supplied string goes through [`crate::term::display`] here.

use std::fmt::Write as _;

use approval_gate::{
    EffectiveStatus, Filer, Request, Standing, StatusReport, Timestamp, UnreadableRecord,
};
use serde::Serialize;
use unicode_width::UnicodeWidthStr;

use super::output::Style;
use crate::term::display::{
    LookalikeWarning, escape, escape_prefix, escape_truncated, json_safe, lookalike_warning,
    payload_lookalike_warnings, payload_pretty,
};

pub(crate) mod allowance;

/// Width of the label column of the full view.
const LABEL: usize = 16;
/// Widest requester shown in a list line.
const REQUESTER: usize = 12;
/// Fewest columns left for the action in a list line, however narrow the terminal.
const MIN_ACTION: usize = 24;
/// Look-alike warnings printed in full before the rest are counted: a payload made of
/// thousands of spoofed strings must not push the request itself off the screen.
const MAX_WARNINGS: usize = 12;
/// Widest field name in a list line's warning; longer payload paths are only counted.
const LIST_FIELD: usize = 40;

/// Indented JSON for scripts, ending with a newline. Agent strings stay JSON strings, with
/// invisible and control characters as `\u` escapes so the text is safe on a terminal too.
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    Ok(format!("{}\n", json_safe(&text)))
}

/// One line of JSON, for a stream of them (`watch --json`): as [`json`], on one line.
pub(crate) fn json_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string(value)?;
    Ok(format!("{}\n", json_safe(&text)))
}

/// A span of milliseconds in its two largest units: `45s`, `3m 2s`, `2h 5m`, `3d 4h`.
pub(crate) fn duration(millis: i64) -> String {
    let secs = millis.unsigned_abs() / 1000;
    let (days, hours, mins) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (days, hours, mins) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, m) => format!("{m}m {}s", secs % 60),
        (0, h, m) => format!("{h}h {m}m"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

/// The largest unit only, for list columns: `45s`, `3m`, `2h`, `3d`.
fn duration_short(millis: i64) -> String {
    let secs = millis.unsigned_abs() / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// `in 3m 2s` or `3m 2s ago`.
pub(crate) fn relative(now: Timestamp, then: Timestamp) -> String {
    let millis = now.millis_until(then);
    if millis > 0 {
        format!("in {}", duration(millis))
    } else {
        format!("{} ago", duration(millis))
    }
}

/// Whether the request's expiry still matters: it can still be approved or consumed.
fn is_live(status: EffectiveStatus) -> bool {
    matches!(
        status,
        EffectiveStatus::Pending | EffectiveStatus::ApprovedUnconsumed
    )
}

/// The short status word of a list line (at most 8 columns).
fn short_status(status: EffectiveStatus) -> &'static str {
    match status {
        EffectiveStatus::Pending => "pending",
        EffectiveStatus::ApprovedUnconsumed => "approved",
        EffectiveStatus::ApprovedExpired => "lapsed",
        EffectiveStatus::Consumed => "consumed",
        EffectiveStatus::Denied => "denied",
        EffectiveStatus::Expired => "expired",
        EffectiveStatus::Revoked => "revoked",
    }
}

/// The heading of a listing.
pub(crate) fn list_header(style: Style) -> String {
    style.bold(&format!(
        "{:<12}  {:<8}  {:<8}  {:<REQUESTER$}  ACTION",
        "ID", "STATUS", "TIME", "BY"
    ))
}

/// One line for a listing, at most `width` columns (or the minimum action width beyond the
/// fixed columns): id, status, time left (live requests) or age, requester, action.
pub(crate) fn list_line(
    report: &StatusReport,
    now: Timestamp,
    style: Style,
    width: usize,
) -> String {
    let request = report.request();
    let status = report.effective_status();
    let time = if is_live(status) {
        format!(
            "{} left",
            duration_short(now.millis_until(request.expires_at()))
        )
    } else {
        format!(
            "{} ago",
            duration_short(request.created_at().millis_until(now))
        )
    };
    let by = request
        .requested_by()
        .map_or_else(|| "-".to_owned(), short_name);
    let fixed = 12 + 2 + 8 + 2 + 8 + 2 + REQUESTER + 2;
    let action = escape_truncated(
        request.action(),
        width.saturating_sub(fixed).max(MIN_ACTION),
    );
    let padding = REQUESTER.saturating_sub(by.width());
    format!(
        "{}  {}  {time:<8}  {by}{}  {action}",
        request.id(),
        style.status(status, &format!("{:<8}", short_status(status))),
        " ".repeat(padding),
    )
}

/// A warning line to print under a list line when the request holds look-alike letters:
/// the fields, as many as fit in `width` columns, and the command that shows them all.
pub(crate) fn list_warning(report: &StatusReport, style: Style, width: usize) -> Option<String> {
    let request = report.request();
    let warnings = lookalike_warnings(request);
    if warnings.is_empty() {
        return None;
    }
    let tail = format!(": approval-gate show {}", request.id());
    let mut line = "  warning: look-alike letters in ".to_owned();
    let mut named = 0;
    for warning in &warnings {
        let field = &warning.field;
        let separator = if named == 0 { "" } else { ", " };
        if field.width() > LIST_FIELD {
            continue;
        }
        // Room for this field, the count of those left unnamed after it, and the tail.
        let unnamed = warnings.len() - named - 1;
        let count = if unnamed > 0 {
            format!(" and {unnamed} more").len()
        } else {
            0
        };
        let needed = line.width() + separator.len() + field.width() + count + tail.len();
        if named > 0 && needed > width {
            break;
        }
        line.push_str(separator);
        line.push_str(field);
        named += 1;
    }
    if named == 0 {
        line.push_str("its fields");
    } else if named < warnings.len() {
        let _ = write!(line, " and {} more", warnings.len() - named);
    }
    line.push_str(&tail);
    Some(style.warning(&line))
}

/// Every look-alike warning for the agent-supplied text of a request: its fields in the
/// order [`details`] shows them, then the payload's strings.
pub(crate) fn lookalike_warnings(request: &Request) -> Vec<LookalikeWarning> {
    let fields = [
        ("action", Some(request.action())),
        ("reason", Some(request.reason())),
        ("requested by", request.requested_by()),
        ("operation", request.operation()),
        ("decided by", request.decided_by()),
        ("decision reason", request.decision_reason()),
    ];
    let mut warnings: Vec<_> = fields
        .into_iter()
        .filter_map(|(field, text)| lookalike_warning(field, text?))
        .collect();
    if let Some(payload) = request.payload() {
        warnings.extend(payload_lookalike_warnings(payload));
    }
    warnings
}

/// The list line of a record that cannot be read, in the same columns as [`list_line`]:
/// its id, `unreadable` across the status and time columns, and what is wrong with it.
pub(crate) fn unreadable_line(record: &UnreadableRecord, style: Style, width: usize) -> String {
    let fixed = 12 + 2 + 8 + 2 + 8 + 2 + REQUESTER + 2;
    let problem = escape_truncated(
        record.problem(),
        width.saturating_sub(fixed).max(MIN_ACTION),
    );
    format!(
        "{}  {}  {:<REQUESTER$}  {problem}",
        record.id(),
        style.warning(&format!("{:<18}", "unreadable")),
        "-",
    )
}

/// A requester cut to the list column (never inside an escape), with `…` when cut.
fn short_name(name: &str) -> String {
    let shown = escape(name);
    if shown.width() <= REQUESTER {
        return shown;
    }
    let (mut cut, _) = escape_prefix(name, REQUESTER - 1);
    cut.push('…');
    cut
}

fn field(out: &mut String, label: &str, value: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{label:<LABEL$}{value}");
}

fn optional(value: Option<&str>) -> String {
    value.map_or_else(|| "(none)".to_owned(), escape)
}

/// Who vouches for the filer a store records, as the store declares it: the database
/// authenticated its session user; the directory store knows the OS user, which any process
/// on that account may claim.
fn filer_kind(filer: Filer) -> &'static str {
    if filer.is_authenticated() {
        "database user"
    } else {
        "OS user"
    }
}

/// The filer of a request as shown, with who vouches for it, or `(not recorded)` for records
/// written before it was kept.
fn filer(request: &Request, store: Filer) -> String {
    request.filed_by().map_or_else(
        || "(not recorded)".to_owned(),
        |who| format!("{} ({})", escape(who), filer_kind(store)),
    )
}

/// The line printed under a list line on a store that authenticates its filer (PostgreSQL)
/// when the filing login is not the requester the agent claimed: the claim is the agent's
/// word, the login the database's.
pub(crate) fn list_filer(report: &StatusReport, store: Filer, width: usize) -> Option<String> {
    const LEAD: &str = "  filed by: ";
    let request = report.request();
    let who = request.filed_by()?;
    if !store.is_authenticated() || request.requested_by() == Some(who) {
        return None;
    }
    let text = format!("{who} ({}); requested by is a claim", filer_kind(store));
    let room = width.saturating_sub(LEAD.len()).max(MIN_ACTION);
    Some(format!("{LEAD}{}", escape_truncated(&text, room)))
}

/// The full view of a request: every field, escaped, the payload pretty-printed whole and
/// its digest; `store` says who vouches for its filer; `approved_by` is the line of the
/// allowance that approved it ([`allowance::approved_by`]), if one did. Ends with a newline.
pub(crate) fn details(
    report: &StatusReport,
    now: Timestamp,
    style: Style,
    store: Filer,
    approved_by: Option<&str>,
) -> String {
    let request = report.request();
    let status = report.effective_status();
    let mut out = String::new();
    field(&mut out, "request", &style.bold(request.id().as_str()));
    field(&mut out, "status", &style.status(status, status.as_str()));
    field(&mut out, "action", &escape(request.action()));
    field(&mut out, "reason", &escape(request.reason()));
    field(
        &mut out,
        "requested by",
        &format!("{} (claimed)", optional(request.requested_by())),
    );
    field(&mut out, "filed by", &filer(request, store));
    field(&mut out, "operation", &optional(request.operation()));
    let created = request.created_at();
    field(
        &mut out,
        "created",
        &format!("{created} ({})", relative(now, created)),
    );
    let expires = request.expires_at();
    field(
        &mut out,
        "expires",
        &format!("{expires} ({})", relative(now, expires)),
    );
    if let Some(decided) = request.decided_at() {
        field(
            &mut out,
            "decided",
            &format!("{decided} ({})", relative(now, decided)),
        );
        field(&mut out, "decided by", &optional(request.decided_by()));
        field(
            &mut out,
            "decision reason",
            &optional(request.decision_reason()),
        );
    }
    if let Some(approvals) = approvals(report) {
        field(&mut out, "approvals", &approvals);
    }
    if let Some(line) = approved_by {
        field(&mut out, "approved by", line);
    }
    payload(&mut out, request);
    let warnings = lookalike_warnings(request);
    for warning in warnings.iter().take(MAX_WARNINGS) {
        let _ = writeln!(out, "{}", style.warning(&format!("warning: {warning}")));
    }
    if warnings.len() > MAX_WARNINGS {
        let more = format!(
            "warning: {} more fields hold look-alike letters, escaped above",
            warnings.len() - MAX_WARNINGS
        );
        let _ = writeln!(out, "{}", style.warning(&more));
    }
    out
}

/// `1 of 2 (alice@example.com)`: the signed approvals that count, as this gate verified
/// them, against the distinct approvers the request needs, when it needs more than one or
/// holds any; then any that count for nothing, named as such (`not counted: bob@example.com
/// (untrusted key SHA256:…)`). Raw: the names are the store's, which whoever can write the
/// store can write, so callers escape it.
fn approvals_raw(report: &StatusReport) -> Option<String> {
    let approvals = report.request().approvals();
    let required = report.required_approvals();
    if required <= 1 && approvals.is_empty() {
        return None;
    }
    let mut text = format!("{} of {required}", report.counted_approvals());
    let mut counted = Vec::new();
    let mut other = Vec::new();
    for (approval, standing) in approvals.iter().zip(report.standings()) {
        let principal = approval.principal();
        match standing {
            Standing::Counts => counted.push(principal.to_owned()),
            Standing::Repeat => other.push(format!("{principal} (again)")),
            Standing::Untrusted(key) => other.push(format!("{principal} (untrusted key {key})")),
            Standing::Bad(_) => other.push(format!("{principal} (signature does not verify)")),
            Standing::Unjudged(key) => other.push(format!(
                "{principal} (key {key}: no approvers file here to say whether it is trusted)"
            )),
            _ => other.push(format!("{principal} (not counted)")),
        }
    }
    if !counted.is_empty() {
        let _ = write!(text, " ({})", counted.join(", "));
    }
    if !other.is_empty() {
        let _ = write!(text, "; not counted: {}", other.join(", "));
    }
    Some(text)
}

/// [`approvals_raw`], escaped.
pub(crate) fn approvals(report: &StatusReport) -> Option<String> {
    approvals_raw(report).map(|text| escape(&text))
}

/// The line printed under a list line when the request counts signed approvals, at most
/// `width` columns (or the minimum action width).
pub(crate) fn list_approvals(report: &StatusReport, width: usize) -> Option<String> {
    const LEAD: &str = "  approvals: ";
    let text = approvals_raw(report)?;
    let room = width.saturating_sub(LEAD.len()).max(MIN_ACTION);
    Some(format!("{LEAD}{}", escape_truncated(&text, room)))
}

fn payload(out: &mut String, request: &Request) {
    let (Some(payload), Some(digest)) = (request.payload(), request.payload_digest()) else {
        field(out, "payload", "(none)");
        return;
    };
    field(out, "payload digest", &format!("blake3:{digest}"));
    field(
        out,
        "payload",
        &format!(
            "{} bytes of canonical JSON, shown whole; invisible and look-alike characters as \\u escapes:",
            payload.as_bytes().len()
        ),
    );
    for line in payload_pretty(payload).lines() {
        let _ = writeln!(out, "  {line}");
    }
}
#[cfg(test)]
mod tests;
