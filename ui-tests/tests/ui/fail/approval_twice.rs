//! A guarded function consumes one approval; the second is refused.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(
    #[payload] email: Email,
    approval: Claim<'_>,
    backup: Claim<'_>,
) -> Result<(), Error> {
    Ok(())
}

fn main() {}
