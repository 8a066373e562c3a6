//! `approve --key` under a quorum policy, through a real pseudo-terminal, with keys made by
//! the real `ssh-keygen` and, once, held by a real `ssh-agent`: each approver's signature
//! counts once, the request stays pending showing k of M until the quorum is met, and an
//! approval without a key or with a key the policy does not trust changes nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use approval_gate::{
    AuditEvent, Binding, CanonicalPayload, EffectiveStatus, Gate, Grant, NewRequest, Policy,
    RequestId,
};
use serde_json::Value;

use crate::support::{Store, approve, assert_success, stderr, stdout};

const ACTION: &str = "wire 1200 EUR to ACME Ltd";
const OP: &str = "payments.wire";
const PAYLOAD: &str = r#"{"amount_cents":120000,"to":"ACME Ltd"}"#;

/// A store, approvers with ed25519 keys made by ssh-keygen, and their `allowed_signers` file.
pub(crate) struct Team {
    pub(crate) store: Store,
    pub(crate) signers: PathBuf,
}

impl Team {
    pub(crate) fn new() -> Self {
        let store = Store::new();
        let team = Self {
            signers: store.scratch().join("allowed_signers"),
            store,
        };
        let mut text = String::from("# the approvers of this test\n");
        for name in ["alice", "bob"] {
            let public = team.keygen(name);
            let _ = writeln!(text, "{name}@example.com {public}");
        }
        team.keygen("mallory");
        std::fs::write(&team.signers, text).unwrap();
        team
    }

    /// Makes `<name>` and `<name>.pub` beside the store; returns the public key line.
    fn keygen(&self, name: &str) -> String {
        let key = self.key(name);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
            .arg(&key)
            .stdin(Stdio::null())
            .status()
            .expect("ssh-keygen is not installed: install openssh-client");
        assert!(status.success());
        std::fs::read_to_string(self.public(name))
            .unwrap()
            .trim()
            .to_owned()
    }

    pub(crate) fn key(&self, name: &str) -> PathBuf {
        self.store.scratch().join(name)
    }

    fn public(&self, name: &str) -> PathBuf {
        self.store.scratch().join(format!("{name}.pub"))
    }

    pub(crate) fn policy(&self, quorum: u32) -> Policy {
        Policy::load_allowed_signers(&self.signers)
            .unwrap()
            .require("payments.*", quorum)
            .unwrap()
            .require("*", 1)
            .unwrap()
    }

    /// Files the payment through a gate holding the policy, as the executor would.
    fn ask(&self, quorum: u32) -> RequestId {
        let gate = Gate::builder()
            .dir(&self.store.path)
            .policy(self.policy(quorum))
            .open()
            .unwrap();
        let ask = NewRequest::new(ACTION, "the invoice is due")
            .operation(OP)
            .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
        gate.request_approval(ask).unwrap().request.id()
    }

    /// The CLI on this store, holding the policy (`--approvers`, `--quorum`).
    pub(crate) fn command(&self, quorum: u32, args: &[&str]) -> Command {
        let quorum = format!("payments.*={quorum},*=1");
        let mut command = self.store.command(&[]);
        command
            .arg("--approvers")
            .arg(&self.signers)
            .args(["--quorum", &quorum])
            .args(args)
            .env_remove("SSH_AUTH_SOCK");
        command
    }

    fn status(&self, id: RequestId) -> approval_gate::StatusReport {
        self.store.gate().status(id).unwrap()
    }

    /// Runs the payment through a gate holding the policy: how many times it ran.
    fn execute(&self, id: RequestId, quorum: u32) -> Result<u32, approval_gate::Error> {
        let gate = Gate::builder()
            .dir(&self.store.path)
            .policy(self.policy(quorum))
            .open()
            .unwrap();
        let binding = Binding::new(ACTION)
            .operation(OP)
            .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
        let mut runs = 0;
        gate.execute_approved(id, &binding, |_: &Grant<Value>| {
            runs += 1;
            Ok::<_, approval_gate::Error>(())
        })?;
        Ok(runs)
    }
}

