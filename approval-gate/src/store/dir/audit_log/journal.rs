//! The journal, `journal.wal`: the one file a step syncs.
//!
//! Each step appends one entry: its audit line, exactly as `audit.jsonl` will hold it, and
//! the change it makes to a state file (a request's record, a claim, an execution's marker).
//! The journal alone is fdatasynced; `audit.jsonl`, `audit.head` and the state files are
//! written after it without syncing. After a power loss (a new boot) the journal is replayed
//! onto them, everything is made durable with one `syncfs`, and the journal starts again
//! empty: its first line (the header) names the audit line the log was durable through then.
//!
//! Every line is `<blake3 of the JSON, hex> <JSON>\n`, so a torn or damaged line is told
//! from a whole one. The journal holds the bytes of the records it carries (payloads
//! included); `audit.jsonl`, the log people ship, holds only what it always held.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::super::fs;
use super::super::layout::Layout;
use crate::error::Error;
use crate::id::RequestId;

/// The journal's file name in the store.
pub(crate) const FILE: &str = "journal.wal";

/// How much room (zeros) the journal keeps ahead of its entries, added a chunk at a time.
pub(crate) const CHUNK: u64 = 256 * 1024;

/// Largest journal read back: far above what a checkpoint lets it grow to.
const MAX_JOURNAL: u64 = 1 << 34;

/// The change a step makes beside its audit line, replayed after a power loss.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Effect {
    /// `requests/<id>.json` holds `bytes`.
    Record {
        /// The request.
        id: RequestId,
        /// Its record, as written.
        bytes: String,
    },
    /// `claims/<id>.used` exists, holding `bytes`: the approval is spent.
    Claim {
        /// The request.
        id: RequestId,
        /// The claim's content.
        bytes: String,
    },
    /// `claims/<id>.exec` exists: an execution started (recovery gives it an outcome).
    Start {
        /// The request.
        id: RequestId,
    },
    /// `claims/<id>.exec` is gone: the execution has its outcome.
    Finish {
        /// The request.
        id: RequestId,
    },
    /// The request and its claim are in `archive/`.
    Archive {
        /// The request.
        id: RequestId,
    },
}

impl Effect {
    /// Makes the change, again if need be: each is idempotent, and replaying a journal's
    /// effects in order leaves the state its steps left.
    pub(crate) fn apply(&self, layout: &Layout) -> Result<(), Error> {
        match self {
            Self::Record { id, bytes } => {
                fs::write_atomic_unsynced(&layout.request(*id), bytes.as_bytes())
            }
            Self::Claim { id, bytes } => {
                let path = layout.claim(*id);
                let made = fs::create_exclusive_unsynced(&path, bytes.as_bytes())
                    .map_err(|failed| failed.on(*id, "consume"))?;
                // One a power loss left without its content gets it back.
                if !made
                    && fs::read_bounded(&path, 1 << 16).ok().flatten().as_deref()
                        != Some(bytes.as_bytes())
                {
                    fs::write_atomic_unsynced(&path, bytes.as_bytes())?;
                }
                fs::mark(&path, &layout.claim_logged(*id))
            }
            Self::Start { id } => fs::mark(&layout.claim(*id), &layout.execution_marker(*id)),
            Self::Finish { id } => fs::remove_if_exists(&layout.execution_marker(*id)),
            Self::Archive { id } => {
                crate::faults::failpoint!("archive::before_move");
                if fs::exists(&layout.request(*id))? {
                    fs::rename_durable(&layout.request(*id), &layout.archived(*id))
                        .map_err(|failed| failed.on(*id, "archive"))?;
                }
                if fs::exists(&layout.claim(*id))? {
                    fs::rename_durable(&layout.claim(*id), &layout.archived_claim(*id))
                        .map_err(|failed| failed.on(*id, "archive"))?;
                }
                fs::remove_if_exists(&layout.claim_logged(*id))
            }
        }
    }
}

/// Makes durable what replaying `entries` wrote: each record and claim, and the names in
/// their directories (a checkpoint after a power loss, without syncing the whole file system).
pub(crate) fn sync_effects(entries: &[(Entry, u64)], layout: &Layout) -> Result<(), Error> {
    let mut files = std::collections::BTreeSet::new();
    for (entry, _) in entries {
        match &entry.effect {
            Some(Effect::Record { id, .. }) => files.insert(layout.request(*id)),
            Some(Effect::Claim { id, .. }) => files.insert(layout.claim(*id)),
            _ => false,
        };
    }
    for path in &files {
        if let Some(file) = fs::open_existing(path)? {
            fs::sync_data(&file, path)?;
        }
    }
    fs::sync_dir(&layout.requests_dir())?;
    fs::sync_dir(&layout.claims_dir())
}

/// The journal's first line: the log was durable through line `after`, whose hash is `hash`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) after: u64,
    pub(crate) hash: String,
}

/// One step's entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The audit line's sequence number.
    pub(crate) seq: u64,
    /// The audit line, without its newline.
    pub(crate) line: String,
    /// What the step changed beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) effect: Option<Effect>,
}

/// `<hash> <json>\n` of `value`.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let json = serde_json::to_string(value).expect("journal lines always encode");
    let hash = blake3::hash(json.as_bytes()).to_hex();
    format!("{hash} {json}\n").into_bytes()
}

