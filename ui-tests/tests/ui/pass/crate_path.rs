//! `crate = path` names approval-gate where a crate re-exports it, and the expansion does
//! not depend on names the user's crate defines.

mod platform {
    pub use approval_gate as gate;
}

// Local items that a careless expansion would pick up instead of the real ones.
#[allow(dead_code)]
mod core {}
#[allow(dead_code)]
struct Grant;

use platform::gate::{Claim, Error, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Deploy {
    pub service: String,
}

#[requires_approval(crate = crate::platform::gate, operation = "deploy.prod_v2")]
pub fn deploy(#[payload] deploy: Deploy, approval: Claim<'_>) -> Result<String, Error> {
    // The expansion's own bindings are invisible here, so these are new names.
    let __approval_gate_payload = deploy.service.clone();
    let __approval_gate_execution = approval.id();
    Ok(format!(
        "{__approval_gate_payload} {__approval_gate_execution}"
    ))
}

fn main() {}
