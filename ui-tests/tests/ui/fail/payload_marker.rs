//! The marker takes no arguments and cannot be on `self`.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

struct Mailer;

impl Mailer {
    #[requires_approval(operation = "smtp.send")]
    fn send(#[payload] self, email: Email, approval: Claim<'_>) -> Result<(), Error> {
        Ok(())
    }
}

#[requires_approval(operation = "smtp.send")]
fn send(#[payload(strict)] email: Email, approval: Claim<'_>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
