//! The directory store's layout (where each file is, as the table in `dir/mod.rs` says) and
//! the file locks it takes.

use std::path::{Path, PathBuf};

use super::fs;
use crate::error::Error;
use crate::id::RequestId;

/// Where each of the store's files is, under its root (the module's table).
#[derive(Debug)]
pub(super) struct Layout {
    pub(super) root: PathBuf,
}

impl Layout {
    pub(super) fn requests_dir(&self) -> PathBuf {
        self.root.join("requests")
    }
    pub(super) fn claims_dir(&self) -> PathBuf {
        self.root.join("claims")
    }
    pub(super) fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }
    pub(super) fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }
    pub(super) fn allowances_dir(&self) -> PathBuf {
        self.root.join("allowances")
    }
    /// The signed allowance, written once.
    pub(super) fn allowance(&self, id: RequestId) -> PathBuf {
        self.allowances_dir().join(format!("{id}.json"))
    }
    /// Its uses, one line each, appended.
    pub(super) fn allowance_uses(&self, id: RequestId) -> PathBuf {
        self.allowances_dir().join(format!("{id}.uses"))
    }
    /// Made once it is revoked.
    pub(super) fn allowance_revoked(&self, id: RequestId) -> PathBuf {
        self.allowances_dir().join(format!("{id}.revoked"))
    }
    /// Held for each of its steps.
    pub(super) fn allowance_lock(&self, id: RequestId) -> PathBuf {
        self.allowances_dir().join(format!("{id}.lock"))
    }
    pub(super) fn filing_lock(&self) -> PathBuf {
        self.root.join("gate.lock")
    }
    pub(super) fn request(&self, id: RequestId) -> PathBuf {
        self.requests_dir().join(format!("{id}.json"))
    }
    pub(super) fn claim(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.used"))
    }
    /// Made after the `consumed` line is durable, so recovery knows which claims to check.
    pub(super) fn claim_logged(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.logged"))
    }
    /// Guard locked by a process while it executes an approved action.
    pub(super) fn execution_marker(&self, id: RequestId) -> PathBuf {
        self.claims_dir().join(format!("{id}.exec"))
    }
    pub(super) fn lock(&self, id: RequestId) -> PathBuf {
        self.locks_dir().join(format!("{}.lock", &id.as_str()[..2]))
    }
    /// Locked while a passkey approval's signature counter is checked and recorded; made
    /// when first locked.
    pub(super) fn counters_lock(&self) -> PathBuf {
        self.locks_dir().join("passkeys.lock")
    }
    pub(super) fn archived(&self, id: RequestId) -> PathBuf {
        self.archive_dir().join(format!("{id}.json"))
    }
    pub(super) fn archived_claim(&self, id: RequestId) -> PathBuf {
        self.archive_dir().join(format!("{id}.used"))
    }
}

/// An exclusive lock held for the life of the value.
pub(super) struct Locked {
    _lock: Box<fd_lock::RwLock<std::fs::File>>,
}

/// Takes the lock only if no other process holds it; `None` if one does, or if the file
/// does not exist (it is never created here).
pub(super) fn try_lock_existing(path: &Path) -> Result<Option<Locked>, Error> {
    let Some(file) = fs::open_existing_rw(path)? else {
        return Ok(None);
    };
    let mut lock = Box::new(fd_lock::RwLock::new(file));
    match lock.try_write() {
        Ok(guard) => std::mem::forget(guard),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
        Err(e) => return Err(Error::io("locking", path, e)),
    }
    Ok(Some(Locked { _lock: lock }))
}

/// Waits for an exclusive lock on `path`, creating the file if needed.
pub(super) fn lock_exclusive(path: &Path) -> Result<Locked, Error> {
    lock_file(fs::open_lock(path)?, path)
}

/// Waits for an exclusive lock on an already opened file.
pub(super) fn lock_file(file: std::fs::File, path: &Path) -> Result<Locked, Error> {
    let mut lock = Box::new(fd_lock::RwLock::new(file));
    // fd-lock hands out a guard borrowing the lock; flock(2) itself is held by the open file
    // description until it is closed, so keep the file and forget the guard.
    std::mem::forget(lock.write().map_err(|e| Error::io("locking", path, e))?);
    Ok(Locked { _lock: lock })
}

/// Ids named `<id><suffix>` in `dir`.
pub(super) fn ids_in(dir: &Path, suffix: &str) -> Result<Vec<RequestId>, Error> {
    Ok(fs::list_names(dir)?
        .iter()
        .filter_map(|name| name.strip_suffix(suffix))
        .filter_map(|id| RequestId::parse(id).ok())
        .collect())
}
