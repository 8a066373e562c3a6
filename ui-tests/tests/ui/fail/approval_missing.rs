//! Without a `Claim`, there is nothing to consume.

use approval_gate::{Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email) -> Result<(), Error> {
    Ok(())
}

fn main() {}
