//! The guarded function uses the approval up: it takes it by value.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, approval: &Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
