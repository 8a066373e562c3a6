//! The signing policy `exec` enforces cannot be switched off by the account that runs it
//! (issue 37, finding 11): a system policy file, which that account cannot change, holds
//! whatever the user's own config file, environment or flags say, and `exec
//! --require-policy` refuses to run without one.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use approval_gate::{Decision, EffectiveStatus, RequestId};

use crate::exec::{Exec, OP, PAYLOAD, RECORDER};
use crate::support::{BIN, as_nobody, assert_exit, assert_success, nobody, stderr, stdout};

/// Where the binaries look for the system policy when nothing else names it.
const DEFAULT_SYSTEM_POLICY: &str = "/etc/approval-gate/policy.toml";

/// An `exec` test's store, an approvers file, a system policy naming it, and the user's
/// own config file (the agent's to edit, as it runs as that user).
pub(crate) struct Policed {
    pub(crate) exec: Exec,
    pub(crate) system: PathBuf,
    pub(crate) signers: PathBuf,
}

impl Policed {
    /// The command never ran and `id` is still approved and unspent.
    fn assert_nothing_spent(&self, id: RequestId) {
        assert_eq!(self.exec.runs(), 0);
        assert_eq!(
            self.exec
                .store
                .gate()
                .status(id)
                .unwrap()
                .effective_status(),
            EffectiveStatus::ApprovedUnconsumed
        );
    }

    pub(crate) fn new() -> Self {
        let exec = Exec::new();
        let etc = exec.store.scratch().join("etc");
        std::fs::create_dir(&etc).unwrap();
        std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let signers = etc.join("allowed_signers");
        write(
            &signers,
            &format!("alice@example.com {}\n", keygen(&etc, "alice")),
        );
        let system = etc.join("policy.toml");
        write(
            &system,
            &format!("approvers = {:?}\n", signers.to_str().unwrap()),
        );
        Self {
            exec,
            system,
            signers,
        }
    }

    /// The user's default config file, as `exec` finds it (`$XDG_CONFIG_HOME`).
    pub(crate) fn user_config(&self) -> PathBuf {
        self.exec
            .store
            .scratch()
            .join("approval-gate")
            .join("config.toml")
    }

    pub(crate) fn write_user_config(&self, text: &str) {
        let path = self.user_config();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        write(&path, text);
    }

    /// A request the agent filed and "approved" by writing the store: no signature.
    pub(crate) fn forged(&self) -> RequestId {
        let id = self.exec.file(PAYLOAD);
        self.exec
            .store
            .gate()
            .approve(id, &Decision::by("alice@example.com"))
            .unwrap();
        id
    }

    /// `exec` of the recorder under the system policy, with `flags` before `--`.
    pub(crate) fn exec(&self, id: RequestId, flags: &[&str]) -> Output {
        self.exec.payload_file(PAYLOAD);
        self.command(id, flags)
            .env("APPROVAL_GATE_SYSTEM_POLICY", &self.system)
            .output()
            .unwrap()
    }

    pub(crate) fn command(&self, id: RequestId, flags: &[&str]) -> Command {
        let mut command = self.exec.argv(id, OP, flags, &["sh", "-c", RECORDER]);
        command.stdin(Stdio::null());
        command
    }
}

