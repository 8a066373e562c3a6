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

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::boot::{self, BOOT_LEN};
use super::fs;
use crate::audit::{
    AuditEvent, AuditRecord, AuditSummary, GENESIS, LineOut, MAX_LINE, Reanchored, check_line_hash,
    line_hash_at, parse_chain,
};
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::time::Timestamp;

/// `seq` (20 digits), space, hash (64), space, the boot written in (36), newline.
const HEAD_LEN: usize = 20 + 1 + 64 + 1 + BOOT_LEN + 1;

/// Paths of the log and its anchor.
#[derive(Debug, Clone)]
pub(crate) struct AuditLog {
    log: PathBuf,
    head: PathBuf,
}

/// The position a new line chains onto.
struct Tail {
    seq: u64,
    hash: String,
}

impl AuditLog {
    pub(crate) fn new(root: &Path) -> Self {
        Self {
            log: root.join("audit.jsonl"),
            head: root.join("audit.head"),
        }
    }

    /// Appends one event and fsyncs it before returning. The anchor then moves to it,
    /// unsynced (see [`Durability::Lazy`]).
    pub(crate) fn append(
        &self,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<u64, Error> {
        let head_file = fs::open_lock_durable(&self.head)?;
        let mut lock = fd_lock::RwLock::new(head_file);
        let guard = lock
            .write()
            .map_err(|e| Error::io("locking", &self.head, e))?;
        let head = read_head(&guard, &self.head)?;
        let mut log = fs::open_append(&self.log)?;
        let tail = self.tail(&mut log, head.as_ref(), true)?;
        if head.is_none() {
            // A brand new log: anchor it, durably, before its first line, so that from now
            // on a log with content and no anchor can only mean the anchor was removed.
            write_head(&guard, &self.head, 0, GENESIS, Durability::Synced)?;
        }
        let (seq, hash) = self.write_line(&mut log, &tail, ts, event, id, details)?;
        failpoint!("audit::before_sync");
        fs::sync_data(&log, &self.log)?;
        failpoint!("fs::op");
        failpoint!("audit::before_head");
        write_head(&guard, &self.head, seq, &hash, Durability::Lazy)?;
        Ok(seq)
    }

    /// Fails as [`append`](Self::append) would, without writing anything: for operations
    /// whose effect must not happen unless its audit line can follow.
    pub(crate) fn check_appendable(&self) -> Result<(), Error> {
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
        let (seq, hash) = self.write_line(
            &mut log,
            &tail,
            ts,
            AuditEvent::Reanchored,
            RequestId::STORE,
            &details,
        )?;
        // Rare and deliberate: the line and the new anchor are both made durable at once.
        fs::sync_data(&log, &self.log)?;
        write_head(&guard, &self.head, seq, &hash, Durability::Synced)?;
        Ok(Reanchored {
            problem,
            found_lines: summary.lines,
            found_last_hash: summary.last_hash,
            previous_anchor: head.map(|head| head.seq),
            torn_bytes_cut: torn,
            seq,
        })
    }

    /// Writes one line after `tail`, not yet synced; the caller holds the anchor's lock.
    /// Its position and hash.
    fn write_line(
        &self,
        log: &mut File,
        tail: &Tail,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<(u64, String), Error> {
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
        failpoint!("fs::op");
        failpoint!("audit::before_write");
        fs::write_all(log, &self.log, line.as_bytes())?;
        failpoint!("fs::op");
        Ok((seq, hash.to_string()))
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
        let len = log
            .metadata()
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

fn unanchored() -> Error {
    Error::AuditBroken {
        line: 1,
        problem: "unanchored: audit.head is missing or empty, so a truncation of the log could not be seen; if you trust the log as it is, run `approval-gate audit reanchor`".into(),
    }
}

/// Checks the whole log and that its anchor agrees with its end; its records.
fn check_anchor(
    head: Option<&Head>,
    bytes: &[u8],
) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
    let (records, summary) = parse_chain(bytes)?;
    if let Some(head) = head {
        let (head_seq, head_hash) = (head.seq, head.hash.as_str());
        if head_seq > summary.lines {
            return Err(Error::AuditBroken {
                line: summary.lines + 1,
                problem: format!(
                    "missing: the log ends at line {} but its anchor records line {head_seq} (truncated)",
                    summary.lines
                ),
            });
        }
        // One line past the anchor is an append that crashed before moving it; more, only
        // a power loss since the anchor was written explains (its moves are not synced).
        if head_seq + 1 < summary.lines && head.this_boot {
            return Err(Error::AuditBroken {
                line: head_seq + 2,
                problem: format!(
                    "unanchored: the anchor records line {head_seq} but the log has {} lines",
                    summary.lines
                ),
            });
        }
        if head_seq > 0 {
            let anchored = line_hash_at(bytes, head_seq);
            if anchored.as_deref() != Some(head_hash) {
                return Err(Error::AuditBroken {
                    line: head_seq,
                    problem: "altered: the line does not match the hash in its anchor".into(),
                });
            }
        }
    } else if summary.lines > 0 {
        return Err(unanchored());
    }
    Ok((summary, records))
}

/// How much of the log's end the first read for its last line takes: a few lines, almost
/// always enough. The read grows from there, up to the most any last line can need.
const TAIL_READ: u64 = 8 * 1024;

/// The last complete line and, if the file ends in a torn line, where that tail starts.
type LastLine = (Option<String>, Option<u64>);

/// The log's [`LastLine`]. Reads the log's end in growing windows, from [`TAIL_READ`] up to twice the longest line,
/// stopping at the first window whose answer cannot change by reading further back: an
/// append's cost does not grow with the log (a whole-window read of a long log cost two
/// allocations and copies of half a megabyte per line written).
fn last_line(log: &mut File, len: u64, path: &Path) -> Result<LastLine, Error> {
    let limit = len.min(2 * MAX_LINE as u64);
    let mut window = limit.min(TAIL_READ);
    loop {
        let start = len - window;
        let mut buf = vec![0u8; usize::try_from(window).expect("at most 512 KiB")];
        log.seek(SeekFrom::Start(start))
            .and_then(|_| log.read_exact(&mut buf))
            .map_err(|e| Error::io("reading", path, e))?;
        match last_line_in(buf, start, window == limit)? {
            Some(found) => return Ok(found),
            None => window = limit.min(window.saturating_mul(8)),
        }
    }
}

/// [`last_line`] within the `buf` read from `start` to the log's end: `None` when the answer
/// depends on bytes before `start` and `whole` (the widest window read) is false.
fn last_line_in(mut buf: Vec<u8>, start: u64, whole: bool) -> Result<Option<LastLine>, Error> {
    if buf.is_empty() {
        return Ok(Some((None, None)));
    }
    // Whether the window reaches back far enough: to the file's start, or as far as it may.
    let settled = whole || start == 0;
    let torn_from = if buf.last() == Some(&b'\n') {
        None
    } else {
        let cut = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        if cut == 0 && !settled {
            return Ok(None);
        }
        buf.truncate(cut);
        Some(start + cut as u64)
    };
    if buf.is_empty() {
        return Ok(Some((None, torn_from)));
    }
    buf.pop();
    let begin = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    if begin == 0 && start > 0 {
        if !settled {
            return Ok(None);
        }
        return Err(Error::AuditBroken {
            line: 0,
            problem: "last line is longer than any audit record".into(),
        });
    }
    let line = String::from_utf8(buf.split_off(begin)).map_err(|_| Error::AuditBroken {
        line: 0,
        problem: "last line is not UTF-8".into(),
    })?;
    Ok(Some((Some(line), torn_from)))
}

fn log_len(log: &File, path: &Path) -> Result<u64, Error> {
    Ok(log
        .metadata()
        .map_err(|e| Error::io("inspecting", path, e))?
        .len())
}

/// The anchor as read.
struct Head {
    /// The line it records.
    seq: u64,
    /// That line's hash.
    hash: String,
    /// Written in this boot of the machine: every move since is in it (within a run, every
    /// process reads what the others wrote), so at most one line can be past it.
    this_boot: bool,
}

fn read_head(file: &File, path: &Path) -> Result<Option<Head>, Error> {
    let mut buf = [0u8; HEAD_LEN];
    let n = file
        .read_at(&mut buf, 0)
        .map_err(|e| Error::io("reading", path, e))?;
    if n == 0 {
        return Ok(None);
    }
    let corrupt = || Error::AuditBroken {
        line: 0,
        problem: format!("anchor {} is not a valid head record", path.display()),
    };
    let text = std::str::from_utf8(&buf[..n]).map_err(|_| corrupt())?;
    let mut fields = text.strip_suffix('\n').ok_or_else(corrupt)?.split(' ');
    let (Some(seq), Some(hash)) = (fields.next(), fields.next()) else {
        return Err(corrupt());
    };
    // Anchors written before they named their boot have no third field.
    let written_in = fields.next();
    if fields.next().is_some() || written_in.is_some_and(|b| b.len() != BOOT_LEN) {
        return Err(corrupt());
    }
    let seq = seq.parse::<u64>().map_err(|_| corrupt())?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(corrupt());
    }
    Ok(Some(Head {
        seq,
        hash: hash.to_owned(),
        this_boot: written_in.is_some() && written_in == boot::current(),
    }))
}

/// Whether a move of the anchor is synced.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// A new log's first anchor, and a re-anchoring.
    Synced,
    /// Every append's: written after its line is durable, so a power loss can only leave the
    /// anchor behind the log's end, never ahead of it, and the next append moves it on. The
    /// anchor names the boot it was written in: within that run every process reads it as
    /// written, so more than one line past it is refused as before; only after a power loss
    /// are more allowed, until the next append (docs/threat-model.md).
    Lazy,
}

fn write_head(
    file: &File,
    path: &Path,
    seq: u64,
    hash: &str,
    durability: Durability,
) -> Result<(), Error> {
    write_head_as(
        file,
        path,
        seq,
        hash,
        durability,
        boot::current().unwrap_or(boot::UNKNOWN),
    )
}

fn write_head_as(
    file: &File,
    path: &Path,
    seq: u64,
    hash: &str,
    durability: Durability,
    written_in: &str,
) -> Result<(), Error> {
    // Fixed length, one pwrite at offset 0, well inside one sector: never half old, half new.
    let record = format!("{seq:020} {hash} {written_in}\n");
    debug_assert_eq!(record.len(), HEAD_LEN);
    fs::write_at(file, path, record.as_bytes(), 0)?;
    if durability == Durability::Synced {
        fs::sync_data(file, path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(n: u64) -> (tempfile::TempDir, AuditLog) {
        let tmp = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(tmp.path());
        let id = RequestId::parse("0123456789ab").unwrap();
        for i in 0..n {
            let mut details = Map::new();
            details.insert("n".into(), Value::from(i));
            audit
                .append(
                    Timestamp::from_unix_millis(1_000 + i.cast_signed()),
                    AuditEvent::Requested,
                    id,
                    &details,
                )
                .unwrap();
        }
        (tmp, audit)
    }

    fn lines(audit: &AuditLog) -> Vec<String> {
        std::fs::read_to_string(&audit.log)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Reads the log's lines, lets `change` edit them, writes them back, and returns them.
    fn edit(audit: &AuditLog, change: impl FnOnce(&mut Vec<String>)) -> Vec<String> {
        let mut all = lines(audit);
        change(&mut all);
        rewrite(audit, &all);
        all
    }

    fn rewrite(audit: &AuditLog, lines: &[String]) {
        let mut text = lines.join("\n");
        if !lines.is_empty() {
            text.push('\n');
        }
        std::fs::write(&audit.log, text).unwrap();
    }

    fn broken_line(audit: &AuditLog) -> u64 {
        match audit.verify() {
            Err(Error::AuditBroken { line, .. }) => line,
            other => panic!("expected a broken chain, got {other:?}"),
        }
    }

    #[test]
    fn appended_lines_chain_and_verify() {
        let (_tmp, audit) = log_with(5);
        let summary = audit.verify().unwrap();
        assert_eq!(summary.lines, 5);
        let records = audit.records().unwrap();
        assert_eq!(records.len(), 5);
        assert_eq!(records[3].seq, 4);
        assert_eq!(records[3].details["n"], Value::from(3));
        assert_eq!(records[0].event, AuditEvent::Requested);
    }

    #[test]
    fn flipping_any_line_is_found_at_that_line() {
        for target in 0..5 {
            let (_tmp, audit) = log_with(5);
            edit(&audit, |all| {
                all[target] = all[target].replacen("\"n\":", "\"m\":", 1);
            });
            assert_eq!(broken_line(&audit), target as u64 + 1, "line {target}");
        }
    }

    #[test]
    fn deleting_any_line_is_found_at_its_position() {
        for target in 0..5 {
            let (_tmp, audit) = log_with(5);
            edit(&audit, |all| {
                all.remove(target);
            });
            assert_eq!(broken_line(&audit), target as u64 + 1, "line {target}");
        }
    }

    #[test]
    fn swapping_and_duplicating_lines_is_found() {
        let (_tmp, audit) = log_with(5);
        edit(&audit, |all| {
            all.swap(1, 2);
        });
        assert_eq!(broken_line(&audit), 2);

        let (_tmp, audit) = log_with(5);
        edit(&audit, |all| {
            all.insert(3, all[2].clone());
        });
        assert_eq!(broken_line(&audit), 4);

        // Duplicating the last line looks like an append, but the anchor says otherwise.
        let (_tmp, audit) = log_with(5);
        edit(&audit, |all| {
            all.push(all[4].clone());
        });
        assert_eq!(broken_line(&audit), 6);
    }

    #[test]
    fn a_torn_unacknowledged_tail_is_cut_on_the_next_append() {
        let (_tmp, audit) = log_with(3);
        let mut text = std::fs::read(&audit.log).unwrap();
        text.extend_from_slice(b"{\"seq\":4,\"ts\":");
        std::fs::write(&audit.log, &text).unwrap();
        assert_eq!(broken_line(&audit), 4);
        let id = RequestId::parse("0123456789ab").unwrap();
        audit
            .append(
                Timestamp::from_unix_millis(9),
                AuditEvent::Approved,
                id,
                &Map::new(),
            )
            .unwrap();
        assert_eq!(audit.verify().unwrap().lines, 4);
    }

    #[test]
    fn appends_refuse_to_extend_a_truncated_log() {
        let (_tmp, audit) = log_with(3);
        edit(&audit, |all| {
            all.pop();
        });
        let id = RequestId::parse("0123456789ab").unwrap();
        let result = audit.append(
            Timestamp::from_unix_millis(9),
            AuditEvent::Approved,
            id,
            &Map::new(),
        );
        assert!(
            matches!(result, Err(Error::AuditBroken { .. })),
            "{result:?}"
        );
        assert_eq!(lines(&audit).len(), 2, "nothing appended to a broken log");
    }

    fn append_one(audit: &AuditLog) -> Result<u64, Error> {
        let id = RequestId::parse("0123456789ab").unwrap();
        audit.append(
            Timestamp::from_unix_millis(9),
            AuditEvent::Approved,
            id,
            &Map::new(),
        )
    }

    /// Appends move the anchor without syncing it: a power loss may leave it lines behind the
    /// log (never ahead), written in a boot that has ended. Such a log verifies, takes
    /// appends, and its anchor catches up; a truncation below the anchor is still refused.
    #[test]
    fn an_anchor_a_power_loss_left_behind_is_moved_on() {
        let (_tmp, audit) = log_with(5);
        let line_2 = check_line_hash(&lines(&audit)[1]).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&audit.head)
            .unwrap();
        let ended = "00000000-0000-0000-0000-000000000000";
        write_head_as(&file, &audit.head, 2, &line_2.1, Durability::Lazy, ended).unwrap();
        assert_eq!(audit.verify().unwrap().lines, 5);
        assert_eq!(append_one(&audit).unwrap(), 6);
        let head = read_head(&file, &audit.head).unwrap().unwrap();
        assert_eq!(head.seq, 6, "the anchor caught up");
        assert_eq!(head.this_boot, boot::current().is_some());

        edit(&audit, |all| all.truncate(4));
        assert_eq!(broken_line(&audit), 5);
        assert!(append_one(&audit).is_err());
    }

    /// The same anchor written in this boot allows one line past it, not three.
    #[test]
    fn in_this_boot_at_most_one_line_is_past_the_anchor() {
        if boot::current().is_none() {
            return; // No boot id here: every anchor is from an unknown boot.
        }
        let (_tmp, audit) = log_with(5);
        let line_2 = check_line_hash(&lines(&audit)[1]).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&audit.head)
            .unwrap();
        write_head(&file, &audit.head, 2, &line_2.1, Durability::Lazy).unwrap();
        assert_eq!(broken_line(&audit), 4);
        assert!(append_one(&audit).is_err());
        let line_4 = check_line_hash(&lines(&audit)[3]).unwrap();
        write_head(&file, &audit.head, 4, &line_4.1, Durability::Lazy).unwrap();
        assert_eq!(audit.verify().unwrap().lines, 5);
    }

    /// An anchor of the format before anchors named their boot reads as from an ended boot.
    #[test]
    fn an_anchor_without_its_boot_reads_as_from_an_ended_one() {
        let (_tmp, audit) = log_with(3);
        let line_1 = check_line_hash(&lines(&audit)[0]).unwrap();
        std::fs::write(&audit.head, format!("{:020} {}\n", 1, line_1.1)).unwrap();
        let file = std::fs::File::open(&audit.head).unwrap();
        let head = read_head(&file, &audit.head).unwrap().unwrap();
        assert_eq!((head.seq, head.this_boot), (1, false));
        assert_eq!(audit.verify().unwrap().lines, 3);
    }

    #[test]
    fn a_deleted_anchor_and_a_truncated_tail_are_refused_and_reported() {
        let (_tmp, audit) = log_with(3);
        edit(&audit, |all| {
            all.pop();
        });
        std::fs::remove_file(&audit.head).unwrap();
        let result = append_one(&audit);
        assert!(
            matches!(result, Err(Error::AuditBroken { .. })),
            "{result:?}"
        );
        assert_eq!(
            lines(&audit).len(),
            2,
            "nothing appended to an unanchored log"
        );
        assert_eq!(broken_line(&audit), 1);
        // Still refused on the next try, and still reported: nothing re-anchors by itself.
        assert!(append_one(&audit).is_err());
        assert_eq!(broken_line(&audit), 1);
    }

    #[test]
    fn a_deleted_anchor_alone_is_refused_and_reported() {
        let (_tmp, audit) = log_with(3);
        std::fs::remove_file(&audit.head).unwrap();
        assert!(matches!(append_one(&audit), Err(Error::AuditBroken { .. })));
        assert_eq!(lines(&audit).len(), 3);
        assert_eq!(broken_line(&audit), 1);
        // An emptied anchor is the same as a deleted one.
        std::fs::write(&audit.head, b"").unwrap();
        assert!(matches!(append_one(&audit), Err(Error::AuditBroken { .. })));
        assert_eq!(lines(&audit).len(), 3);
    }

    #[test]
    fn a_brand_new_log_needs_no_anchor() {
        let (_tmp, audit) = log_with(0);
        assert_eq!(audit.verify().unwrap().lines, 0);
        assert_eq!(append_one(&audit).unwrap(), 1);
        assert_eq!(audit.verify().unwrap().lines, 1);
    }

    #[test]
    fn reanchoring_records_what_was_found_and_appends_work_again() {
        let (_tmp, audit) = log_with(3);
        let all = edit(&audit, |all| {
            all.pop();
        });
        std::fs::remove_file(&audit.head).unwrap();
        let found_hash = check_line_hash(&all[1]).unwrap().1;

        let done = audit
            .reanchor(Timestamp::from_unix_millis(50), "alice")
            .unwrap();
        assert_eq!(done.found_lines, 2);
        assert_eq!(done.found_last_hash, found_hash);
        assert_eq!(done.previous_anchor, None);
        assert_eq!(done.seq, 3);
        assert!(done.problem.contains("unanchored"), "{}", done.problem);
        assert_eq!(audit.verify().unwrap().lines, 3);

        let records = audit.records().unwrap();
        let line = &records[2];
        assert_eq!(line.event, AuditEvent::Reanchored);
        assert_eq!(line.id, RequestId::STORE);
        assert_eq!(line.details["by"], "alice");
        assert_eq!(line.details["foundLines"], 2);
        assert_eq!(line.details["foundLastHash"], found_hash.as_str());
        assert_eq!(line.details["previousAnchor"], Value::Null);

        assert_eq!(append_one(&audit).unwrap(), 4);
        assert_eq!(audit.verify().unwrap().lines, 4);
    }

    #[test]
    fn reanchoring_accepts_a_truncation_the_anchor_saw_and_cuts_a_torn_line() {
        let (_tmp, audit) = log_with(4);
        edit(&audit, |all| {
            all.truncate(2);
        });
        let mut text = std::fs::read(&audit.log).unwrap();
        text.extend_from_slice(b"{\"seq\":3,");
        std::fs::write(&audit.log, &text).unwrap();
        assert!(append_one(&audit).is_err());

        let done = audit
            .reanchor(Timestamp::from_unix_millis(50), "bob")
            .unwrap();
        assert_eq!(done.previous_anchor, Some(4));
        assert_eq!(done.found_lines, 2);
        assert_eq!(done.torn_bytes_cut, 9);
        let records = audit.records().unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[2].details["previousAnchor"], 4);
        assert_eq!(records[2].details["tornBytesCut"], 9);
        assert_eq!(audit.verify().unwrap().lines, 3);
    }

    #[test]
    fn reanchoring_refuses_a_sound_log_and_an_edited_one() {
        let (_tmp, audit) = log_with(3);
        let before = std::fs::read(&audit.log).unwrap();
        assert!(matches!(
            audit.reanchor(Timestamp::from_unix_millis(50), "alice"),
            Err(Error::InvalidInput { .. })
        ));
        edit(&audit, |all| {
            all[1] = all[1].replacen("\"n\":", "\"m\":", 1);
        });
        std::fs::remove_file(&audit.head).unwrap();
        let edited = std::fs::read(&audit.log).unwrap();
        assert_ne!(before, edited);
        assert!(matches!(
            audit.reanchor(Timestamp::from_unix_millis(50), "alice"),
            Err(Error::AuditBroken { line: 2, .. })
        ));
        assert_eq!(
            std::fs::read(&audit.log).unwrap(),
            edited,
            "nothing written"
        );
    }

    #[test]
    fn concurrent_appends_from_threads_stay_whole_and_linear() {
        let (_tmp, audit) = log_with(0);
        let id = RequestId::parse("0123456789ab").unwrap();
        std::thread::scope(|s| {
            for t in 0..8 {
                let audit = audit.clone();
                s.spawn(move || {
                    for i in 0..20 {
                        let mut details = Map::new();
                        details.insert("t".into(), Value::from(t));
                        details.insert("pad".into(), Value::from("x".repeat(i * 100)));
                        audit
                            .append(
                                Timestamp::from_unix_millis(1),
                                AuditEvent::Requested,
                                id,
                                &details,
                            )
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(audit.verify().unwrap().lines, 160);
    }

    /// The last line as read before the growing windows: the whole widest window at once.
    fn last_line_whole(bytes: &[u8]) -> Result<LastLine, Error> {
        let len = bytes.len() as u64;
        let window = len.min(2 * MAX_LINE as u64);
        let start = len - window;
        last_line_in(bytes[start as usize..].to_vec(), start, true)
            .map(|found| found.expect("the widest window always answers"))
    }

    #[test]
    fn the_last_line_read_in_growing_windows_is_the_one_the_whole_window_finds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let window = TAIL_READ as usize;
        // Lines whose lengths straddle each window's edge, a line as long as any record may
        // be, and one longer; each log with and without a torn tail of several lengths.
        let lengths = [
            0,
            1,
            40,
            window - 2,
            window - 1,
            window,
            window + 1,
            8 * window - 1,
            8 * window + 1,
            MAX_LINE - 1,
            MAX_LINE + 7,
            2 * MAX_LINE + 3,
        ];
        let mut cases = 0;
        for &before in &[0, 1, 3] {
            for &last in &lengths {
                for &torn in &[0, 1, window, 9 * window, 2 * MAX_LINE + 1] {
                    let mut bytes = Vec::new();
                    for n in 0..before {
                        bytes.extend(std::iter::repeat_n(b'a' + n, 50 + 3 * window * n as usize));
                        bytes.push(b'\n');
                    }
                    if last > 0 || before == 0 {
                        bytes.extend(std::iter::repeat_n(b'z', last));
                        bytes.push(b'\n');
                    }
                    bytes.extend(std::iter::repeat_n(b't', torn));
                    std::fs::write(&path, &bytes).unwrap();
                    let mut file = File::open(&path).unwrap();
                    let read = last_line(&mut file, bytes.len() as u64, &path);
                    let whole = last_line_whole(&bytes);
                    match (&read, &whole) {
                        (Ok(read), Ok(whole)) => assert_eq!(read, whole),
                        (Err(read), Err(whole)) => assert_eq!(read.to_string(), whole.to_string()),
                        _ => panic!(
                            "{before} lines, a last of {last} bytes, {torn} torn: {read:?} against {whole:?}"
                        ),
                    }
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 3 * lengths.len() * 5);
    }
}
