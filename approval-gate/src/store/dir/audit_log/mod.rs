//! The directory store's audit log: `audit.jsonl` (the chain of [`crate::audit`]) and its
//! anchor `audit.head`.
//!
//! A small fixed-size anchor file, `audit.head`, records the sequence number and hash of the
//! last line written; it is also the lock that serialises appends from every process, so
//! lines stay whole and the chain stays linear. The anchor is written (`0` and the genesis
//! hash) before the first line, so a log with content and no anchor is never a state we leave
//! behind: it means the anchor was deleted or emptied, which could hide a truncation. Such a
//! log is refused for appends and reported by `verify` until a human re-anchors it explicitly
//! ([`Gate::reanchor_audit`](crate::Gate::reanchor_audit)), which is itself an audit event
//! naming who did it and what was found. It is tamper-evident against accidents and careless
//! edits, not against someone who can rewrite both files: see `docs/threat-model.md`.

mod anchor;
mod commit;
pub(crate) mod journal;
mod last_line;
mod replay;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::fs;
use crate::audit::{
    AuditEvent, AuditRecord, AuditSummary, GENESIS, LineOut, Reanchored, check_line_hash,
    parse_chain,
};
use crate::error::Error;
use crate::id::RequestId;
use crate::time::Timestamp;
use anchor::{At, Durability, Head, check_anchor, read_head, unanchored, write_head};
use commit::Group;
pub(crate) use commit::{Step, defer_durability, durability_deferred};
use last_line::last_line;

/// The journal's length past which a commit checkpoints it (and empties it); small in unit
/// tests, so that they reach it.
const CHECKPOINT_AT: u64 = if cfg!(test) {
    16 * 1024
} else {
    8 * 1024 * 1024
};

/// Paths of the log, its anchor and the journal, and this process's commits in waiting.
#[derive(Debug, Clone)]
pub(crate) struct AuditLog {
    root: PathBuf,
    log: PathBuf,
    head: PathBuf,
    journal: PathBuf,
    group: std::sync::Arc<Group>,
}

/// The position a new line chains onto.
struct Tail {
    seq: u64,
    hash: String,
}

