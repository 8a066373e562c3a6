//! Signed approvals and quorum policies: under a policy an approval counts only
//! with the signatures of enough distinct trusted approvers, made by the real `ssh-keygen`
//! and verified in-process at consume; whoever can write the store but holds no approver's
//! key cannot make one the executor takes.

use std::cell::Cell;
use std::sync::{Arc, Barrier};

use approval_gate::{
    AuditEvent, CanonicalPayload, Decision, EffectiveStatus, Error, ErrorCode, Gate, Grant,
    ManualClock, NewRequest, Policy, Refusals, RequestId, Standing, StatusReport,
};
use serde_json::{Value, json};

use crate::backend::{Backend, Store};
use crate::ssh::{Approver, Keys, ssh_keygen_verifies};
use crate::{T0, binding};

const ACTION: &str = "wire 1200 EUR to ACME Ltd";
const OP: &str = "payments.wire";
const PAYLOAD: &str = r#"{"amount_cents":120000,"to":"ACME Ltd"}"#;

/// Three trusted approvers, one stranger, and a policy needing two for `payments.*`.
struct Team {
    keys: Keys,
    alice: Approver,
    bob: Approver,
    carol: Approver,
    mallory: Approver,
}

impl Team {
    fn new() -> Self {
        let keys = Keys::new();
        Self {
            alice: keys.approver("alice@example.com"),
            bob: keys.approver_of_type("bob@example.com", "ecdsa"),
            carol: keys.approver_of_type("carol@example.com", "rsa"),
            mallory: keys.approver("mallory@example.com"),
            keys,
        }
    }

    fn policy(&self) -> Policy {
        self.keys
            .policy(&[&self.alice, &self.bob, &self.carol])
            .require("payments.*", 2)
            .and_then(|policy| policy.require("*", 1))
            .expect("a quorum")
    }
}

/// A store of `backend` and a gate on it holding `policy`, on a manual clock at [`T0`].
struct Signed {
    store: Store,
    gate: Gate,
    clock: ManualClock,
}

impl Signed {
    fn new(backend: &dyn Backend, policy: Policy) -> Self {
        let store = backend.fresh();
        let clock = ManualClock::new(T0);
        let gate = store
            .builder()
            .clock(clock.clone())
            .policy(policy)
            .open()
            .expect("open the store");
        Self { store, gate, clock }
    }

    /// Another gate on the same store and clock, holding `policy` (or none).
    fn gate_with(&self, policy: Option<Policy>) -> Gate {
        let builder = self.store.builder().clock(self.clock.clone());
        match policy {
            Some(policy) => builder.policy(policy),
            None => builder,
        }
        .open()
        .expect("open the store")
    }

    fn file(&self) -> RequestId {
        file(&self.gate, ACTION)
    }
}

fn file(gate: &Gate, action: &str) -> RequestId {
    let new = NewRequest::new(action, "invoice 7")
        .operation(OP)
        .payload(CanonicalPayload::from_json_text(PAYLOAD).expect("payload"));
    gate.request_approval(new).expect("request").request.id()
}

/// `approver` reads the request as it stands, signs its statement with ssh-keygen and
/// approves with the signature.
fn approve_as(gate: &Gate, id: RequestId, approver: &Approver) -> Result<StatusReport, Error> {
    let request = gate.status(id)?.into_request();
    let statement = request.decision_statement(&approver.principal)?;
    let signature = approver.sign(&statement);
    gate.approve(
        id,
        &Decision::by("tester").signed(&approver.principal, signature),
    )
}

/// Runs the approved wire through `gate`, bound to its own action text, the wire
/// operation and payload; how many times the body ran, or the refusal.
fn execute(gate: &Gate, id: RequestId) -> Result<u32, Error> {
    let action = gate.status(id)?.request().action().to_owned();
    let runs = Cell::new(0);
    gate.execute_approved(
        id,
        &binding(&action, Some(OP), Some(PAYLOAD)),
        |_: &Grant<Value>| {
            runs.set(runs.get() + 1);
            Ok::<_, Error>(())
        },
    )?;
    Ok(runs.get())
}

