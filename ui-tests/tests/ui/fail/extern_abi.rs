//! The body runs in a Rust closure: a foreign ABI cannot be kept.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
extern "C" fn send(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
