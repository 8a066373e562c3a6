//! Passkey approvals through a gate: recorded by the approver's gate, taken by the executor's
//! consume, and counted toward a quorum alike with SSH signatures.

use serde_json::Value;
use ssh_key::private::Ed25519Keypair;
use ssh_key::{HashAlg, LineEnding, PrivateKey};
use tempfile::TempDir;

use super::authenticator::Authenticator;
use super::challenge;
use crate::policy::{self, Policy, Standing};
use crate::request::{Binding, Decision, NewRequest, Request, SIGNATURE_NAMESPACE};
use crate::time::{ManualClock, Timestamp};
use crate::{CanonicalPayload, Error, Gate, StatusReport};

const RP: &str = "approvals.example.com";
const ACTION: &str = "wire 1200 EUR to ACME Ltd";
const PAYLOAD: &str = r#"{"amount_cents":120000,"to":"ACME Ltd"}"#;

/// An approver holding an SSH ed25519 key, signing in this process.
struct SshApprover {
    principal: &'static str,
    key: PrivateKey,
}

impl SshApprover {
    fn new(principal: &'static str, seed: u8) -> Self {
        Self {
            principal,
            key: PrivateKey::from(Ed25519Keypair::from_seed(&[seed; 32])),
        }
    }

    fn line(&self) -> String {
        format!(
            "{} {}",
            self.principal,
            self.key.public_key().to_openssh().unwrap()
        )
    }

    fn sign(&self, statement: &[u8]) -> String {
        self.key
            .sign(SIGNATURE_NAMESPACE, HashAlg::Sha512, statement)
            .unwrap()
            .to_pem(LineEnding::LF)
            .unwrap()
    }
}

/// A gate in a fresh directory holding `policy`, on a manual clock.
struct Setup {
    _dir: TempDir,
    gate: Gate,
}

impl Setup {
    fn new(allowed_signers: &str, operation_quorum: u32) -> Self {
        let policy = Policy::from_allowed_signers(allowed_signers)
            .and_then(|p| p.require("payments.*", operation_quorum))
            .and_then(|p| p.require("*", 1))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::builder()
            .dir(dir.path().join("gate"))
            .clock(ManualClock::new(
                Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap(),
            ))
            .policy(policy)
            .open()
            .unwrap();
        Self { _dir: dir, gate }
    }

    /// Files the wire, as asked by `requester` (identical pending requests are one).
    fn file(&self, requester: &str) -> Request {
        let ask = NewRequest::new(ACTION, "invoice 1042")
            .requested_by(requester)
            .operation("payments.wire")
            .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
        self.gate.request_approval(ask).unwrap().request
    }

    fn consume(&self, request: &Request) -> Result<Value, Error> {
        let binding = Binding::new(ACTION)
            .operation("payments.wire")
            .payload_of(&serde_json::from_str::<Value>(PAYLOAD).unwrap())
            .unwrap();
        self.gate
            .consume::<Value>(request.id(), &binding)
            .map(|grant| grant.payload().clone())
    }
}

/// What `authenticator` returns approving `request` as `principal`: an assertion over the
/// challenge of the request's statement, armored.
fn passkey_approval(authenticator: &Authenticator, request: &Request, principal: &str) -> String {
    authenticator.approve(&challenge(&request.decision_statement(principal).unwrap()))
}

fn passkey_line(authenticator: &Authenticator, principal: &str) -> String {
    authenticator
        .passkey()
        .allowed_signers_line(
            principal,
            authenticator.credential_id(),
            &format!("https://{}", authenticator.passkey().rp_id()),
        )
        .unwrap()
}

/// A store trusting alice's passkey, a request filed there, her armored approval of it, and
/// the report of approving it with that signature as `decided_by`.
fn approved_by_alice(decided_by: &str) -> (Setup, Request, String, StatusReport) {
    let alice = Authenticator::new(1, RP);
    let setup = Setup::new(&passkey_line(&alice, "alice@example.com"), 1);
    let request = setup.file("agent-1");
    let signature = passkey_approval(&alice, &request, "alice@example.com");
    let report = setup
        .gate
        .approve(
            request.id(),
            &Decision::by(decided_by).signed("alice@example.com", &signature),
        )
        .unwrap();
    (setup, request, signature, report)
}

