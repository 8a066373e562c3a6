//! A grant is not `Serialize`: it cannot leave the process as data.

use approval_gate::Grant;

fn export(grant: &Grant<String>) -> String {
    serde_json::to_string(grant).unwrap()
}

fn main() {}
