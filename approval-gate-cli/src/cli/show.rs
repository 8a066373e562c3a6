//! `show`: one request in full, and for a request an allowance approved, that allowance
//! with what it has left.

use approval_gate::{Gate, RequestId};

use crate::term::Exit;
use crate::term::output::{self, Style};
use crate::term::render;

pub(crate) fn show(gate: &Gate, id: RequestId, json: bool) -> anyhow::Result<Exit> {
    let report = gate.status(id)?;
    // Read after the request, so what it has left counts this request's use if it was spent.
    let allowance = report
        .request()
        .allowance()
        .map(|allowance| (allowance, gate.allowance(allowance)));
    let text = if json {
        let mut body = serde_json::to_value(&report)?;
        if let (Some((_, read)), Some(fields)) = (&allowance, body.as_object_mut()) {
            let shown = match read {
                Ok(read) => read.to_json(),
                Err(error) => serde_json::json!({
                    "error": error.to_string(),
                    "code": error.code().as_str(),
                }),
            };
            fields.insert("allowanceReport".to_owned(), shown);
        }
        render::json(&body)?
    } else {
        let line = allowance
            .as_ref()
            .map(|(id, read)| render::allowance::approved_by(*id, read));
        render::details(
            &report,
            gate.now(),
            Style::detect(),
            gate.capabilities().filer,
            line.as_deref(),
        )
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}
