//! Shared helpers for the end-to-end tests: fresh stores, snapshots of what is on disk, and
//! the path of the child-process binary used by the race tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use approval_gate::{
    Binding, CanonicalPayload, Decision, Gate, ManualClock, NewRequest, RequestId, Timestamp,
};
use tempfile::TempDir;

/// A fresh store in a temporary directory, on a manual clock.
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
        let mut new = NewRequest::new(action, "test");
        if let Some(op) = operation {
            new = new.operation(op);
        }
        if let Some(p) = payload {
            new = new.payload(CanonicalPayload::from_json_text(p).expect("payload"));
        }
        self.gate
            .request_approval(new)
            .expect("request")
            .request
            .id()
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
        let id = self.ask(action, operation, payload);
        self.gate
            .approve(id, &Decision::by("tester"))
            .expect("approve");
        id
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

/// The paths that differ between two [`snapshot`]s (added, removed or changed), for short
/// assertion messages.
#[must_use]
pub fn changed(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<PathBuf> {
    before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}
