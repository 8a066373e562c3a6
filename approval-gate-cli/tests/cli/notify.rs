//! `approval-gate notify` end to end, against a real local HTTP receiver that verifies every
//! Standard Webhooks signature: retries, dead letters, a `kill -9` mid-delivery, reminders
//! and escalation, and three notifiers over one PostgreSQL store (`postgres::`).

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use approval_gate::NewRequest;
use approval_gate_tests::receiver::{Received, Receiver, Reply, WAIT_BOUND};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use crate::support::{BIN, Store, operator_settings_of_this_test_only};

/// The webhook key, as its file holds it.
pub(crate) const KEY: [u8; 32] = [0x5a; 32];
/// What the file holds: `whsec_` and the key's base64.
pub(crate) fn secret_text() -> String {
    format!("whsec_{}", STANDARD.encode(KEY))
}

/// The page links' origin.
pub(crate) const ORIGIN: &str = "https://approvals.example.com";

/// A config file (and its secret file) in `dir`: a webhook channel `ops` to `url`, plus `rest`.
pub(crate) fn write_config(dir: &Path, url: &str, rest: &str) -> PathBuf {
    let secret = dir.join("webhook.key");
    std::fs::write(&secret, format!("{}\n", secret_text())).unwrap();
    let config = dir.join("notify.toml");
    std::fs::write(
        &config,
        format!(
            "public_url = \"{ORIGIN}\"\n[notify.channels.ops]\ntype = \"webhook\"\n\
             url = \"{url}\"\nsecret = {{ file = \"{}\" }}\n{rest}",
            secret.display()
        ),
    )
    .unwrap();
    config
}

/// `approval-gate --store STORE --config CONFIG notify ARGS`, with this test's settings only
/// (retries 5 ms apart unless `args` say).
pub(crate) fn notifier(store: &str, config: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["--store", store, "--config"])
        .arg(config)
        .arg("notify")
        .args(["--fallback-secs", "1"])
        .args(args)
        .env_remove("APPROVAL_GATE_DIR")
        .env_remove("APPROVAL_GATE_LOG")
        .stdin(Stdio::null());
    if !args.contains(&"--retry-base-ms") {
        command.args(["--retry-base-ms", "5"]);
    }
    operator_settings_of_this_test_only(&mut command, &config.with_extension("xdg"));
    command
}

/// Whether `request` carries a valid signature of its body.
pub(crate) fn verified(request: &Received) -> bool {
    let (Some(id), Some(timestamp), Some(signature)) = (
        request.header("webhook-id"),
        request.header("webhook-timestamp"),
        request.header("webhook-signature"),
    ) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(&KEY).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&request.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    signature.split(' ').any(|s| s == expected)
}

/// A receiver that answers 503 to the first two attempts of each webhook-id, then 204.
pub(crate) fn flaky() -> Receiver {
    Receiver::start(|request, earlier| {
        let key = request.header("webhook-id");
        let tries = earlier
            .iter()
            .filter(|r| r.header("webhook-id") == key)
            .count();
        Reply::Status(if tries < 2 { 503 } else { 204 })
    })
}

