//! The store `tests/fixtures/dir-store-0.1/`, as release 0.1's directory store writes it
//! (before issue 42's journal), and the ignored test that writes it on a manual clock. It is
//! committed, and must never be written again by a later layout, or `migrate_layout` would
//! test nothing. Its `locks/` (256 empty files the store makes on open) is left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use approval_gate::Clock as _;
use approval_gate::allowance::Allowance;
use approval_gate::{
    Binding, CanonicalPayload, Decision, Error, Gate, Grant, ListFilter, ManualClock, NewRequest,
    RequestId, Timestamp,
};
use approval_gate_tests::suite::allowances::{Team, sign, terms};
use serde_json::Value;

/// The committed store.
pub(crate) const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/dir-store-0.1");

/// The boot the fixture was written in, in place of the writer's: a store is opened after a
/// reboot, and this machine's boot id has no business in the repository.
pub(crate) const FIXTURE_BOOT: &str = "00000000-0000-4000-8000-000000000001";

/// When the fixture's story begins: 2026-11-20T00:00:00Z.
const START: Timestamp = Timestamp::from_unix_millis(1_795_132_800_000);

const DAY: Duration = Duration::from_secs(24 * 3600);
pub(crate) const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);
pub(crate) const MINUTE: Duration = Duration::from_secs(60);

