//! The caller's value is moved away under a name the body cannot see.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    let callers: Email = __approval_gate_payload;
    Ok(())
}

fn main() {}
