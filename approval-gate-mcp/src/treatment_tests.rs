//! How the agent is advised on each library error code: pinned in
//! `approval_gate_tests::treatment` (one table for every front end), checked here.

use approval_gate_tests::treatment::{
    PINNED, assert_matches_the_table_without_a_wildcard, code, sample,
};

#[test]
fn the_agent_gets_the_advice_it_did_for_every_code() {
    for &(name, .., advice) in PINNED {
        let error = sample(code(name));
        assert_eq!(crate::mcp::advice(&error), advice, "{name}");
    }
}

/// The advice is one exhaustive match on the class or family, without a wildcard.
#[test]
fn the_advice_matches_the_table_without_a_wildcard() {
    assert_matches_the_table_without_a_wildcard(
        "mcp/answer.rs",
        include_str!("mcp/answer.rs"),
        "pub(crate) fn advice(",
    );
}
