//! Making, replacing, moving and removing names in the store's directories, each as durable as
//! its use needs: a claim or a record survives a crash once its call returns, a marker is a
//! hint recovery can rebuild.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::file::{parent, sync_dir, sync_file, sync_parent, write_all};
use super::meta::Meta;
use super::safety::{check_metadata, map_open_error, nofollow};
use super::{DIR_MODE, FILE_MODE};
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;

/// A durable write that failed, telling whether its change is nevertheless in place.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Nothing changed at the target path.
    Before(Error),
    /// The change is in place, but making it durable (the fsync of its directory, or of an
    /// exclusively created file) failed: a crash may still undo it.
    After(Error),
}

impl Failed {
    /// The error, whether or not the change is in place.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Self::Before(error) | Self::After(error) => error,
        }
    }

    /// The error to report for `operation` on request `id` when its line was to be written
    /// after its effect was made: "not recorded" if nothing of the line was written, else
    /// "durability unknown".
    pub(crate) fn after_made(self, id: RequestId, operation: &'static str) -> Error {
        match self {
            Self::Before(error) => error.after_effect(id, operation),
            after @ Self::After(_) => after.on(id, operation),
        }
    }

    /// The error to report for `operation` on request `id`.
    pub(crate) fn on(self, id: RequestId, operation: &'static str) -> Error {
        match self {
            Self::Before(error) => error,
            Self::After(error) => Error::DurabilityUnknown {
                id,
                operation,
                source: Box::new(error),
            },
        }
    }
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Self::Before(error)
    }
}

/// Makes sure `path` is a safe state directory, creating it `0700` if it does not exist.
pub(crate) fn ensure_dir(path: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    match Meta::of_path(path) {
        Ok(meta) => check_metadata(path, &meta, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match fs::DirBuilder::new().mode(DIR_MODE).create(path) {
                Ok(()) => {
                    trace!(Mkdir {
                        path: path.to_path_buf()
                    });
                }
                // Another process created it first; check what it made.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io("creating directory", path, e)),
            }
            let meta = Meta::of_path(path).map_err(|e| Error::io("inspecting", path, e))?;
            check_metadata(path, &meta, true)?;
            // The umask may have removed bits we need, or left ones we don't want.
            fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
                .map_err(|e| Error::io("setting permissions of", path, e))?;
            if let Some(parent) = path.parent() {
                sync_dir(parent)?;
            }
            Ok(())
        }
        Err(e) => Err(Error::io("inspecting", path, e)),
    }
}

/// Creates the directories above the store (the store's own are made by [`ensure_dir`]).
pub(crate) fn create_dir_all(path: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    fs::create_dir_all(path).map_err(|e| Error::io("creating directory", path, e))?;
    trace!(Mkdir {
        path: path.to_path_buf()
    });
    Ok(())
}

/// Creates an empty marker file if nothing is there yet. Not fsynced: markers are hints
/// that recovery can rebuild, never the record of a decision.
pub(crate) fn touch(path: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    match create_new(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(map_open_error("creating", path, e)),
    }
}

/// Makes the marker `to` as a second name of the existing file `from` (same directory), or as
/// a new empty file if that cannot be done (`from` gone, a file system without hard links).
/// A marker's content is never read: only its name, and its lock for an execution's. A new
/// name costs a directory entry where a new file also costs an inode, which some file systems
/// (ext4 after many deletions) allocate slowly. An existing `to` is left as it is.
pub(crate) fn mark(from: &Path, to: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    match fs::hard_link(from, to) {
        Ok(()) => {
            trace!(Link {
                from: from.to_path_buf(),
                to: to.to_path_buf()
            });
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) => touch(to),
    }
}

