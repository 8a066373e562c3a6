//! `archive`: move finished, old requests out of the live store.

use std::fmt::Write as _;

use approval_gate::limits::MIN_ARCHIVE_AGE_DAYS;
use approval_gate::{ArchiveReport, Gate};
use serde_json::json;

use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output;
use crate::term::render;

pub(crate) fn archive(
    gate: &Gate,
    older_than_days: u32,
    dry_run: bool,
    json: bool,
) -> anyhow::Result<Exit> {
    if older_than_days < MIN_ARCHIVE_AGE_DAYS {
        output::stderr_line(&format!(
            "approval-gate: note: only requests created and expired at least \
             {MIN_ARCHIVE_AGE_DAYS} days ago are archived"
        ));
    }
    let report = if dry_run {
        gate.plan_archive(older_than_days)?
    } else {
        gate.archive(older_than_days)?
    };
    let text = if json {
        render::json(&json!({
            "dryRun": dry_run,
            "archived": report.archived,
            "skipped": report.skipped,
        }))?
    } else {
        as_text(&report, dry_run)
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}

fn as_text(report: &ArchiveReport, dry_run: bool) -> String {
    let ids = &report.archived;
    let verb = if dry_run { "would archive" } else { "archived" };
    let mut text = String::new();
    for id in ids {
        let _ = writeln!(text, "{verb} {id}");
    }
    for record in &report.skipped {
        let _ = writeln!(
            text,
            "skipped {}: unreadable ({}); see `approval-gate doctor`",
            record.id(),
            escape(record.problem())
        );
    }
    let noun = if ids.len() == 1 {
        "request"
    } else {
        "requests"
    };
    let _ = write!(text, "{verb} {} {noun}", ids.len());
    if !report.skipped.is_empty() {
        let _ = write!(text, ", skipped {} unreadable", report.skipped.len());
    }
    text.push_str(if dry_run {
        " (dry run: nothing changed)\n"
    } else {
        "\n"
    });
    text
}
