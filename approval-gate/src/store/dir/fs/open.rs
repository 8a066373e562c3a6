//! Opening state files: existing ones for reading (or locking), and ones created if needed for
//! locks and appends, each checked once opened.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::FILE_MODE;
use super::file::sync_parent;
use super::meta::Meta;
use super::safety::{check_metadata, map_open_error, nofollow};
use crate::error::Error;
use crate::faults::failpoint;

/// Opens an existing state file for reading; `None` if it does not exist.
pub(crate) fn open_existing(path: &Path) -> Result<Option<File>, Error> {
    open_checked(path, false)
}

/// Opens an existing state file for reading and writing (for locking); `None` if it does
/// not exist.
pub(crate) fn open_existing_rw(path: &Path) -> Result<Option<File>, Error> {
    open_checked(path, true)
}

fn open_checked(path: &Path, write: bool) -> Result<Option<File>, Error> {
    failpoint!("fs::op");
    opened!();
    match OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(nofollow())
        .open(path)
    {
        Ok(file) => {
            let meta = Meta::of_file(&file).map_err(|e| Error::io("inspecting", path, e))?;
            check_metadata(path, &meta, false)?;
            Ok(Some(file))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(map_open_error("opening", path, e)),
    }
}

/// Opens (creating if needed) a lock file that holds nothing but the lock. Its name needs no
/// durability: a lock serialises live processes, none of which survives a power loss, and a
/// lost name is simply created again. Lock files are never renamed over or replaced, so every
/// process that locks one locks the same inode.
pub(crate) fn open_lock(path: &Path) -> Result<File, Error> {
    open_rw(path, Access::Write, Name::Scratch)
}

/// Opens (creating if needed, with a durable name) a lock file whose existence matters after
/// a crash: the audit anchor. (The execution marker syncs its directory itself, once locked.)
pub(crate) fn open_lock_durable(path: &Path) -> Result<File, Error> {
    open_rw(path, Access::Write, Name::Durable)
}

/// Opens (creating if needed, with a durable name) a file for appending.
pub(crate) fn open_append(path: &Path) -> Result<File, Error> {
    open_rw(path, Access::Append, Name::Durable)
}

#[derive(Clone, Copy)]
enum Access {
    Write,
    Append,
}

/// Whether a file created by [`open_rw`] must keep its name across a power loss.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Name {
    Durable,
    Scratch,
}

fn open_rw(path: &Path, access: Access, name: Name) -> Result<File, Error> {
    failpoint!("fs::op");
    opened!();
    // Racing creators both sync the directory, which is harmless.
    let existed = Meta::of_path(path).is_ok();
    let mut options = OpenOptions::new();
    options
        .read(true)
        .create(true)
        .mode(FILE_MODE)
        .custom_flags(nofollow());
    match access {
        Access::Append => options.append(true),
        Access::Write => options.write(true),
    };
    let file = options
        .open(path)
        .map_err(|e| map_open_error("opening", path, e))?;
    let meta = Meta::of_file(&file).map_err(|e| Error::io("inspecting", path, e))?;
    check_metadata(path, &meta, false)?;
    if !existed {
        trace!(Create {
            path: path.to_path_buf()
        });
        // The audit log, its anchor and an execution marker must not lose their name to a
        // power loss once something durable depends on them.
        if name == Name::Durable {
            sync_parent(path)?;
        }
    }
    Ok(file)
}