fn create_new(path: &Path) -> Result<File, io::Error> {
    opened!();
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(nofollow())
        .open(path)?;
    trace!(Create {
        path: path.to_path_buf()
    });
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Creates `path` exclusively; `None` if anything already exists there.
fn create_if_absent(path: &Path) -> Result<Option<File>, Failed> {
    failpoint!("fs::op");
    match create_new(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(map_open_error("creating", path, e).into()),
    }
}

/// Creates `path` exclusively with `bytes`, then fsyncs it and its directory.
///
/// Returns `false` (and writes nothing) if anything already exists at `path`, including a
/// dangling symlink: `O_EXCL` never follows one.
/// A failure once the name exists is [`Failed::After`]: the claim is made, durable or not.
pub(crate) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool, Failed> {
    let Some(mut file) = create_if_absent(path)? else {
        return Ok(false);
    };
    // Once the name exists the claim is made; the content is only informative. Sync both so
    // that the claim survives a crash before anything that depends on it happens.
    sync_claim(&mut file, path, bytes).map_err(Failed::After)?;
    Ok(true)
}

/// [`create_exclusive`] without any fsync: for a claim whose journal entry makes it durable
/// (the journal's replay makes it again if a power loss takes it). A failure once the name
/// exists is [`Failed::After`].
pub(crate) fn create_exclusive_unsynced(path: &Path, bytes: &[u8]) -> Result<bool, Failed> {
    let Some(mut file) = create_if_absent(path)? else {
        return Ok(false);
    };
    let mut write = || -> Result<(), Error> {
        failpoint!("fs::create_exclusive::before_write");
        write_all(&mut file, path, bytes)
    };
    write().map_err(Failed::After)?;
    Ok(true)
}

fn sync_claim(file: &mut File, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    failpoint!("fs::create_exclusive::before_sync");
    let written = write_all(file, path, bytes).and_then(|()| sync_file(file, path));
    failpoint!("fs::create_exclusive::before_dir_sync");
    let synced = sync_parent(path);
    written?;
    synced
}

/// Replaces `path` with `bytes` atomically and durably: temp file, fsync, rename, fsync of the
/// directory. A failure after the rename is [`Failed::After`]: the new content is in place.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failed> {
    failpoint!("fs::op");
    let dir = parent(path)?;
    replace(path, bytes)?;
    sync_renamed(dir).map_err(Failed::After)
}

/// Replaces `path` with `bytes` atomically (temp file, rename) but syncs nothing: for a file
/// the journal can write again after a power loss.
pub(crate) fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    failpoint!("fs::op");
    replace_as(path, bytes, false)
}

/// Writes a temporary file beside `path`, fsyncs it and renames it over `path`.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    replace_as(path, bytes, true)
}

fn replace_as(path: &Path, bytes: &[u8], synced: bool) -> Result<(), Error> {
    let dir = parent(path)?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| Error::Random(e.to_string()))?;
    let tmp = dir.join(format!(".{name}.tmp-{:016x}", u64::from_le_bytes(suffix)));
    let result = (|| -> Result<(), Error> {
        let mut file = create_new(&tmp).map_err(|e| map_open_error("creating", &tmp, e))?;
        write_all(&mut file, &tmp, bytes)?;
        if synced {
            sync_file(&file, &tmp)?;
        }
        failpoint!("fs::write_atomic::before_rename");
        // rename(2) replaces a symlink at `path` itself rather than writing through it.
        fs::rename(&tmp, path).map_err(|e| Error::io("renaming into place", path, e))?;
        trace!(Rename {
            from: tmp.clone(),
            to: path.to_path_buf()
        });
        Ok(())
    })();
    if result.is_err() && fs::remove_file(&tmp).is_ok() {
        trace!(Unlink { path: tmp.clone() });
    }
    result
}

pub(crate) fn sync_renamed(dir: &Path) -> Result<(), Error> {
    failpoint!("fs::write_atomic::before_dir_sync");
    sync_dir(dir)
}

/// Removes a file if it exists (no error if it is already gone).
pub(crate) fn remove_if_exists(path: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    match fs::remove_file(path) {
        Ok(()) => {
            trace!(Unlink {
                path: path.to_path_buf()
            });
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("removing", path, e)),
    }
}

/// Renames `from` to `to` and fsyncs both directories. A failure after the rename is
/// [`Failed::After`].
pub(crate) fn rename_durable(from: &Path, to: &Path) -> Result<(), Failed> {
    failpoint!("fs::op");
    fs::rename(from, to).map_err(|e| Error::io("moving", from, e))?;
    trace!(Rename {
        from: from.to_path_buf(),
        to: to.to_path_buf()
    });
    sync_parent(to)
        .and_then(|()| sync_parent(from))
        .map_err(Failed::After)
}