#[test]
fn two_approvers_with_keys_meet_a_two_of_two_quorum() {
    let team = Team::new();
    let id = team.ask(2);
    let alice = team.key("alice");
    let mut first = team.command(2, &["approve", id.as_str(), "--key"]);
    first.arg(&alice);
    let (code, asked, printed) = approve(first);
    assert_eq!((code, asked), (0, true), "{printed}");
    assert!(
        printed.contains(&format!(
            "approval recorded for {id}: 1 of 2, still pending"
        )),
        "{printed}"
    );
    // The screen said what the approval is for: 0 of 2 so far.
    assert!(printed.contains("approvals       0 of 2"), "{printed}");
    let report = team.status(id);
    assert_eq!(report.effective_status(), EffectiveStatus::Pending);
    assert_eq!(
        report.request().approvals()[0].principal(),
        "alice@example.com"
    );
    // One signature is not an approval the executor takes.
    let short = team.execute(id, 2).unwrap_err();
    assert_eq!(short.code().as_str(), "not_approved", "{short}");

    // show and list say where it stands.
    let show = team.command(2, &["show", id.as_str()]).output().unwrap();
    assert_success(&show);
    assert!(
        stdout(&show).contains("approvals       1 of 2 (alice@example.com)"),
        "{}",
        stdout(&show)
    );
    let list = team.command(2, &["list"]).output().unwrap();
    assert!(
        stdout(&list).contains("\n  approvals: 1 of 2 (alice@example.com)\n"),
        "{}",
        stdout(&list)
    );
    let json: Value = serde_json::from_slice(
        &team
            .command(2, &["show", id.as_str(), "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["requiredApprovals"], 2);
    assert_eq!(json["approvals"][0]["principal"], "alice@example.com");

    // Alice again counts once, and changes nothing.
    let before = team.store.snapshot();
    let mut again = team.command(2, &["approve", id.as_str(), "--key"]);
    again.arg(&alice);
    let (code, _, printed) = approve(again);
    assert_eq!(code, 1, "{printed}");
    assert!(printed.contains("already approved"), "{printed}");
    let refused = (
        AuditEvent::DecisionRefused,
        id.to_string(),
        "already_signed".to_owned(),
    );
    assert_eq!(team.store.lines_since(&before), [refused]);

    // Bob's principal comes from the approvers file, found by his public key.
    let mut second = team.command(2, &["approve", id.as_str(), "--key"]);
    second.arg(team.key("bob"));
    let (code, _, printed) = approve(second);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("approvals       1 of 2 (alice@example.com)"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "approved {id} (2 of 2): trusted code may run it once"
        )),
        "{printed}"
    );
    assert_eq!(
        team.status(id).effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(team.execute(id, 2).unwrap(), 1);
}

/// A real `ssh-agent` on a socket of its own, killed when dropped.
struct Agent {
    child: Child,
    socket: PathBuf,
}

impl Agent {
    fn start(dir: &Path) -> Self {
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent is not installed: install openssh-client");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "ssh-agent did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Self { child, socket }
    }

    fn add(&self, key: &Path) {
        let out = Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.socket)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_key_held_by_ssh_agent_signs_through_its_public_file() {
    let team = Team::new();
    let id = team.ask(1);
    let agent = Agent::start(team.store.scratch());
    agent.add(&team.key("alice"));
    // Only the agent holds the private key now.
    std::fs::remove_file(team.key("alice")).unwrap();
    let mut command = team.command(1, &["approve", id.as_str(), "--key"]);
    command
        .arg(team.public("alice"))
        .env("SSH_AUTH_SOCK", &agent.socket);
    let (code, _, printed) = approve(command);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains(&format!("approved {id} (1 of 1)")),
        "{printed}"
    );
    let report = team.status(id);
    assert_eq!(
        report.request().approvals()[0].principal(),
        "alice@example.com"
    );
    assert_eq!(team.execute(id, 1).unwrap(), 1);
}

#[test]
fn without_a_key_under_a_policy_nothing_is_approved_and_it_says_how() {
    let team = Team::new();
    let id = team.ask(2);
    let before = team.store.snapshot();
    let (code, asked, printed) = approve(team.command(2, &["approve", id.as_str()]));
    assert_eq!(code, 1, "{printed}");
    // Refused before the screen: no code was worth typing.
    assert!(!asked, "{printed}");
    let (code, asked, named) = approve(team.command(
        2,
        &["approve", id.as_str(), "--principal", "alice@example.com"],
    ));
    assert_eq!((code, asked), (1, false), "{named}");
    assert!(named.contains("--principal needs a key"), "{named}");
    for needed in [
        "needs signed approvals (2 distinct approvers)",
        &format!("approval-gate approve {id} --key"),
        "APPROVAL_GATE_SIGNING_KEY",
    ] {
        assert!(printed.contains(needed), "{needed:?} not in {printed}");
    }
    assert_eq!(
        Store::changed(&before, &team.store.snapshot()),
        Vec::<String>::new()
    );
}

#[test]
fn an_untrusted_key_changes_nothing() {
    let team = Team::new();
    let id = team.ask(2);
    let before = team.store.snapshot();
    // Whom it signs as cannot be told from a key the file does not list.
    let mut unknown = team.command(2, &["approve", id.as_str(), "--key"]);
    unknown.arg(team.key("mallory"));
    let (code, asked, printed) = approve(unknown);
    assert_eq!((code, asked), (1, false), "{printed}");
    assert!(printed.contains("does not trust the key"), "{printed}");
    // Claiming to be alice: signed after the code, and refused by the library's check.
    let mut claimed = team.command(2, &["approve", id.as_str(), "--key"]);
    claimed
        .arg(team.key("mallory"))
        .args(["--principal", "alice@example.com"]);
    let (code, asked, printed) = approve(claimed);
    assert_eq!((code, asked), (1, true), "{printed}");
    assert!(
        printed.contains("which the policy does not trust for alice@example.com"),
        "{printed}"
    );
    // Only the claim that reached the library left a line, and no record changed.
    let lines = team.store.lines_since(&before);
    let refused = (
        AuditEvent::DecisionRefused,
        id.to_string(),
        "untrusted_signer".to_owned(),
    );
    assert_eq!(lines, [refused]);
    assert!(team.status(id).request().approvals().is_empty());
}

#[test]
fn bad_approvers_and_quorums_are_refused_before_anything_is_opened() {
    let team = Team::new();
    let elsewhere = team.store.scratch().join("never-made");
    let run = |args: &[&str]| {
        let mut command = Command::new(crate::support::BIN);
        command.arg("--dir").arg(&elsewhere).args(args);
        crate::support::operator_settings_of_this_test_only(&mut command, team.store.scratch());
        command.stdin(Stdio::null()).output().unwrap()
    };
    let signers = team.signers.to_str().unwrap();
    for (args, message) in [
        (
            vec!["--quorum", "payments.*=2,*=1", "list"],
            "quorum (flag --quorum) needs trusted approvers",
        ),
        // Issue 22, finding 13: a table must say what the operations it does not name need.
        (
            vec!["--approvers", signers, "--quorum", "payments.*=2", "list"],
            "quorum (flag --quorum): the quorum table names payments.* but not `*`",
        ),
        (
            vec![
                "--approvers",
                signers,
                "--quorum",
                "Payments.*=2,*=1",
                "list",
            ],
            "which no operation name has",
        ),
        (
            vec!["--approvers", signers, "--quorum", "payments.*=0", "list"],
            "--quorum: payments.*: \"0\" is not a number of approvers",
        ),
        (
            vec!["--approvers", signers, "--quorum", "payments.*", "list"],
            "is not PATTERN=N",
        ),
        (
            vec!["--approvers", "/nonexistent/allowed_signers", "list"],
            "approvers file /nonexistent/allowed_signers (flag --approvers)",
        ),
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let garbage = team.store.scratch().join("garbage");
    std::fs::write(&garbage, "alice@example.com ssh-ed25519 AAAAnotakey\n").unwrap();
    let output = run(&["--approvers", garbage.to_str().unwrap(), "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("line 1"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!elsewhere.exists(), "a bad setting opened the store");

    // config shows the policy and where it came from.
    let output = run(&[
        "--approvers",
        signers,
        "--quorum",
        "payments.*=2,*=1",
        "config",
        "--json",
    ]);
    let json = crate::support::json(&output);
    assert_eq!(json["approvers"]["value"], signers);
    assert_eq!(json["approvers"]["source"], "flag");
    assert_eq!(json["quorum"]["value"]["payments.*"], 2);
}

/// An `ssh-keygen` planted earlier on `PATH` (as an agent with a shell on the approver's
/// account can, in `~/.local/bin`) is never what signs: it would see the key, the passphrase
/// and the statement, and could sign another request with the human's confirmation.
#[test]
fn a_signer_planted_on_path_is_never_run() {
    use std::os::unix::fs::PermissionsExt as _;

    let team = Team::new();
    let id = team.ask(1);
    let bin = team.store.scratch().join("planted-bin");
    std::fs::create_dir(&bin).unwrap();
    let ran = team.store.scratch().join("planted-ran");
    let real = Command::new("sh")
        .args(["-c", "command -v ssh-keygen"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_owned();
    assert!(real.starts_with('/'), "ssh-keygen not found: {real:?}");
    let planted = bin.join("ssh-keygen");
    std::fs::write(
        &planted,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{real}' \"$@\"\n",
            ran.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut command = team.command(1, &["approve", id.as_str(), "--key"]);
    command.arg(team.key("alice")).env(
        "PATH",
        std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(&path)))
            .unwrap(),
    );
    let (code, _, printed) = approve(command);
    assert!(
        !ran.exists(),
        "the planted ssh-keygen ran: {}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
    assert_eq!(code, 0, "{printed}");
    assert_eq!(team.execute(id, 1).unwrap(), 1);
}

/// An approval stored by hand, signed by mallory's key and claiming bob, is shown as not
/// counting (with the key it was made by) and stops neither bob nor the quorum; `show
/// --json` says where each approval stands.
#[test]
fn a_squatted_principal_is_shown_as_not_counted_and_blocks_nobody() {
    let team = Team::new();
    let id = team.ask(2);
    let statement = team
        .status(id)
        .request()
        .decision_statement("bob@example.com")
        .unwrap();
    let statement_file = team.store.scratch().join("statement");
    std::fs::write(&statement_file, statement).unwrap();
    let signed = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "approval-gate", "-f"])
        .arg(team.key("mallory"))
        .arg(&statement_file)
        .status()
        .unwrap();
    assert!(signed.success());
    let signature = std::fs::read_to_string(statement_file.with_extension("sig")).unwrap();
    let record_path = team.store.path.join("requests").join(format!("{id}.json"));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["approvals"] = serde_json::json!([{
        "principal": "bob@example.com",
        "decidedBy": "agent",
        "decidedAt": record["createdAt"],
        "signature": signature,
    }]);
    std::fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();

    let show = team.command(2, &["show", id.as_str()]).output().unwrap();
    assert_success(&show);
    let shown = stdout(&show);
    assert!(
        shown.contains(
            "approvals       0 of 2; not counted: bob@example.com (untrusted key SHA256:"
        ),
        "{shown}"
    );
    let json: Value = serde_json::from_slice(
        &team
            .command(2, &["show", id.as_str(), "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["approvals"][0]["standing"], "untrusted", "{json}");
    assert_eq!(json["countedApprovals"], 0, "{json}");

    for name in ["bob", "alice"] {
        let mut approving = team.command(2, &["approve", id.as_str(), "--key"]);
        approving.arg(team.key(name));
        let (code, _, printed) = approve(approving);
        assert_eq!(code, 0, "{name}: {printed}");
    }
    assert_eq!(team.execute(id, 2).unwrap(), 1);
}

#[test]
fn exec_under_a_policy_runs_only_on_signatures_that_meet_the_quorum() {
    let team = Team::new();
    let runs = team.store.scratch().join("runs");
    let payload = team.store.scratch().join("payment.json");
    std::fs::write(&payload, PAYLOAD).unwrap();
    let exec = |id: RequestId| {
        let mut command = team.command(2, &["exec", id.as_str(), "--operation", OP]);
        command
            .arg("--payload-file")
            .arg(&payload)
            .args(["--", "sh", "-c", "echo run >> \"$RUNS\""])
            .env("RUNS", &runs)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let ran = || std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count());

    // Approved by one signature where the approvers were told one suffices, executed
    // where the operator's quorum is two: the signature covers the quorum, so it fails.
    let short = team.ask(1);
    let mut alone = team.command(1, &["approve", short.as_str(), "--key"]);
    alone.arg(team.key("alice"));
    assert_eq!(approve(alone).0, 0);
    let output = exec(short);
    assert_eq!(output.status.code(), Some(116), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("bad signature"),
        "{}",
        stderr(&output)
    );
    assert_eq!(ran(), 0);

    // One signature of two: still pending.
    let id = team.ask(2);
    let mut first = team.command(2, &["approve", id.as_str(), "--key"]);
    first.arg(team.key("alice"));
    assert_eq!(approve(first).0, 0);
    let output = exec(id);
    assert_eq!(output.status.code(), Some(110), "{}", stderr(&output));
    assert_eq!(ran(), 0);

    // Two: it runs, once.
    let mut second = team.command(2, &["approve", id.as_str(), "--key"]);
    second.arg(team.key("bob"));
    assert_eq!(approve(second).0, 0);
    let output = exec(id);
    assert_success(&output);
    assert_eq!(ran(), 1);
    assert_eq!(exec(id).status.code(), Some(114));
    assert_eq!(ran(), 1);
}
