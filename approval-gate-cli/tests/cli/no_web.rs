//! A build without the `web` feature (`--no-default-features`): the web page's commands are
//! not there at all, and `watch` has no `--public-url`.

use std::process::{Command, Stdio};

use crate::support::BIN;

#[test]
fn a_build_without_the_web_page_has_no_serve_passkey_or_public_url() {
    for args in [
        &["serve"][..],
        &["passkey", "enroll", "alice"],
        &["watch", "--public-url", "https://approvals.example.com"],
    ] {
        let output = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("the CLI runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("unrecognized subcommand") || stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
    }
}
