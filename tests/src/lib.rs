//! Shared helpers for the end-to-end tests: fresh stores, snapshots of what is on disk, the
//! path of the child-process binary, and the conformance suite every backend passes
//! ([`conformance!`], [`suite`], [`backend`]).

pub mod backend;
pub mod conformance;
pub mod http;
pub mod invariants;
pub mod pg;
pub mod predecessor;
pub mod receiver;
pub mod ssh;
// Every case is a test: it panics when the backend fails it, and says why.
#[allow(clippy::missing_panics_doc)]
pub mod suite;
pub mod treatment;
pub mod webauthn;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use approval_gate::{
    Binding, CanonicalPayload, Decision, Gate, Limits, ManualClock, NewRequest, RequestId,
    Timestamp,
};
use tempfile::TempDir;

use crate::backend::{Backend, Store};

/// A fresh directory store in a temporary directory, on a manual clock: for the tests of the
/// directory store itself. The conformance suite uses [`Subject`].
pub struct Fixture {
    /// Keeps the directory alive.
    pub tmp: TempDir,
    /// The store's directory.
    pub dir: PathBuf,
    /// The store.
    pub gate: Gate,
    /// Its clock.
    pub clock: ManualClock,
}

/// 2026-11-30T00:00:00Z, a fixed starting point so tests are reproducible.
pub const T0: Timestamp = Timestamp::from_unix_millis(1_796_000_000_000);

impl Fixture {
    /// A new store at [`T0`].
    ///
    /// # Panics
    ///
    /// If the store cannot be created.
    #[must_use]
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("gate");
        let clock = ManualClock::new(T0);
        let gate = Gate::builder()
            .dir(&dir)
            .clock(clock.clone())
            .open()
            .expect("open gate");
        Self {
            tmp,
            dir,
            gate,
            clock,
        }
    }

    /// Files a request with the given action, operation and payload; returns its id.
    ///
    /// # Panics
    ///
    /// If the request is refused.
    #[must_use]
    pub fn ask(&self, action: &str, operation: Option<&str>, payload: Option<&str>) -> RequestId {
        ask(&self.gate, action, operation, payload)
    }

    /// Files and approves a request; returns its id.
    ///
    /// # Panics
    ///
    /// If either step is refused.
    #[must_use]
    pub fn approved(
        &self,
        action: &str,
        operation: Option<&str>,
        payload: Option<&str>,
    ) -> RequestId {
        approved(&self.gate, action, operation, payload)
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

/// A fresh store of some backend, on a manual clock at [`T0`]: what a conformance test
/// works on.
#[derive(Debug)]
pub struct Subject {
    /// The store; removed when dropped.
    pub store: Store,
    /// A gate on it.
    pub gate: Gate,
    /// The gate's clock.
    pub clock: ManualClock,
}

impl Subject {
    /// A new store of `backend` at [`T0`].
    ///
    /// # Panics
    ///
    /// If the store cannot be created.
    #[must_use]
    pub fn new(backend: &dyn Backend) -> Self {
        let store = backend.fresh();
        let clock = ManualClock::new(T0);
        let gate = store.open(Some(clock.clone()), Limits::default());
        Self { store, gate, clock }
    }

    /// Another gate on the same store and clock, as a process opening it anew would have
    /// (opening runs recovery).
    ///
    /// # Panics
    ///
    /// If the store cannot be opened.
    #[must_use]
    pub fn reopen(&self) -> Gate {
        self.store.open(Some(self.clock.clone()), Limits::default())
    }

    /// Files a request with the given action, operation and payload; returns its id.
    ///
    /// # Panics
    ///
    /// If the request is refused.
    #[must_use]
    pub fn ask(&self, action: &str, operation: Option<&str>, payload: Option<&str>) -> RequestId {
        ask(&self.gate, action, operation, payload)
    }

    /// Files and approves a request; returns its id.
    ///
    /// # Panics
    ///
    /// If either step is refused.
    #[must_use]
    pub fn approved(
        &self,
        action: &str,
        operation: Option<&str>,
        payload: Option<&str>,
    ) -> RequestId {
        approved(&self.gate, action, operation, payload)
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }
}

fn ask(gate: &Gate, action: &str, operation: Option<&str>, payload: Option<&str>) -> RequestId {
    let mut new = NewRequest::new(action, "test");
    if let Some(op) = operation {
        new = new.operation(op);
    }
    if let Some(p) = payload {
        new = new.payload(CanonicalPayload::from_json_text(p).expect("payload"));
    }
    gate.request_approval(new).expect("request").request.id()
}

fn approved(
    gate: &Gate,
    action: &str,
    operation: Option<&str>,
    payload: Option<&str>,
) -> RequestId {
    let id = ask(gate, action, operation, payload);
    gate.approve(id, &Decision::by("tester")).expect("approve");
    id
}

/// The child-process binary (`src/bin/approval-gate-child.rs`): one `execute_approved` on
/// a store, for the race and crash tests.
///
/// # Panics
///
/// If the binary is not there.
#[must_use]
pub fn child_binary() -> PathBuf {
    workspace_binary("approval-gate-child")
}

/// A binary of this workspace, by name: `approval-gate`, `approval-gate-mcp`, or this crate's
/// `approval-gate-child`, for the tests of one front end that need another's binary.
///
/// Cargo builds a package's binaries before its integration tests, into the directory above
/// the `deps/` that holds the test executables; its `CARGO_BIN_EXE_*` variables reach only
/// that package's test crates. `cargo test --workspace` builds every package's binaries
/// before it runs any test; after `cargo test -p` of one package, another's binary may be
/// missing or stale (`cargo build --workspace --bins` makes it).
///
/// # Panics
///
/// If the binary is not there.
#[must_use]
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable is in target/<profile>/deps");
    let binary = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.is_file(),
        "the {name} binary is missing at {}: run the tests with `cargo test --workspace`, \
         or `cargo build --workspace --bins` first",
        binary.display()
    );
    binary
}

/// The binding for an action, operation and payload text.
///
/// # Panics
///
/// If the payload is not acceptable JSON.
#[must_use]
pub fn binding(action: &str, operation: Option<&str>, payload: Option<&str>) -> Binding {
    let mut binding = Binding::new(action);
    if let Some(op) = operation {
        binding = binding.operation(op);
    }
    if let Some(p) = payload {
        binding = binding.payload(CanonicalPayload::from_json_text(p).expect("payload"));
    }
    binding
}

/// Every file under `dir` with its bytes (symlinks as their target), to compare what is on
/// disk before and after an operation that must change nothing.
///
/// # Panics
///
/// On I/O errors.
#[must_use]
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let kind = entry.file_type().expect("file type");
            let rel = path.strip_prefix(dir).expect("prefix").to_path_buf();
            if kind.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                stack.push(path);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("read_link");
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// The names that differ between two [`snapshot`]s or backend
/// [`contents`](backend::Backend::contents) (added, removed or changed), for short
/// assertion messages.
#[must_use]
pub fn changed<K: Ord + Clone>(
    before: &BTreeMap<K, Vec<u8>>,
    after: &BTreeMap<K, Vec<u8>>,
) -> Vec<K> {
    before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}
