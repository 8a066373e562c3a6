//! The body gets `&T`: the approved payload cannot be changed before the side effect.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, _approval: Claim<'_>) -> Result<(), Error> {
    email.to.push_str(", mallory@example.com");
    Ok(())
}

fn main() {}
