//! Approvers with real OpenSSH keys: made by `ssh-keygen`, signing through `ssh-keygen -Y
//! sign` (directly or through a real `ssh-agent`), checked by `ssh-keygen -Y verify`.
//!
//! These are the tools an approver uses, so the tests use them too rather than signing in
//! Rust: what we store must be what ssh-keygen makes and accepts.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use approval_gate::{Policy, SIGNATURE_NAMESPACE};
use tempfile::TempDir;

/// A directory of approvers' keys and their `allowed_signers` file.
pub struct Keys {
    dir: TempDir,
}

/// One approver: a principal and a key pair made by `ssh-keygen`.
#[derive(Debug, Clone)]
pub struct Approver {
    /// The identity in `allowed_signers`.
    pub principal: String,
    /// The private key file.
    pub key: PathBuf,
    /// The public key line (`ssh-ed25519 AAAA… comment`).
    pub public: String,
}

impl Keys {
    /// A new, empty key directory.
    ///
    /// # Panics
    ///
    /// If `ssh-keygen` is missing: the tests say so rather than skip (`.ci/run` installs
    /// openssh-client).
    #[must_use]
    pub fn new() -> Self {
        let found = Command::new("ssh-keygen")
            .arg("-?")
            .stderr(Stdio::null())
            .status();
        assert!(
            found.is_ok(),
            "ssh-keygen is not installed: install openssh-client (the signed-approval tests need it)"
        );
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The directory keys are made in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A new ed25519 approver.
    #[must_use]
    pub fn approver(&self, principal: &str) -> Approver {
        self.approver_of_type(principal, "ed25519")
    }

    /// A new approver with a key of `kind` (`ed25519`, `ecdsa`, `rsa`, as `ssh-keygen -t`).
    ///
    /// # Panics
    ///
    /// If ssh-keygen fails.
    #[must_use]
    pub fn approver_of_type(&self, principal: &str, kind: &str) -> Approver {
        let file: String = principal
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let key = self.dir.path().join(format!("{file}-{kind}"));
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", kind, "-N", "", "-C", principal, "-f"])
            .arg(&key)
            .stdin(Stdio::null())
            .status()
            .expect("run ssh-keygen");
        assert!(status.success(), "ssh-keygen -t {kind} failed");
        let public = std::fs::read_to_string(pub_path(&key)).expect("read the public key");
        Approver {
            principal: principal.to_owned(),
            key,
            public: public.trim().to_owned(),
        }
    }

    /// Writes an `allowed_signers` file trusting `approvers` (each for its own principal)
    /// and returns its path.
    ///
    /// # Panics
    ///
    /// If it cannot be written.
    #[must_use]
    pub fn allowed_signers(&self, approvers: &[&Approver]) -> PathBuf {
        let path = self.dir.path().join("allowed_signers");
        let mut text = String::from("# approvers of this test\n");
        for approver in approvers {
            text.push_str(&approver.allowed_line());
            text.push('\n');
        }
        std::fs::write(&path, text).expect("write allowed_signers");
        path
    }

    /// A policy trusting `approvers`.
    ///
    /// # Panics
    ///
    /// If the policy refuses the file.
    #[must_use]
    pub fn policy(&self, approvers: &[&Approver]) -> Policy {
        Policy::load_allowed_signers(self.allowed_signers(approvers)).expect("a policy")
    }
}

impl Default for Keys {
    fn default() -> Self {
        Self::new()
    }
}

fn pub_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

impl Approver {
    /// The public key file (`<key>.pub`).
    #[must_use]
    pub fn public_file(&self) -> PathBuf {
        pub_path(&self.key)
    }

    /// Its `allowed_signers` line.
    #[must_use]
    pub fn allowed_line(&self) -> String {
        format!("{} {}", self.principal, self.public)
    }

    /// Signs `statement` with `ssh-keygen -Y sign -n approval-gate`, as the CLI does.
    ///
    /// # Panics
    ///
    /// If ssh-keygen fails.
    #[must_use]
    pub fn sign(&self, statement: &[u8]) -> String {
        approval_gate::SshKeygen::system()
            .sign(&self.key, statement)
            .expect("ssh-keygen -Y sign")
    }