/// A store's contents but its audit trail (the file or the rows, and the anchor).
fn without_audit(
    contents: std::collections::BTreeMap<String, Vec<u8>>,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    contents
        .into_iter()
        .filter(|(key, _)| !key.contains("audit") && !key.contains("journal") && key != "head")
        .collect()
}

fn events(gate: &Gate, id: RequestId) -> Vec<(AuditEvent, Value)> {
    gate.audit_records()
        .expect("audit records")
        .into_iter()
        .filter(|r| r.id == id)
        .map(|r| (r.event, Value::Object(r.details)))
        .collect()
}

/// Two of three trusted approvers sign: the request is pending at 1 of 2, approved at 2 of
/// 2, runs exactly once; the signatures are kept with the request and its audit lines, and
/// `ssh-keygen -Y verify` accepts them.
pub fn a_quorum_of_signed_approvals_runs_exactly_once(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let id = fx.file();
    let filed = fx.gate.status(id).unwrap();
    assert_eq!(filed.required_approvals(), 2);
    assert_eq!(
        filed.request().required_approvals(),
        2,
        "recorded when filed"
    );
    let requested = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .find(|r| r.id == id && r.event == AuditEvent::Requested)
        .expect("a requested line");
    assert_eq!(
        requested.details["requiredApprovals"], 2,
        "and on its requested line"
    );

    let first = approve_as(&fx.gate, id, &team.alice).unwrap();
    assert_eq!(first.effective_status(), EffectiveStatus::Pending);
    assert_eq!(first.request().approvals().len(), 1);
    let shown = serde_json::to_value(&first).unwrap();
    assert_eq!(shown["requiredApprovals"], 2);
    assert_eq!(shown["approvals"][0]["principal"], "alice@example.com");
    // One of two is not an approval: nothing runs, nothing is spent.
    assert!(matches!(execute(&fx.gate, id), Err(Error::NotApproved(_))));
    assert!(!backend.claimed(&fx.store, id));

    let second = approve_as(&fx.gate, id, &team.carol).unwrap();
    assert_eq!(
        second.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(execute(&fx.gate, id).unwrap(), 1);
    assert!(matches!(
        execute(&fx.gate, id),
        Err(Error::AlreadyConsumed(_))
    ));

    let audited = events(&fx.gate, id);
    let kinds: Vec<AuditEvent> = audited.iter().map(|(e, _)| *e).collect();
    assert_eq!(
        kinds,
        [
            AuditEvent::Requested,
            AuditEvent::ApprovalAdded,
            AuditEvent::ConsumeRefused,
            AuditEvent::Approved,
            AuditEvent::Consumed,
            AuditEvent::ExecutionStarted,
            AuditEvent::ExecutionFinished,
            AuditEvent::ConsumeReplayed,
        ]
    );
    let added = &audited
        .iter()
        .find(|(e, _)| *e == AuditEvent::ApprovalAdded)
        .unwrap()
        .1;
    assert_eq!(added["principal"], "alice@example.com");
    assert_eq!(added["approvals"], 1);
    assert_eq!(added["requiredApprovals"], 2);
    let approved = &audited
        .iter()
        .find(|(e, _)| *e == AuditEvent::Approved)
        .unwrap()
        .1;
    assert_eq!(approved["principal"], "carol@example.com");

    // What is stored is what ssh-keygen itself accepts, and the audit line holds the same.
    let request = fx.gate.status(id).unwrap().into_request();
    let allowed = team
        .keys
        .allowed_signers(&[&team.alice, &team.bob, &team.carol]);
    for (approval, line) in request.approvals().iter().zip([added, approved]) {
        let statement = request.decision_statement(approval.principal()).unwrap();
        assert!(ssh_keygen_verifies(
            &allowed,
            approval.principal(),
            approval.signature(),
            &statement
        ));
        assert_eq!(line["signature"], approval.signature());
    }
    assert!(fx.gate.verify_audit().is_ok());
}

/// The same approver twice counts once (refused, the request stays at 1 of 2); an unsigned
/// approval under a policy is refused; a stranger's key is refused at the door; nothing of
/// it changes the store.
pub fn each_approver_counts_once_and_only_signed_trusted_approvals_are_taken(
    backend: &dyn Backend,
) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let id = fx.file();
    approve_as(&fx.gate, id, &team.alice).unwrap();
    let before = backend.contents(&fx.store);

    let twice = approve_as(&fx.gate, id, &team.alice).unwrap_err();
    assert_eq!(twice.code(), ErrorCode::AlreadySigned, "{twice}");
    let unsigned = fx.gate.approve(id, &Decision::by("tester")).unwrap_err();
    assert_eq!(unsigned.code(), ErrorCode::SignatureRequired, "{unsigned}");
    let stranger = approve_as(&fx.gate, id, &team.mallory).unwrap_err();
    assert_eq!(stranger.code(), ErrorCode::UntrustedSigner, "{stranger}");
    // Mallory's key, claiming to be bob.
    let request = fx.gate.status(id).unwrap().into_request();
    let forged = team
        .mallory
        .sign(&request.decision_statement("bob@example.com").unwrap());
    let posing = fx
        .gate
        .approve(
            id,
            &Decision::by("tester").signed("bob@example.com", forged),
        )
        .unwrap_err();
    assert_eq!(posing.code(), ErrorCode::UntrustedSigner, "{posing}");
    // Alice's signature of this request, offered as bob's.
    let alices = team
        .alice
        .sign(&request.decision_statement("alice@example.com").unwrap());
    let borrowed = fx
        .gate
        .approve(
            id,
            &Decision::by("tester").signed("bob@example.com", alices),
        )
        .unwrap_err();
    assert_eq!(borrowed.code(), ErrorCode::BadSignature, "{borrowed}");

    assert_eq!(
        without_audit(backend.contents(&fx.store)),
        without_audit(before),
        "refusals change nothing"
    );
    let refused: Vec<_> = events(&fx.gate, id)
        .into_iter()
        .filter(|(event, _)| *event == AuditEvent::DecisionRefused)
        .map(|(_, details)| details["reason"].as_str().unwrap().to_owned())
        .collect();
    // The stranger and the poser are the same refusal (untrusted_signer, of approve, of this
    // request, by this role): kept each time, or once where the store declares it keeps one
    // role's same refusal once (so that an agent cannot flood the chain by being refused).
    let expected: &[&str] = match fx.gate.capabilities().refusals {
        Refusals::EachTime => &[
            "already_signed",
            "signature_required",
            "untrusted_signer",
            "untrusted_signer",
            "bad_signature",
        ],
        Refusals::OncePerRole => &[
            "already_signed",
            "signature_required",
            "untrusted_signer",
            "bad_signature",
        ],
        other => panic!("a way of recording refusals the suite does not know: {other:?}"),
    };
    assert_eq!(refused, expected, "but each leaves its line");
    let report = fx.gate.status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
    assert_eq!(report.request().approvals().len(), 1);
}

