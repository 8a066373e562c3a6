//! The store's health, for a human: records that cannot be read, an audit log that fails
//! verification, and entries the store did not write.
//!
//! Nothing here changes the store: it is safe to run at any time, next to live processes.
//! Front ends show the report; only this module knows which names belong where.

use std::path::{Path, PathBuf};

use crate::audit::AuditSummary;
use crate::error::Error;
use crate::id::RequestId;
use crate::list::UnreadableRecord;
use crate::store::Gate;

/// What [`Gate::check_health`] found.
#[derive(Debug)]
#[non_exhaustive]
pub struct HealthReport {
    /// Records of the live store that cannot be read; each refuses everything about its id.
    pub unreadable: Vec<UnreadableRecord>,
    /// The audit log's verification ([`Gate::verify_audit`]): its summary, or why it fails.
    pub audit: Result<AuditSummary, Error>,
    /// Entries of the store's directories that the store does not write, relative to the
    /// store directory, in name order.
    pub stray: Vec<PathBuf>,
}

impl HealthReport {
    /// Whether nothing needs a human's attention.
    #[must_use]
    pub fn is_healthy(&self) -> bool {
        self.unreadable.is_empty() && self.audit.is_ok() && self.stray.is_empty()
    }
}

type IsKnown = fn(&str) -> bool;

/// The store's directories (relative to its root, `""` for the root itself) and whether a
/// name in one of them is one the store writes. Mirrors the layout in `store.rs`.
const DIRS: [(&str, IsKnown); 6] = [
    ("", |name| {
        matches!(
            name,
            "requests"
                | "pending"
                | "claims"
                | "locks"
                | "archive"
                | "audit.jsonl"
                | "audit.head"
                | "gate.lock"
        )
    }),
    ("requests", |name| id_with(name, &[".json"])),
    ("pending", |name| id_with(name, &[""])),
    ("claims", |name| {
        id_with(name, &[".used", ".logged", ".exec"])
    }),
    ("locks", |name| id_with(name, &[".lock"])),
    ("archive", |name| id_with(name, &[".json", ".used"])),
];

/// Whether `name` is a request id followed by one of `suffixes`.
fn id_with(name: &str, suffixes: &[&str]) -> bool {
    suffixes.iter().any(|suffix| {
        name.strip_suffix(suffix)
            .is_some_and(|id| RequestId::parse(id).is_ok())
    })
}

/// A replacement being written (`.<name>.tmp-<random>`): in progress now, or left by a
/// crash, and harmless either way since it is never read.
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

impl Gate {
    /// Checks the store without changing it: every record of the live store is read, the
    /// audit log is verified, and every directory is searched for entries the store does
    /// not write.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if a directory of the store cannot be listed; what is wrong inside the
    /// store is the report, not an error.
    pub fn check_health(&self) -> Result<HealthReport, Error> {
        let scan = self.scan_all(self.now(), false)?;
        let mut unreadable = scan.unreadable;
        unreadable.sort_by_key(UnreadableRecord::id);
        let mut stray = Vec::new();
        for (dir, known) in DIRS {
            for name in names(&self.dir().join(dir))? {
                let known = name.to_str().is_some_and(|n| known(n) || is_temporary(n));
                if !known {
                    stray.push(Path::new(dir).join(name));
                }
            }
        }
        stray.sort();
        Ok(HealthReport {
            unreadable,
            audit: self.verify_audit(),
            stray,
        })
    }
}

/// Every name in `dir`, including those that are not UTF-8 (which the store never writes).
/// Read-only, so it need not go through `fs.rs`'s rules for what the store opens.
fn names(dir: &Path) -> Result<Vec<std::ffi::OsString>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    entries
        .map(|entry| {
            entry
                .map(|e| e.file_name())
                .map_err(|e| Error::io("listing", dir, e))
        })
        .collect()
}
