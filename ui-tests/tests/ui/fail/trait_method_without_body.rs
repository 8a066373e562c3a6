//! A declaration has no body to guard; the implementation does.

use approval_gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

trait Mailer {
    #[requires_approval(operation = "smtp.send")]
    fn send(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<(), Error>;
}

struct Smtp;

// The declaration is kept: implementations keep type-checking against it.
impl Mailer for Smtp {
    fn send(&self, _email: Email, _approval: Claim<'_>) -> Result<(), Error> {
        Ok(())
    }
}

fn main() {}
