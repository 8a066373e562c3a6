//! Without `operation`, nothing says what the approval is for.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval]
fn send(#[payload] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {
    // The function is still emitted with its signature: callers keep type-checking.
    let _: fn(Email, Claim<'_>) -> Result<(), Error> = send;
}
