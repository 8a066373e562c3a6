//! An approval is consumed at run time: a `const fn` cannot wait for one.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
const fn send(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
