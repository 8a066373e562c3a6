//! Reading a store of the predecessor strictly: every file it holds must be one 0.1 writes, in
//! exactly its shape, or the whole store is refused, naming the file and why.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::PREDECESSOR;
use crate::error::Error;
use crate::id::RequestId;
use crate::store::dir::MAX_REQUEST_FILE;
use crate::time::Timestamp;

/// Largest audit log read: far beyond what a person's store of the predecessor holds.
const MAX_LOG: u64 = 256 * 1024 * 1024;

/// A request record of the predecessor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OldRecord {
    pub(super) id: RequestId,
    pub(super) action: String,
    pub(super) reason: String,
    pub(super) requested_by: Option<String>,
    pub(super) status: OldStatus,
    pub(super) created_at: Timestamp,
    pub(super) expires_at: Timestamp,
    pub(super) decided_at: Option<Timestamp>,
    pub(super) decision_reason: Option<String>,
}

/// The statuses 0.1 writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OldStatus {
    Pending,
    Approved,
    Denied,
    Expired,
}

impl OldStatus {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
        }
    }
}

/// The events of 0.1's audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OldEvent {
    Requested,
    Approved,
    Denied,
    Expired,
}

/// One line of the predecessor's audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OldLine {
    pub(super) line: u64,
    pub(super) at: Timestamp,
    pub(super) event: OldEvent,
    pub(super) id: RequestId,
    pub(super) reason: Option<String>,
}

/// Everything a store of the predecessor holds, read.
#[derive(Debug, Clone)]
pub(super) struct OldStore {
    pub(super) records: BTreeMap<RequestId, OldRecord>,
    pub(super) lines: Vec<OldLine>,
    /// The files to carry over byte for byte, relative to the root, with their bytes.
    pub(super) files: Vec<(PathBuf, Vec<u8>)>,
    /// The audit log's bytes (empty if there was none).
    pub(super) log: Vec<u8>,
}

/// The refusal of the store because of `path`.
pub(super) fn refuse(path: &Path, problem: impl Into<String>) -> Error {
    Error::PredecessorStore {
        path: path.to_owned(),
        problem: format!(
            "{}; `approval-gate migrate` brings over only a store it can read exactly (docs/migrating.md lists what it refuses)",
            problem.into()
        ),
    }
}

/// What a binary of ours leaves in a store of the predecessor when it opens it (and is
/// refused): empty directories and lock files, an empty anchor, the queue index. Nothing else.
fn is_residue(root: &Path, name: &str, meta: &std::fs::Metadata) -> Result<bool, Error> {
    Ok(match name {
        "audit.head" | "gate.lock" => meta.is_file() && meta.len() == 0,
        "queue" => meta.is_file() && meta.len() <= 64 * 1024,
        "claims" | "archive" => meta.is_dir() && list(&root.join(name))?.is_empty(),
        "locks" => {
            meta.is_dir()
                && list(&root.join(name))?.iter().all(|(lock, meta)| {
                    let stripe = lock.strip_suffix(".lock").unwrap_or("");
                    meta.is_file()
                        && meta.len() == 0
                        && (lock == "passkeys.lock"
                            || (stripe.len() == 2
                                && stripe
                                    .bytes()
                                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))))
                })
        }
        _ => false,
    })
}

