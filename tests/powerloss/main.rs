//! Power loss during each operation of the directory store: every state the disk could be
//! left in, checked after reopening and recovery.
//!
//! SIGKILL (the crash matrix of the conformance suite) leaves the page cache intact, so it
//! cannot see a missing fsync. Here each operation runs once with `approval_gate::fs_trace`
//! recording what it does to the disk; `model` works out every state a power loss at any
//! point could leave (what no completed fsync covered may be lost, in per-file and
//! per-directory order, the last append possibly torn); each distinct state is written out
//! as a store, reopened (which runs recovery) and checked:
//! - the invariants of the crash matrix (`tests/src/invariants.rs`): at most one run, a
//!   claim iff `consumed` is logged, every start has an outcome, a start follows an
//!   approval, terminal states stay terminal, the audit chain verifies, recovery is
//!   idempotent;
//! - no approval without its `approved` line;
//! - no state file survives half-written: requests parse, claims hold their record;
//! - once the side effect may have run, its claim and `execution_started` survive;
//! - what an operation reported before the power went survives it;
//! - a retry never runs a second time.
//!
//! Every distinct state is checked: the whole enumeration takes a few seconds.

mod model;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use approval_gate::fs_trace::{self, FsOp};
use approval_gate::{
    AuditEvent, Binding, Decision, EffectiveStatus, Error, Gate, Grant, ListFilter, ManualClock,
    NewRequest, RequestId, Status, Timestamp,
};
use approval_gate_tests::invariants;

use model::{Disk, Trace};

const T0: Timestamp = Timestamp::from_unix_millis(1_796_000_000_000);
const ACTION: &str = "pay 1 EUR";

/// Opens the store as the machine would after the power came back: in a new boot, so that
/// what the store keeps only for one boot (the queue index, the anchor's lag) is treated so.
fn open(dir: &Path) -> Gate {
    fs_trace::reboot();
    Gate::builder()
        .dir(dir)
        .clock(ManualClock::new(T0))
        .open()
        .expect("the store reopens after a power loss")
}

fn binding() -> Binding {
    Binding::new(ACTION)
}

fn ask(gate: &Gate) -> RequestId {
    gate.request_approval(NewRequest::new(ACTION, "rent"))
        .unwrap()
        .request
        .id()
}

fn approved(gate: &Gate) -> RequestId {
    let id = ask(gate);
    gate.approve(id, &Decision::by("alice")).unwrap();
    id
}

fn has(gate: &Gate, id: RequestId, event: AuditEvent) -> bool {
    gate.audit_records()
        .unwrap()
        .iter()
        .any(|r| r.id == id && r.event == event)
}

/// An operation under test: the store, the request it acts on, where the side effect ran.
type Run = fn(&Gate, Option<RequestId>, &Cell<Option<usize>>) -> Result<RequestId, Error>;

/// One operation under test.
struct Case {
    /// The store before the operation; returns the request it acts on, if any.
    setup: fn(&Gate) -> Option<RequestId>,
    /// The operation. `effect` is set to the trace position at which the side effect ran.
    run: Run,
    /// What must have survived if the operation returned before the power went.
    acknowledged: fn(&Gate, RequestId),
}

fn status(gate: &Gate, id: RequestId) -> Status {
    gate.status(id).expect("status").request().status()
}

fn consumed(gate: &Gate, id: RequestId) -> bool {
    gate.status(id)
        .is_ok_and(|r| r.effective_status() == EffectiveStatus::Consumed)
}

/// Counts every state checked and every failure, so a mutant run shows how much it broke.
#[derive(Default)]
struct Tally {
    /// Crash points: after each prefix of the trace.
    points: usize,
    /// Distinct (disk, side effect ran or not) states checked.
    checked: usize,
    /// Of those, states where something written was lost or torn.
    lossy: usize,
    /// Of those, states where the side effect had run.
    after_effect: usize,
    failures: Vec<String>,
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Panics inside a state's check are collected, not printed one by one.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info);
            }
        }));
    });
}

