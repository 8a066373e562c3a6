//! Nothing but the `ui` test (`tests/ui.rs`): the compile-time guarantees of
//! `#[requires_approval]` and of the grant, each misuse a case that must fail to build with
//! its reviewed message, each supported shape a case that must build.
