//! What the gate costs, next to the floor it cannot beat.
//!
//! `cargo bench -p approval-gate --bench gate`. Results and the machine they came from are in
//! `docs/benchmarks.md`.
//!
//! - `floor_*`: the bare filesystem operations the authorization path must do (one fsync; an
//!   exclusive create made durable with its directory) in the same directory, same run.
//! - `execute_approved`: consume + `execution_started` + closure + `execution_finished`, end to
//!   end; it performs 8 fsyncs (claim file and directory, then each of 3 audit lines and its
//!   anchor).
//! - `execute_approved_payload`: the same with an operation and a small struct payload, the
//!   binding (the payload's canonical form and digest) made inside the timing and the body
//!   given the frozen copy: what `#[requires_approval]` does, and the Rust side of the Python
//!   decorator's comparison (`bindings/python/bench/execute.py`).
//! - `execute_approved_signed`: the same under a quorum policy of 0 (none), 1 and 3
//!   signatures, each verified in-process by the consume.
//! - `list_pending_among_finished`: 20 pending requests among 1k, 10k, 100k finished ones;
//!   the pending index should keep this flat.
//! - `request_approve_consume`: whole cycles from 1, 4 and 16 concurrent processes sharing one
//!   store (the bench re-executes itself as the worker processes).
#![allow(missing_docs)]

use std::io::Write;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use approval_gate::{Binding, Decision, Error, Gate, Grant, ListFilter, NewRequest, RequestId};
use divan::Bencher;
use divan::counter::ItemsCount;

const WORKER_ENV: &str = "APPROVAL_GATE_BENCH_WORKER";
const CYCLES_PER_WORKER: usize = 20;

fn main() {
    if let Some(dir) = std::env::var_os(WORKER_ENV) {
        worker(Path::new(&dir));
        return;
    }
    divan::main();
}

/// One worker process: whole request -> approve -> consume cycles.
fn worker(dir: &Path) {
    let gate = Gate::open(dir).expect("open");
    let pid = std::process::id();
    for i in 0..CYCLES_PER_WORKER {
        let action = format!("cycle {pid} {i}");
        let id = gate
            .request_approval(NewRequest::new(&action, "bench"))
            .expect("request")
            .request
            .id();
        gate.approve(id, &Decision::by("bench")).expect("approve");
        let _grant = gate
            .consume::<()>(id, &Binding::new(action))
            .expect("consume");
    }
}

#[divan::bench(sample_count = 100)]
fn floor_fsync(bencher: Bencher) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let file = std::fs::File::create(tmp.path().join("f")).unwrap();
    bencher.bench_local(|| {
        file.write_all_at(b"x", 0).unwrap();
        file.sync_data().unwrap();
    });
}

#[divan::bench(sample_count = 100)]
fn floor_durable_exclusive_create(bencher: Bencher) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let dir = std::fs::File::open(tmp.path()).unwrap();
    let mut n = 0u64;
    bencher
        .with_inputs(|| {
            n += 1;
            tmp.path().join(format!("{n}.used"))
        })
        .bench_local_values(|path| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .unwrap();
            file.write_all(b"{}").unwrap();
            file.sync_all().unwrap();
            dir.sync_all().unwrap();
        });
}

#[divan::bench(sample_count = 50)]
fn execute_approved(bencher: Bencher) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let gate = Gate::open(tmp.path().join("gate")).unwrap();
    let mut n = 0u64;
    bencher
        .with_inputs(|| {
            n += 1;
            let action = format!("bench {n}");
            let id = approved(&gate, NewRequest::new(&action, "bench"));
            (id, Binding::new(action))
        })
        .bench_local_values(|(id, binding): (RequestId, Binding)| {
            gate.execute_approved(id, &binding, |run: &Grant<()>| {
                run.assert_active()?;
                Ok::<_, Error>(())
            })
            .unwrap();
        });
}

/// Files `ask` and approves it, untimed: what each execution bench consumes.
fn approved(gate: &Gate, ask: NewRequest) -> RequestId {
    let id = gate.request_approval(ask).unwrap().request.id();
    gate.approve(id, &Decision::by("bench")).unwrap();
    id
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Email {
    to: String,
    subject: String,
}

#[divan::bench(sample_count = 50)]
fn execute_approved_payload(bencher: Bencher) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let gate = Gate::open(tmp.path().join("gate")).unwrap();
    let mut n = 0u64;
    bencher
        .with_inputs(|| {
            n += 1;
            let action = format!("bench {n}");
            let email = Email {
                to: "alice@example.com".into(),
                subject: format!("n{n}"),
            };
            let payload =
                approval_gate::CanonicalPayload::from_value(&serde_json::to_value(&email).unwrap())
                    .unwrap();
            let ask = NewRequest::new(&action, "bench")
                .operation("bench.email")
                .payload(payload);
            (approved(&gate, ask), action, email)
        })
        .bench_local_values(|(id, action, email): (RequestId, String, Email)| {
            let binding = Binding::new(action)
                .operation("bench.email")
                .payload_of(&email)
                .unwrap();
            gate.execute_approved(id, &binding, |run: &Grant<Email>| {
                run.assert_active()?;
                divan::black_box(&run.payload().to);
                Ok::<_, Error>(())
            })
            .unwrap();
        });
}

