//! An approval is bound to one value; the second marker is refused.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(
    #[payload] email: Email,
    #[payload] copy: Email,
    approval: Claim<'_>,
) -> Result<(), Error> {
    Ok(())
}

fn main() {}
