//! `sign-allowance`: one more approver signs an allowance another proposed, at a terminal
//! only, as `allow` signs one.
//!
//! The allowance is read from the store, never from the command line, and shown in words
//! (escaped as agent text) with who signed it before; the statement signed is the one those
//! words were made from, naming this approver and the quorum it was proposed as part of. It
//! fails closed as `allow` does, and refuses before the screen an allowance that was revoked,
//! has ended, or has every signature it needs.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use approval_gate::allowance::AllowanceSignature;
use approval_gate::{Error, RequestId};

use super::allow::{confirm, kept_line, screen, signing};
use super::approve::refuse_with;
use crate::settings::Settings;
use crate::term::output::{self, Style};
use crate::term::{Exit, render};

pub(crate) fn sign(
    settings: &Settings,
    id: RequestId,
    key: Option<&PathBuf>,
    principal: Option<&String>,
    json: bool,
) -> anyhow::Result<Exit> {
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        return refuse_with(
            "not_a_terminal",
            "sign-allowance needs an interactive terminal on stdin and stdout; nothing was \
             signed (allowances and revoke-allowance work anywhere)",
        );
    }
    let gate = settings.open()?;
    let Some(policy) = gate.policy() else {
        return Err(anyhow::Error::new(Error::NoApprovers { id }).context(
            "nothing was signed: an allowance counts only under the approvers file; give \
             --approvers FILE (or set it in the config file)",
        ));
    };
    let report = gate.allowance(id)?;
    let nothing = |why: &str| -> anyhow::Result<()> {
        Err(Error::InvalidInput {
            field: "allowance",
            problem: format!("{why}: nothing was signed"),
        }
        .into())
    };
    if report.revoked {
        nothing(&format!("allowance {id} was revoked"))?;
    }
    if report.ended {
        nothing(&format!(
            "allowance {id}'s window has ended; sign a new one"
        ))?;
    }
    if report.signatures_missing == 0 {
        nothing(&format!("allowance {id} has all the signatures it needs"))?;
    }
    let (key, principal) = signing(settings, key, principal, policy, "nothing was signed")?;
    let signed = &report.allowance;
    if signed.signatures.iter().any(|s| s.principal == principal) {
        nothing(&format!("{principal} has signed allowance {id} already"))?;
    }
    let statement = signed.allowance.statement(&principal, signed.required)?;
    let now = gate.now();
    let style = Style::detect();
    let signers: Vec<&str> = signed
        .signatures
        .iter()
        .map(|s| s.principal.as_str())
        .chain([principal.as_str()])
        .collect();
    let screen = screen(&signed.allowance, &signers, signed.required, now, style);
    confirm(&statement, &screen, style, "sign", "nothing was signed")?;
    let signature = settings.signer().sign(&key, &statement)?;
    let report = gate
        .cosign_allowance(
            id,
            &AllowanceSignature {
                principal,
                signature,
            },
        )
        .map_err(|error| {
            anyhow::Error::new(error).context(format!(
                "nothing was signed: the gate did not add the signature to allowance {id} (the \
                 reason below calls it a request)"
            ))
        })?;
    if json {
        output::stdout(&render::json(&report.to_json())?)?;
    } else {
        output::stdout(&kept_line(&report, gate.now()))?;
    }
    Ok(Exit::Done)
}