/// Runs `case` once under the recorder, then checks the states a power loss could leave.
fn power_loss(name: &str, case: &Case) -> Tally {
    install_quiet_hook();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gate");
    let gate = open(&dir);
    let target = (case.setup)(&gate);
    let before = model::snapshot(&dir);
    let effect = Cell::new(None);
    let (result, ops) = fs_trace::record(|| (case.run)(&gate, target, &effect));
    drop(gate);
    let id = result
        .as_ref()
        .ok()
        .copied()
        .or(target)
        .expect("an id to check");
    let returned = result.is_ok();
    assert!(returned, "{name} fails without a power loss: {result:?}");
    check_trace_is_complete(&ops);
    let trace = Trace::new(&dir, &before, ops);

    let crashed = tmp.path().join("crashed");
    let mut tally = Tally::default();
    let mut seen = HashSet::new();
    for after in 0..=trace.len() {
        tally.points += 1;
        for state in trace.crash_states(after) {
            // At the point where the side effect ran, it may or may not have happened.
            let ran_options: &[usize] = match effect.get() {
                Some(at) if at == after => &[0, 1],
                Some(at) if at < after => &[1],
                _ => &[0],
            };
            for &ran in ran_options {
                if !seen.insert((state.disk.clone(), ran)) {
                    continue;
                }
                tally.checked += 1;
                tally.lossy += usize::from(state.lossy);
                tally.after_effect += ran;
                let done = returned && after == trace.len();
                QUIET.with(|q| q.set(true));
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    check_state(&state.disk, &crashed, id, ran, done.then_some(case));
                }));
                QUIET.with(|q| q.set(false));
                if let Err(panic) = outcome {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    tally.failures.push(format!(
                        "power loss after {} operations (side effect ran: {}):{}\n    {message}",
                        state.after,
                        ran == 1,
                        state.lost
                    ));
                }
            }
        }
    }
    eprintln!(
        "{name}: {} operations, {} crash points, {} distinct crash states checked ({} losing \
         or tearing a write, {} after the side effect), {} failed",
        trace.len(),
        tally.points,
        tally.checked,
        tally.lossy,
        tally.after_effect,
        tally.failures.len()
    );
    assert!(
        tally.failures.is_empty(),
        "{name}: {} of {} power-loss states break an invariant; the trace:\n{}first failures:\n{}",
        tally.failures.len(),
        tally.checked,
        model::describe(&trace),
        tally.failures[..tally.failures.len().min(5)].join("\n")
    );
    tally
}

/// The recorder sees every kind of change the operations make; a trace without fsyncs would
/// mean the hook in `fs.rs` was bypassed.
fn check_trace_is_complete(ops: &[FsOp]) {
    assert!(
        ops.iter()
            .any(|op| matches!(op, FsOp::Fsync { .. } | FsOp::FsyncDir { .. })),
        "no fsync recorded: {ops:?}"
    );
}

fn check_state(disk: &Disk, dir: &Path, id: RequestId, ran: usize, done: Option<&Case>) {
    model::materialize(disk, dir);
    // The machine comes back in a new boot: the store replays its journal when first opened.
    fs_trace::reboot();
    invariants::check_dir(dir, id, ran);
    let gate = open(dir);
    // The queue index, which is never synced, was rebuilt on opening in the new boot: it
    // names the pending records and counts the live ones, as they are.
    let queue = std::fs::read_to_string(dir.join("queue")).expect("the queue index");
    let mut lines = queue.lines();
    let live: usize = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let indexed: std::collections::BTreeSet<String> = lines
        .take_while(|line| !line.starts_with("end "))
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .collect();
    let mut records = 0;
    let mut pending = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir.join("requests")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(id) = name
            .strip_suffix(".json")
            .filter(|_| !name.starts_with('.'))
        else {
            continue;
        };
        records += 1;
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("requests").join(&name)).unwrap())
                .unwrap();
        if record["status"] == "pending" {
            pending.insert(id.to_owned());
        }
    }
    assert_eq!(
        (live, indexed),
        (records, pending),
        "the queue index after a power loss"
    );
    // No state file is left half-written once the store has moved on from writing it: a
    // claim whose `consumed` line was written by the consume itself (not added by recovery)
    // holds its record.
    let logged = gate.audit_records().unwrap().into_iter().any(|r| {
        r.id == id && r.event == AuditEvent::Consumed && !r.details.contains_key("recovered")
    });
    if logged {
        let path = dir.join("claims").join(format!("{id}.used"));
        let bytes = std::fs::read(&path).expect("a logged claim exists");
        let claim: serde_json::Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("the claim is not its record: {e}"));
        assert!(
            claim.get("consumedAt").is_some(),
            "claim without consumedAt"
        );
    }
    match gate.status(id) {
        Ok(report) => {
            if report.request().status() == Status::Approved {
                assert!(
                    has(&gate, id, AuditEvent::Approved),
                    "approved without its approved line"
                );
            }
        }
        // The request op may lose the whole request; a request that exists must be readable.
        Err(Error::NotFound(_)) => {}
        Err(other) => panic!("status after a power loss: {other}"),
    }
    if ran == 1 {
        assert!(
            consumed(&gate, id),
            "the side effect ran but its claim is gone"
        );
        assert!(
            has(&gate, id, AuditEvent::ExecutionStarted),
            "the side effect ran but execution_started is gone"
        );
    }
    if let Some(case) = done {
        (case.acknowledged)(&gate, id);
    }
    // A retry after the power comes back never runs a second time.
    let retries = Cell::new(0);
    let _ = gate.execute_approved(id, &binding(), |_: &Grant<()>| {
        retries.set(retries.get() + 1);
        Ok::<_, Error>(())
    });
    assert!(ran + retries.get() <= 1, "ran twice across a power loss");
    gate.verify_audit()
        .expect("the audit chain verifies after the retry");
}

