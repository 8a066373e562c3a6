//! `approval-gate serve` and `approval-gate passkey enroll` end to end: the real binaries on
//! loopback, driven by hand-made HTTP requests (every attack is one), and by headless Chromium
//! with its virtual authenticator for what a person does.

//!
//! Without Chromium the browser tests skip, saying so, except in CI, where they fail
//! (`.ci/run` installs Debian's `chromium`). `APPROVAL_GATE_TEST_CHROMIUM` names another
//! binary.

mod account;
mod allowances;
mod attacks;
mod binding;
mod browser;
mod browser_allow;
mod cdp;
mod connections;
mod cosign;
mod enroll;
mod loopback;
mod origin;
mod postgres;
mod processes;
mod same_host;
mod server;
mod sessions;
mod smoke;
mod tabs;
mod tls;
// The smtp example's runner and its loopback server, shared with the tests of the example.
#[allow(dead_code)]
#[path = "../it/smtp_run.rs"]
mod smtp_run;
#[allow(dead_code)]
#[path = "../../examples/support/smtp_sink.rs"]
mod smtp_sink;
