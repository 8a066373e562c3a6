//! A guarded function consumes one approval; the second is refused.

use approval_gate::{Approval, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(
    #[payload] email: Email,
    approval: Approval<'_>,
    backup: Approval<'_>,
) -> Result<(), Error> {
    Ok(())
}

fn main() {}
