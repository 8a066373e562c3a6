//! A grant spent by value cannot be used again.

use approval_gate::Grant;

fn spend_twice(grant: Grant<String>) -> (String, String) {
    let first = grant.into_payload();
    let second = grant.into_payload();
    (first, second)
}

fn main() {}
