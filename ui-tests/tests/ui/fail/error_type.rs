//! The error type must hold the gate's refusal (`From<approval_gate::Error>`) and be `Display` (it is written to the audit log).

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[derive(Debug)]
struct NoFrom;

impl std::fmt::Display for NoFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no from")
    }
}

#[derive(Debug)]
struct NoDisplay;

impl From<Error> for NoDisplay {
    fn from(_: Error) -> Self {
        NoDisplay
    }
}

#[requires_approval(operation = "smtp.send")]
fn without_from(#[payload] email: Email, approval: Claim<'_>) -> Result<(), NoFrom> {
    Ok(())
}

#[requires_approval(operation = "smtp.send")]
fn without_display(#[payload] email: Email, approval: Claim<'_>) -> Result<(), NoDisplay> {
    Ok(())
}

mod text {
    pub type Result<T> = std::result::Result<T, String>;
}

#[requires_approval(operation = "smtp.send")]
fn alias_without_from(#[payload] email: Email, approval: Claim<'_>) -> text::Result<()> {
    Ok(())
}

mod maybe {
    pub type Result<T> = Option<T>;
}

#[requires_approval(operation = "smtp.send")]
fn alias_not_a_result(#[payload] email: Email, approval: Claim<'_>) -> maybe::Result<()> {
    Some(())
}

fn main() {}
