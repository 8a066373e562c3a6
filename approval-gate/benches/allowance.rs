//! What a consume under an allowance costs next to a consume of a single signed approval
//! (issue 41 asks for at most 1.5x), on the directory store, and on PostgreSQL when
//! `APPROVAL_GATE_TEST_PG` names a cluster (a fresh database each run).
//!
//! `cargo bench -p approval-gate --bench allowance`. Both verify one SSH signature in the
//! consume; the allowance's also reads the allowance and its uses under its lock and appends
//! the use (fsynced on the directory store; in the claim's transaction on PostgreSQL).
#![allow(missing_docs)]

use std::process::Command;
use std::time::Duration;

use approval_gate::allowance::{
    Allowance, AllowanceSignature, Bounds, Constraint, SignedAllowance, Terms, Test,
};
use approval_gate::{
    Binding, CanonicalPayload, Clock as _, Decision, Gate, Grant, Location, NewRequest, Policy,
    RequestId, SshKeygen, SystemClock,
};
use divan::Bencher;
use serde_json::Value;

const PRINCIPAL: &str = "alice@example.com";
const OP: &str = "mail.send";

fn main() {
    divan::main();
}

/// A key made by ssh-keygen, and a policy trusting it for everything, once.
struct Key {
    _tmp: tempfile::TempDir,
    path: std::path::PathBuf,
    policy: Policy,
}

impl Key {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("key");
        let made = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", PRINCIPAL, "-f"])
            .arg(&path)
            .status()
            .expect("ssh-keygen");
        assert!(made.success());
        let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
        let policy = Policy::from_allowed_signers(&format!("{PRINCIPAL} {public}"))
            .unwrap()
            .require("*", 1)
            .unwrap();
        Self {
            _tmp: tmp,
            path,
            policy,
        }
    }

    fn sign(&self, statement: &[u8]) -> String {
        SshKeygen::system().sign(&self.path, statement).unwrap()
    }
}

fn open(location: Option<&str>, dir: &std::path::Path, policy: Policy) -> Gate {
    let builder = match location {
        Some(url) => Gate::builder().store(Location::parse(url).unwrap()),
        None => Gate::builder().dir(dir.join("gate")),
    };
    builder.policy(policy).open().unwrap()
}

/// An allowance of `mail.send` to example.com, as many uses as there are samples, a week.
fn grant(gate: &Gate, key: &Key) {
    let now = SystemClock.now();
    let terms = Terms {
        operation: OP.into(),
        constraints: vec![Constraint::new("/to", Test::Glob("*@example.com".into())).unwrap()],
        bounds: Bounds {
            uses: Some(100_000),
            budget: None,
            rate: None,
            not_before: now,
            not_after: now.saturating_add(Duration::from_secs(6 * 86_400)),
        },
        agent: None,
        reason: "bench".into(),
    };
    let allowance = Allowance::new(terms, now).unwrap();
    let signature = key.sign(&allowance.statement(PRINCIPAL, 1).unwrap());
    gate.allow(SignedAllowance {
        allowance,
        required: 1,
        signatures: vec![AllowanceSignature {
            principal: PRINCIPAL.into(),
            signature,
        }],
    })
    .unwrap();
}

fn bench_consume(bencher: Bencher, location: Option<&str>, under_allowance: bool) {
    let key = Key::new();
    let tmp = tempfile::tempdir().unwrap();
    let gate = open(location, tmp.path(), key.policy.clone());
    if under_allowance {
        grant(&gate, &key);
    }
    let mut n = 0u64;
    bencher
        .with_inputs(|| {
            n += 1;
            let payload = format!(r#"{{"n":{n},"to":"bob@example.com"}}"#);
            let payload = CanonicalPayload::from_json_text(&payload).unwrap();
            let ask = NewRequest::new("send", "bench")
                .operation(OP)
                .payload(payload.clone());
            let request = gate.request_approval(ask).unwrap().request;
            let id: RequestId = request.id();
            if under_allowance {
                assert!(request.allowance().is_some());
            } else {
                let statement = request.decision_statement(PRINCIPAL).unwrap();
                let signature = key.sign(&statement);
                gate.approve(id, &Decision::by("bench").signed(PRINCIPAL, signature))
                    .unwrap();
            }
            (id, Binding::new("send").operation(OP).payload(payload))
        })
        .bench_local_values(|(id, binding): (RequestId, Binding)| {
            let _grant: Grant<Value> = gate.consume(id, &binding).unwrap();
        });
}

/// The directory store: a single signed approval (`false`) or an allowance (`true`).
#[divan::bench(args = [false, true], sample_count = 40, sample_size = 1)]
fn consume_dir(bencher: Bencher, under_allowance: bool) {
    bench_consume(bencher, None, under_allowance);
}

/// PostgreSQL (skipped without `APPROVAL_GATE_TEST_PG`).
#[divan::bench(args = [false, true], sample_count = 40, sample_size = 1)]
fn consume_postgres(bencher: Bencher, under_allowance: bool) {
    let Some(url) = std::env::var("APPROVAL_GATE_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        bencher.bench_local(|| ());
        return;
    };
    let db = format!("bench_allow_{}", std::process::id());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db}"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .unwrap();
    let store = match url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{db}"),
        None => unreachable!("a URL with a database"),
    };
    approval_gate::postgres::init(&store).unwrap();
    bench_consume(bencher, Some(&store), under_allowance);
    let _ = admin.batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"));
}
