//! Compile-time guarantees of `#[requires_approval]` and of the grant: every misuse fails to
//! build with a message pointing at the tokens at fault (`ui/fail/*.rs`, with the reviewed
//! compiler output next to each), and every supported function shape builds (`ui/pass/*.rs`).
//!
//! After changing a message, regenerate the `.stderr` files with `TRYBUILD=overwrite cargo
//! test -p approval-gate-ui-tests --test ui` and review the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
