//! Sync and async free functions, with their visibility, docs and attributes.

use approval_gate::{Claim, Error, Grant, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
pub struct Transfer {
    pub iban: String,
    pub cents: u64,
}

fn wire(grant: &Grant<Transfer>) -> Result<u64, Error> {
    grant.assert_active()?;
    Ok(grant.payload().cents)
}

/// Pays a transfer once a human approved it.
#[requires_approval(operation = "bank.transfer")]
#[inline]
pub fn pay(#[payload] transfer: Transfer, approval: Claim<'_>) -> Result<u64, Error> {
    #![allow(clippy::needless_return)]
    if transfer.cents == 0 {
        return Ok(0);
    }
    let paid = wire(approval)?;
    return Ok(paid);
}

/// The async form; the future is `Send` when its captures are.
#[requires_approval(operation = "bank.transfer")]
pub(crate) async fn pay_later(
    #[payload] transfer: Transfer,
    approval: Claim<'_>,
) -> Result<u64, Error> {
    std::future::ready(()).await;
    approval.assert_active()?;
    Ok(transfer.cents)
}

/// The approval's name is the grant's; a leading `_` says the body does not need it.
#[requires_approval(operation = "bank.transfer")]
fn pay_quietly(#[payload] transfer: Transfer, _approval: Claim<'_>) -> Result<u64, Error> {
    Ok(transfer.cents)
}

fn assert_send<T: Send>(_: &T) {}

#[allow(dead_code)]
fn futures_are_send(gate: &approval_gate::Gate, id: approval_gate::RequestId) {
    let transfer = Transfer {
        iban: "DE00".into(),
        cents: 1,
    };
    assert_send(&pay_later(transfer, Claim::new(gate, id, "pay")));
}

fn main() {
    let _ = (pay, pay_quietly);
}