/// `execute_approved` under a policy needing `signatures` approvers (0: no policy), each
/// signature verified in the consume; keys made and statements signed by ssh-keygen, outside
/// the timing.
#[divan::bench(args = [0, 1, 3], sample_count = 50, sample_size = 1)]
fn execute_approved_signed(bencher: Bencher, signatures: u32) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let approvers: Vec<(String, std::path::PathBuf)> = (0..signatures)
        .map(|n| {
            let principal = format!("approver{n}@example.com");
            let key = tmp.path().join(format!("key{n}"));
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", &principal, "-f"])
                .arg(&key)
                .status()
                .expect("ssh-keygen");
            assert!(made.success());
            (principal, key)
        })
        .collect();
    let mut builder = Gate::builder().dir(tmp.path().join("gate"));
    if signatures > 0 {
        let mut allowed = String::new();
        for (principal, key) in &approvers {
            let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
            allowed.push_str(principal);
            allowed.push(' ');
            allowed.push_str(&public);
        }
        let policy = approval_gate::Policy::from_allowed_signers(&allowed)
            .unwrap()
            .require("*", signatures)
            .unwrap();
        builder = builder.policy(policy);
    }
    let gate = builder.open().unwrap();
    let mut n = 0u64;
    bencher
        .with_inputs(|| {
            n += 1;
            let action = format!("bench {n}");
            let id = gate
                .request_approval(NewRequest::new(&action, "bench"))
                .unwrap()
                .request
                .id();
            if approvers.is_empty() {
                gate.approve(id, &Decision::by("bench")).unwrap();
            }
            for (principal, key) in &approvers {
                let request = gate.status(id).unwrap().into_request();
                let statement = request.decision_statement(principal).unwrap();
                let signature = approval_gate::SshKeygen::system()
                    .sign(key, &statement)
                    .unwrap();
                gate.approve(id, &Decision::by("bench").signed(principal, signature))
                    .unwrap();
            }
            (id, Binding::new(action))
        })
        .bench_local_values(|(id, binding): (RequestId, Binding)| {
            gate.execute_approved(id, &binding, |run: &Grant<()>| {
                run.assert_active()?;
                Ok::<_, Error>(())
            })
            .unwrap();
        });
}

#[divan::bench(args = [1_000, 10_000, 100_000], sample_count = 50)]
fn list_pending_among_finished(bencher: Bencher, finished: usize) {
    let tmp = tempfile::tempdir_in(bench_root()).unwrap();
    let dir = tmp.path().join("gate");
    let gate = Gate::builder()
        .dir(&dir)
        .limits(approval_gate::Limits::default().max_requests(usize::MAX))
        .open()
        .unwrap();
    plant_finished(&gate, &dir, finished);
    for i in 0..20 {
        gate.request_approval(NewRequest::new(format!("pending {i}"), "bench"))
            .unwrap();
    }
    bencher.bench_local(|| {
        let page = gate.list(ListFilter::Pending, None, 100).unwrap();
        assert_eq!(page.items.len(), 20);
    });
}

#[divan::bench(args = [1, 4, 16], sample_count = 5)]
fn request_approve_consume(bencher: Bencher, processes: usize) {
    let exe = std::env::current_exe().unwrap();
    bencher
        .counter(ItemsCount::new(processes * CYCLES_PER_WORKER))
        .with_inputs(|| tempfile::tempdir_in(bench_root()).unwrap())
        .bench_local_values(|tmp| {
            let dir = tmp.path().join("gate");
            Gate::open(&dir).unwrap();
            let children: Vec<_> = (0..processes)
                .map(|_| Command::new(&exe).env(WORKER_ENV, &dir).spawn().unwrap())
                .collect();
            for mut child in children {
                assert!(child.wait().unwrap().success());
            }
            tmp
        });
}

/// Where the benches put their stores: `APPROVAL_GATE_BENCH_DIR`, else the system temp dir.
fn bench_root() -> std::path::PathBuf {
    std::env::var_os("APPROVAL_GATE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into)
}

/// Writes `n` finished (denied) request files directly, as the store would have.
fn plant_finished(gate: &Gate, dir: &Path, n: usize) {
    let template = gate
        .request_approval(NewRequest::new("template", "bench"))
        .unwrap()
        .request
        .id();
    gate.deny(template, &Decision::by("bench")).unwrap();
    let text =
        std::fs::read_to_string(dir.join("requests").join(format!("{template}.json"))).unwrap();
    for i in 0..n {
        let id = format!("{i:012x}");
        let path = dir.join("requests").join(format!("{id}.json"));
        std::fs::write(&path, text.replace(template.as_str(), &id)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}
