//! `show`: one request in full.

use approval_gate::{Gate, RequestId};

use crate::term::Exit;
use crate::term::output::{self, Style};
use crate::term::render;

pub(crate) fn show(gate: &Gate, id: RequestId, json: bool) -> anyhow::Result<Exit> {
    let report = gate.status(id)?;
    let text = if json {
        render::json(&report)?
    } else {
        render::details(
            &report,
            gate.now(),
            Style::detect(),
            gate.capabilities().filer,
        )
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}
