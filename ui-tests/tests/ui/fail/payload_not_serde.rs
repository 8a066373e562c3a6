//! The approval is bound to the payload's canonical JSON: the type must be `Serialize + DeserializeOwned`.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

struct Plain {
    to: String,
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload] email: Plain, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
