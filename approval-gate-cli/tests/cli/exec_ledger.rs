//! What a signing policy cannot stop on a directory store the agent can write (issue 37,
//! findings 10 and 12), and the set-up that does stop it.
//!
//! On one OS account, the agent can delete what the store knows: the claim of a spent
//! approval (and it runs again, until it expires) or the revocation of one (edit the record
//! back to `approved`; the approvers' signatures still verify). `exec` and `doctor` say so on
//! stderr whenever a policy is in force over a store this account can rewrite. With the
//! executor under its own OS user, owning the store, the agent (here `nobody`) can touch none
//! of it, and the replay and the un-revoke are refused.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use approval_gate::{Decision, RequestId};

use crate::exec_policy::Policed;
use crate::support::{approve, as_nobody, assert_exit, assert_success, nobody, stderr, stdout};

/// What `exec` and `doctor` say when a policy is in force over a store this account can
/// rewrite.
const WARNING: &str = "this account can rewrite the store";

impl Policed {
    /// Alice approves `id` with her key, through the real CLI in a pseudo-terminal.
    fn sign(&self, id: RequestId) {
        let key = self.signers.with_file_name("alice");
        let mut command = self.exec.store.command(&["approve", id.as_str(), "--key"]);
        command
            .arg(&key)
            .env("APPROVAL_GATE_SYSTEM_POLICY", &self.system)
            .env_remove("SSH_AUTH_SOCK");
        let (code, asked, printed) = approve(command);
        assert_eq!((code, asked), (0, true), "{printed}");
    }

    /// A request alice approved with her key, under the system policy.
    fn signed(&self) -> RequestId {
        let id = self.exec.file(crate::exec::PAYLOAD);
        self.sign(id);
        id
    }

    fn claims(&self, id: RequestId) -> Vec<PathBuf> {
        let dir = self.exec.store.path.join("claims");
        let mut claims: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                name.starts_with(&format!("{id}."))
            })
            .collect();
        claims.sort();
        claims
    }

    fn record(&self, id: RequestId) -> PathBuf {
        self.exec
            .store
            .path
            .join("requests")
            .join(format!("{id}.json"))
    }

    fn doctor(&self) -> Output {
        self.exec
            .store
            .command(&["doctor"])
            .env("APPROVAL_GATE_SYSTEM_POLICY", &self.system)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// The record at `path` with its status set back to `approved`, as the agent would write it.
fn unrevoked(path: &Path) -> Vec<u8> {
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(record["status"], "revoked", "{record}");
    record["status"] = "approved".into();
    serde_json::to_vec(&record).unwrap()
}

#[test]
fn on_one_account_a_spent_approval_runs_again_and_a_revocation_is_undone_and_exec_says_so() {
    let policed = Policed::new();
    let id = policed.signed();
    let first = policed.exec(id, &[]);
    assert_success(&first);
    assert_eq!(policed.exec.runs(), 1);
    assert!(stderr(&first).contains(WARNING), "{}", stderr(&first));
    assert_exit(&policed.exec(id, &[]), 114, "already");

    // Finding 10: the agent deletes the claim, and the spent approval runs a second time.
    // The documented limitation of a store this account can write.
    let claims = policed.claims(id);
    assert!(!claims.is_empty());
    for claim in claims {
        std::fs::remove_file(claim).unwrap();
    }
    let again = policed.exec(id, &[]);
    assert_success(&again);
    assert_eq!(policed.exec.runs(), 2);
    assert!(stderr(&again).contains(WARNING), "{}", stderr(&again));

    // Finding 12: a human revokes an approval; the agent writes the record back.
    let revoked = policed.signed();
    policed
        .exec
        .store
        .gate()
        .revoke(revoked, &Decision::by("alice@example.com"))
        .unwrap();
    assert_exit(&policed.exec(revoked, &[]), 113, "revoked");
    let record = policed.record(revoked);
    std::fs::write(&record, unrevoked(&record)).unwrap();
    let undone = policed.exec(revoked, &[]);
    assert_success(&undone);
    assert_eq!(policed.exec.runs(), 3);

    // doctor says it too, on stderr; and its report finds both after the fact: a second
    // `consumed` of one request, and a consume after `revoked`, in the gate's own audit lines.
    let doctor = policed.doctor();
    assert!(stderr(&doctor).contains(WARNING), "{}", stderr(&doctor));
    assert!(
        stderr(&doctor).contains("replay a spent approval"),
        "{}",
        stderr(&doctor)
    );
    assert_eq!(doctor.status.code(), Some(1), "{}", stdout(&doctor));
    assert!(
        stdout(&doctor).contains("inconsistent"),
        "{}",
        stdout(&doctor)
    );

    // Without a policy there is nothing to warn of: the store was never a boundary.
    let plain = policed.exec.approved();
    let output = policed.command(plain, &[]).output().unwrap();
    assert_success(&output);
    assert!(!stderr(&output).contains(WARNING), "{}", stderr(&output));
}

/// `sh -c script` as the agent, `nobody`: whether it succeeded.
fn agent(script: &str, store: &Path) -> bool {
    let output = as_nobody("sh")
        .args(["-c", script, "agent"])
        .arg(store)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    output.status.success()
}

#[test]
fn with_the_executor_under_its_own_account_the_replay_and_the_unrevoke_are_refused() {
    if nobody().is_none() {
        return;
    }
    // The executor (this test's account) owns the store; the agent is `nobody`, who can
    // reach the directory holding it but not the store itself (0700, as the store keeps it).
    let policed = Policed::new();
    let scratch = policed.exec.store.scratch();
    std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = &policed.exec.store.path;
    let id = policed.signed();
    assert_success(&policed.exec(id, &[]));
    let revoked = policed.signed();
    policed
        .exec
        .store
        .gate()
        .revoke(revoked, &Decision::by("alice@example.com"))
        .unwrap();
    let before = policed.exec.store.snapshot();

    // The agent's replay: delete the claim. Its un-revoke: write the record back.
    let claims = format!("rm -f \"$1\"/claims/{id}.*");
    assert!(!agent(&claims, store), "the agent deleted the claim");
    let record = policed.record(revoked);
    let unrevoke = format!(
        "printf '%s' '{}' > \"$1\"/requests/{revoked}.json",
        String::from_utf8(unrevoked(&record)).unwrap()
    );
    assert!(!agent(&unrevoke, store), "the agent rewrote the record");
    assert!(
        !agent("ls \"$1\"/claims", store),
        "the agent read the store"
    );
    assert_eq!(
        crate::support::Store::changed(&before, &policed.exec.store.snapshot()),
        Vec::<String>::new()
    );

    // The executor refuses both.
    assert_exit(&policed.exec(id, &[]), 114, "already");
    assert_exit(&policed.exec(revoked, &[]), 113, "revoked");
    assert_eq!(policed.exec.runs(), 1);
}
