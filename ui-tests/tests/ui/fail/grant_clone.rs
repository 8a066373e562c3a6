//! A grant is not `Clone`: one approval, one proof.

use approval_gate::Grant;

fn copy(grant: &Grant<String>) -> Grant<String> {
    grant.clone()
}

fn main() {}
