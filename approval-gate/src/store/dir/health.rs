//! Which names belong where in the directory store: anything else is stray.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::id::RequestId;

type IsKnown = fn(&str) -> bool;

/// The store's directories (relative to its root, `""` for the root itself) and whether a
/// name in one of them is one the store writes. Mirrors the layout in `mod.rs`.
const DIRS: [(&str, IsKnown); 9] = [
    ("", |name| {
        matches!(
            name,
            "requests"
                | "claims"
                | "locks"
                | "archive"
                | "allowances"
                | "audit.jsonl"
                | "audit.head"
                | "journal.wal"
                | "gate.lock"
                | "queue"
                | "predecessor"
                | "notify"
        )
    }),
    ("requests", |name| id_with(name, &[".json"])),
    ("claims", |name| {
        id_with(name, &[".used", ".logged", ".exec"])
    }),
    ("locks", |name| {
        name == "passkeys.lock"
            || name.strip_suffix(".lock").is_some_and(|stripe| {
                stripe.len() == 2
                    && stripe
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
    }),
    ("archive", |name| id_with(name, &[".json", ".used"])),
    ("allowances", |name| {
        id_with(name, &[".json", ".uses", ".revoked", ".lock"])
    }),
    // A store `approval-gate migrate` brought over keeps the old one's files, byte for byte.
    ("predecessor", |name| {
        matches!(name, "audit.jsonl" | "requests")
    }),
    ("predecessor/requests", |name| id_with(name, &[".json"])),
    // The notifications ledger, made by the first `approval-gate notify`.
    ("notify", |name| {
        matches!(name, "ledger.jsonl" | "notifier.lock")
    }),
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

/// Entries of the store's directories that the store does not write, relative to `root`,
/// in name order.
pub(super) fn stray_entries(root: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut stray = Vec::new();
    for (dir, known) in DIRS {
        for name in names(&root.join(dir))? {
            let known = name.to_str().is_some_and(|n| known(n) || is_temporary(n));
            if !known {
                stray.push(Path::new(dir).join(name));
            }
        }
    }
    stray.sort();
    Ok(stray)
}

/// Every name in `dir`, including those that are not UTF-8 (which the store never writes).
/// Read-only, so it need not go through `fs.rs`'s rules for what the store opens. Only a
/// migrated store has `predecessor/`, and only one a notifier ran on has `notify/`: elsewhere
/// they are missing, with nothing in them.
fn names(dir: &Path) -> Result<Vec<std::ffi::OsString>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && (dir.ends_with("predecessor")
                    || dir.ends_with("predecessor/requests")
                    || dir.ends_with("notify")) =>
        {
            return Ok(Vec::new());
        }
        entries => entries.map_err(|e| Error::io("listing", dir, e))?,
    };
    entries
        .map(|entry| {
            entry
                .map(|e| e.file_name())
                .map_err(|e| Error::io("listing", dir, e))
        })
        .collect()
}
