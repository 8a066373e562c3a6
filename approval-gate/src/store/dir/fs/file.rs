//! Writes to an open file, and the fsyncs that make a file's content or a directory's entries
//! durable.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::OFlags;

use super::safety::{map_open_error, nofollow, unsafe_state};
use crate::error::Error;
use crate::faults::failpoint;

/// Appends `bytes` to a file opened with [`open_append`] (or just created).
pub(crate) fn write_all(file: &mut File, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    file.write_all(bytes)
        .map_err(|e| Error::io("writing", path, e))?;
    trace!(Append {
        path: path.to_path_buf(),
        bytes: bytes.to_vec()
    });
    Ok(())
}

/// Writes `bytes` at `offset` in one `pwrite`.
pub(crate) fn write_at(file: &File, path: &Path, bytes: &[u8], offset: u64) -> Result<(), Error> {
    file.write_all_at(bytes, offset)
        .map_err(|e| Error::io("writing", path, e))?;
    trace!(WriteAt {
        path: path.to_path_buf(),
        offset,
        bytes: bytes.to_vec()
    });
    Ok(())
}

/// Cuts a file to `len` bytes.
pub(crate) fn truncate(file: &File, path: &Path, len: u64) -> Result<(), Error> {
    file.set_len(len)
        .map_err(|e| Error::io("truncating", path, e))?;
    trace!(Truncate {
        path: path.to_path_buf(),
        len
    });
    Ok(())
}

/// Makes a file durable, data and metadata.
pub(crate) fn sync_file(file: &File, path: &Path) -> Result<(), Error> {
    file.sync_all().map_err(|e| Error::io("syncing", path, e))?;
    trace!(Fsync {
        path: path.to_path_buf()
    });
    Ok(())
}

/// Makes a file's data durable, and the size needed to read it back: enough for an append.
pub(crate) fn sync_data(file: &File, path: &Path) -> Result<(), Error> {
    file.sync_data()
        .map_err(|e| Error::io("syncing", path, e))?;
    trace!(Fsync {
        path: path.to_path_buf()
    });
    Ok(())
}

/// Opens a directory to sync it, never through a symlink.
fn open_dir(dir: &Path) -> Result<File, Error> {
    failpoint!("fs::op");
    opened!();
    OpenOptions::new()
        .read(true)
        .custom_flags(nofollow() | OFlags::DIRECTORY.bits().cast_signed())
        .open(dir)
        .map_err(|e| map_open_error("opening directory", dir, e))
}

/// fsyncs a directory so that entries created, renamed or removed in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    let handle = open_dir(dir)?;
    handle
        .sync_all()
        .map_err(|e| Error::io("syncing directory", dir, e))?;
    trace!(FsyncDir {
        path: dir.to_path_buf()
    });
    Ok(())
}

/// Makes everything written to the file system holding `dir` durable (`syncfs(2)`): a
/// checkpoint of the journal, which then forgets what it held.
pub(crate) fn sync_fs(dir: &Path) -> Result<(), Error> {
    let handle = open_dir(dir)?;
    rustix::fs::syncfs(&handle)
        .map_err(|e| Error::io("syncing the file system of", dir, e.into()))?;
    trace!(SyncFs {
        path: dir.to_path_buf()
    });
    Ok(())
}

pub(super) fn parent(path: &Path) -> Result<&Path, Error> {
    path.parent()
        .ok_or_else(|| unsafe_state(path, "it has no parent directory"))
}

pub(super) fn sync_parent(path: &Path) -> Result<(), Error> {
    sync_dir(parent(path)?)
}