#[test]
fn the_report_says_who_recorded_each_approval_and_when() {
    // The principal is who signed; `decidedBy` and `decidedAt` are who the store saw record
    // the approval, and when: what a reviewer reads beside the signature.
    let (_, _, _, report) = approved_by_alice("ops-desk");
    let approval = &serde_json::to_value(&report).unwrap()["approvals"][0];
    assert_eq!(approval["principal"], "alice@example.com");
    assert_eq!(approval["decidedBy"], "ops-desk");
    assert_eq!(approval["decidedAt"], "2026-12-01T10:00:00.000Z");
}

#[test]
fn a_passkey_approval_is_taken_by_the_executors_consume() {
    let (setup, request, signature, report) = approved_by_alice("alice");
    assert_eq!(report.standings(), [Standing::Counts]);
    assert_eq!(report.request().approvals()[0].signature(), signature);
    let payload = setup.consume(&request).unwrap();
    assert_eq!(payload["amount_cents"], 120_000);
    // Used once.
    assert!(matches!(
        setup.consume(&request),
        Err(Error::AlreadyConsumed(_))
    ));
}

#[test]
fn a_passkey_approval_replayed_on_another_request_approves_nothing() {
    let alice = Authenticator::new(1, RP);
    let setup = Setup::new(&passkey_line(&alice, "alice@example.com"), 1);
    let first = setup.file("agent-1");
    let second = setup.file("agent-2");
    assert_ne!(first.id(), second.id());
    let signature = passkey_approval(&alice, &first, "alice@example.com");
    let error = setup
        .gate
        .approve(
            second.id(),
            &Decision::by("mallory").signed("alice@example.com", &signature),
        )
        .unwrap_err();
    match &error {
        Error::BadSignature { problem, .. } => assert!(
            problem.starts_with("passkey assertion: does not verify: its challenge is not"),
            "{problem}"
        ),
        other => panic!("{other}"),
    }
    assert!(matches!(setup.consume(&second), Err(Error::NotApproved(_))));
    let status = setup.gate.status(second.id()).unwrap();
    assert!(status.request().approvals().is_empty());
    // Nor does it approve the first as another principal, or as one of another quorum.
    for (principal, required) in [("bob@example.com", 1), ("alice@example.com", 2)] {
        let problem = policy::check_signature(&first, required, principal, &signature).unwrap_err();
        assert!(problem.contains("its challenge is not"), "{problem}");
    }
    // A changed assertion is refused for what changed.
    let tampered = signature.replacen("-----\n", "-----\nA", 1);
    let error = setup
        .gate
        .approve(
            first.id(),
            &Decision::by("alice").signed("alice@example.com", &tampered),
        )
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("passkey assertion: the envelope's Base64"),
        "{error}"
    );
}

#[test]
fn a_passkey_the_policy_does_not_list_is_untrusted() {
    let alice = Authenticator::new(1, RP);
    let setup = Setup::new(&passkey_line(&alice, "alice@example.com"), 1);
    let request = setup.file("agent-1");
    // Another credential; and alice's own point under another RP ID, which is another key.
    for stranger in [
        Authenticator::new(2, RP),
        Authenticator::new(1, "evil.example"),
    ] {
        let signature = passkey_approval(&stranger, &request, "alice@example.com");
        let error = setup
            .gate
            .approve(
                request.id(),
                &Decision::by("mallory").signed("alice@example.com", &signature),
            )
            .unwrap_err();
        assert!(
            matches!(&error, Error::UntrustedSigner { key, .. }
                if *key == stranger.passkey().public_key().fingerprint(HashAlg::Sha256).to_string()),
            "{error}"
        );
    }
    // Alice's passkey is not bob's.
    let signature = passkey_approval(&alice, &request, "bob@example.com");
    let error = setup
        .gate
        .approve(
            request.id(),
            &Decision::by("alice").signed("bob@example.com", &signature),
        )
        .unwrap_err();
    assert!(matches!(error, Error::UntrustedSigner { .. }), "{error}");
    assert!(matches!(
        setup.consume(&request),
        Err(Error::NotApproved(_))
    ));
}