/// One denial ends a quorum in progress; so does expiry.
pub fn one_denial_or_expiry_ends_a_quorum_in_progress(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let denied = fx.file();
    approve_as(&fx.gate, denied, &team.alice).unwrap();
    let report = fx.gate.deny(denied, &Decision::by("bob")).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Denied);
    assert_eq!(
        approve_as(&fx.gate, denied, &team.bob).unwrap_err().code(),
        ErrorCode::WrongState
    );
    assert!(matches!(execute(&fx.gate, denied), Err(Error::Denied(_))));

    let expiring = file(&fx.gate, "wire 10 EUR to ACME Ltd");
    approve_as(&fx.gate, expiring, &team.alice).unwrap();
    fx.clock
        .advance(approval_gate::limits::DEFAULT_TTL + std::time::Duration::from_secs(1));
    assert_eq!(
        approve_as(&fx.gate, expiring, &team.bob)
            .unwrap_err()
            .code(),
        ErrorCode::Expired
    );
    assert!(!backend.claimed(&fx.store, denied));
    assert!(!backend.claimed(&fx.store, expiring));
}

/// Two approvers approving at the same moment, through two gates, both count, exactly once
/// each: every trial ends approved with both signatures.
pub fn two_approvers_at_the_same_moment_both_count_once(backend: &dyn Backend) {
    let team = Team::new();
    let policy = team
        .keys
        .policy(&[&team.alice, &team.bob, &team.carol])
        .require("payments.*", 3)
        .unwrap()
        .require("*", 1)
        .unwrap();
    let fx = Signed::new(backend, policy.clone());
    let gates = [
        fx.gate_with(Some(policy.clone())),
        fx.gate_with(Some(policy)),
    ];
    for trial in 0..20 {
        let id = file(&fx.gate, &format!("wire {trial} EUR to ACME Ltd"));
        // Each signs what they were shown, before either approves.
        let shown = fx.gate.status(id).unwrap().into_request();
        let signed: Vec<Decision> = [&team.alice, &team.bob]
            .iter()
            .map(|a| {
                let sig = a.sign(&shown.decision_statement(&a.principal).unwrap());
                Decision::by("tester").signed(&a.principal, sig)
            })
            .collect();
        let barrier = Arc::new(Barrier::new(2));
        std::thread::scope(|s| {
            for (gate, decision) in gates.iter().zip(&signed) {
                let barrier = barrier.clone();
                let shown = shown.clone();
                s.spawn(move || {
                    barrier.wait();
                    gate.approve_as_shown(&shown, decision)
                        .expect("both approvals count");
                });
            }
        });
        let report = fx.gate.status(id).unwrap();
        let mut principals: Vec<&str> = report
            .request()
            .approvals()
            .iter()
            .map(approval_gate::SignedApproval::principal)
            .collect();
        principals.sort_unstable();
        assert_eq!(
            principals,
            ["alice@example.com", "bob@example.com"],
            "trial {trial}"
        );
        assert_eq!(report.effective_status(), EffectiveStatus::Pending);
        let added = events(&fx.gate, id)
            .iter()
            .filter(|(e, _)| *e == AuditEvent::ApprovalAdded)
            .count();
        assert_eq!(added, 2, "trial {trial}");
    }
}

