//! Telling a store of the predecessor from ours, before anything in it is created or checked.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::PREDECESSOR;
use crate::error::Error;
use crate::store::dir::MAX_REQUEST_FILE;

/// Keys a record of the predecessor (0.1) may hold.
pub(super) const RECORD_KEYS: [&str; 9] = [
    "id",
    "action",
    "reason",
    "requestedBy",
    "status",
    "createdAt",
    "expiresAt",
    "decidedAt",
    "decisionReason",
];

/// Whose a file is, as far as its shape tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Written by this crate: a record with `version`, a chained line.
    Ours,
    /// Written by the predecessor: a record without `version` of its keys, an `at`/`event` line.
    Theirs,
    /// Neither, or unreadable: left to whoever reads it next.
    Unknown,
}

/// The shape of a request record's bytes. A record cut short by a crash (the predecessor's
/// writes are not atomic) is still theirs by its first bytes: `JSON.stringify(record, null, 2)`
/// begins with the id on a line of its own, ours is compact and begins with the version.
pub(super) fn record_shape(bytes: &[u8]) -> Shape {
    match serde_json::from_slice::<Map<String, Value>>(bytes) {
        Err(_) if bytes.starts_with(b"{\n  \"id\": ") => Shape::Theirs,
        Ok(record) if record.contains_key("version") => Shape::Ours,
        Ok(record)
            if record.contains_key("id")
                && record.contains_key("status")
                && record.keys().all(|key| RECORD_KEYS.contains(&key.as_str())) =>
        {
            Shape::Theirs
        }
        _ => Shape::Unknown,
    }
}

/// The shape of an audit line (without its newline); a line cut short is told by its first
/// key (`at` theirs, `seq` ours).
pub(super) fn line_shape(line: &[u8]) -> Shape {
    match serde_json::from_slice::<Map<String, Value>>(line) {
        Err(_) if line.starts_with(b"{\"at\":") => Shape::Theirs,
        Err(_) if line.starts_with(b"{\"seq\":") => Shape::Ours,
        Ok(object) if object.contains_key("seq") || object.contains_key("hash") => Shape::Ours,
        Ok(object) if object.contains_key("at") && object.contains_key("event") => Shape::Theirs,
        _ => Shape::Unknown,
    }
}

/// What the files of a store say about whose it is.
#[derive(Debug, Default)]
pub(super) struct Marks {
    /// A file only the predecessor writes.
    pub(super) theirs: Option<PathBuf>,
    /// A file only we write.
    pub(super) ours: Option<PathBuf>,
}

/// Reads the marks of the store at `root`, reading only: a missing root, file or directory
/// marks nothing.
pub(super) fn marks(root: &Path) -> Marks {
    let mut marks = Marks::default();
    let mut note = |shape: Shape, path: PathBuf| match shape {
        Shape::Ours if marks.ours.is_none() => marks.ours = Some(path),
        Shape::Theirs if marks.theirs.is_none() => marks.theirs = Some(path),
        _ => {}
    };
    let log = root.join("audit.jsonl");
    if let Some(line) = first_line(&log) {
        note(line_shape(&line), log);
    }
    let requests = root.join("requests");
    if let Ok(entries) = std::fs::read_dir(&requests) {
        let mut names: Vec<_> = entries.filter_map(Result::ok).collect();
        names.sort_by_key(std::fs::DirEntry::file_name);
        for entry in names {
            let path = entry.path();
            let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
            if !is_file || path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            if let Some(bytes) = read_small(&path) {
                note(record_shape(&bytes), path);
            }
        }
    }
    marks
}

/// Refuses a directory that holds a store of the predecessor, or mixes its files with ours;
/// reads only, so it runs before the directory store creates or checks anything.
///
/// A store of ours with a non-empty `audit.head` is told at once, without reading its records:
/// the predecessor writes no such file, and a binary of ours that opened its store left it
/// empty (its chain refuses their log).
///
/// # Errors
///
/// [`Error::PredecessorStore`], saying which and what to do.
pub(crate) fn refuse_predecessor(root: &Path) -> Result<(), Error> {
    let anchored = std::fs::symlink_metadata(root.join("audit.head"))
        .is_ok_and(|meta| meta.is_file() && meta.len() > 0);
    if anchored || !root.is_dir() {
        return Ok(());
    }
    let marks = marks(root);
    match (marks.theirs, marks.ours) {
        (None, _) => Ok(()),
        (Some(theirs), Some(ours)) => Err(mixed(root, &theirs, &ours)),
        (Some(_), None) => Err(Error::PredecessorStore {
            path: root.to_owned(),
            problem: format!(
                "this is a store of {PREDECESSOR}, not ours yet: run `approval-gate migrate --dir {}` to bring it over (`--dry-run` shows what it would do)",
                root.display()
            ),
        }),
    }
}

/// The refusal of a store holding both the predecessor's files and ours.
pub(super) fn mixed(root: &Path, theirs: &Path, ours: &Path) -> Error {
    let name = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    Error::PredecessorStore {
        path: root.to_owned(),
        problem: format!(
            "it mixes files of {PREDECESSOR} ({}) with files of ours ({}): neither store can be trusted to be whole, and `approval-gate migrate` refuses it too; a human has to sort it out",
            name(theirs),
            name(ours)
        ),
    }
}

/// The first line of `path`, without its newline, if it can be read.
fn first_line(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    file.take(crate::audit::MAX_LINE as u64)
        .read_to_end(&mut head)
        .ok()?;
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    head.truncate(end);
    (!head.is_empty()).then_some(head)
}

/// The bytes of `path` if it is a file no larger than a request record can be.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_REQUEST_FILE {
        return None;
    }
    std::fs::read(path).ok()
}
