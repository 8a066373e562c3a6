//! The approval is bound to one payload value, not a C argument list.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, approval: Claim<'_>, rest: ...) -> Result<(), Error> {
    Ok(())
}

fn main() {}
