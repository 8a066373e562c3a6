//! `approval-gate passkey enroll`: a one-time link, a checked registration, and the line the
//! operator adds to the approvers file.

use std::io::Read as _;
use std::process::Child;

use approval_gate_tests::http::Client;
use approval_gate_tests::webauthn::{AT, SoftPasskey, UP, UV};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::json;

use crate::account::AgentClient;
use crate::server::{cli, enroll_link_and_code};

/// A running enrollment and its link.
struct Enrolling {
    child: Child,
    link: String,
    origin: String,
    /// The code the terminal shows beside the link.
    code: String,
}

fn start(principal: &str, timeout: &str) -> Enrolling {
    let (child, link, code) = enroll_link_and_code(principal, &["--timeout", timeout]);
    let origin = link[..link.find("/enroll/").unwrap()].to_owned();
    Enrolling {
        child,
        link,
        origin,
        code: code.unwrap_or_default(),
    }
}

impl Enrolling {
    fn path(&self) -> String {
        self.link[self.origin.len()..].to_owned()
    }

    /// The options the page gets with the terminal's code, and the challenge in them.
    fn options(&self, browser: &mut Client) -> (serde_json::Value, Vec<u8>) {
        let code = json!({ "code": self.code });
        let options = browser.post_json(&format!("{}/options", self.path()), &code, "");
        assert_eq!(options.status, 200, "{}", options.body);
        let json = options.json();
        let challenge = B64.decode(json["challenge"].as_str().unwrap()).unwrap();
        (json, challenge)
    }

    /// A registration as the page posts it: with the code typed.
    fn coded(&self, mut registration: serde_json::Value) -> serde_json::Value {
        registration["code"] = json!(self.code);
        registration
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
    let wrong = enrolling.coded(alice.registration(&challenge, "http://localhost:1", UP | UV | AT));
    let refused = browser.post_json(&enrolling.path(), &wrong, "");
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("origin"), "{}", refused.body);
    let unverified = enrolling.coded(alice.registration(&challenge, &enrolling.origin, UP | AT));
    let refused = browser.post_json(&enrolling.path(), &unverified, "");
    assert!(refused.body.contains("not verified"), "{}", refused.body);
    let other_challenge =
        enrolling.coded(alice.registration(&[0; 32], &enrolling.origin, UP | UV | AT));
    let refused = browser.post_json(&enrolling.path(), &other_challenge, "");
    assert!(refused.body.contains("challenge"), "{}", refused.body);

    let good = enrolling.coded(alice.registration(&challenge, &enrolling.origin, UP | UV | AT));
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

/// The agent that got the link (and only the link: from the operator's chat, a history, a
/// squatted address before `enroll` held both) races the approver and enrolls its own
/// passkey, from another local account (`nobody`: see [`crate::account`]). Without the code
/// the terminal shows, which the human types on the page, it gets neither the options nor a
/// registration through, and the line printed is the human's.
#[test]
fn the_link_alone_enrolls_nothing_without_the_code_the_terminal_shows() {
    let (child, link, code) = enroll_link_and_code("alice@example.com", &["--timeout", "2m"]);
    let origin = link[..link.find("/enroll/").unwrap()].to_owned();
    let enrolling = Enrolling {
        child,
        link,
        origin,
        code: String::new(),
    };
    let mut agent = AgentClient::new(Client::new(&enrolling.origin));
    let options = agent.post_json(&format!("{}/options", enrolling.path()), &json!({}), "");
    let mallory = SoftPasskey::new(9, "alice@example.com", "localhost");
    if options.status == 200 {
        // Today's command: the link alone is enough. The agent's key becomes alice's line.
        let challenge = B64
            .decode(options.json()["challenge"].as_str().unwrap())
            .unwrap();
        let forged = mallory.registration(&challenge, &enrolling.origin, UP | UV | AT);
        let taken = agent.post_json(&enrolling.path(), &forged, "");
        let (_, stdout) = enrolling.finish();
        panic!(
            "the link alone enrolled the agent's passkey ({}): {stdout}",
            taken.status
        );
    }
    assert_eq!(options.status, 403, "{}", options.body);
    assert!(options.body.contains("code"), "{}", options.body);
    let guessed = agent.post_json(
        &format!("{}/options", enrolling.path()),
        &json!({ "code": "AAAA-AAAA" }),
        "",
    );
    assert_eq!(guessed.status, 403, "{}", guessed.body);
    // The human, with the code from the terminal (typed loosely), enrolls their own passkey.
    let code = code.expect("the terminal shows a code");
    let typed = code.to_lowercase().replace('-', " ");
    let mut browser = Client::new(&enrolling.origin);
    let options = browser.post_json(
        &format!("{}/options", enrolling.path()),
        &json!({ "code": typed }),
        "",
    );
    assert_eq!(options.status, 200, "{}", options.body);
    let challenge = B64
        .decode(options.json()["challenge"].as_str().unwrap())
        .unwrap();
    // A registration without the code is refused, even over the right challenge.
    let mut forged = mallory.registration(&challenge, &enrolling.origin, UP | UV | AT);
    let refused = agent.post_json(&enrolling.path(), &forged, "");
    assert_eq!(refused.status, 403, "{}", refused.body);
    forged["code"] = json!("AAAA-AAAA");
    let refused = agent.post_json(&enrolling.path(), &forged, "");
    assert_eq!(refused.status, 403, "{}", refused.body);
    let alice = SoftPasskey::new(3, "alice@example.com", "localhost");
    let mut good = alice.registration(&challenge, &enrolling.origin, UP | UV | AT);
    good["code"] = json!(code);
    let enrolled = browser.post_json(&enrolling.path(), &good, "");
    assert_eq!(enrolled.status, 200, "{}", enrolled.body);
    let (status, stdout) = enrolling.finish();
    assert_eq!(status, 0, "{stdout}");
    assert_eq!(
        stdout.trim(),
        alice.allowed_signers_line("http://localhost:8470")
    );
}

/// The agent, from another local account, guesses the code: five wrong ones close the link,
/// and the command prints no line.
#[test]
fn five_wrong_codes_close_the_link() {
    let enrolling = start("alice@example.com", "2m");
    let mut agent = AgentClient::new(Client::new(&enrolling.origin));
    let path = format!("{}/options", enrolling.path());
    for _ in 0..5 {
        let wrong = agent.post_json(&path, &json!({ "code": "AAAA-AAAA" }), "");
        assert_eq!(wrong.status, 403, "{}", wrong.body);
    }
    assert_eq!(agent.get(&enrolling.path()).status, 404);
    // The link stays closed until the timeout; the command is ended before it.
    let mut enrolling = enrolling;
    enrolling.child.kill().unwrap();
    let (_, stdout) = enrolling.finish();
    assert!(stdout.is_empty(), "a line for a closed link: {stdout}");
}
