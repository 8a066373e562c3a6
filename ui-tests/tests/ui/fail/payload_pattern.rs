//! The body sees the approved value, frozen, under the parameter's name: it must be a plain name and cannot be `mut`.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn destructured(#[payload] Email { to }: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

#[requires_approval(operation = "smtp.send")]
fn mutable(#[payload] mut email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
