//! Signing with the approver's real tools: keys held by a real `ssh-agent` (the private key
//! file gone), `ssh-add -c` per-use confirmation, every key type ssh-keygen makes by default;
//! and what ssh-keygen signs, the executor takes, and what we store, ssh-keygen verifies.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use approval_gate::{
    CanonicalPayload, Decision, EffectiveStatus, Error, ErrorCode, Gate, Grant, NewRequest,
    RequestId, SIGNATURE_NAMESPACE,
};
use approval_gate_tests::ssh::{Agent, Approver, Keys, ssh_keygen_sign, ssh_keygen_verifies};
use approval_gate_tests::{Fixture, binding};
use serde_json::Value;

mod parity;

const ACTION: &str = "deploy v2 to production";
const OP: &str = "deploy.production";

fn file(gate: &Gate) -> RequestId {
    let new = NewRequest::new(ACTION, "release day")
        .operation(OP)
        .payload(CanonicalPayload::from_json_text(r#"{"version":"2.0.0"}"#).unwrap());
    gate.request_approval(new).unwrap().request.id()
}

fn runs(gate: &Gate, id: RequestId) -> Result<u32, Error> {
    let mut runs = 0;
    gate.execute_approved(
        id,
        &binding(ACTION, Some(OP), Some(r#"{"version":"2.0.0"}"#)),
        |_: &Grant<Value>| {
            runs += 1;
            Ok::<_, Error>(())
        },
    )?;
    Ok(runs)
}

/// A gate on a fresh store holding a policy of `approvers`, `quorum` of them for deploys.
fn gate(fx: &Fixture, keys: &Keys, approvers: &[&Approver], quorum: u32) -> Gate {
    Gate::builder()
        .dir(&fx.dir)
        .clock(fx.clock.clone())
        .policy(
            keys.policy(approvers)
                .require("deploy.*", quorum)
                .and_then(|policy| policy.require("*", 1))
                .unwrap(),
        )
        .open()
        .unwrap()
}

fn approve_with(
    gate: &Gate,
    id: RequestId,
    principal: &str,
    signature: String,
) -> Result<EffectiveStatus, Error> {
    gate.approve(id, &Decision::by("tester").signed(principal, signature))
        .map(|r| r.effective_status())
}

#[test]
fn a_key_held_only_by_ssh_agent_signs_approvals_the_executor_takes() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let agent = Agent::start();
    agent.add(&alice.key, false);
    // The private key is gone from disk: only the agent can sign now.
    std::fs::remove_file(&alice.key).unwrap();
    let fx = Fixture::new();
    let gate = gate(&fx, &keys, &[&alice], 1);
    let id = file(&gate);
    let statement = gate
        .status(id)
        .unwrap()
        .request()
        .decision_statement(&alice.principal)
        .unwrap();
    let signature = ssh_keygen_sign(
        &alice.public_file(),
        SIGNATURE_NAMESPACE,
        &statement,
        Some(agent.socket()),
    );
    assert_eq!(
        approve_with(&gate, id, &alice.principal, signature.clone()).unwrap(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert!(ssh_keygen_verifies(
        &keys.allowed_signers(&[&alice]),
        &alice.principal,
        &signature,
        &statement
    ));
    assert_eq!(runs(&gate, id).unwrap(), 1);
}

/// `ssh-add -c`: the agent asks (through `SSH_ASKPASS`) before every signature; a "no"
/// means no signature, so no approval.
#[test]
fn ssh_add_confirm_asks_before_each_signature_and_a_no_signs_nothing() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let answers = keys.dir().join("answers");
    let asked = keys.dir().join("asked");
    let askpass = keys.dir().join("askpass");
    // Exits with the answer in `answers` ("0": yes) and counts the questions.
    std::fs::write(
        &askpass,
        format!(
            "#!/bin/sh\necho asked >> '{}'\nexit \"$(cat '{}')\"\n",
            asked.display(),
            answers.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    let agent = Agent::start_with_askpass(&askpass);
    agent.add(&alice.key, true);
    std::fs::remove_file(&alice.key).unwrap();

    let fx = Fixture::new();
    let gate = gate(&fx, &keys, &[&alice], 1);
    let id = file(&gate);
    let statement = gate
        .status(id)
        .unwrap()
        .request()
        .decision_statement(&alice.principal)
        .unwrap();

    std::fs::write(&answers, "1").unwrap();
    let refused = ssh_keygen_try_sign(&alice.public_file(), &statement, agent.socket());
    assert!(refused.is_none(), "a refused confirmation signs nothing");
    assert_eq!(
        gate.status(id).unwrap().effective_status(),
        EffectiveStatus::Pending
    );

    std::fs::write(&answers, "0").unwrap();
    let signature = ssh_keygen_try_sign(&alice.public_file(), &statement, agent.socket())
        .expect("a confirmed use signs");
    approve_with(&gate, id, &alice.principal, signature).unwrap();
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap().lines().count(),
        2,
        "asked each time"
    );
    assert_eq!(runs(&gate, id).unwrap(), 1);
}

fn ssh_keygen_try_sign(public: &Path, statement: &[u8], agent: &Path) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", SIGNATURE_NAMESPACE, "-f"])
        .arg(public)
        .env("SSH_AUTH_SOCK", agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(statement).unwrap();
    let out = child.wait_with_output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

/// Every key type ssh-keygen makes without hardware verifies here; a quorum of three
/// different types runs once.
#[test]
fn ed25519_ecdsa_and_rsa_signatures_from_ssh_keygen_all_verify() {
    let keys = Keys::new();
    let team: Vec<Approver> = [("a@x", "ed25519"), ("b@x", "ecdsa"), ("c@x", "rsa")]
        .iter()
        .map(|(p, t)| keys.approver_of_type(p, t))
        .collect();
    let fx = Fixture::new();
    let refs: Vec<&Approver> = team.iter().collect();
    let gate = gate(&fx, &keys, &refs, 3);
    let id = file(&gate);
    for (n, approver) in team.iter().enumerate() {
        let request = gate.status(id).unwrap().into_request();
        let signature = approver.sign(&request.decision_statement(&approver.principal).unwrap());
        let status = approve_with(&gate, id, &approver.principal, signature).unwrap();
        let expected = if n < 2 {
            EffectiveStatus::Pending
        } else {
            EffectiveStatus::ApprovedUnconsumed
        };
        assert_eq!(status, expected, "after {}", approver.principal);
    }
    assert_eq!(runs(&gate, id).unwrap(), 1);
}

/// A store edited by hand (the record's own file) to "approved", with no signature: the
/// executor under a policy refuses; nothing is spent, and the genuine path still works.
#[test]
fn a_record_edited_by_hand_to_approved_is_refused_by_the_executor() {
    let keys = Keys::new();
    let alice = keys.approver("alice@example.com");
    let fx = Fixture::new();
    let gate = gate(&fx, &keys, &[&alice], 1);
    let id = file(&gate);
    let path = fx.dir.join("requests").join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text
        .replace(r#""status":"pending""#, r#""status":"approved""#)
        .replace(
            r#""decidedAt":null"#,
            r#""decidedAt":"2026-11-30T00:00:01.000Z""#,
        );
    assert_ne!(edited, text, "the edit applies");
    std::fs::write(&path, edited).unwrap();
    let refused = runs(&gate, id).unwrap_err();
    assert_eq!(
        refused.code(),
        ErrorCode::InsufficientApprovals,
        "{refused}"
    );
    assert!(!fx.dir.join("claims").join(format!("{id}.used")).exists());
}

/// `#[requires_approval]` unchanged under a gate holding a policy: the body runs only once
/// enough trusted approvers signed, and an approval that is not signed never reaches it.
#[test]
fn requires_approval_works_unchanged_under_a_policy() {
    use approval_gate::{Claim, requires_approval};

    struct Deployer {
        deployed: std::cell::RefCell<Vec<String>>,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Release {
        version: String,
    }
    impl Deployer {
        #[requires_approval(operation = "deploy.production")]
        fn deploy(&self, #[payload] release: Release, approval: Claim<'_>) -> Result<(), Error> {
            approval.assert_active()?;
            self.deployed.borrow_mut().push(release.version.clone());
            Ok(())
        }
    }

    let keys = Keys::new();
    let (alice, bob) = (keys.approver("alice@x"), keys.approver("bob@x"));
    let fx = Fixture::new();
    let gate = gate(&fx, &keys, &[&alice, &bob], 2);
    let deployer = Deployer {
        deployed: std::cell::RefCell::default(),
    };
    let release = || Release {
        version: "2.0.0".into(),
    };

    // Approved where no policy is held, without signatures: the body never runs.
    let unsigned = file(&fx.gate);
    fx.gate.approve(unsigned, &Decision::by("agent")).unwrap();
    let refused = deployer
        .deploy(release(), Claim::new(&gate, unsigned, ACTION))
        .unwrap_err();
    assert_eq!(
        refused.code(),
        ErrorCode::InsufficientApprovals,
        "{refused}"
    );

    let id = file(&gate);
    for approver in [&alice, &bob] {
        let request = gate.status(id).unwrap().into_request();
        let signature = approver.sign(&request.decision_statement(&approver.principal).unwrap());
        approve_with(&gate, id, &approver.principal, signature).unwrap();
    }
    deployer
        .deploy(release(), Claim::new(&gate, id, ACTION))
        .unwrap();
    let replay = deployer
        .deploy(release(), Claim::new(&gate, id, ACTION))
        .unwrap_err();
    assert_eq!(replay.code(), ErrorCode::AlreadyConsumed);
    assert_eq!(*deployer.deployed.borrow(), ["2.0.0"]);
}

/// One key trusted under two principals signs as both: it is one approver, and counts once.
#[test]
fn one_key_listed_under_two_principals_counts_once() {
    let keys = Keys::new();
    let alice = keys.approver("alice@x");
    let carol = keys.approver("carol@x");
    // The same key for alice and bob, as a careless allowed_signers file might have it.
    let allowed = format!("alice@x,bob@x {}\n{}\n", alice.public, carol.allowed_line());
    let policy = approval_gate::Policy::from_allowed_signers(&allowed)
        .unwrap()
        .require("deploy.*", 2)
        .unwrap()
        .require("*", 1)
        .unwrap();
    let fx = Fixture::new();
    let gate = Gate::builder()
        .dir(&fx.dir)
        .clock(fx.clock.clone())
        .policy(policy)
        .open()
        .unwrap();
    let id = file(&gate);
    let request = gate.status(id).unwrap().into_request();
    let sign =
        |principal: &str, by: &Approver| by.sign(&request.decision_statement(principal).unwrap());
    approve_with(&gate, id, "alice@x", sign("alice@x", &alice)).unwrap();
    // Approving as bob with alice's key is the same approver again.
    let again = approve_with(&gate, id, "bob@x", sign("bob@x", &alice)).unwrap_err();
    assert_eq!(again.code(), ErrorCode::AlreadySigned, "{again}");

    // Written straight into the record, it still counts once at consume.
    let path = fx.dir.join("requests").join(format!("{id}.json"));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut bobs = record["approvals"][0].clone();
    bobs["principal"] = "bob@x".into();
    bobs["signature"] = sign("bob@x", &alice).into();
    record["approvals"].as_array_mut().unwrap().push(bobs);
    record["status"] = "approved".into();
    record["decidedAt"] = record["approvals"][0]["decidedAt"].clone();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let refused = runs(&gate, id).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::InsufficientApprovals {
                valid: 1,
                required: 2,
                ..
            }
        ),
        "{refused}"
    );
    // The second approver with a key of their own makes it two.
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut carols = record["approvals"][0].clone();
    carols["principal"] = "carol@x".into();
    carols["signature"] = sign("carol@x", &carol).into();
    record["approvals"].as_array_mut().unwrap().push(carols);
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    assert_eq!(runs(&gate, id).unwrap(), 1);
}

/// An untrusted signer is named by its key's SHA256 fingerprint, as `ssh-keygen -l` shows it.
#[test]
fn an_untrusted_signer_is_named_by_the_fingerprint_ssh_keygen_shows() {
    let keys = Keys::new();
    let alice = keys.approver("alice@x");
    let mallory = keys.approver("mallory@x");
    let fx = Fixture::new();
    let gate = gate(&fx, &keys, &[&alice], 1);
    let id = file(&gate);
    let request = gate.status(id).unwrap().into_request();
    let signature = mallory.sign(&request.decision_statement("alice@x").unwrap());
    let refused = approve_with(&gate, id, "alice@x", signature).unwrap_err();
    let listed = std::process::Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(mallory.public_file())
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    let fingerprint = listed.split_whitespace().nth(1).unwrap();
    assert!(fingerprint.starts_with("SHA256:"), "{listed}");
    match refused {
        Error::UntrustedSigner { key, principal, .. } => {
            assert_eq!(key, fingerprint);
            assert_eq!(principal, "alice@x");
        }
        other => panic!("expected untrusted_signer, got {other}"),
    }
}

/// Issue 22, finding 13: quorum patterns match operation names case-sensitively, and the
/// agent chooses the names it files: `Payments.transfer` or `payments-transfer` dodged
/// `payments.*=2` and needed one approval. One grammar now (lowercase `[a-z0-9_]` segments
/// joined by dots), at filing and in the executor's binding.
#[test]
fn operation_names_spelled_to_dodge_a_quorum_pattern_are_refused() {
    let keys = Keys::new();
    let alice = keys.approver("alice@x");
    let fx = Fixture::new();
    let policy = keys.policy(&[&alice]).require("payments.*", 2).unwrap();
    let gate = Gate::builder()
        .dir(&fx.dir)
        .clock(fx.clock.clone())
        .policy(policy.require("*", 1).unwrap())
        .open()
        .unwrap();
    for dodge in [
        "Payments.transfer",
        "payments-transfer",
        "PAYMENTS.TRANSFER",
        "payments..transfer",
        "payments.transfer.",
        ".payments.transfer",
        "payments/transfer",
        "payments:transfer",
    ] {
        let error = gate
            .request_approval(NewRequest::new("pay 5 EUR", "rent").operation(dodge))
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "operation",
                    ..
                }
            ),
            "{dodge}: {error}"
        );
    }
    let filed = |operation: &str| {
        gate.request_approval(NewRequest::new("pay 5 EUR", "rent").operation(operation))
            .unwrap()
            .request
    };
    assert_eq!(filed("payments.transfer").required_approvals(), 2);
    assert_eq!(filed("payments_transfer").required_approvals(), 1);
    assert_eq!(filed("mail.send").required_approvals(), 1);
    // The executor's binding follows the grammar too: a misspelt one is a clear refusal.
    let id = filed("payments.transfer").id();
    let error = gate
        .consume::<()>(
            id,
            &approval_gate::Binding::new("pay 5 EUR").operation("Payments.transfer"),
        )
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidInput {
                field: "operation",
                ..
            }
        ),
        "{error}"
    );
}

/// Issue 22, finding 13: a quorum table must say what the operations it does not name need
/// (a `*` entry), or the gate does not start; a pattern no operation name can match is
/// refused when it is given.
#[test]
fn a_quorum_table_without_a_star_entry_refuses_to_start() {
    let keys = Keys::new();
    let alice = keys.approver("alice@x");
    let fx = Fixture::new();
    let open = |policy: approval_gate::Policy| {
        Gate::builder()
            .dir(&fx.dir)
            .clock(fx.clock.clone())
            .policy(policy)
            .open()
    };
    let error = open(keys.policy(&[&alice]).require("payments.*", 2).unwrap()).unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidInput {
                field: "quorum",
                ..
            }
        ) && error.to_string().contains("payments.*")
            && error.to_string().contains("`*`"),
        "{error}"
    );
    for pattern in ["Payments.*", "payments-*", "payments/*", "payments.* "] {
        let error = keys.policy(&[&alice]).require(pattern, 2).unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "quorum",
                    ..
                }
            ),
            "{pattern}: {error}"
        );
    }
    // No table at all is one approval for every operation, as before.
    open(keys.policy(&[&alice])).unwrap();
    open(
        keys.policy(&[&alice])
            .require("payments.*", 2)
            .unwrap()
            .require("*", 1)
            .unwrap(),
    )
    .unwrap();
}
