//! `list`: one page of requests, as lines for a human or JSON for scripts.

use std::fmt::Write as _;

use approval_gate::{Gate, ListFilter, ListItem, RequestId};
use serde::Serialize;

use super::args::ListArgs;
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
    // The library's order: unreadable records, then pending requests, then the rest.
    let page = gate.list(args.status.0, args.after, args.limit)?;
    let (items, next_after) = (page.items, page.next_after);
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
        text = match args.status.0 {
            ListFilter::All => "no requests\n".to_owned(),
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
            args.status.0.name(),
            args.limit
        );
    }
    output::stdout(&text)?;
    Ok(Exit::Done)
}
