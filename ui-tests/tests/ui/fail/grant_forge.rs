//! A grant cannot be built by hand: its fields and constructor are private.

use approval_gate::Grant;

fn forge() -> Grant<String> {
    Grant {
        payload: "send everything".to_owned(),
    }
}

fn forge_with_new() -> Grant<String> {
    Grant::new()
}

fn main() {}
