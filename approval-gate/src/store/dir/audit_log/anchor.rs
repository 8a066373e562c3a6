//! The anchor, `audit.head`: one fixed-size record of the last line's sequence number and
//! hash and the boot it was written in, read and moved in one `pwrite`, and the check that it
//! agrees with the log's end.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::audit::{AuditRecord, AuditSummary, line_hash_at, parse_chain};
use crate::error::Error;
use crate::store::dir::boot::{self, BOOT_LEN};
use crate::store::dir::fs;

/// `seq` (20 digits), space, hash (64), space, the boot written in (36), space, the
/// journal's length once this line's step was written (20), newline.
pub(super) const HEAD_LEN: usize = 20 + 1 + 64 + 1 + BOOT_LEN + 1 + 20 + 1;

pub(super) fn unanchored() -> Error {
    Error::AuditBroken {
        line: 1,
        problem: "unanchored: audit.head is missing or empty, so a truncation of the log could not be seen; if you trust the log as it is, run `approval-gate audit reanchor`".into(),
    }
}

/// Checks the whole log and that its anchor agrees with its end; its records.
pub(super) fn check_anchor(
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

/// The anchor as read.
pub(super) struct Head {
    /// The line it records.
    pub(super) seq: u64,
    /// That line's hash.
    pub(super) hash: String,
    /// Written in this boot of the machine: every move since is in it (within a run, every
    /// process reads what the others wrote), so at most one line can be past it.
    pub(super) this_boot: bool,
    /// The journal's length when it was written: a longer journal holds the entries of a
    /// step cut short, to be carried into the log. `None` in an anchor written before the
    /// journal existed.
    pub(super) journal: Option<u64>,
}

pub(super) fn read_head(file: &File, path: &Path) -> Result<Option<Head>, Error> {
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
    // Anchors written before they named their boot have no third field, and those written
    // before the journal no fourth.
    let written_in = fields.next();
    let journal = fields
        .next()
        .map(str::parse::<u64>)
        .transpose()
        .map_err(|_| corrupt())?;
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
        journal,
    }))
}

/// Whether a move of the anchor is synced.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Durability {
    /// A new log's first anchor, and a re-anchoring.
    Synced,
    /// Every append's: written after its line is durable, so a power loss can only leave the
    /// anchor behind the log's end, never ahead of it, and the next append moves it on. The
    /// anchor names the boot it was written in: within that run every process reads it as
    /// written, so more than one line past it is refused as before; only after a power loss
    /// are more allowed, until the next append (docs/threat-model.md).
    Lazy,
}

pub(super) fn write_head(
    file: &File,
    path: &Path,
    at: &At<'_>,
    durability: Durability,
) -> Result<(), Error> {
    write_head_as(
        file,
        path,
        at,
        durability,
        boot::current().unwrap_or(boot::UNKNOWN),
    )
}

/// Where an anchor points: a line, and the journal's length once it was written.
pub(super) struct At<'a> {
    pub(super) seq: u64,
    pub(super) hash: &'a str,
    pub(super) journal: u64,
}

pub(super) fn write_head_as(
    file: &File,
    path: &Path,
    at: &At<'_>,
    durability: Durability,
    written_in: &str,
) -> Result<(), Error> {
    let At { seq, hash, journal } = *at;
    // Fixed length, one pwrite at offset 0, well inside one sector: never half old, half new.
    let record = format!("{seq:020} {hash} {written_in} {journal:020}\n");
    debug_assert_eq!(record.len(), HEAD_LEN);
    fs::write_at(file, path, record.as_bytes(), 0)?;
    if durability == Durability::Synced {
        fs::sync_data(file, path)?;
    }
    Ok(())
}