#[test]
fn an_ssh_approver_and_a_passkey_approver_make_a_quorum_of_two() {
    let alice = Authenticator::new(1, RP);
    let bob = SshApprover::new("bob@example.com", 7);
    let setup = Setup::new(
        &format!(
            "{}\n{}\n",
            passkey_line(&alice, "alice@example.com"),
            bob.line()
        ),
        2,
    );
    let request = setup.file("agent-1");
    assert_eq!(request.required_approvals(), 2);
    let by_bob = bob.sign(&request.decision_statement(bob.principal).unwrap());
    let report = setup
        .gate
        .approve(
            request.id(),
            &Decision::by("bob").signed(bob.principal, &by_bob),
        )
        .unwrap();
    assert_eq!(report.standings(), [Standing::Counts]);
    // One of two is not enough.
    assert!(matches!(
        setup.consume(&request),
        Err(Error::NotApproved(_))
    ));
    let by_alice = passkey_approval(&alice, &request, "alice@example.com");
    let report = setup
        .gate
        .approve(
            request.id(),
            &Decision::by("alice").signed("alice@example.com", &by_alice),
        )
        .unwrap();
    assert_eq!(report.standings(), [Standing::Counts, Standing::Counts]);
    setup.consume(&request).unwrap();
}

#[test]
fn one_principal_with_an_ssh_key_and_a_passkey_counts_once() {
    let alice_passkey = Authenticator::new(1, RP);
    let alice_ssh = SshApprover::new("alice@example.com", 7);
    let setup = Setup::new(
        &format!(
            "{}\n{}\n",
            passkey_line(&alice_passkey, "alice@example.com"),
            alice_ssh.line()
        ),
        2,
    );
    let request = setup.file("agent-1");
    let statement = request.decision_statement("alice@example.com").unwrap();
    let by_ssh = alice_ssh.sign(&statement);
    let by_passkey = passkey_approval(&alice_passkey, &request, "alice@example.com");
    setup
        .gate
        .approve(
            request.id(),
            &Decision::by("alice").signed("alice@example.com", &by_ssh),
        )
        .unwrap();
    let error = setup
        .gate
        .approve(
            request.id(),
            &Decision::by("alice").signed("alice@example.com", &by_passkey),
        )
        .unwrap_err();
    assert!(matches!(error, Error::AlreadySigned { .. }), "{error}");
    assert!(matches!(
        setup.consume(&request),
        Err(Error::NotApproved(_))
    ));
    // Stored side by side anyway (by whoever can write the store), the second is a repeat,
    // whichever kind comes first.
    let policy = setup.gate.policy().unwrap();
    let now = setup.gate.now();
    for signatures in [[&by_ssh, &by_passkey], [&by_passkey, &by_ssh]] {
        let mut stored = request.clone();
        for signature in signatures {
            stored.add_approval(policy::approval_record(
                "alice@example.com",
                "alice",
                now,
                signature,
            ));
        }
        assert_eq!(
            policy::standings(Some(policy), &stored, 2, now),
            [Standing::Counts, Standing::Repeat]
        );
        assert!(matches!(
            policy.verify(&stored, 2, now),
            Err(Error::InsufficientApprovals {
                valid: 1,
                required: 2,
                ..
            })
        ));
    }
}

#[test]
fn one_passkey_listed_for_two_principals_counts_once() {
    let shared = Authenticator::new(1, RP);
    let setup = Setup::new(
        &format!(
            "{}\n{}\n",
            passkey_line(&shared, "alice@example.com"),
            passkey_line(&shared, "bob@example.com")
        ),
        2,
    );
    let request = setup.file("agent-1");
    for (principal, expected) in [("alice@example.com", true), ("bob@example.com", false)] {
        let signature = passkey_approval(&shared, &request, principal);
        let result = setup.gate.approve(
            request.id(),
            &Decision::by("x").signed(principal, &signature),
        );
        assert_eq!(result.is_ok(), expected, "{principal}: {result:?}");
        if !expected {
            assert!(matches!(result, Err(Error::AlreadySigned { .. })));
        }
    }
}

