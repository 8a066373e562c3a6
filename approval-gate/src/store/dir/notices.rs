//! The directory store's notifications ledger: `notify/ledger.jsonl`, one JSON line per
//! delivered or dead-lettered message, appended and synced one by one, and
//! `notify/notifier.lock`, held by the one notifier that may run on this store.
//!
//! A line cut by a crash (the last one, without its newline) is dropped when the next notifier
//! opens the ledger: the message it recorded is sent again (at least once, never lost).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::fs;
use super::layout::{Locked, try_lock_existing};
use crate::error::Error;
use crate::notices::{DeadLetter, Ledger, NoticeClaim, Outcome};
use crate::time::Timestamp;

/// The longest ledger read: far more lines than a store's requests ever make.
const MAX_LEDGER_BYTES: u64 = 64 * 1024 * 1024;

/// The ledger of one directory store, held by this process's notifier.
pub(super) struct DirLedger {
    path: PathBuf,
    state: Mutex<(File, HashMap<String, Recorded>)>,
    _lock: Locked,
}

impl std::fmt::Debug for DirLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirLedger")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What the ledger says of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    Delivered,
    Dead,
}

/// `notify/` under the store's root.
pub(super) fn dir(root: &Path) -> PathBuf {
    root.join("notify")
}

fn ledger_path(root: &Path) -> PathBuf {
    dir(root).join("ledger.jsonl")
}

fn lock_path(root: &Path) -> PathBuf {
    dir(root).join("notifier.lock")
}

impl DirLedger {
    /// Opens the ledger of the store at `root` for this process's notifier: refused while
    /// another process holds it.
    pub(super) fn open(root: &Path) -> Result<Self, Error> {
        fs::ensure_dir(&dir(root))?;
        let lock_file = lock_path(root);
        // Made if missing (its name needs no durability), then taken without waiting.
        drop(fs::open_lock(&lock_file)?);
        let Some(lock) = try_lock_existing(&lock_file)? else {
            return Err(Error::io(
                "locking the notifier's ledger",
                &lock_file,
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another `approval-gate notify` runs on this directory store; stop it first \
                     (only a PostgreSQL store takes several notifiers)",
                ),
            ));
        };
        let path = ledger_path(root);
        let file = fs::open_append(&path)?;
        let bytes = fs::read_bounded(&path, MAX_LEDGER_BYTES)?.unwrap_or_default();
        // A torn last line is cut off before anything is appended after it.
        let whole = bytes
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        if whole < bytes.len() {
            fs::truncate(&file, &path, whole as u64)?;
            fs::sync_data(&file, &path)?;
        }
        let mut known = HashMap::new();
        for (key, line) in lines(&path, &bytes[..whole])? {
            let state = match line.get("state").and_then(Value::as_str) {
                Some("delivered") => Recorded::Delivered,
                _ => Recorded::Dead,
            };
            // Dead beats delivered: neither is sent again.
            let entry = known.entry(key).or_insert(state);
            if state == Recorded::Dead {
                *entry = state;
            }
        }
        Ok(Self {
            path,
            state: Mutex::new((file, known)),
            _lock: lock,
        })
    }
}

impl Ledger for DirLedger {
    fn claim(&self, key: &str, _lease: Duration, _now: Timestamp) -> Result<NoticeClaim, Error> {
        // The only notifier on this store: no lease to take.
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(match state.1.get(key) {
            None => NoticeClaim::Mine,
            Some(Recorded::Delivered) => NoticeClaim::Delivered,
            Some(Recorded::Dead) => NoticeClaim::Dead,
        })
    }

    fn record(&self, key: &str, outcome: &Outcome<'_>, now: Timestamp) -> Result<(), Error> {
        let (line, recorded) = match outcome {
            Outcome::Delivered => (
                json!({ "key": key, "state": "delivered", "at": now.to_string() }),
                Recorded::Delivered,
            ),
            Outcome::Dead { reason, attempts } => (
                json!({
                    "key": key, "state": "dead", "at": now.to_string(),
                    "reason": reason, "attempts": attempts,
                }),
                Recorded::Dead,
            ),
        };
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        fs::write_all(&mut state.0, &self.path, &bytes)?;
        fs::sync_data(&state.0, &self.path)?;
        state.1.insert(key.to_owned(), recorded);
        Ok(())
    }
}

/// The dead letters of the store at `root`, oldest first, read without the notifier's lock
/// (a line being appended is not read yet).
pub(super) fn dead_letters(root: &Path) -> Result<Vec<DeadLetter>, Error> {
    let path = ledger_path(root);
    let Some(bytes) = fs::read_bounded(&path, MAX_LEDGER_BYTES)? else {
        return Ok(Vec::new());
    };
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let mut dead = Vec::new();
    for (key, line) in lines(&path, &bytes[..whole])? {
        if line.get("state").and_then(Value::as_str) != Some("dead") {
            continue;
        }
        dead.push(DeadLetter {
            key,
            reason: line
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            attempts: line
                .get("attempts")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            at: line
                .get("at")
                .and_then(Value::as_str)
                .and_then(|at| Timestamp::parse_rfc3339(at).ok())
                .unwrap_or(Timestamp::from_unix_millis(0)),
        });
    }
    Ok(dead)
}

/// Each whole line's key and object; a line that is not one is damage, named by its number.
fn lines(path: &Path, bytes: &[u8]) -> Result<Vec<(String, Value)>, Error> {
    let corrupt = |n: usize, problem: &str| Error::Corrupt {
        path: path.to_owned(),
        problem: format!("line {n}: {problem}"),
    };
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_slice(line).map_err(|e| corrupt(i + 1, &e.to_string()))?;
        let key = value
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| corrupt(i + 1, "no key"))?
            .to_owned();
        match value.get("state").and_then(Value::as_str) {
            Some("delivered" | "dead") => out.push((key, value)),
            _ => return Err(corrupt(i + 1, "no state (delivered or dead)")),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "notices_tests.rs"]
mod tests;
