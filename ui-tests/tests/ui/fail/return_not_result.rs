//! A refusal has to be returned as an error: the return type must be a `Result`.

use approval_gate::{Claim, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, approval: Claim<'_>) -> Option<u32> {
    None
}

fn main() {}
