//! Looking at what is there without changing it: a bounded read of a whole file, whether a
//! name exists or still names a held file, and a directory's names.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use super::meta::Meta;
use super::open::open_existing;
use super::safety::unsafe_state;
use crate::error::Error;
use crate::faults::failpoint;

/// Reads a whole state file of at most `limit` bytes; `None` if it does not exist.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Error> {
    let Some(file) = open_existing(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            problem: format!("larger than {limit} bytes"),
        });
    }
    Ok(Some(bytes))
}

/// Whether something exists at `path`, without following a symlink there. A symlink is an
/// error: no state path is ever a link.
pub(crate) fn exists(path: &Path) -> Result<bool, Error> {
    failpoint!("fs::op");
    match Meta::of_path(path) {
        Ok(meta) if meta.is_symlink() => Err(unsafe_state(path, "it is a symbolic link")),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspecting", path, e)),
    }
}

/// Whether `path` still names the file `held` describes (same device and inode), without
/// following a link: a file opened by name may have been unlinked, or replaced, since.
pub(crate) fn still_at(held: &Meta, path: &Path) -> Result<bool, Error> {
    failpoint!("fs::op");
    match Meta::of_path(path) {
        Ok(now) => Ok(now.same_file(held)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspecting", path, e)),
    }
}

/// The names in a state directory, skipping temporary files.
pub(crate) fn list_names(dir: &Path) -> Result<Vec<String>, Error> {
    failpoint!("fs::op");
    opened!();
    let entries = fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
        if let Some(name) = entry.file_name().to_str()
            && !name.starts_with('.')
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Counts the entries of a directory (without reading any file).
pub(crate) fn count_entries(dir: &Path) -> Result<usize, Error> {
    Ok(list_names(dir)?.len())
}