    /// Signs `message` in another `namespace`, as ssh-keygen would for some other use.
    ///
    /// # Panics
    ///
    /// If ssh-keygen fails.
    #[must_use]
    pub fn sign_in_namespace(&self, namespace: &str, message: &[u8]) -> String {
        ssh_keygen_sign(&self.key, namespace, message, None)
    }
}

/// Runs `ssh-keygen -Y sign -n namespace -f key` on `message`, through the agent at `agent`
/// if given (then `key` may be just the public key file).
///
/// # Panics
///
/// If ssh-keygen fails.
#[must_use]
pub fn ssh_keygen_sign(
    key: &Path,
    namespace: &str,
    message: &[u8],
    agent: Option<&Path>,
) -> String {
    let mut command = Command::new("ssh-keygen");
    command
        .args(["-q", "-Y", "sign", "-n", namespace, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match agent {
        Some(socket) => command.env("SSH_AUTH_SOCK", socket),
        None => command.env_remove("SSH_AUTH_SOCK"),
    };
    let mut child = command.spawn().expect("run ssh-keygen");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(message)
        .expect("write the message");
    let out = child.wait_with_output().expect("ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen -Y sign failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("an armored signature")
}

/// Whether `ssh-keygen -Y verify` accepts `signature` of `message` by `principal` under
/// the `allowed_signers` file, in the `approval-gate` namespace.
///
/// # Panics
///
/// If ssh-keygen cannot be run.
#[must_use]
pub fn ssh_keygen_verifies(
    allowed_signers: &Path,
    principal: &str,
    signature: &str,
    message: &[u8],
) -> bool {
    let sig = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(sig.path(), signature).expect("write the signature");
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", SIGNATURE_NAMESPACE, "-f"])
        .arg(allowed_signers)
        .arg("-I")
        .arg(principal)
        .arg("-s")
        .arg(sig.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ssh-keygen -Y verify");
    // ssh-keygen may refuse the signature before it reads the message: its status decides.
    let _ = child.stdin.take().expect("stdin").write_all(message);
    child.wait().expect("ssh-keygen -Y verify").success()
}

/// A real `ssh-agent` on a socket of its own, killed when dropped.
pub struct Agent {
    child: Child,
    socket: PathBuf,
    _dir: TempDir,
    // Kept open: the agent never writes to a closed pipe.
    #[allow(dead_code)]
    stdout: Option<BufReader<ChildStdout>>,
}

impl Agent {
    /// Starts `ssh-agent -D -a <socket>` and waits until it listens (it says so).
    ///
    /// # Panics
    ///
    /// If ssh-agent is missing or ends without listening.
    #[must_use]
    pub fn start() -> Self {
        Self::spawn(None)
    }

    /// Starts an agent that asks `askpass` to confirm each use of a key added with
    /// `ssh-add -c` (exit status 0: yes), as a desktop's askpass dialog would.
    ///
    /// # Panics
    ///
    /// As [`Agent::start`].
    #[must_use]
    pub fn start_with_askpass(askpass: &Path) -> Self {
        Self::spawn(Some(askpass))
    }

    fn spawn(askpass: Option<&Path>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("agent.sock");
        let mut command = Command::new("ssh-agent");
        if let Some(askpass) = askpass {
            command
                .env("SSH_ASKPASS", askpass)
                .env("SSH_ASKPASS_REQUIRE", "force")
                .env("DISPLAY", ":0");
        }
        let mut child = command
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent is not installed: install openssh-client");
        let mut stdout = BufReader::new(child.stdout.take().expect("ssh-agent's stdout"));
        let mut agent = Self {
            child,
            socket,
            _dir: dir,
            stdout: None,
        };
        // The socket file exists from bind(2), before the agent listens: an ssh-add then is
        // refused. In the foreground (-D) the agent prints `SSH_AUTH_SOCK=...` once it
        // listens, so that line is the event to wait for; its end of output means it died.
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        if !matches!(read, Ok(n) if n > 0 && line.starts_with("SSH_AUTH_SOCK=")) {
            let status = agent.child.wait();
            panic!("ssh-agent did not start: {read:?} {line:?}, {status:?}");
        }
        agent.stdout = Some(stdout);
        agent
    }

    /// The agent's socket (`SSH_AUTH_SOCK`).
    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Adds the private key `key` (`ssh-add`), with `-c` (confirm each use) if `confirm`.
    ///
    /// # Panics
    ///
    /// If ssh-add fails.
    pub fn add(&self, key: &Path, confirm: bool) {
        let mut command = Command::new("ssh-add");
        if confirm {
            command.arg("-c");
        }
        let out = command
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.socket)
            .stdin(Stdio::null())
            .output()
            .expect("run ssh-add");
        assert!(
            out.status.success(),
            "ssh-add failed: {}",
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
