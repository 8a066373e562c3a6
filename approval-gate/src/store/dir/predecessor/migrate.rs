//! `approval-gate migrate`: the new store is built complete in a sibling directory, made
//! durable, then swapped with the old one in one `renameat2(RENAME_EXCHANGE)`; the old files
//! are carried under `predecessor/` of the new store byte for byte, and the old tree is
//! removed last.
//!
//! A kill at any point leaves the old store untouched (before the swap: the sibling is a
//! half-built leftover the next run removes) or the new one complete (after it: the sibling is
//! the old tree, whose files the new store holds already, and the next run removes it).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::detect::{self, Shape};
use super::format::{self, refuse};
use super::plan::{self, MigratedRequest, Step};
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::store::dir::{DirStore, fs};
use crate::store::{Caps, Entry, Filed, Store};
use crate::time::{Clock, SystemClock, Timestamp};

/// Where the old store's files are kept in the new one.
pub(super) const KEPT: &str = "predecessor";

/// What [`migrate_predecessor`] did, or would do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Migration {
    /// What happened.
    pub outcome: MigrationOutcome,
    /// Each request of the old store: its old status, where it stands now, and why (empty for
    /// a store migrated before).
    pub requests: Vec<MigratedRequest>,
    /// Length of the old audit log, in bytes.
    pub log_bytes: u64,
    /// BLAKE3 of the old audit log (64 hex characters), as the new chain's first line records.
    pub log_blake3: String,
}

/// What [`migrate_predecessor`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MigrationOutcome {
    /// `--dry-run`: nothing was changed.
    Planned,
    /// The store was brought over.
    Migrated,
    /// The store was brought over by an earlier run: nothing was changed (but the old tree an
    /// interrupted run left beside it, which the new store holds a copy of, removed).
    AlreadyMigrated,
}

/// Brings the store of approval-gate-mcp (Node) in `dir` over to ours, or with `dry_run` says
/// what it would do; see `docs/migrating.md`. Stop approval-gate-mcp first.
///
/// # Errors
///
/// [`Error::PredecessorStore`] naming the file and the reason when the store cannot be
/// brought over exactly (nothing changed); [`Error::InvalidInput`] when `dir` holds no store
/// of the predecessor; I/O errors (before the swap, nothing changed in `dir`).
pub fn migrate_predecessor(dir: &Path, dry_run: bool) -> Result<Migration, Error> {
    migrate_at(dir, dry_run, SystemClock.now())
}

pub(super) fn migrate_at(dir: &Path, dry_run: bool, now: Timestamp) -> Result<Migration, Error> {
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let Some(name) = dir.file_name().and_then(|name| name.to_str()) else {
        return Err(Error::InvalidInput {
            field: "dir",
            problem: format!("{} names no directory to migrate", dir.display()),
        });
    };
    let sibling = parent.join(format!(".{name}.approval-gate-migrate"));
    // One migration at a time: the parent directory is locked for the whole run.
    let _lock = if dry_run {
        None
    } else {
        let file = std::fs::File::open(&parent).map_err(|e| Error::io("opening", &parent, e))?;
        Some(crate::store::dir::layout::lock_file(file, &parent)?)
    };
    if let Some(done) = already_migrated(dir)? {
        if !dry_run && std::fs::symlink_metadata(&sibling).is_ok() {
            remove_tree(&sibling, &parent)?;
        }
        return Ok(done);
    }
    let marks = detect::marks(dir);
    match (&marks.theirs, &marks.ours) {
        (Some(theirs), Some(ours)) => return Err(detect::mixed(dir, theirs, ours)),
        (None, _) => {
            return Err(Error::InvalidInput {
                field: "dir",
                problem: format!(
                    "{} holds no store of approval-gate-mcp (Node): nothing to migrate",
                    dir.display()
                ),
            });
        }
        (Some(_), None) => {}
    }
    let old = format::read(dir)?;
    let steps = plan::plan(&old, dir, now)?;
    let migration = Migration {
        outcome: MigrationOutcome::Planned,
        requests: steps.iter().map(|step| step.report.clone()).collect(),
        log_bytes: old.log.len() as u64,
        log_blake3: blake3::hash(&old.log).to_hex().to_string(),
    };
    if dry_run {
        return Ok(migration);
    }
    // A sibling left by a run killed before its swap is half built: start again.
    if std::fs::symlink_metadata(&sibling).is_ok() {
        remove_tree(&sibling, &parent)?;
    }
    failpoint!("migrate::before_build");
    build(&sibling, &old, &steps, &migration, now)?;
    failpoint!("migrate::before_check");
    // approval-gate-mcp writes without locks: had it written meanwhile, the new store would
    // miss it.
    if format::read(dir)?.files != old.files {
        remove_tree(&sibling, &parent)?;
        return Err(refuse(
            dir,
            "it changed while it was being migrated: stop approval-gate-mcp (every server and CLI using this directory), then run migrate again",
        ));
    }
    failpoint!("migrate::before_swap");
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        dir,
        rustix::fs::CWD,
        &sibling,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .map_err(|e| Error::io("swapping in the migrated store at", dir, e.into()))?;
    fs::sync_dir(&parent)?;
    failpoint!("migrate::after_swap");
    remove_tree(&sibling, &parent)?;
    Ok(Migration {
        outcome: MigrationOutcome::Migrated,
        ..migration
    })
}

