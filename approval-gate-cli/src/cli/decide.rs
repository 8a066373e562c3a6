//! `deny` and `revoke`: saying no needs no terminal and no confirmation.

use approval_gate::{Decision, Gate, RequestId, StatusReport, os_user};

use crate::term::Exit;
use crate::term::display::escape_truncated;
use crate::term::output;
use crate::term::render;

pub(crate) fn deny(gate: &Gate, id: RequestId, reason: &str, json: bool) -> anyhow::Result<Exit> {
    let report = gate.deny(id, &decision(reason))?;
    done("denied", &report, json)
}

pub(crate) fn revoke(gate: &Gate, id: RequestId, reason: &str, json: bool) -> anyhow::Result<Exit> {
    let report = gate.revoke(id, &decision(reason))?;
    done("revoked", &report, json)
}

/// A decision by the OS user running the CLI: the human at this terminal.
pub(crate) fn decision(reason: &str) -> Decision {
    Decision::by(os_user()).reason(reason)
}

fn done(what: &str, report: &StatusReport, json: bool) -> anyhow::Result<Exit> {
    if json {
        output::stdout(&render::json(report)?)?;
        return Ok(Exit::Done);
    }
    let request = report.request();
    let room = output::width().saturating_sub(what.len() + 16);
    output::stdout(&format!(
        "{what} {}: {}\n",
        request.id(),
        escape_truncated(request.action(), room.max(24))
    ))?;
    Ok(Exit::Done)
}
