//! The return type may be any path ending in `Result`: `std::result::Result<T, E>`, or an
//! alias such as `io::Result<T>` or a crate's own `Result<T>`. The compiler checks that the
//! error type behind it can hold the gate's refusal.

use approval_gate::{Claim, requires_approval};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Order {
    pub sku: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ShopError {
    #[error(transparent)]
    Gate(#[from] approval_gate::Error),
    #[error("out of stock")]
    OutOfStock,
}

pub type Result<T, E = ShopError> = std::result::Result<T, E>;

mod shop {
    pub type Result<T> = std::result::Result<T, super::ShopError>;
}

#[requires_approval(operation = "shop.order")]
pub fn order(#[payload] order: Order, approval: Claim<'_>) -> Result<String> {
    approval.assert_active()?;
    if order.sku.is_empty() {
        return Err(ShopError::OutOfStock);
    }
    Ok(order.sku.clone())
}

#[requires_approval(operation = "shop.order")]
pub fn order_in_module(#[payload] order: Order, approval: Claim<'_>) -> shop::Result<()> {
    approval.assert_active()?;
    let _ = order;
    Ok(())
}

#[requires_approval(operation = "shop.order")]
pub fn order_spelled_out(
    #[payload] order: Order,
    approval: Claim<'_>,
) -> std::result::Result<(), approval_gate::Error> {
    approval.assert_active()?;
    let _ = order;
    Ok(())
}

fn main() {}
