//! Only a function has a body to guard.

use approval_gate::requires_approval;

#[requires_approval(operation = "smtp.send")]
struct Mailer;

fn main() {
    // The item is kept: code that uses it keeps type-checking.
    let _ = Mailer;
}
