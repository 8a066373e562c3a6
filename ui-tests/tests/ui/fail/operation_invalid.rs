//! An operation the gate would refuse at run time fails the build instead.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp send")]
fn spaced(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

#[requires_approval(
    operation = "smtp.send.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
)]
fn too_long(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

#[requires_approval(operation = smtp.send)]
fn not_a_string(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
