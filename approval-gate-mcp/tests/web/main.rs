//! Browser tests: headless Chromium driven over the Chrome DevTools Protocol (`cdp`), with
//! virtual WebAuthn authenticators for approvers' passkeys.
//!
//! Without Chromium these tests skip, saying so, except in CI, where they fail (`.ci/run`
//! installs Debian's `chromium`). `APPROVAL_GATE_TEST_CHROMIUM` names another binary.

mod cdp;
mod loopback;
mod processes;
mod smoke;