#[test]
fn a_short_quorum_is_refused_for_a_bad_signature_first_then_an_untrusted_key() {
    let alice = SshApprover::new("alice@example.com", 1);
    let bob = SshApprover::new("bob@example.com", 2);
    let stranger = Authenticator::new(9, RP);
    let lines = format!("{}\n{}\n", alice.line(), bob.line());
    let setup = Setup::new(&lines, 3);
    let request = setup.file("agent-1");
    let statement = request.decision_statement("alice@example.com").unwrap();
    setup
        .gate
        .approve(
            request.id(),
            &Decision::by("alice").signed("alice@example.com", alice.sign(&statement)),
        )
        .unwrap();
    let stored = setup.gate.status(request.id()).unwrap().request().clone();
    let json = serde_json::to_value(&stored).unwrap();
    let approved = json["approvals"][0].clone();
    let approval = |principal: &str, signature: String| {
        let mut approval = approved.clone();
        approval["principal"] = principal.into();
        approval["signature"] = signature.into();
        approval
    };
    // Carol is no approver: a passkey's assertion over her statement verifies, untrusted.
    let untrusted = approval(
        "carol@example.com",
        passkey_approval(&stranger, &stored, "carol@example.com"),
    );
    // Bob is one, and signed something else: a bad signature.
    let bad = approval("bob@example.com", bob.sign(b"another statement"));
    let with = |approvals: Vec<Value>| -> Request {
        let mut json = json.clone();
        json["approvals"] = Value::Array(approvals);
        serde_json::from_value(json).unwrap()
    };
    let policy = Policy::from_allowed_signers(&lines)
        .and_then(|p| p.require("payments.*", 3))
        .unwrap();
    let now = Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
    let refused = |approvals: Vec<Value>| policy.verify(&with(approvals), 3, now).unwrap_err();
    assert!(
        matches!(
            refused(vec![approved.clone()]),
            Error::InsufficientApprovals {
                valid: 1,
                required: 3,
                ..
            }
        ),
        "one of three"
    );
    let error = refused(vec![approved.clone(), untrusted.clone()]);
    assert!(matches!(error, Error::UntrustedSigner { .. }), "{error}");
    // The bad signature is named, wherever it stands among the approvals.
    for approvals in [
        vec![approved.clone(), untrusted.clone(), bad.clone()],
        vec![bad.clone(), untrusted.clone(), approved.clone()],
        vec![approved.clone(), bad.clone()],
    ] {
        let error = refused(approvals);
        assert!(matches!(error, Error::BadSignature { .. }), "{error}");
    }
}

#[test]
fn a_message_verifies_only_by_a_trusted_key_for_its_principal_in_the_namespace() {
    let alice = SshApprover::new("alice@example.com", 1);
    let bob = SshApprover::new("bob@example.com", 2);
    let stranger = SshApprover::new("alice@example.com", 3);
    let policy =
        Policy::from_allowed_signers(&format!("{}\n{}\n", alice.line(), bob.line())).unwrap();
    let now = Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
    let signed = alice.sign(b"release 1.2");
    assert!(policy.verifies_message("alice@example.com", b"release 1.2", &signed, now));
    assert!(!policy.verifies_message("alice@example.com", b"release 1.3", &signed, now));
    assert!(!policy.verifies_message("bob@example.com", b"release 1.2", &signed, now));
    let by_stranger = stranger.sign(b"release 1.2");
    assert!(!policy.verifies_message("alice@example.com", b"release 1.2", &by_stranger, now));
    let other_namespace = alice
        .key
        .sign("git", HashAlg::Sha512, b"release 1.2")
        .unwrap()
        .to_pem(LineEnding::LF)
        .unwrap();
    assert!(!policy.verifies_message("alice@example.com", b"release 1.2", &other_namespace, now));
    assert!(!policy.verifies_message("alice@example.com", b"release 1.2", "garbage", now));
    // find-principals reads only the key, in any namespace.
    assert_eq!(
        policy.find_principals(&signed, now).as_deref(),
        Some("alice@example.com")
    );
    assert_eq!(
        policy.find_principals(&bob.sign(b"x"), now).as_deref(),
        Some("bob@example.com")
    );
    assert_eq!(
        policy.find_principals(&other_namespace, now).as_deref(),
        Some("alice@example.com")
    );
    assert_eq!(policy.find_principals(&by_stranger, now), None);
    assert_eq!(policy.find_principals("garbage", now), None);
}