fn decode_line<T: for<'de> Deserialize<'de>>(line: &[u8]) -> Option<T> {
    let line = std::str::from_utf8(line).ok()?;
    let (hash, json) = line.split_once(' ')?;
    if blake3::hash(json.as_bytes()).to_hex().as_str() != hash {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// The journal as read back.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Its header; `None` for an empty journal (a new or migrated store, or one cut between
    /// a checkpoint's two writes): the log is then durable as it stands.
    pub(crate) header: Option<Header>,
    /// Its whole entries, in order, each with the offset just past it.
    pub(crate) entries: Vec<(Entry, u64)>,
    /// Where the whole lines end: bytes after it, up to `data_end`, are a torn or damaged
    /// tail; zeros after that are room kept for entries to come.
    pub(crate) whole: u64,
    /// Where the zeros kept ahead begin (the file's length if there are none).
    pub(crate) data_end: u64,
}

/// Reads the journal at `path` from `from` (0, or just past an entry), stopping at the first
/// line that is torn or does not check: only the tail can be either, as every line before the
/// last synced one was synced whole.
pub(crate) fn read(path: &Path, from: u64) -> Result<Read, Error> {
    let bytes = fs::read_bounded(path, MAX_JOURNAL)?.unwrap_or_default();
    let mut out = Read::default();
    let mut at = usize::try_from(from.min(bytes.len() as u64)).expect("journal fits in memory");
    if at == 0 {
        let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
            return Ok(out);
        };
        let Some(header) = decode_line(&bytes[..end]) else {
            return Ok(out);
        };
        out.header = Some(header);
        at = end + 1;
    }
    out.whole = at as u64;
    while let Some(end) = bytes[at..].iter().position(|&b| b == b'\n') {
        let Some(entry) = decode_line(&bytes[at..at + end]) else {
            break;
        };
        at += end + 1;
        out.entries.push((entry, at as u64));
        out.whole = at as u64;
    }
    let zeros = bytes[at..]
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes.len(), |z| at + z);
    out.data_end = zeros as u64;
    // A line that does not check followed by one that does is damage, not a torn tail.
    let rest = &bytes[at..zeros];
    let later_whole = rest
        .split(|&b| b == b'\n')
        .skip(1)
        .any(|line| decode_line::<Entry>(line).is_some());
    if later_whole {
        return Err(Error::AuditBroken {
            line: out
                .entries
                .last()
                .map(|(entry, _)| entry.seq)
                .or(out.header.as_ref().map(|header| header.after))
                .unwrap_or(0)
                + 1,
            problem: format!(
                "the journal {} is damaged before its end; keep the store as it is for investigation",
                path.display()
            ),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` with the mode the store keeps (it refuses files others can read).
    fn put(path: &Path, bytes: &[u8]) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn entries_read_back_and_a_torn_or_altered_tail_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
        let header = Header {
            after: 3,
            hash: "ab".repeat(32),
        };
        let one = Entry {
            seq: 4,
            line: r#"{"seq":4}"#.into(),
            effect: Some(Effect::Record {
                id,
                bytes: r#"{"a":"b\n"}"#.into(),
            }),
        };
        let two = Entry {
            seq: 5,
            line: r#"{"seq":5}"#.into(),
            effect: None,
        };
        let mut bytes = encode(&header);
        bytes.extend(encode(&one));
        let after_one = bytes.len() as u64;
        bytes.extend(encode(&two));
        let whole = bytes.len() as u64;
        let mut torn = encode(&two);
        torn.truncate(torn.len() - 3);
        put(&path, &[bytes.clone(), torn].concat());
        let read_back = read(&path, 0).unwrap();
        assert_eq!(read_back.header, Some(header.clone()));
        assert_eq!(
            read_back.entries,
            vec![(one.clone(), after_one), (two.clone(), whole)]
        );
        assert_eq!(read_back.whole, whole);
        assert!(read_back.data_end > whole);
        // From an entry's end, only what follows.
        assert_eq!(read(&path, after_one).unwrap().entries, vec![(two, whole)]);
        // One altered byte in the last entry: a tail that does not check, left out.
        let mut altered = bytes.clone();
        let at = usize::try_from(after_one).unwrap() + 70;
        altered[at] ^= 1;
        put(&path, &altered);
        let read_back = read(&path, 0).unwrap();
        assert_eq!(read_back.entries, vec![(one.clone(), after_one)]);
        assert_eq!(read_back.whole, after_one);
        // In an entry followed by a whole one: damage, refused.
        let mut altered = bytes.clone();
        let at = encode(&header).len() + 70;
        altered[at] ^= 1;
        put(&path, &altered);
        assert!(matches!(
            read(&path, 0),
            Err(Error::AuditBroken { line: 4, .. })
        ));
        // Zeros kept ahead of the entries end them, and are neither a torn tail nor damage;
        // a torn entry before them is.
        let mut ahead = bytes.clone();
        ahead.extend(vec![0u8; 4096]);
        put(&path, &ahead);
        let read_back = read(&path, 0).unwrap();
        assert_eq!(read_back.entries.len(), 2);
        assert_eq!((read_back.whole, read_back.data_end), (whole, whole));
        let mut torn_ahead = bytes.clone();
        torn_ahead.extend(&encode(&one)[..40]);
        torn_ahead.extend(vec![0u8; 4096]);
        put(&path, &torn_ahead);
        let read_back = read(&path, 0).unwrap();
        assert_eq!((read_back.whole, read_back.data_end), (whole, whole + 40));
        // No header: nothing to replay.
        put(&path, b"");
        let read_back = read(&path, 0).unwrap();
        assert_eq!((read_back.header, read_back.entries.len()), (None, 0));
    }
}
