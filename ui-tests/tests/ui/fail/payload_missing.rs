//! Without a `#[payload]`, nothing ties the approval to the value that is acted on.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
