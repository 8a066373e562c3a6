//! What the conformance suite needs from a backend, and the directory store's answer.
//!
//! A backend gives the suite throwaway stores and two looks of its own at one: what it holds
//! (to prove a refused operation changed nothing) and whether a claim was made (read from
//! its own storage, not through `Gate`, so the gate's answer has something to agree with).
//! Everything else the suite does through [`Gate`], the way a front end would; no test in
//! the suite knows where or how a backend keeps anything.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use approval_gate::{Gate, GateBuilder, Limits, Location, ManualClock, RequestId};

/// A kind of store the conformance suite runs against.
pub trait Backend: Send + Sync {
    /// A new, empty store, removed when the value is dropped. Opening it creates it.
    fn fresh(&self) -> Store;

    /// A new, empty store for tests of logic, not durability (the model-based test runs
    /// thousands): a backend may make it cheaper. By default, [`Backend::fresh`].
    fn fresh_for_logic(&self) -> Store {
        self.fresh()
    }

    /// Failpoints (as `FAILPOINTS` takes them, with `return(kill)`) inside this backend's
    /// own steps, where the crash matrix kills an executor on top of the lifecycle's own.
    fn kill_points(&self) -> &'static [&'static str];

    /// Everything `store` holds, by name, to compare before and after an operation that
    /// must change nothing. A store not created yet holds nothing.
    fn contents(&self, store: &Store) -> BTreeMap<String, Vec<u8>>;

    /// Whether `store` holds a spent claim on `id`, read from the backend's own storage.
    fn claimed(&self, store: &Store, id: RequestId) -> bool;

    /// Rewrites the live record of `id` as someone who can write the store directly (but
    /// holds no approver's key) could: `edit` gets the record in the directory store's JSON
    /// form (`status`, `decidedAt`, `approvals`: `[{principal, decidedBy, decidedAt,
    /// signature}]`, …) and changes it; the backend stores the result as it is.
    fn tamper(&self, store: &Store, id: RequestId, edit: &mut dyn FnMut(&mut serde_json::Value));
}

/// A store to test: where it is, and whatever keeps it alive until dropped.
pub struct Store {
    location: Location,
    text: String,
    _keep: Box<dyn Send + Sync>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("at", &self.text)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The store at `text` (as `--store` reads it), alive as long as `keep` is.
    ///
    /// # Panics
    ///
    /// If `text` is not a store location.
    #[must_use]
    pub fn new(text: impl Into<String>, keep: impl Send + Sync + 'static) -> Self {
        let text = text.into();
        let location = Location::parse(&text).expect("a store location");
        Self {
            location,
            text,
            _keep: Box::new(keep),
        }
    }

    /// Where the store is, as child processes are given it (`--store`,
    /// `APPROVAL_GATE_STORE`).
    #[must_use]
    pub fn location(&self) -> &str {
        &self.text
    }

    /// A builder for a gate on this store, to set a clock or limits.
    #[must_use]
    pub fn builder(&self) -> GateBuilder {
        Gate::builder().store(self.location.clone())
    }

    /// A gate on this store, on `clock` (default: the system clock) with `limits`.
    ///
    /// # Panics
    ///
    /// If the store cannot be opened.
    #[must_use]
    pub fn open(&self, clock: Option<ManualClock>, limits: Limits) -> Gate {
        let builder = self.builder().limits(limits);
        match clock {
            Some(clock) => builder.clock(clock),
            None => builder,
        }
        .open()
        .expect("open the store")
    }

    /// A gate on this store with the system clock and default limits.
    ///
    /// # Panics
    ///
    /// If the store cannot be opened.
    #[must_use]
    pub fn gate(&self) -> Gate {
        self.open(None, Limits::default())
    }
}

/// The directory store (`file:`), in a temporary directory.
#[derive(Debug, Clone, Copy, Default)]
pub struct Directory;

impl Directory {
    /// The directory store already at `dir`, left in place when dropped.
    ///
    /// # Panics
    ///
    /// If `dir` is not UTF-8.
    #[must_use]
    pub fn at(dir: &Path) -> Store {
        Store::new(dir.to_str().expect("a UTF-8 path"), ())
    }

    /// The state directory of a directory store.
    ///
    /// # Panics
    ///
    /// If `store` is not a directory store.
    #[must_use]
    pub fn dir(store: &Store) -> PathBuf {
        match &store.location {
            Location::Dir(dir) => dir.clone(),
            other => panic!("not a directory store: {other}"),
        }
    }

    fn fresh_in(tmp: tempfile::TempDir) -> Store {
        let dir = tmp.path().join("gate");
        Store::new(dir.to_str().expect("a UTF-8 temporary path"), tmp)
    }
}

impl Backend for Directory {
    fn fresh(&self) -> Store {
        Self::fresh_in(tempfile::tempdir().expect("tempdir"))
    }

    fn fresh_for_logic(&self) -> Store {
        // Memory where the machine offers it: the test checks logic, not durability.
        let shm = Path::new("/dev/shm");
        match shm.is_dir().then(|| tempfile::tempdir_in(shm)) {
            Some(Ok(tmp)) => Self::fresh_in(tmp),
            _ => self.fresh(),
        }
    }

    fn kill_points(&self) -> &'static [&'static str] {
        // The exclusive create of the claim, and each append of the audit log: `consumed`,
        // `execution_started`, `execution_finished`, so each occurrence gets its own entry.
        &[
            "fs::create_exclusive::before_sync=return(kill)",
            "fs::create_exclusive::before_dir_sync=return(kill)",
            "audit::before_write=return(kill)",
            "audit::before_sync=return(kill)",
            "audit::before_head=return(kill)",
            "audit::before_write=1*off->return(kill)",
            "audit::before_sync=1*off->return(kill)",
            "audit::before_head=1*off->return(kill)",
            "audit::before_write=2*off->return(kill)",
            "audit::before_sync=2*off->return(kill)",
            "audit::before_head=2*off->return(kill)",
        ]
    }

    fn contents(&self, store: &Store) -> BTreeMap<String, Vec<u8>> {
        let dir = Self::dir(store);
        if !dir.exists() {
            return BTreeMap::new();
        }
        let mut contents: BTreeMap<String, Vec<u8>> = crate::snapshot(&dir)
            .into_iter()
            .map(|(path, bytes)| (format!("/{}", path.display()), bytes))
            .collect();
        // The directory itself: a store created empty is not one never created.
        contents.insert("/".into(), b"<dir>".to_vec());
        contents
    }

    fn claimed(&self, store: &Store, id: RequestId) -> bool {
        Self::dir(store)
            .join("claims")
            .join(format!("{id}.used"))
            .exists()
    }

    fn tamper(&self, store: &Store, id: RequestId, edit: &mut dyn FnMut(&mut serde_json::Value)) {
        let path = Self::dir(store).join("requests").join(format!("{id}.json"));
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read the record"))
                .expect("a JSON record");
        edit(&mut record);
        std::fs::write(&path, serde_json::to_vec(&record).expect("JSON"))
            .expect("write the record");
    }
}