impl AuditLog {
    pub(crate) fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            log: root.join("audit.jsonl"),
            head: root.join("audit.head"),
            journal: root.join(journal::FILE),
            group: std::sync::Arc::default(),
        }
    }

    fn layout(&self) -> super::layout::Layout {
        super::layout::Layout {
            root: self.root.clone(),
        }
    }

    /// Appends one event, durable before returning (its journal entry synced; the line
    /// itself is written after, unsynced, and replayed from the journal after a power loss).
    pub(crate) fn append(
        &self,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<u64, Error> {
        self.commit(Step {
            ts,
            event,
            id,
            details: details.clone(),
            effect: None,
            deferred: false,
            made: true,
        })
        .map_err(fs::Failed::into_error)
    }

    /// Fails as [`append`](Self::append) would, without writing anything: for operations
    /// whose effect must not happen unless its audit line can follow.
    pub(crate) fn check_appendable(&self) -> Result<(), Error> {
        // A commit of this process is under way: it checks the log under the anchor's lock
        // an instant from now, and fails the steps it cannot record. Waiting for its sync
        // here (a filing waits under the filing lock) would queue every step behind it.
        if self.group.committing() {
            return Ok(());
        }
        let head_file = fs::open_lock_durable(&self.head)?;
        let lock = fd_lock::RwLock::new(head_file);
        let guard = lock
            .read()
            .map_err(|e| Error::io("locking", &self.head, e))?;
        let head = read_head(&guard, &self.head)?;
        if let Some(mut log) = fs::open_existing(&self.log)? {
            self.tail(&mut log, head.as_ref(), false)?;
        }
        Ok(())
    }

    /// Accepts the log as it is now as the true history: cuts a torn last line, appends a
    /// `reanchored` line recording `by` and what was found, and anchors the log there. The
    /// line is written before the anchor, so the anchor never moves without its record.
    pub(crate) fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error> {
        let head_file = fs::open_lock_durable(&self.head)?;
        let mut lock = fd_lock::RwLock::new(head_file);
        let guard = lock
            .write()
            .map_err(|e| Error::io("locking", &self.head, e))?;
        let (head, head_problem) = match read_head(&guard, &self.head) {
            Ok(head) => (head, None),
            Err(error) => (None, Some(error.to_string())),
        };
        let bytes = fs::read_bounded(&self.log, u64::MAX / 2)?.unwrap_or_default();
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let torn = (bytes.len() - complete) as u64;
        let (_, summary) = parse_chain(&bytes[..complete]).map_err(|error| match error {
            Error::AuditBroken { line, problem } => Error::AuditBroken {
                line,
                problem: format!(
                    "{problem}; re-anchoring accepts only a log whose lines chain, so move the log aside and keep it for investigation"
                ),
            },
            other => other,
        })?;
        let problem = match (head_problem, check_anchor(head.as_ref(), &bytes)) {
            (Some(problem), _) | (None, Err(Error::AuditBroken { problem, .. })) => problem,
            (None, Err(other)) => return Err(other),
            (None, Ok(_)) => {
                return Err(Error::InvalidInput {
                    field: "audit reanchor",
                    problem: "the audit log and its anchor agree: nothing to re-anchor".into(),
                });
            }
        };
        let mut log = fs::open_append(&self.log)?;
        if torn > 0 {
            fs::truncate(&log, &self.log, complete as u64)?;
            fs::sync_data(&log, &self.log)?;
        }
        let mut details = Map::new();
        details.insert("by".into(), Value::from(by));
        details.insert("problem".into(), Value::from(problem.clone()));
        details.insert("foundLines".into(), Value::from(summary.lines));
        details.insert(
            "foundLastHash".into(),
            Value::from(summary.last_hash.clone()),
        );
        details.insert(
            "previousAnchor".into(),
            head.as_ref()
                .map_or(Value::Null, |head| Value::from(head.seq)),
        );
        details.insert("tornBytesCut".into(), Value::from(torn));
        let tail = Tail {
            seq: summary.lines,
            hash: summary.last_hash.clone(),
        };
        // Rare and deliberate: everything written so far is made durable, the journal starts
        // again at the log as found, and the line is journalled, written and anchored, each
        // synced.
        fs::sync_fs(&self.root)?;
        let mut wal = fs::open_append(&self.journal)?;
        fs::truncate(&wal, &self.journal, 0)?;
        let (seq, hash, line) = self.format_line(
            &tail,
            ts,
            AuditEvent::Reanchored,
            RequestId::STORE,
            &details,
        )?;
        let header = journal::Header {
            after: tail.seq,
            hash: tail.hash.clone(),
        };
        let mut bytes = journal::encode(&header);
        bytes.extend(journal::encode(&journal::Entry {
            seq,
            line: line.trim_end().to_owned(),
            effect: None,
        }));
        fs::write_all(&mut wal, &self.journal, &bytes)?;
        fs::sync_data(&wal, &self.journal)?;
        fs::write_all(&mut log, &self.log, line.as_bytes())?;
        fs::sync_data(&log, &self.log)?;
        let at = At {
            seq,
            hash: &hash,
            journal: file_len(&wal, &self.journal)?,
        };
        write_head(&guard, &self.head, &at, Durability::Synced)?;
        Ok(Reanchored {
            problem,
            found_lines: summary.lines,
            found_last_hash: summary.last_hash,
            previous_anchor: head.map(|head| head.seq),
            torn_bytes_cut: torn,
            seq,
        })
    }

    /// The line after `tail`, with its newline; its position and hash.
    fn format_line(
        &self,
        tail: &Tail,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<(u64, String, String), Error> {
        let seq = tail.seq + 1;
        let body = serde_json::to_string(&LineOut {
            seq,
            ts,
            event,
            id,
            details,
            prev: &tail.hash,
        })
        .map_err(|e| Error::Corrupt {
            path: self.log.clone(),
            problem: format!("cannot encode audit line: {e}"),
        })?;
        let prefix = &body[..body.len() - 1];
        let hash = blake3::hash(prefix.as_bytes()).to_hex();
        let line = format!("{prefix},\"hash\":\"{hash}\"}}\n");
        Ok((seq, hash.to_string(), line))
    }

    /// Cuts a torn last line, the trace of a crash or power loss during an append that never
    /// returned, when the anchor proves it was never acknowledged; as the next append would.
    /// Run by recovery, so that `verify` after a power loss sees the log the store stands by.
    pub(crate) fn repair_torn_tail(&self) -> Result<(), Error> {
        let Some(log) = fs::open_existing(&self.log)? else {
            return Ok(());
        };
        let len = log_len(&log, &self.log)?;
        let mut last = [0u8; 1];
        if len == 0
            || log
                .read_at(&mut last, len - 1)
                .map_err(|e| Error::io("reading", &self.log, e))?
                == 1
                && last[0] == b'\n'
        {
            return Ok(());
        }
        let head_file = fs::open_lock_durable(&self.head)?;
        let mut lock = fd_lock::RwLock::new(head_file);
        let guard = lock
            .write()
            .map_err(|e| Error::io("locking", &self.head, e))?;
        let head = read_head(&guard, &self.head)?;
        let mut log = fs::open_append(&self.log)?;
        self.tail(&mut log, head.as_ref(), true).map(drop)
    }

    /// Finds the last complete line. A torn tail (bytes after the last newline) is the trace
    /// of a crash during an append that never returned; it is cut off only when the anchor
    /// proves it was never acknowledged.
    fn tail(&self, log: &mut File, head: Option<&Head>, cut_torn: bool) -> Result<Tail, Error> {
        let len = fs::Meta::of_file(log)
            .map_err(|e| Error::io("inspecting", &self.log, e))?
            .len();
        if head.is_none() && len > 0 {
            return Err(unanchored());
        }
        let (last, torn_from) = last_line(log, len, &self.log)?;
        let tail = match &last {
            None => Tail {
                seq: 0,
                hash: GENESIS.to_owned(),
            },
            Some(line) => {
                let (seq, hash) = check_line_hash(line).map_err(|problem| Error::AuditBroken {
                    line: head.map_or(0, |h| h.seq),
                    problem: format!("last line: {problem}; run `approval-gate audit verify`"),
                })?;
                Tail { seq, hash }
            }
        };
        if let Some(head) = head {
            let head_seq = head.seq;
            let consistent = head_seq == tail.seq && head.hash == tail.hash
                // An append that crashed after its line but before the anchor.
                || head_seq + 1 == tail.seq
                // A power loss since the anchor was last written may have undone its moves.
                || !head.this_boot && head_seq < tail.seq;
            if !consistent {
                return Err(Error::AuditBroken {
                    line: head_seq.min(tail.seq) + 1,
                    problem: format!(
                        "the log ends at line {} but its anchor records line {head_seq}; run `approval-gate audit verify` (and `approval-gate audit reanchor` only if you accept the log as it is)",
                        tail.seq
                    ),
                });
            }
        }
        if let Some(offset) = torn_from.filter(|_| cut_torn) {
            fs::truncate(log, &self.log, offset)?;
            fs::sync_data(log, &self.log)?;
        }
        Ok(tail)
    }

    /// Reads every line, checking the chain; the first problem is reported with its line.
    #[cfg(test)]
    pub(crate) fn verify(&self) -> Result<AuditSummary, Error> {
        self.verify_records().map(|(summary, _)| summary)
    }

    /// Verifies the chain (every line, the first problem reported with its line), and the records it read, from one read of the log made
    /// while no append is under way.
    pub(crate) fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        let head_file = fs::open_lock_durable(&self.head)?;
        let lock = fd_lock::RwLock::new(head_file);
        let guard = lock
            .read()
            .map_err(|e| Error::io("locking", &self.head, e))?;
        let head = read_head(&guard, &self.head)?;
        let bytes = fs::read_bounded(&self.log, u64::MAX / 2)?.unwrap_or_default();
        drop(guard);
        check_anchor(head.as_ref(), &bytes)
    }

    /// Reads and parses every line, checking the chain.
    pub(crate) fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        let bytes = fs::read_bounded(&self.log, u64::MAX / 2)?.unwrap_or_default();
        parse_chain(&bytes).map(|(records, _)| records)
    }
}

fn log_len(log: &File, path: &Path) -> Result<u64, Error> {
    file_len(log, path)
}

fn file_len(file: &File, path: &Path) -> Result<u64, Error> {
    Ok(fs::Meta::of_file(file)
        .map_err(|e| Error::io("inspecting", path, e))?
        .len())
}