/// The entries of `dir`, by name, in name order, without following symlinks.
fn list(dir: &Path) -> Result<Vec<(String, std::fs::Metadata)>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
        let path = entry.path();
        let Ok(name) = entry.file_name().into_string() else {
            return Err(refuse(&path, "a name that is not UTF-8"));
        };
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| Error::io("inspecting", &path, e))?;
        out.push((name, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Refuses what another user owns or others may write: no one else can have changed it.
fn check_owner(path: &Path, meta: &std::fs::Metadata, owner: u32) -> Result<(), Error> {
    if meta.file_type().is_symlink() {
        return Err(refuse(path, "a symlink: the predecessor writes none"));
    }
    if meta.uid() != owner {
        return Err(refuse(
            path,
            format!(
                "owned by uid {}, not by the store's owner (uid {owner})",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(
            path,
            format!(
                "writable by others (mode {:o}): it may have been changed by someone else",
                meta.mode() & 0o777
            ),
        ));
    }
    Ok(())
}

/// Reads the store at `root` strictly.
///
/// # Errors
///
/// [`Error::PredecessorStore`] naming the first file that is not exactly what 0.1 writes.
pub(super) fn read(root: &Path) -> Result<OldStore, Error> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| Error::io("inspecting", root, e))?;
    if !meta.is_dir() {
        return Err(refuse(root, "not a directory"));
    }
    let owner = rustix::process::geteuid().as_raw();
    check_owner(root, &meta, owner)?;
    let mut store = OldStore {
        records: BTreeMap::new(),
        lines: Vec::new(),
        files: Vec::new(),
        log: Vec::new(),
    };
    let mut has_log = false;
    let mut has_requests = false;
    for (name, meta) in list(root)? {
        let path = root.join(&name);
        check_owner(&path, &meta, owner)?;
        match name.as_str() {
            "requests" if meta.is_dir() => has_requests = true,
            "audit.jsonl" if meta.is_file() => has_log = true,
            _ if is_residue(root, &name, &meta)? => {}
            _ => {
                return Err(refuse(
                    &path,
                    format!(
                        "not something {PREDECESSOR} 0.1 writes (a mark of a later version, a temporary file, or another program's): this migration reads only 0.1's layout"
                    ),
                ));
            }
        }
    }
    if has_requests {
        read_records(root, owner, &mut store)?;
    }
    if has_log {
        let path = root.join("audit.jsonl");
        let bytes = read_bounded(&path, MAX_LOG)?;
        store.lines = read_log(&path, &bytes)?;
        store
            .files
            .push((PathBuf::from("audit.jsonl"), bytes.clone()));
        store.log = bytes;
    } else if !store.records.is_empty() {
        return Err(refuse(
            &root.join("audit.jsonl"),
            "missing while requests exist: which of them were approved cannot be told",
        ));
    }
    Ok(store)
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(path, format!("larger than {limit} bytes")));
    }
    Ok(bytes)
}

fn read_records(root: &Path, owner: u32, store: &mut OldStore) -> Result<(), Error> {
    let dir = root.join("requests");
    for (name, meta) in list(&dir)? {
        let path = dir.join(&name);
        check_owner(&path, &meta, owner)?;
        let id = name
            .strip_suffix(".json")
            .and_then(|id| RequestId::parse(id).ok());
        let (Some(id), true) = (id, meta.is_file()) else {
            return Err(refuse(
                &path,
                "not a request record's name (<12 lowercase hex>.json): a temporary file, a mark of a later version, or another program's",
            ));
        };
        let bytes = read_bounded(&path, MAX_REQUEST_FILE)?;
        let record = parse_record(&bytes).map_err(|problem| refuse(&path, problem))?;
        if record.id != id {
            return Err(refuse(
                &path,
                format!("holds request {} under another name", record.id),
            ));
        }
        store.records.insert(id, record);
        store.files.push((Path::new("requests").join(&name), bytes));
    }
    Ok(())
}

fn text(
    object: &mut Map<String, Value>,
    key: &str,
    required: bool,
) -> Result<Option<String>, String> {
    match object.remove(key) {
        None if required => Err(format!("no `{key}`")),
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("`{key}` is not a string: {other}")),
    }
}

/// A timestamp exactly as `toISOString()` writes it, so that it is carried exactly.
fn time(text: &str, key: &str) -> Result<Timestamp, String> {
    let at = Timestamp::parse_rfc3339(text).map_err(|e| format!("`{key}`: {e}"))?;
    if at.to_string() != text {
        return Err(format!(
            "`{key}` {text:?} is not written as the predecessor writes times (e.g. 2026-12-06T21:11:48.942Z)"
        ));
    }
    Ok(at)
}

