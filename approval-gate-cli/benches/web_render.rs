//! `approval-gate serve`'s pending page at 100 and 1,000 pending requests: the whole page
//! (`GET /`) and the live region the page fetches on each change (`GET /fragment/pending`),
//! each timed from the request sent to the last byte of the answer, over loopback.
//!
//! The time is the server's: reading the pending index and every request it names from the
//! store, escaping and rendering; a loopback round trip adds a few tens of microseconds.
//!
//! ```text
//! cargo bench -p approval-gate-cli --bench web_render
//! ```
//!
//! The store lives in a temporary directory under `APPROVAL_GATE_BENCH_DIR` if set (the
//! system's temporary directory otherwise).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use approval_gate::{CanonicalPayload, Gate, Limits, NewRequest};
use approval_gate_tests::http::Client;
use approval_gate_tests::webauthn::SoftPasskey;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use serde_json::json;

/// Queue lengths rendered.
const PENDING: [usize; 2] = [100, 1_000];

struct Served {
    child: Child,
    client: Client,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(pending: usize) -> Served {
    let dir = match std::env::var_os("APPROVAL_GATE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let store = dir.path().join("store");
    let gate = Gate::builder()
        .dir(&store)
        .limits(Limits::default().max_pending(2 * pending))
        .open()
        .unwrap();
    for n in 0..pending {
        let payload = json!({
            "to": format!("customer-{n}@example.com"),
            "subject": format!("Invoice {n}"),
            "amount": {"value": n * 7 + 100, "currency": "EUR"},
            "body": "Hello,\n\nplease find the invoice attached.\n\nBilling",
        });
        gate.request_approval(
            NewRequest::new(
                format!("send invoice {n} to customer-{n}@example.com"),
                "the invoice is due",
            )
            .requested_by("billing agent")
            .operation("smtp.send")
            .payload(CanonicalPayload::from_value(&payload).unwrap())
            .ttl(Duration::from_secs(24 * 3600)),
        )
        .unwrap();
    }
    let alice = SoftPasskey::new(1, "alice@example.com", "localhost");
    let approvers = dir.path().join("approvers");
    let port = approval_gate_tests::http::free_port();
    let line = alice.allowed_signers_line(&format!("http://localhost:{port}"));
    std::fs::write(&approvers, line + "\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_approval-gate"))
        .arg("--store")
        .arg(&store)
        .arg("--approvers")
        .arg(&approvers)
        .args([
            "--quorum",
            "*=1",
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("XDG_CONFIG_HOME", dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let origin = stderr
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.contains("serving ")
                .then(|| line.split(' ').nth(2).map(str::to_owned))
                .flatten()
        })
        .expect("serve printed its address");
    let mut client = Client::new(&origin);
    let begin = client.post_json("/signin/begin", &json!({}), "");
    let challenge = B64
        .decode(begin.json()["challenge"].as_str().unwrap())
        .unwrap();
    let made = alice.made(&origin);
    let signed = client.post_json("/signin/finish", &alice.assertion(&challenge, &made), "");
    assert_eq!(signed.status, 200, "{}", signed.body);
    let page = client.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("class=\"request\"").count(),
        pending,
        "every pending request is on the page"
    );
    Served {
        child,
        client,
        _dir: dir,
    }
}

fn pages(c: &mut Criterion) {
    let mut group = c.benchmark_group("pending page");
    group.sample_size(30);
    for pending in PENDING {
        let mut served = serve(pending);
        group.throughput(Throughput::Elements(pending as u64));
        group.bench_with_input(BenchmarkId::new("page", pending), &pending, |b, _| {
            b.iter(|| {
                let page = served.client.get("/");
                assert_eq!(page.status, 200);
            });
        });
        group.bench_with_input(BenchmarkId::new("fragment", pending), &pending, |b, _| {
            b.iter(|| {
                let page = served.client.get("/fragment/pending");
                assert_eq!(page.status, 200);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, pages);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