/// The requests received, by webhook-id.
pub(crate) fn by_key(received: &[Received]) -> BTreeMap<String, Vec<Received>> {
    let mut keys: BTreeMap<String, Vec<Received>> = BTreeMap::new();
    for request in received {
        let key = request.header("webhook-id").unwrap_or("?").to_owned();
        keys.entry(key).or_default().push(request.clone());
    }
    keys
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn each_request_is_received_verified_and_accepted_exactly_once_with_its_link() {
    let store = Store::new();
    let receiver = flaky();
    let config = write_config(store.scratch(), &receiver.url(), "");
    let hostile = store.ask("send \"$5\" to bob\n\u{1b}[2Japproved");
    let ids = [
        store.ask("deploy the site").id(),
        hostile.id(),
        store.ask("x").id(),
    ];
    let location = store.path.to_str().unwrap();

    let output = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let keys = by_key(&receiver.wait_for(9));
    assert_eq!(keys.len(), 3, "{keys:?}");
    for id in ids {
        let key = format!("{id}.ops.filed");
        let attempts = &keys[&key];
        assert_eq!(attempts.len(), 3, "{key}: two refusals, then accepted");
        assert!(
            attempts.iter().all(verified),
            "{key}: every signature verifies"
        );
        assert_eq!(attempts.iter().filter(|r| r.accepted()).count(), 1, "{key}");
        let body = attempts[2].json();
        assert_eq!(body["type"], "approval.requested");
        assert_eq!(body["data"]["id"], id.to_string());
        assert_eq!(body["data"]["url"], format!("{ORIGIN}/requests/{id}"));
    }
    // The agent's text travels as JSON text, not as markup or raw control characters.
    let hostile_body = keys[&format!("{}.ops.filed", hostile.id())][0].json();
    assert_eq!(
        hostile_body["data"]["action"],
        "send \"$5\" to bob  [2Japproved"
    );
    // The secret, read from its file, is never printed.
    let shown = text(&output);
    assert!(!shown.contains(&secret_text()), "{shown}");
    assert!(!shown.contains(&STANDARD.encode(KEY)), "{shown}");
    assert!(shown.contains("delivered"), "{shown}");

    // A restart finds every delivery made: nothing is sent again.
    let again = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(receiver.received().len(), 9);
}

#[test]
fn a_400_is_a_dead_letter_at_once_and_doctor_shows_it() {
    let store = Store::new();
    let receiver = Receiver::start(|_, _| Reply::Status(400));
    let config = write_config(store.scratch(), &receiver.url(), "");
    let id = store.ask("deploy").id();
    let location = store.path.to_str().unwrap();

    let output = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(receiver.wait_for(1).len(), 1);
    assert!(text(&output).contains("dead letter"), "{}", text(&output));
    // Not tried again, by this notifier or the next.
    let again = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(receiver.received().len(), 1);

    let doctor = store.run(&["doctor"]);
    let shown = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        shown.contains(&format!("dead letter {id}.ops.filed")) && shown.contains("answered 400"),
        "{shown}"
    );
    let doctor = store.run(&["doctor", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(json["deadLetters"][0]["key"], format!("{id}.ops.filed"));
    assert_eq!(json["deadLetters"][0]["attempts"], 1);
    // The ledger's directory is the store's own: not stray, and a dead letter is no damage.
    assert_eq!(json["stray"], serde_json::json!([]), "{json}");
    assert_eq!(json["ok"], true, "{json}");
}

/// A notifier running until killed, its stderr lines sent on as they come.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    fn start(mut command: Command) -> Self {
        let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// Waits for a line containing `needle`.
    fn wait_for_line(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(WAIT_BOUND) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line with {needle:?}: {e}"),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_notifier_killed_mid_delivery_delivers_everything_after_a_restart_and_nothing_twice() {
    let store = Store::new();
    let first = store.ask("first").id();
    // The first attempt of the request "held" hangs until released; all else is accepted.
    let receiver = Receiver::start(|request, earlier| {
        let key = request.header("webhook-id");
        let tried = earlier.iter().any(|r| r.header("webhook-id") == key);
        if request.json()["data"]["action"] == "held" && !tried {
            Reply::Hold
        } else {
            Reply::Status(204)
        }
    });
    let config = write_config(store.scratch(), &receiver.url(), "");
    let location = store.path.to_str().unwrap();
    let mut running = Running::start(notifier(location, &config, &[]));
    // The first request's delivery completes (and is recorded) before the kill.
    running.wait_for_line(&format!("delivered {first}.ops.filed"));
    let held = store.ask("held").id();
    receiver.wait_until("the held delivery", |received| {
        received.iter().any(|r| r.reply == Reply::Hold)
    });
    running.child.kill().unwrap(); // SIGKILL, mid-delivery
    running.child.wait().unwrap();
    receiver.release();
    let later = store.ask("filed while no notifier ran").id();

    let output = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let keys = by_key(&receiver.received());
    for id in [first, held, later] {
        let key = format!("{id}.ops.filed");
        let accepted = keys.get(&key).map_or(0, |attempts| {
            attempts.iter().filter(|r| r.accepted()).count()
        });
        assert_eq!(accepted, 1, "{key} delivered once: {keys:?}");
    }
    // Completed before the kill: not sent again.
    assert_eq!(keys[&format!("{first}.ops.filed")].len(), 1, "{keys:?}");
    assert_eq!(keys[&format!("{held}.ops.filed")].len(), 2, "{keys:?}");
}

#[test]
fn a_reminder_and_an_escalation_fire_while_the_request_waits() {
    let store = Store::new();
    let receiver = Receiver::accepting();
    let oncall = Receiver::accepting();
    let config = write_config(
        store.scratch(),
        &receiver.url(),
        &format!(
            "[notify]\nreminder_before = \"9s\"\n\
             [notify.channels.oncall]\ntype = \"webhook\"\nurl = \"{}\"\n\
             secret = {{ file = \"{}\" }}\non_call = true\n\
             [[notify.escalate]]\noperations = \"payments.*\"\nafter = \"1s\"\n\
             channels = [\"oncall\"]\n",
            oncall.url(),
            store.scratch().join("webhook.key").display()
        ),
    );
    let id = store
        .gate()
        .request_approval(
            NewRequest::new("refund order 7", "the customer asked")
                .operation("payments.refund")
                .ttl(Duration::from_secs(10)),
        )
        .unwrap()
        .request
        .id();
    let location = store.path.to_str().unwrap();
    let _running = Running::start(notifier(location, &config, &[]));
    let types = |received: &[Received]| -> Vec<String> {
        received
            .iter()
            .map(|r| r.json()["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let ops = receiver.wait_for(2);
    assert_eq!(types(&ops), ["approval.requested", "approval.reminder"]);
    assert_eq!(
        ops[1].header("webhook-id"),
        Some(format!("{id}.ops.reminder").as_str())
    );
    let escalated = oncall.wait_for(1);
    assert_eq!(types(&escalated), ["approval.escalated"]);
    assert!(escalated.iter().all(verified));
    assert_eq!(escalated[0].json()["data"]["id"], id.to_string());
}

/// Three notifiers over one PostgreSQL store, 20 requests, a receiver that fails each
/// message's first two attempts: every message is accepted exactly once.
#[cfg(feature = "postgres")]
#[test]
fn three_notifiers_over_one_postgres_store_deliver_each_message_once() {
    use approval_gate_tests::backend::{Backend as _, Postgres};

    let store = Postgres.fresh();
    let gate = store.gate();
    let ids: Vec<_> = (0..20)
        .map(|n| {
            gate.request_approval(NewRequest::new(format!("deploy {n}"), "the test needs it"))
                .unwrap()
                .request
                .id()
        })
        .collect();
    let receiver = flaky();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &receiver.url(), "");
    let children: Vec<Child> = (0..3)
        .map(|_| {
            notifier(store.location(), &config, &["--once"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
    let keys = by_key(&receiver.received());
    assert_eq!(keys.len(), 20, "{keys:?}");
    for id in ids {
        let attempts = &keys[&format!("{id}.ops.filed")];
        assert_eq!(attempts.iter().filter(|r| r.accepted()).count(), 1, "{id}");
        assert!(attempts.iter().all(verified), "{id}");
    }
}

#[test]
fn a_second_notifier_on_a_directory_store_refuses_to_start_and_sigterm_stops_the_first() {
    let store = Store::new();
    let receiver = Receiver::accepting();
    let config = write_config(store.scratch(), &receiver.url(), "");
    let location = store.path.to_str().unwrap();
    let mut first = Running::start(notifier(location, &config, &[]));
    first.wait_for_line("channel(s) on");

    let second = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    assert!(
        text(&second).contains("another `approval-gate notify` runs on this directory store"),
        "{}",
        text(&second)
    );

    let pid = rustix::process::Pid::from_raw(i32::try_from(first.child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    first.wait_for_line("stopped");
    assert_eq!(first.child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_bad_config_is_refused_naming_the_key_and_never_the_secret() {
    let store = Store::new();
    let dir = store.scratch();
    let secret = dir.join("bad.key");
    std::fs::write(&secret, "hunter2-is-no-key").unwrap();
    let config = dir.join("bad.toml");
    std::fs::write(
        &config,
        format!(
            "[notify.channels.ops]\ntype = \"webhook\"\nurl = \"https://h.example/x\"\n\
             secret = {{ file = \"{}\" }}\n",
            secret.display()
        ),
    )
    .unwrap();
    let output = notifier(store.path.to_str().unwrap(), &config, &["--once"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let shown = text(&output);
    assert!(shown.contains("notify.channels.ops.secret"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}

/// A login holding only `approval_gate_notifier` delivers (reading the queue, writing the
/// ledger), and can decide nothing.
#[cfg(feature = "postgres")]
#[test]
fn the_notifier_role_delivers_and_decides_nothing() {
    use approval_gate::{Decision, Error, Gate};
    use approval_gate_tests::backend::{Backend as _, Postgres};
    use approval_gate_tests::pg;

    let store = Postgres.fresh();
    let url = store.location().to_owned();
    let db = url.rsplit('/').next().unwrap().split('?').next().unwrap();
    let login = format!("{db}_notifier");
    pg::run_sql(
        pg::admin_url(),
        &format!("CREATE ROLE {login} LOGIN; GRANT approval_gate_notifier TO {login};"),
    );
    let notifier_url = pg::url_with(&url, &login, None);
    let id = store
        .gate()
        .request_approval(NewRequest::new("deploy", "the test needs it"))
        .unwrap()
        .request
        .id();
    let receiver = Receiver::accepting();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &receiver.url(), "");
    let output = notifier(&notifier_url, &config, &["--once"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        receiver.wait_for(1)[0].header("webhook-id"),
        Some(format!("{id}.ops.filed").as_str())
    );

    let as_notifier = {
        let url = notifier_url.clone();
        pg::on_own_thread(move || {
            Gate::builder()
                .store(approval_gate::Location::parse(&url).unwrap())
                .open()
                .unwrap()
        })
    };
    for refused in [
        as_notifier.approve(id, &Decision::by("mallory")),
        as_notifier.deny(id, &Decision::by("mallory")),
    ] {
        assert!(
            matches!(refused, Err(Error::NotPermitted { .. })),
            "{refused:?}"
        );
    }
    drop(as_notifier);
    let _ = std::thread::spawn(move || {
        pg::run_sql(
            pg::admin_url(),
            &format!("DROP OWNED BY {login}; DROP ROLE IF EXISTS {login}"),
        );
    })
    .join();
}

#[test]
fn sigterm_stops_a_once_run_waiting_to_retry() {
    let store = Store::new();
    let receiver = Receiver::start(|_, _| Reply::Status(503));
    let config = write_config(store.scratch(), &receiver.url(), "");
    let _ = store.ask("deploy");
    let location = store.path.to_str().unwrap();
    // The next attempt would be up to a minute away.
    let command = notifier(location, &config, &["--once", "--retry-base-ms", "60000"]);
    let mut running = Running::start(command);
    running.wait_for_line("retry ");
    let pid = rustix::process::Pid::from_raw(i32::try_from(running.child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    running.wait_for_line("stopped");
    assert_eq!(running.child.wait().unwrap().code(), Some(0));
    assert_eq!(receiver.received().len(), 1);
}

#[test]
fn a_damaged_ledger_is_a_problem_doctor_reports_and_the_notifier_refuses() {
    let store = Store::new();
    let receiver = Receiver::accepting();
    let config = write_config(store.scratch(), &receiver.url(), "");
    let _ = store.ask("deploy");
    let location = store.path.to_str().unwrap();
    let output = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let ledger = store.path.join("notify/ledger.jsonl");
    let mut bytes = b"not json\n".to_vec();
    bytes.extend(std::fs::read(&ledger).unwrap());
    std::fs::write(&ledger, bytes).unwrap();

    let doctor = store.run(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(1));
    let shown = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        shown.contains("notifications ledger: corrupt state file"),
        "{shown}"
    );
    let refused = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("line 1"), "{}", text(&refused));
    assert_eq!(receiver.received().len(), 1, "nothing sent again");
}