/// What someone who can write the store, but holds no approver's key, can make of it: each
/// forgery is refused at consume with its own reason, audited with it, and spends nothing;
/// the genuine quorum then runs once.
pub fn forged_approvals_are_refused_with_their_reason_and_spend_nothing(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    // Genuine signatures to misuse: of another request, and of the same request with another
    // payload (filed on a store of its own, so it has the same id).
    let other = fx.file_other();
    let other_request = fx.gate.status(other).unwrap().into_request();

    for (what, expected, approvals) in forgeries(&team, &other_request) {
        let id = fx.file_fresh(what);
        let request = fx.gate.status(id).unwrap().into_request();
        let approvals = approvals(&request);
        backend.tamper(&fx.store, id, &mut |record| {
            record["status"] = json!("approved");
            record["decidedAt"] = json!(T0);
            record["decidedBy"] = json!("agent");
            record["approvals"] = approvals.clone();
        });
        let refused = execute(&fx.gate, id).unwrap_err();
        assert_eq!(refused.code(), expected, "{what}: {refused}");
        assert!(!backend.claimed(&fx.store, id), "{what}: nothing is spent");
        let last = events(&fx.gate, id).pop().unwrap();
        assert_eq!(last.0, AuditEvent::ConsumeRefused, "{what}");
        assert_eq!(last.1["reason"], expected.as_str(), "{what}");
    }

    // The genuine quorum on a request of the same shape runs exactly once.
    let id = fx.file_fresh("genuine");
    approve_as(&fx.gate, id, &team.bob).unwrap();
    approve_as(&fx.gate, id, &team.carol).unwrap();
    assert_eq!(execute(&fx.gate, id).unwrap(), 1);
    assert!(backend.claimed(&fx.store, id));
}