/// Writes a file only its owner can write.
pub(crate) fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// Makes an ed25519 key `name` in `dir` with the real ssh-keygen; its public line.
pub(crate) fn keygen(dir: &Path, name: &str) -> String {
    let key = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen is not installed: install openssh-client");
    assert!(status.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    public.trim().to_owned()
}

#[test]
fn the_users_config_cannot_switch_the_system_policy_off() {
    let policed = Policed::new();
    let signers = policed.signers.to_str().unwrap().to_owned();
    policed.write_user_config(&format!("approvers = {signers:?}\n"));
    let id = policed.forged();
    assert_exit(&policed.exec(id, &[]), 116, "valid signed approvals");

    // The agent deletes the `approvers` line of the user's config file: still refused.
    policed.write_user_config("");
    assert_exit(&policed.exec(id, &[]), 116, "valid signed approvals");
    // ...or moves the whole folder away.
    let folder = policed.user_config().parent().unwrap().to_owned();
    std::fs::rename(&folder, folder.with_extension("moved")).unwrap();
    assert_exit(&policed.exec(id, &[]), 116, "valid signed approvals");

    // The agent names approvers of its own, in the file, the environment or a flag: refused
    // before anything is opened, for a user's setting cannot replace the system's approvers.
    let own = policed.exec.store.scratch().join("own_signers");
    let mallory = keygen(policed.exec.store.scratch(), "mallory");
    write(&own, &format!("alice@example.com {mallory}\n"));
    let own = own.to_str().unwrap();
    policed.write_user_config(&format!("approvers = {own:?}\n"));
    assert_exit(&policed.exec(id, &[]), 125, "cannot replace");
    policed.write_user_config("");
    assert_exit(
        &policed.exec(id, &["--approvers", own]),
        125,
        "cannot replace",
    );
    let with_env = policed
        .command(id, &[])
        .env("APPROVAL_GATE_SYSTEM_POLICY", &policed.system)
        .env("APPROVAL_GATE_APPROVERS", own)
        .output()
        .unwrap();
    assert_exit(&with_env, 125, "cannot replace");

    policed.assert_nothing_spent(id);
}

#[test]
fn exec_require_policy_refuses_to_run_without_a_system_policy() {
    if Path::new(DEFAULT_SYSTEM_POLICY).exists() {
        eprintln!("skipped: this machine has {DEFAULT_SYSTEM_POLICY}, which every run obeys");
        return;
    }
    let policed = Policed::new();
    // A policy in the user's own config file is not one the agent cannot change.
    let signers = policed.signers.to_str().unwrap().to_owned();
    policed.write_user_config(&format!("approvers = {signers:?}\n"));
    let id = policed.exec.approved();
    let output = policed.command(id, &["--require-policy"]).output().unwrap();
    assert_exit(&output, 125, "no system policy");
    assert!(
        stderr(&output).contains(DEFAULT_SYSTEM_POLICY),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("nothing was consumed"),
        "{}",
        stderr(&output)
    );

    // A system policy named in the executor's environment must exist.
    let missing = policed.exec.store.scratch().join("etc/missing.toml");
    let output = policed
        .command(id, &[])
        .env("APPROVAL_GATE_SYSTEM_POLICY", &missing)
        .output()
        .unwrap();
    assert_exit(&output, 125, "missing.toml");
    policed.assert_nothing_spent(id);
}

#[test]
fn a_system_policy_the_account_reading_it_could_change_is_refused() {
    let Some(uid) = nobody() else { return };
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let etc = tmp.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let signers = etc.join("allowed_signers");
    write(
        &signers,
        &format!("alice@example.com {}\n", keygen(tmp.path(), "alice")),
    );
    let system = etc.join("policy.toml");
    write(
        &system,
        &format!("approvers = {:?}\n", signers.to_str().unwrap()),
    );
    let config = |policy: &Path| {
        as_nobody(BIN)
            .arg("config")
            .env("XDG_CONFIG_HOME", tmp.path().join("xdg"))
            .env("APPROVAL_GATE_SYSTEM_POLICY", policy)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Owned by root: nobody reads it, and it is in force.
    let held = config(&system);
    assert_success(&held);
    assert!(stdout(&held).contains("(system "), "{}", stdout(&held));

    // Owned by the account that reads it: that account could switch it off.
    let chown = |path: &Path| std::os::unix::fs::chown(path, Some(uid), None).unwrap();
    chown(&system);
    assert_exit(&config(&system), 2, "is owned by you");
    // Root, which enforces it for every account, takes it from none but root.
    let as_root = std::process::Command::new(BIN)
        .arg("config")
        .env("XDG_CONFIG_HOME", tmp.path().join("xdg"))
        .env("APPROVAL_GATE_SYSTEM_POLICY", &system)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&as_root, 2, "not root");
    std::os::unix::fs::chown(&system, Some(0), None).unwrap();
    chown(&signers);
    assert_exit(&config(&system), 2, "approvers file");
    std::os::unix::fs::chown(&signers, Some(0), None).unwrap();
    // Or the directory that holds it: that account could put another file in its place.
    chown(&etc);
    assert_exit(&config(&system), 2, "its directory");
}
