//! `approval-gate passkey enroll`: a one-time link, a checked registration, and the line the
//! operator adds to the approvers file.

use std::io::Read as _;
use std::process::Child;

use approval_gate_tests::http::Client;
use approval_gate_tests::webauthn::{AT, SoftPasskey, UP, UV};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::json;

use crate::server::{cli, enroll_link};

/// A running enrollment and its link.
struct Enrolling {
    child: Child,
    link: String,
    origin: String,
}

fn start(principal: &str, timeout: &str) -> Enrolling {
    let (child, link) = enroll_link(principal, &["--timeout", timeout]);
    let origin = link[..link.find("/enroll/").unwrap()].to_owned();
    Enrolling {
        child,
        link,
        origin,
    }
}

impl Enrolling {
    fn path(&self) -> String {
        self.link[self.origin.len()..].to_owned()
    }

    /// The options the page gets, and the challenge in them.
    fn options(&self, browser: &mut Client) -> (serde_json::Value, Vec<u8>) {
        let options = browser.post_json(&format!("{}/options", self.path()), &json!({}), "");
        assert_eq!(options.status, 200, "{}", options.body);
        let json = options.json();
        let challenge = B64.decode(json["challenge"].as_str().unwrap()).unwrap();
        (json, challenge)
    }

    fn finish(mut self) -> (i32, String) {
        let status = self.child.wait().unwrap();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        (status.code().unwrap_or(-1), stdout)
    }
}

#[test]
fn the_link_registers_one_passkey_and_prints_the_line_that_trusts_it() {
    let enrolling = start("alice@example.com", "2m");
    let mut browser = Client::new(&enrolling.origin);
    let page = browser.get(&enrolling.path());
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("alice@example.com"));
    let (options, challenge) = enrolling.options(&mut browser);
    assert_eq!(options["rpId"], "localhost");
    assert_eq!(options["userId"], B64.encode("alice@example.com"));

    let alice = SoftPasskey::new(3, "alice@example.com", "localhost");
    // A registration made for another origin, or without user verification, is refused and
    // the link stays open.
    let wrong = alice.registration(&challenge, "http://localhost:1", UP | UV | AT);
    let refused = browser.post_json(&enrolling.path(), &wrong, "");
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("origin"), "{}", refused.body);
    let unverified = alice.registration(&challenge, &enrolling.origin, UP | AT);
    let refused = browser.post_json(&enrolling.path(), &unverified, "");
    assert!(refused.body.contains("not verified"), "{}", refused.body);
    let other_challenge = alice.registration(&[0; 32], &enrolling.origin, UP | UV | AT);
    let refused = browser.post_json(&enrolling.path(), &other_challenge, "");
    assert!(refused.body.contains("challenge"), "{}", refused.body);

    let good = alice.registration(&challenge, &enrolling.origin, UP | UV | AT);
    let enrolled = browser.post_json(&enrolling.path(), &good, "");
    assert_eq!(enrolled.status, 200, "{}", enrolled.body);
    let (code, stdout) = enrolling.finish();
    assert_eq!(code, 0, "{stdout}");
    // For approving on serve's default page, which the line names.
    assert_eq!(
        stdout.trim(),
        alice.allowed_signers_line("http://localhost:8470")
    );
    // The line is one the library reads as alice's passkey.
    let policy = approval_gate::Policy::from_allowed_signers(&stdout).unwrap();
    let now = approval_gate::Timestamp::from_unix_millis(1_800_000_000_000);
    let keys = policy.passkeys_of("alice@example.com", now);
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].1.as_deref(), Some(alice.credential_id.as_slice()));
}

#[test]
fn a_link_with_another_token_or_from_another_origin_is_refused() {
    let enrolling = start("bob@example.com", "2m");
    let mut browser = Client::new(&enrolling.origin);
    assert_eq!(browser.get("/enroll/not-the-token").status, 404);
    let forged = browser.send(
        "POST",
        &format!("{}/options", enrolling.path()),
        &[
            ("Origin", "https://evil.example"),
            ("Content-Type", "application/json"),
        ],
        Some(b"{}"),
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    let mut enrolling = enrolling;
    enrolling.child.kill().unwrap();
    enrolling.child.wait().unwrap();
}

#[test]
fn nothing_enrolled_before_the_timeout_is_a_refusal() {
    let enrolling = start("carol@example.com", "1s");
    let (code, stdout) = enrolling.finish();
    assert_eq!(code, 1);
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn a_principal_that_cannot_be_a_user_handle_is_refused() {
    let output = cli()
        .args([
            "passkey",
            "enroll",
            &"a".repeat(65),
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("1 to 64 bytes"));
    let output = cli()
        .args(["passkey", "enroll", "alice", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tls-cert"));
}