/// A forged approval: what it is, the refusal it must get, the approvals it writes.
type Forgery<'a> = (
    &'static str,
    ErrorCode,
    Box<dyn Fn(&approval_gate::Request) -> Value + 'a>,
);

/// Every forgery of the approvals of a request that someone without the keys can make from
/// genuine signatures (of `other_request`, of other statements) and their own key.
#[allow(clippy::too_many_lines)] // a table of cases, one short closure each
fn forgeries<'a>(team: &'a Team, other_request: &'a approval_gate::Request) -> Vec<Forgery<'a>> {
    vec![
        (
            "approved by hand, without signatures",
            ErrorCode::InsufficientApprovals,
            Box::new(|_| json!([])),
        ),
        (
            "signatures of another request",
            ErrorCode::BadSignature,
            Box::new(|_| {
                json!([
                    entry(
                        &team.alice,
                        &team.alice.sign(
                            &other_request
                                .decision_statement(&team.alice.principal)
                                .unwrap()
                        )
                    ),
                    entry(
                        &team.bob,
                        &team.bob.sign(
                            &other_request
                                .decision_statement(&team.bob.principal)
                                .unwrap()
                        )
                    )
                ])
            }),
        ),
        (
            "signatures of this request with another payload",
            ErrorCode::BadSignature,
            Box::new(|r| {
                let mallory = json!(
                    CanonicalPayload::from_json_text(r#"{"amount_cents":120000,"to":"Mallory"}"#)
                        .unwrap()
                        .digest()
                );
                let sign = |a: &Approver| {
                    a.sign(&altered_statement(
                        r,
                        &a.principal,
                        "payloadDigest",
                        mallory.clone(),
                    ))
                };
                json!([
                    entry(&team.alice, &sign(&team.alice)),
                    entry(&team.bob, &sign(&team.bob))
                ])
            }),
        ),
        (
            "signatures in another namespace",
            ErrorCode::BadSignature,
            Box::new(|r| {
                json!([
                    entry(
                        &team.alice,
                        &team.alice.sign_in_namespace(
                            "file",
                            &r.decision_statement(&team.alice.principal).unwrap()
                        )
                    ),
                    entry(
                        &team.bob,
                        &team.bob.sign_in_namespace(
                            "git",
                            &r.decision_statement(&team.bob.principal).unwrap()
                        )
                    )
                ])
            }),
        ),
        (
            "truncated signatures",
            ErrorCode::BadSignature,
            Box::new(|r| {
                let cut = |a: &Approver| {
                    let sig = a.sign(&r.decision_statement(&a.principal).unwrap());
                    let body: Vec<&str> = sig.lines().collect();
                    let keep = body.len() - 3;
                    format!("{}\n{}", body[..keep].join("\n"), body[body.len() - 1])
                };
                json!([
                    entry(&team.alice, &cut(&team.alice)),
                    entry(&team.bob, &cut(&team.bob))
                ])
            }),
        ),
        (
            "an untrusted key signing as itself and as a trusted principal",
            ErrorCode::UntrustedSigner,
            Box::new(|r| {
                json!([entry(&team.mallory, &team.mallory.sign(&r.decision_statement(&team.mallory.principal).unwrap())),
                       {"principal": "bob@example.com", "decidedBy": "mallory", "decidedAt": T0,
                        "signature": team.mallory.sign(&r.decision_statement("bob@example.com").unwrap())}])
            }),
        ),
        (
            "one principal counted twice",
            ErrorCode::InsufficientApprovals,
            Box::new(|r| {
                let sig = team
                    .alice
                    .sign(&r.decision_statement(&team.alice.principal).unwrap());
                json!([entry(&team.alice, &sig), entry(&team.alice, &sig)])
            }),
        ),
    ]
}

/// An approval made where no policy is held (or with a lower quorum) is not one the
/// executor's policy takes: refused with its reason, nothing spent. A signed one is refused
/// at the door by a gate without the approvers.
pub fn an_approval_without_the_executors_quorum_is_refused(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let lax = fx.gate_with(None);
    // Filed and approved, unsigned, through a gate that holds no policy.
    let id = file(&lax, ACTION);
    lax.approve(id, &Decision::by("agent")).unwrap();
    let refused = execute(&fx.gate, id).unwrap_err();
    assert_eq!(
        refused.code(),
        ErrorCode::InsufficientApprovals,
        "{refused}"
    );
    // A gate without the approvers records no signed approval.
    let id = file(&lax, "wire 5 EUR to ACME Ltd");
    let refused = approve_as(&lax, id, &team.alice).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NoApprovers, "{refused}");
    // One genuine signature, through a gate that needs one, where the executor needs two:
    // alice signed "one of one", which is not her part in a quorum of two.
    let low = fx.gate_with(Some(team.keys.policy(&[
        &team.alice,
        &team.bob,
        &team.carol,
    ])));
    approve_as(&low, id, &team.alice).unwrap();
    let refused = execute(&fx.gate, id).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::BadSignature, "{refused}");
    assert!(refused.to_string().contains("a quorum of 2"), "{refused}");
    assert!(!backend.claimed(&fx.store, id));
}

