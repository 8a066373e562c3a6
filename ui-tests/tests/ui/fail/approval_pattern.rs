//! The grant is bound under the approval parameter's name: it must be a plain name, not `mut`.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn wildcard(#[payload] email: Email, _: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

#[requires_approval(operation = "smtp.send")]
fn mutable(#[payload] email: Email, mut approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