/// Copies `from` into `to` (made), leaving out `locks/`.
fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            if name != "locks" {
                copy_store(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn payload(json: &str) -> CanonicalPayload {
    CanonicalPayload::from_json_text(json).unwrap()
}

/// Files a request for `action` (operation `pay`, an amount as payload) lasting `ttl`.
pub(crate) fn file(gate: &Gate, action: &str, ttl: Duration) -> RequestId {
    gate.request_approval(
        NewRequest::new(action, format!("the fixture's {action}"))
            .requested_by("agent-7")
            .operation("pay")
            .payload(payload(r#"{"amount_cents":1200,"to":"acme"}"#))
            .ttl(ttl),
    )
    .unwrap()
    .request
    .id()
}

pub(crate) fn bound(action: &str) -> Binding {
    Binding::new(action)
        .operation("pay")
        .payload(payload(r#"{"amount_cents":1200,"to":"acme"}"#))
}

/// The request the fixture's allowance approved, and what it was bound to.
pub(crate) const ALLOWED: &str = "send the allowed invoice";
const ALLOWED_OPERATION: &str = "mail.send";
const ALLOWED_PAYLOAD: &str = r#"{"amount":4000,"to":"bob@example.com"}"#;

pub(crate) fn allowed() -> Binding {
    Binding::new(ALLOWED)
        .operation(ALLOWED_OPERATION)
        .payload(payload(ALLOWED_PAYLOAD))
}

pub(crate) fn approve(gate: &Gate, id: RequestId) {
    gate.approve(id, &Decision::by("alice").reason("fine by me"))
        .unwrap();
}

/// Writes the fixture again from today's code, replacing the committed one: `cargo test -p
/// approval-gate-tests --test it migrate_layout_fixture::write_the_fixture -- --ignored`. Only
/// ever run on the layout the fixture stands for (the store ids differ at each run).
#[test]
#[ignore = "writes tests/fixtures/dir-store-0.1: run only to make the fixture again"]
fn write_the_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let clock = ManualClock::new(START);
    let gate = Gate::builder()
        .dir(&dir)
        .clock(clock.clone())
        .open()
        .unwrap();
    archived_long_ago(&gate, &clock);
    decided_and_spent(&gate);
    allowance_used_once(&dir, &clock);

    // The minute-long ones lapse; a listing records the pending one's expiry.
    clock.advance(2 * MINUTE);
    gate.list(ListFilter::All, None, 100).unwrap();
    // Lapses after the fixture was written, before it is opened again.
    file(&gate, "pay the lapsing invoice", 10 * MINUTE);

    // A crash while an action runs: the store as it is then, its marker unlocked.
    let crashed = file(&gate, "pay the crashed invoice", WEEK);
    approve(&gate, crashed);
    let out = PathBuf::from(FIXTURE);
    gate.execute_approved(
        crashed,
        &bound("pay the crashed invoice"),
        |_: &Grant<Value>| {
            if out.exists() {
                std::fs::remove_dir_all(&out).unwrap();
            }
            copy_store(&dir, &out);
            Ok::<_, Error>(())
        },
    )
    .unwrap();
    forget_this_boot(&out);
}

/// Ten days before the rest: executed, then archived (with its claim) nine days on.
fn archived_long_ago(gate: &Gate, clock: &ManualClock) {
    let archived = file(gate, "pay the archived invoice", MINUTE);
    approve(gate, archived);
    gate.execute_approved(
        archived,
        &bound("pay the archived invoice"),
        |_: &Grant<Value>| Ok::<_, Error>(()),
    )
    .unwrap();
    clock.advance(9 * DAY);
    assert_eq!(gate.archive(8).unwrap().archived, [archived]);
    clock.advance(DAY);
}

/// A request of each status, claims spent by a consume and by executions that ended well and
/// badly, and refusals on the record.
fn decided_and_spent(gate: &Gate) {
    file(gate, "pay the pending invoice", WEEK);
    file(gate, "pay the other pending invoice", WEEK);
    let approved = file(gate, "pay the approved invoice", WEEK);
    approve(gate, approved);
    let approved_late = file(gate, "pay the approved late invoice", MINUTE);
    approve(gate, approved_late);
    let denied = file(gate, "pay the denied invoice", WEEK);
    gate.deny(denied, &Decision::by("bob").reason("not ours"))
        .unwrap();
    let revoked = file(gate, "pay the revoked invoice", WEEK);
    approve(gate, revoked);
    gate.revoke(revoked, &Decision::by("alice").reason("changed my mind"))
        .unwrap();
    file(gate, "pay the expired invoice", MINUTE);
    let consumed = file(gate, "pay the consumed invoice", WEEK);
    approve(gate, consumed);
    drop(
        gate.consume::<Value>(consumed, &bound("pay the consumed invoice"))
            .unwrap(),
    );
    let executed = file(gate, "pay the executed invoice", WEEK);
    approve(gate, executed);
    gate.execute_approved(
        executed,
        &bound("pay the executed invoice"),
        |_: &Grant<Value>| Ok::<_, Error>(()),
    )
    .unwrap();
    let failed = file(gate, "pay the failed invoice", WEEK);
    approve(gate, failed);
    let failure = gate.execute_approved(
        failed,
        &bound("pay the failed invoice"),
        |_: &Grant<Value>| {
            Err::<(), _>(Error::InvalidInput {
                field: "to",
                problem: "the bank refused".into(),
            })
        },
    );
    assert!(failure.is_err());

    // Refusals on the record: a consume of what is not approved, a replay of a spent one, a
    // consume bound to another action, a decision on a decided one.
    assert!(
        gate.consume::<Value>(denied, &bound("pay the denied invoice"))
            .is_err()
    );
    assert!(
        gate.consume::<Value>(consumed, &bound("pay the consumed invoice"))
            .is_err()
    );
    assert!(
        gate.consume::<Value>(approved, &bound("pay something else"))
            .is_err()
    );
    assert!(gate.approve(denied, &Decision::by("alice")).is_err());
}

/// An allowance Alice signed, used once: a request it covers, approved by it when filed, then
/// spent (its use counted in the same step). Her key is made for the run and not kept: a
/// store opened without her policy still lists the allowance and its uses.
fn allowance_used_once(dir: &Path, clock: &ManualClock) {
    let team = Team::new();
    let allowing = Gate::builder()
        .dir(dir)
        .clock(clock.clone())
        .policy(team.policy())
        .open()
        .unwrap();
    let mut terms = terms(ALLOWED_OPERATION);
    terms.bounds.not_before = clock.now();
    terms.bounds.not_after = clock.now().saturating_add(WEEK);
    let allowance = Allowance::new(terms, clock.now()).unwrap();
    allowing.allow(sign(allowance, 1, &[&team.alice])).unwrap();
    let covered = allowing
        .request_approval(
            NewRequest::new(ALLOWED, "the fixture's allowed invoice")
                .operation(ALLOWED_OPERATION)
                .payload(payload(ALLOWED_PAYLOAD)),
        )
        .unwrap()
        .request;
    assert!(covered.allowance().is_some());
    drop(allowing.consume::<Value>(covered.id(), &allowed()).unwrap());
}

/// Puts [`FIXTURE_BOOT`] in place of this machine's boot id wherever the store wrote it
/// (`audit.head`, `queue`): same length, so nothing else moves.
fn forget_this_boot(store: &Path) {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let boot = boot.trim();
    assert_eq!(boot.len(), FIXTURE_BOOT.len());
    for file in ["audit.head", "queue"] {
        let path = store.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(boot),
            "{file} names the boot it was written in"
        );
        std::fs::write(&path, text.replace(boot, FIXTURE_BOOT)).unwrap();
    }
}
