//! Which allowance approved a request, and what it has left: the line of `show` and of the
//! page's request view. Strings from the allowance are escaped as agent text is.

use std::fmt::Write as _;

use approval_gate::{AllowanceReport, Error, RequestId};

use crate::term::display::escape;

/// `allowance <id> (active, mail.send): 1 used, 2 left, budget 4000 spent, 6000 left`, or
/// why the allowance cannot be shown (gone from the store, unreadable): never an error, so
/// the request is shown whatever became of its allowance. Escaped for a terminal; the page
/// HTML-escapes it on top.
pub(crate) fn approved_by(id: RequestId, report: &Result<AllowanceReport, Error>) -> String {
    let report = match report {
        Ok(report) => report,
        Err(Error::NotFound(_)) => {
            return format!("allowance {id}, which is no longer in the store");
        }
        Err(error) => {
            return format!(
                "allowance {id}, which cannot be read now: {}",
                escape(&error.to_string())
            );
        }
    };
    let state = if report.revoked {
        "revoked"
    } else if report.ended {
        "ended"
    } else {
        "active"
    };
    let mut counts = format!("{} used", report.usage.uses);
    if let Some(left) = report.uses_left() {
        let _ = write!(counts, ", {left} left");
    }
    if let Some(left) = report.budget_left() {
        let _ = write!(counts, ", budget {} spent, {left} left", report.usage.spent);
    }
    format!(
        "allowance {id} ({state}, {}): {counts}",
        escape(&report.allowance.allowance.terms().operation)
    )
}
