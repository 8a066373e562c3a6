//! The guarded boundary stays safe to call.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
unsafe fn send(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
