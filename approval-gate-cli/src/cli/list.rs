//! `list`: one page of requests, as lines for a human or JSON for scripts.

use std::fmt::Write as _;

use approval_gate::limits::MAX_PAGE;
use approval_gate::{EffectiveStatus, Gate, ListFilter, ListItem, RequestId};
use serde::Serialize;

use super::args::{ListArgs, StatusFilter};
use crate::term::Exit;
use crate::term::output::{self, Style};
use crate::term::render;

/// A page as `list --json` prints it; the same shape as [`approval_gate::Page`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageOut<'a> {
    items: &'a [ListItem],
    next_after: Option<RequestId>,
}

pub(crate) fn list(gate: &Gate, args: &ListArgs) -> anyhow::Result<Exit> {
    let (items, next_after) = page(gate, args.status, args.after, args.limit)?;
    if args.json {
        let page = PageOut {
            items: &items,
            next_after,
        };
        output::stdout(&render::json(&page)?)?;
        return Ok(Exit::Done);
    }
    let now = gate.now();
    let style = Style::detect();
    let width = output::width();
    let mut text = String::new();
    if items.is_empty() {
        text = match args.status {
            StatusFilter::All => "no requests\n".to_owned(),
            status => format!("no {} requests\n", status.name()),
        };
    } else {
        text.push_str(&render::list_header(style));
        text.push('\n');
        for item in &items {
            text.push_str(&match item {
                ListItem::Request(report) => render::list_line(report, now, style, width),
                ListItem::Unreadable(record) => render::unreadable_line(record, style, width),
            });
            text.push('\n');
            if let ListItem::Request(report) = item {
                for extra in [
                    render::list_filer(report, gate.capabilities().filer, width),
                    render::list_approvals(report, width),
                    render::list_warning(report, style, width),
                ]
                .into_iter()
                .flatten()
                {
                    text.push_str(&extra);
                    text.push('\n');
                }
            }
        }
    }
    if let Some(next) = next_after {
        let _ = writeln!(
            text,
            "more: approval-gate list {} --limit {} --after {next}",
            args.status.name(),
            args.limit
        );
    }
    output::stdout(&text)?;
    Ok(Exit::Done)
}

/// One page in listing order: records that cannot be read first, then oldest first, and for
/// `all`, pending requests before the rest.
///
/// `all` is read whole and ordered here, since the library orders by creation only; the
/// cursor is a position in that order. (A request decided between two pages moves from the
/// pending part to the rest, as with any cursor over a store that changes.)
fn page(
    gate: &Gate,
    status: StatusFilter,
    after: Option<RequestId>,
    limit: usize,
) -> Result<(Vec<ListItem>, Option<RequestId>), approval_gate::Error> {
    if status != StatusFilter::All {
        let page = gate.list(status.list_filter(), after, limit)?;
        return Ok((page.items, page.next_after));
    }
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = gate.list(ListFilter::All, cursor, MAX_PAGE)?;
        all.extend(page.items);
        match page.next_after {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    // The library's order (creation time, then id) is kept within each part.
    all.sort_by_key(|item| match item.report() {
        None => 0,
        Some(report) if report.effective_status() == EffectiveStatus::Pending => 1,
        Some(_) => 2,
    });
    let start = match after {
        Some(after) => {
            all.iter()
                .position(|item| item.id() == after)
                .ok_or(approval_gate::Error::NotFound(after))?
                + 1
        }
        None => 0,
    };
    let mut items: Vec<_> = all.into_iter().skip(start).collect();
    let more = items.len() > limit;
    items.truncate(limit);
    let next_after = if more {
        items.last().map(ListItem::id)
    } else {
        None
    };
    Ok((items, next_after))
}
