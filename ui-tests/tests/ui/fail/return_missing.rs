//! A refusal has to be returned: a function without a return type cannot report one.

use approval_gate::{Claim, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Email, approval: Claim<'_>) {}

fn main() {}