const REQUEST: Case = Case {
    setup: |_| None,
    run: |gate, _, _| Ok(ask(gate)),
    acknowledged: |gate, id| {
        assert_eq!(status(gate, id), Status::Pending, "an acknowledged request");
        assert!(has(gate, id, AuditEvent::Requested));
        let pending = gate.list(ListFilter::Pending, None, 100).unwrap();
        assert!(
            pending
                .items
                .iter()
                .any(|item| item.report().is_some_and(|r| r.request().id() == id)),
            "an acknowledged request is listed as pending"
        );
        let again = gate
            .request_approval(NewRequest::new(ACTION, "rent"))
            .unwrap();
        assert!(
            again.deduplicated && again.request.id() == id,
            "an acknowledged request is found by its ask"
        );
    },
};

const APPROVE: Case = Case {
    setup: |gate| Some(ask(gate)),
    run: |gate, id, _| {
        let id = id.unwrap();
        gate.approve(id, &Decision::by("alice")).map(|_| id)
    },
    acknowledged: |gate, id| {
        assert_eq!(
            status(gate, id),
            Status::Approved,
            "an acknowledged approval"
        );
    },
};

const DENY: Case = Case {
    setup: |gate| Some(ask(gate)),
    run: |gate, id, _| {
        let id = id.unwrap();
        gate.deny(id, &Decision::by("alice")).map(|_| id)
    },
    acknowledged: |gate, id| {
        assert_eq!(status(gate, id), Status::Denied, "an acknowledged denial");
        assert!(has(gate, id, AuditEvent::Denied));
    },
};

const REVOKE: Case = Case {
    setup: |gate| Some(approved(gate)),
    run: |gate, id, _| {
        let id = id.unwrap();
        gate.revoke(id, &Decision::by("alice")).map(|_| id)
    },
    acknowledged: |gate, id| {
        assert_eq!(
            status(gate, id),
            Status::Revoked,
            "an acknowledged revocation"
        );
        assert!(has(gate, id, AuditEvent::Revoked));
    },
};

const CONSUME: Case = Case {
    setup: |gate| Some(approved(gate)),
    run: |gate, id, _| {
        let id = id.unwrap();
        gate.consume::<()>(id, &binding()).map(|_| id)
    },
    acknowledged: |gate, id| {
        assert!(consumed(gate, id), "an acknowledged consume");
        assert!(has(gate, id, AuditEvent::Consumed));
    },
};

const EXECUTE: Case = Case {
    setup: |gate| Some(approved(gate)),
    run: |gate, id, effect| {
        let id = id.unwrap();
        gate.execute_approved(id, &binding(), |_: &Grant<()>| {
            effect.set(Some(fs_trace::position()));
            Ok::<_, Error>(())
        })
        .map(|()| id)
    },
    acknowledged: |gate, id| {
        assert!(consumed(gate, id), "an acknowledged execution");
        let finished = RefCell::new(0);
        for r in gate.audit_records().unwrap() {
            if r.id == id && r.event == AuditEvent::ExecutionFinished {
                assert_eq!(r.details["outcome"], "ok", "the outcome survives");
                *finished.borrow_mut() += 1;
            }
        }
        assert_eq!(*finished.borrow(), 1);
    },
};

/// The store as the layout before the journal left it: no `journal.wal`, and an anchor of
/// three fields (the line, its hash, the boot), written in an ended boot.
fn before_the_journal(gate: &Gate) {
    let dir = gate.dir().expect("a directory store");
    std::fs::remove_file(dir.join("journal.wal")).expect("the journal");
    anchor_in_an_ended_boot(dir);
}

/// Writes `audit.head` at the log's last line as the layout before the journal did (three
/// fields: the line, its hash, the boot), in a boot that has ended.
fn anchor_in_an_ended_boot(dir: &Path) {
    let log = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    let head = format!(
        "{:020} {} 00000000-0000-4000-8000-000000000001\n",
        last["seq"].as_u64().unwrap(),
        last["hash"].as_str().unwrap()
    );
    std::fs::write(dir.join("audit.head"), head).unwrap();
}

