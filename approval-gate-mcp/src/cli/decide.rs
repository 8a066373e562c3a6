//! `deny` and `revoke`: saying no needs no terminal and no confirmation.

use approval_gate::{Decision, Gate, RequestId, StatusReport, os_user};

use super::Exit;
use super::output;
use crate::display::escape_truncated;

pub(crate) fn deny(gate: &Gate, id: RequestId, reason: &str) -> anyhow::Result<Exit> {
    let report = gate.deny(id, &decision(reason))?;
    done("denied", &report)
}

pub(crate) fn revoke(gate: &Gate, id: RequestId, reason: &str) -> anyhow::Result<Exit> {
    let report = gate.revoke(id, &decision(reason))?;
    done("revoked", &report)
}

/// A decision by the OS user running the CLI: the human at this terminal.
pub(crate) fn decision(reason: &str) -> Decision {
    Decision::by(os_user()).reason(reason)
}

fn done(what: &str, report: &StatusReport) -> anyhow::Result<Exit> {
    let request = report.request();
    let room = output::width().saturating_sub(what.len() + 16);
    output::stdout(&format!(
        "{what} {}: {}\n",
        request.id(),
        escape_truncated(request.action(), room.max(24))
    ))?;
    Ok(Exit::Done)
}