/// Parses a record: exactly the keys and types 0.1 writes, consistent with itself.
pub(super) fn parse_record(bytes: &[u8]) -> Result<OldRecord, String> {
    if bytes.is_empty() {
        return Err(
            "empty (a write cut short by a crash?): whether it was approved cannot be told".into(),
        );
    }
    let mut object: Map<String, Value> = serde_json::from_slice(bytes).map_err(|e| {
        format!("not a JSON object ({e}): truncated or damaged, so whether it was approved cannot be told")
    })?;
    let required = |object: &mut Map<String, Value>, key| {
        text(object, key, true).map(Option::unwrap_or_default)
    };
    let id = required(&mut object, "id")?;
    let id = RequestId::parse(&id).map_err(|_| format!("id {id:?} is not 12 lowercase hex"))?;
    let action = required(&mut object, "action")?;
    let reason = required(&mut object, "reason")?;
    let requested_by = text(&mut object, "requestedBy", false)?;
    let status = match required(&mut object, "status")?.as_str() {
        "pending" => OldStatus::Pending,
        "approved" => OldStatus::Approved,
        "denied" => OldStatus::Denied,
        "expired" => OldStatus::Expired,
        other => return Err(format!("status {other:?} is not one 0.1 writes")),
    };
    let created_at = time(&required(&mut object, "createdAt")?, "createdAt")?;
    let expires_at = time(&required(&mut object, "expiresAt")?, "expiresAt")?;
    let decided_at = text(&mut object, "decidedAt", false)?
        .map(|at| time(&at, "decidedAt"))
        .transpose()?;
    let decision_reason = text(&mut object, "decisionReason", false)?;
    if let Some(key) = object.keys().next() {
        return Err(format!("unknown key `{key}`: not a record 0.1 writes"));
    }
    if expires_at <= created_at {
        return Err("expires before it was created".into());
    }
    let pending = status == OldStatus::Pending;
    if pending && (decided_at.is_some() || decision_reason.is_some()) {
        return Err("pending, yet it has a decision".into());
    }
    if !pending && decided_at.is_none() {
        return Err(format!("{} without `decidedAt`", status.as_str()));
    }
    Ok(OldRecord {
        id,
        action,
        reason,
        requested_by,
        status,
        created_at,
        expires_at,
        decided_at,
        decision_reason,
    })
}

/// Parses the audit log: every line complete and exactly of 0.1's shape.
fn read_log(path: &Path, bytes: &[u8]) -> Result<Vec<OldLine>, Error> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let Some(body) = bytes.strip_suffix(b"\n") else {
        return Err(refuse(
            path,
            "its last line is cut short (a crash mid-append): the lines it relies on cannot all be read",
        ));
    };
    body.split(|&b| b == b'\n')
        .zip(1u64..)
        .map(|(line, n)| {
            parse_line(line, n).map_err(|problem| refuse(path, format!("line {n}: {problem}")))
        })
        .collect()
}

/// Parses one line (without its newline).
pub(super) fn parse_line(line: &[u8], n: u64) -> Result<OldLine, String> {
    let mut object: Map<String, Value> =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON object ({e})"))?;
    let at = text(&mut object, "at", true)?.unwrap_or_default();
    let at = time(&at, "at")?;
    let event = text(&mut object, "event", true)?.unwrap_or_default();
    let (event, allowed): (_, &[&str]) = match event.as_str() {
        "requested" => (OldEvent::Requested, &["action", "reason", "requestedBy"]),
        "approved" => (OldEvent::Approved, &["action", "reason"]),
        "denied" => (OldEvent::Denied, &["action", "reason"]),
        "expired" => (OldEvent::Expired, &["action"]),
        other => {
            return Err(format!(
                "event {other:?} is not one 0.1 writes (a mark of a later version, whose spent approvals this migration cannot read)"
            ));
        }
    };
    let id = text(&mut object, "id", true)?.unwrap_or_default();
    let id = RequestId::parse(&id).map_err(|_| format!("id {id:?} is not 12 lowercase hex"))?;
    let reason = object
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    for (key, value) in &object {
        if !allowed.contains(&key.as_str()) {
            return Err(format!("unknown key `{key}` on a `{event:?}` line"));
        }
        if !value.is_string() {
            return Err(format!("`{key}` is not a string"));
        }
    }
    Ok(OldLine {
        line: n,
        at,
        event,
        id,
        reason,
    })
}