/// The decision statement of `request` for `principal` with one field changed, in canonical
/// form: what an approver of a different request would have signed.
fn altered_statement(
    request: &approval_gate::Request,
    principal: &str,
    field: &str,
    value: Value,
) -> Vec<u8> {
    let mut statement: Value =
        serde_json::from_slice(&request.decision_statement(principal).unwrap()).unwrap();
    statement[field] = value;
    CanonicalPayload::from_value(&statement)
        .unwrap()
        .as_bytes()
        .to_vec()
}

fn entry(approver: &Approver, signature: &str) -> Value {
    json!({
        "principal": approver.principal,
        "decidedBy": "agent",
        "decidedAt": T0,
        "signature": signature,
    })
}

impl Signed {
    /// A request of the wire's shape with its own action text.
    fn file_fresh(&self, what: &str) -> RequestId {
        file(&self.gate, &format!("{ACTION} ({what})"))
    }

    /// Another request, whose genuine signatures are misused.
    fn file_other(&self) -> RequestId {
        file(&self.gate, "wire 1 EUR to ACME Ltd")
    }
}

/// Squatting a principal: someone who can write the store (or run a gate without the
/// approvers file) stores an approval signed by their own key claiming bob. It counts for
/// nothing, is not shown as counting, and stops neither bob nor the quorum: alice and bob
/// approve and the wire runs exactly once. A gate without the approvers cannot record a
/// signed approval at all: it could not tell whose signature counts.
pub fn a_squatted_principal_counts_for_nothing_and_blocks_nobody(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let lax = fx.gate_with(None);
    let id = fx.file();
    approve_as(&fx.gate, id, &team.alice).unwrap();
    let request = fx.gate.status(id).unwrap().into_request();
    let squat = team
        .mallory
        .sign(&request.decision_statement("bob@example.com").unwrap());

    // Through a gate that holds no approvers: refused, nothing recorded.
    let before = backend.contents(&fx.store);
    let refused = lax
        .approve(
            id,
            &Decision::by("agent").signed("bob@example.com", squat.clone()),
        )
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NoApprovers, "{refused}");
    assert_eq!(
        without_audit(backend.contents(&fx.store)),
        without_audit(before),
        "nothing recorded"
    );
    let (event, details) = events(&fx.gate, id).pop().unwrap();
    assert_eq!(event, AuditEvent::DecisionRefused);
    assert_eq!(
        details["reason"], "no_approvers",
        "the refusal leaves its line"
    );

    // Written into the store by hand: stored, but it counts for nothing and blocks nobody.
    backend.tamper(&fx.store, id, &mut |record| {
        record["approvals"]
            .as_array_mut()
            .unwrap()
            .push(entry(&team.mallory, &squat));
        record["approvals"][1]["principal"] = json!("bob@example.com");
    });
    let report = fx.gate.status(id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
    assert_eq!(report.counted_approvals(), 1, "only alice counts");
    assert!(
        matches!(
            report.standings(),
            [Standing::Counts, Standing::Untrusted(_)]
        ),
        "{:?}",
        report.standings()
    );
    let refused = execute(&fx.gate, id).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NotApproved, "{refused}");

    // The real bob approves: the quorum is met and the wire runs once.
    let approved = approve_as(&fx.gate, id, &team.bob).unwrap();
    assert_eq!(
        approved.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(approved.counted_approvals(), 2);
    // A record with room keeps what it holds: the squatter's entry stays, shown as such.
    assert_eq!(approved.request().approvals().len(), 3);
    assert!(matches!(approved.standings()[1], Standing::Untrusted(_)));
    assert_eq!(execute(&fx.gate, id).unwrap(), 1);
    assert!(backend.claimed(&fx.store, id));
}