/// The answer for a store an earlier run migrated, `None` for any other.
fn already_migrated(dir: &Path) -> Result<Option<Migration>, Error> {
    let kept = dir.join(KEPT);
    if !std::fs::symlink_metadata(&kept).is_ok_and(|meta| meta.is_dir()) {
        return Ok(None);
    }
    let first = first_line(&dir.join("audit.jsonl"));
    let line: Option<Map<String, Value>> = first
        .as_deref()
        .and_then(|line| serde_json::from_slice(line).ok());
    let is_ours = first
        .as_deref()
        .is_some_and(|line| detect::line_shape(line) == Shape::Ours);
    match line {
        Some(line) if is_ours && line.get("event") == Some(&json!("migrated")) => {
            Ok(Some(Migration {
                outcome: MigrationOutcome::AlreadyMigrated,
                requests: Vec::new(),
                log_bytes: line
                    .get("predecessorLogBytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                log_blake3: line
                    .get("predecessorLogBlake3")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }))
        }
        _ => Err(refuse(
            &kept,
            "a store holding predecessor/ whose chain does not begin with a migration: not the result of `approval-gate migrate`",
        )),
    }
}

/// Builds the complete new store in `at`, every file durable.
fn build(
    at: &Path,
    old: &format::OldStore,
    steps: &[Step],
    migration: &Migration,
    now: Timestamp,
) -> Result<(), Error> {
    fs::ensure_dir(at)?;
    let store = DirStore::open(at.to_owned())?;
    let kept = at.join(KEPT);
    fs::ensure_dir(&kept)?;
    fs::ensure_dir(&kept.join("requests"))?;
    for (name, bytes) in &old.files {
        let path = kept.join(name);
        if !fs::create_exclusive(&path, bytes)
            .map_err(|(fs::Failed::Before(e) | fs::Failed::After(e))| e)?
        {
            return Err(Error::io(
                "keeping",
                &path,
                std::io::Error::other("already there"),
            ));
        }
    }
    failpoint!("migrate::after_keeping");
    let line = details(json!({
        "from": "approval-gate-mcp",
        "predecessorLog": format!("{KEPT}/audit.jsonl"),
        "predecessorLogBytes": migration.log_bytes,
        "predecessorLogBlake3": migration.log_blake3,
        "requests": steps.len(),
    }));
    store
        .audit
        .append(now, AuditEvent::Migrated, RequestId::STORE, &line)?;
    failpoint!("migrate::after_migrated_line");
    for step in steps {
        bring(&store, step, now)?;
        failpoint!("migrate::after_request");
    }
    fs::sync_dir(&kept.join("requests"))?;
    fs::sync_dir(&kept)?;
    fs::sync_dir(at)
}

/// Files one request, then records its decision and spends it as planned, through the
/// directory store's own steps.
fn bring(store: &DirStore, step: &Step, now: Timestamp) -> Result<(), Error> {
    let request = &step.filed;
    let id = request.id();
    let filed = details(json!({
        "action": request.action(),
        "reason": request.reason(),
        "requestedBy": request.requested_by(),
        "operation": null,
        "payloadDigest": null,
        "expiresAt": request.expires_at(),
        "migratedFrom": "approval-gate-mcp",
    }));
    let caps = Caps {
        max_pending: usize::MAX,
        max_requests: usize::MAX,
    };
    let entry = Entry {
        ts: now,
        event: AuditEvent::Requested,
        details: &filed,
    };
    if store.file(request, caps, &entry)? != Filed::New {
        return Err(Error::io(
            "filing",
            store.layout.request(id),
            std::io::Error::other("not filed anew in the new store"),
        ));
    }
    let Some((status, at, reason)) = step.decision.clone() else {
        return Ok(());
    };
    let mut decided = request.clone();
    decided.decided_before(status, at, reason);
    let (event, operation, fields) = match status {
        crate::request::Status::Approved => (
            AuditEvent::Approved,
            "approve",
            json!({"decidedBy": decided.decided_by(), "reason": decided.decision_reason()}),
        ),
        crate::request::Status::Denied => (
            AuditEvent::Denied,
            "deny",
            json!({"decidedBy": decided.decided_by(), "reason": decided.decision_reason()}),
        ),
        _ => (
            AuditEvent::Expired,
            "expire",
            json!({"expiresAt": decided.expires_at()}),
        ),
    };
    let mut fields = details(fields);
    fields.insert("migratedFrom".into(), "approval-gate-mcp".into());
    fields.insert("why".into(), step.report.why.clone().into());
    let entry = Entry {
        ts: now,
        event,
        details: &fields,
    };
    store.decide(&decided, operation, &entry)?;
    if step.spent {
        let spent = details(json!({
            "operation": null,
            "payloadDigest": null,
            "outcome": "unknown",
            "migratedFrom": "approval-gate-mcp",
        }));
        let entry = Entry {
            ts: now,
            event: AuditEvent::Consumed,
            details: &spent,
        };
        store.spend(id, &entry)?;
    }
    Ok(())
}

fn details(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn first_line(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let end = bytes.iter().position(|&b| b == b'\n')?;
    Some(bytes[..end].to_vec())
}

/// Removes the sibling tree (a half-built store, or the old tree after the swap), durably.
fn remove_tree(path: &Path, parent: &Path) -> Result<(), Error> {
    std::fs::remove_dir_all(path).map_err(|e| Error::io("removing", path, e))?;
    fs::sync_dir(parent)
}