/// The first step on a store of the layout before the journal makes the journal: a power
/// loss anywhere in it leaves a store that opens, with the request where it stood.
const FIRST_STEP_AFTER_THE_JOURNAL_CAME: Case = Case {
    setup: |gate| {
        let id = ask(gate);
        before_the_journal(gate);
        Some(id)
    },
    run: |gate, id, _| {
        let id = id.unwrap();
        gate.approve(id, &Decision::by("alice")).map(|_| id)
    },
    acknowledged: |gate, id| {
        assert_eq!(
            status(gate, id),
            Status::Approved,
            "an acknowledged approval"
        );
        assert!(has(gate, id, AuditEvent::Requested));
    },
};

#[test]
fn power_loss_during_the_first_step_on_a_store_from_before_the_journal() {
    let tally = power_loss(
        "first step after the journal came",
        &FIRST_STEP_AFTER_THE_JOURNAL_CAME,
    );
    assert!(tally.lossy > 0, "the model loses unsynced writes");
}

/// A power loss took what a filing and an approval (and, if `consume`, a consume) wrote
/// without syncing (the record, the claim, the log's lines) and left their journal entries
/// and an anchor of an ended boot.
fn lost_all_but_the_journal(gate: &Gate, consume: bool) -> RequestId {
    let dir = gate.dir().expect("a directory store").to_path_buf();
    let before = std::fs::read(dir.join("audit.jsonl")).unwrap();
    let id = approved(gate);
    if consume {
        drop(gate.consume::<()>(id, &binding()).unwrap());
        for mark in ["used", "logged"] {
            std::fs::remove_file(dir.join("claims").join(format!("{id}.{mark}"))).unwrap();
        }
    }
    std::fs::remove_file(dir.join("requests").join(format!("{id}.json"))).unwrap();
    std::fs::write(dir.join("audit.jsonl"), &before).unwrap();
    anchor_in_an_ended_boot(&dir);
    id
}

/// Opening the store after a power loss replays its journal and syncs what the replay wrote:
/// a second power loss anywhere in the replay leaves a store whose next opening still has
/// the approved request, with its lines.
const REPLAY: Case = Case {
    setup: |gate| {
        // A first request, so that the log the journal's header names is not empty.
        ask(gate);
        Some(lost_all_but_the_journal(gate, false))
    },
    run: |gate, id, _| {
        fs_trace::reboot();
        let dir = gate.dir().expect("a directory store");
        Gate::builder()
            .dir(dir)
            .clock(ManualClock::new(T0))
            .open()
            .map(|_| id.unwrap())
    },
    acknowledged: |gate, id| {
        assert_eq!(status(gate, id), Status::Approved, "replayed");
        assert!(has(gate, id, AuditEvent::Requested));
        assert!(has(gate, id, AuditEvent::Approved));
    },
};

/// The same with a consume in the journal: its claim, made again by the replay, survives a
/// second power loss (the request stays spent).
const REPLAY_CONSUMED: Case = Case {
    setup: |gate| {
        ask(gate);
        Some(lost_all_but_the_journal(gate, true))
    },
    run: REPLAY.run,
    acknowledged: |gate, id| {
        assert!(consumed(gate, id), "the consume replayed");
        assert!(has(gate, id, AuditEvent::Consumed));
    },
};

#[test]
fn power_loss_during_the_replay_of_a_consume() {
    let tally = power_loss("replay of a consume", &REPLAY_CONSUMED);
    assert!(tally.lossy > 0, "the model loses unsynced writes");
}

#[test]
fn power_loss_during_the_replay_after_a_power_loss() {
    let tally = power_loss("replay", &REPLAY);
    assert!(tally.lossy > 0, "the model loses unsynced writes");
}

#[test]
fn power_loss_during_request_approval() {
    let tally = power_loss("request_approval", &REQUEST);
    assert!(tally.lossy > 0, "the model loses unsynced writes");
}

#[test]
fn power_loss_during_approve() {
    power_loss("approve", &APPROVE);
}

#[test]
fn power_loss_during_deny() {
    power_loss("deny", &DENY);
}

#[test]
fn power_loss_during_revoke() {
    power_loss("revoke", &REVOKE);
}

#[test]
fn power_loss_during_consume() {
    power_loss("consume", &CONSUME);
}

#[test]
fn power_loss_during_execute_approved() {
    let tally = power_loss("execute_approved", &EXECUTE);
    assert!(
        tally.after_effect > 0,
        "states after the side effect were checked"
    );
}