/// A record stuffed with more approvals than any quorum (entries nobody trusts, written by
/// hand) stays readable, and the real approvers still complete it: what counts for nothing
/// gives way (it stays in the audit log) rather than make the record unreadable.
pub fn more_approvals_than_any_quorum_never_make_a_record_unreadable(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let id = fx.file();
    let request = fx.gate.status(id).unwrap().into_request();
    let squat = team
        .mallory
        .sign(&request.decision_statement("mallory@example.com").unwrap());
    backend.tamper(&fx.store, id, &mut |record| {
        record["approvals"] = Value::Array(vec![entry(&team.mallory, &squat); 16]);
    });
    let report = fx.gate.status(id).unwrap();
    assert_eq!(report.counted_approvals(), 0);
    approve_as(&fx.gate, id, &team.alice).unwrap();
    let approved = approve_as(&fx.gate, id, &team.bob).unwrap();
    assert_eq!(
        approved.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    let report = fx.gate.status(id).expect("the record stays readable");
    assert_eq!(report.counted_approvals(), 2);
    assert_eq!(execute(&fx.gate, id).unwrap(), 1);

    // Stuffed with copies of a trusted approval: they count once, and the copies give way.
    let id = fx.file_fresh("copies");
    let first = approve_as(&fx.gate, id, &team.alice).unwrap();
    let alices = first.request().approvals()[0].signature().to_owned();
    backend.tamper(&fx.store, id, &mut |record| {
        record["approvals"] = Value::Array(vec![entry(&team.alice, &alices); 16]);
    });
    assert_eq!(fx.gate.status(id).unwrap().counted_approvals(), 1);
    let approved = approve_as(&fx.gate, id, &team.bob).unwrap();
    assert_eq!(
        approved.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(
        approved.request().approvals().len(),
        2,
        "alice once, then bob"
    );
    assert_eq!(execute(&fx.gate, id).unwrap(), 1);
}

/// What the human saw is what is signed: the reason and the requester, shown on every
/// approver's screen, are part of the statement. Changed between two approvers (by whoever
/// can write the store), the first approval no longer counts: the second approver saw
/// another request than the first, and the quorum is not met.
pub fn every_field_an_approver_is_shown_is_signed(backend: &dyn Backend) {
    let team = Team::new();
    let fx = Signed::new(backend, team.policy());
    let changes: [(&str, Value); 3] = [
        ("reason", json!("the invoice you approved yesterday")),
        ("requestedBy", json!("alice@example.com")),
        ("filedBy", json!("alice")),
    ];
    for (field, value) in changes {
        let id = fx.file_fresh(field);
        approve_as(&fx.gate, id, &team.alice).unwrap();
        backend.tamper(&fx.store, id, &mut |record| {
            record[field] = value.clone();
        });
        let second = approve_as(&fx.gate, id, &team.bob).unwrap();
        assert_eq!(
            second.effective_status(),
            EffectiveStatus::Pending,
            "{field}: alice approved another {field}"
        );
        let refused = execute(&fx.gate, id).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::NotApproved, "{field}: {refused}");
        assert!(!backend.claimed(&fx.store, id), "{field}");
    }
}
