//! Passkey approvals and the signature counter (WebAuthn §7.2 step 22): an authenticator that
//! counts its signatures returns a larger counter each time, and a clone of it, used after the
//! original, returns one that is not. The gate records an approval only if its counter is
//! above every counter of the same key among the approvals the store holds, checked under the
//! store's lock with the write, whichever front end approves.

use std::sync::{Arc, Barrier};

use approval_gate::{
    AuditEvent, Decision, EffectiveStatus, Error, ErrorCode, Gate, NewRequest, Policy, RequestId,
    StatusReport,
};

use crate::backend::{Backend, Store};
use crate::webauthn::SoftPasskey;
use crate::{T0, suite::count};

const RP: &str = "approvals.example.com";
const ORIGIN: &str = "https://approvals.example.com";
const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// Alice's passkey (seed 1) and Bob's (seed 2, which does not count, as a synced passkey).
fn alice() -> SoftPasskey {
    SoftPasskey::new(1, ALICE, RP)
}

fn bob() -> SoftPasskey {
    SoftPasskey::new(2, BOB, RP).without_counter()
}

/// A gate on `store` trusting Alice's and Bob's passkeys, one approval each (as each process
/// of a front end opens its own).
fn open(store: &Store) -> Gate {
    let lines = format!(
        "{}\n{}\n",
        alice().allowed_signers_line(ORIGIN),
        bob().allowed_signers_line(ORIGIN)
    );
    let policy = Policy::from_allowed_signers(&lines)
        .and_then(|policy| policy.require("*", 1))
        .expect("a policy");
    store
        .builder()
        .clock(approval_gate::ManualClock::new(T0))
        .policy(policy)
        .open()
        .expect("open the store")
}

fn file(gate: &Gate, n: u32) -> RequestId {
    let new = NewRequest::new(format!("wire {n} EUR to ACME Ltd"), "invoice");
    gate.request_approval(new).expect("request").request.id()
}

/// `passkey` approves `id` as the request stands, through the library (no web page).
fn approve(gate: &Gate, id: RequestId, passkey: &SoftPasskey) -> Result<StatusReport, Error> {
    let request = gate.status(id)?.into_request();
    let statement = request.decision_statement(&passkey.principal)?;
    let signature = passkey.approval(&statement, ORIGIN);
    gate.approve(
        id,
        &Decision::by("tester").signed(&passkey.principal, signature),
    )
}

fn status(gate: &Gate, id: RequestId) -> EffectiveStatus {
    gate.status(id).expect("status").effective_status()
}

/// Whether `result` is the refusal of a counter that went back, saying `(now after seen)`.
fn went_back<T>(result: &Result<T, Error>, now: u32, seen: u32) -> bool {
    matches!(result, Err(error) if error.code() == ErrorCode::BadSignature
        && error.to_string().contains(&format!("counter went back ({now} after {seen})")))
}

/// An approval through the library API whose counter is not above the one stored for its key
/// (a clone of Alice's authenticator, used after the original) approves nothing and leaves a
/// `decision_refused` line; a key that does not count is never held to a counter, another
/// key's counter does not hold this one, and the real authenticator counting on approves.
pub fn a_cloned_passkey_whose_counter_goes_back_approves_nothing_and_is_audited(
    backend: &dyn Backend,
) {
    let store = backend.fresh();
    let gate = open(&store);
    let (first, second) = (file(&gate, 1), file(&gate, 2));
    let original = alice();
    // Counters 1 and 2: each above the last.
    approve(&gate, first, &original).expect("the first approval");
    // A clone of the key made before both: its count starts again.
    let clone = alice();
    let refused = approve(&gate, second, &clone);
    assert!(went_back(&refused, 1, 1), "{refused:?}");
    assert_eq!(status(&gate, second), EffectiveStatus::Pending);
    assert_eq!(count(&gate, second, AuditEvent::DecisionRefused), 1);
    let refusal = gate
        .audit_records()
        .unwrap()
        .into_iter()
        .rfind(|r| r.id == second && r.event == AuditEvent::DecisionRefused)
        .unwrap();
    assert_eq!(refusal.details["reason"], "bad_signature", "{refusal:?}");
    // A copy that stopped counting (0 after 1) is refused too.
    let zeroed = alice().without_counter();
    assert!(went_back(&approve(&gate, second, &zeroed), 0, 1));
    // Bob's passkey does not count: 0 after 0 is no clone, however often.
    let bob = bob();
    for n in [3, 4] {
        approve(&gate, file(&gate, n), &bob).expect("a passkey that does not count");
    }
    // The original, counting on (2), approves.
    approve(&gate, second, &original).expect("the original, counting on");
    assert_eq!(status(&gate, second), EffectiveStatus::ApprovedUnconsumed);
    // Another gate on the same store (another process) knows the counter too.
    let elsewhere = open(&store);
    let third = file(&elsewhere, 5);
    assert!(went_back(&approve(&elsewhere, third, &clone), 2, 2));
    assert_eq!(status(&gate, third), EffectiveStatus::Pending);
}

/// Two copies of one authenticator approve two requests at the same moment with the same
/// counter, each through its own gate (two processes): the store takes exactly one, and the
/// other is refused as a clone. Round after round, so the check and the write are never apart.
pub fn two_approvals_with_the_same_counter_race_and_exactly_one_is_recorded(backend: &dyn Backend) {
    const ROUNDS: u32 = 8;
    let store = backend.fresh();
    let gates = [open(&store), open(&store)];
    let copies = [alice(), alice()];
    for round in 1..=ROUNDS {
        let ids = [file(&gates[0], 2 * round), file(&gates[0], 2 * round + 1)];
        let start = Arc::new(Barrier::new(2));
        let results: Vec<Result<EffectiveStatus, Error>> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..2)
                .map(|i| {
                    let (gate, copy, id, start) = (&gates[i], &copies[i], ids[i], &start);
                    // Both sign first (counter `round` each), then approve together.
                    let request = gate.status(id).unwrap().into_request();
                    let statement = request.decision_statement(ALICE).unwrap();
                    let signature = copy.approval(&statement, ORIGIN);
                    scope.spawn(move || {
                        start.wait();
                        gate.approve(id, &Decision::by("tester").signed(ALICE, signature))
                            .map(|report| report.effective_status())
                    })
                })
                .collect();
            runs.into_iter().map(|run| run.join().unwrap()).collect()
        });
        let approved = results.iter().filter(|result| result.is_ok()).count();
        assert_eq!(approved, 1, "round {round}: {results:?}");
        let refused = results
            .iter()
            .filter(|result| went_back(result, round, round))
            .count();
        assert_eq!(refused, 1, "round {round}: {results:?}");
        let statuses: Vec<EffectiveStatus> = ids.iter().map(|&id| status(&gates[1], id)).collect();
        assert!(
            statuses.contains(&EffectiveStatus::ApprovedUnconsumed)
                && statuses.contains(&EffectiveStatus::Pending),
            "round {round}: {statuses:?}"
        );
    }
}
