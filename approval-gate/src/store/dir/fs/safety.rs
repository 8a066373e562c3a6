//! What the store accepts on disk: no symbolic links, owned by this user, nothing open to
//! group or others; and the errors that say which rule a path broke.

use std::io;
use std::path::Path;

use rustix::fs::OFlags;

use super::meta::Meta;
use crate::error::Error;

pub(super) fn nofollow() -> i32 {
    OFlags::NOFOLLOW.bits().cast_signed()
}

fn is_symlink_error(error: &io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

pub(super) fn unsafe_state(path: &Path, problem: impl Into<String>) -> Error {
    Error::UnsafeState {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

pub(super) fn map_open_error(op: &'static str, path: &Path, error: io::Error) -> Error {
    if is_symlink_error(&error) {
        unsafe_state(path, "it is a symbolic link")
    } else {
        Error::io(op, path, error)
    }
}

/// Checks ownership and mode of something already opened or `lstat`ed.
pub(super) fn check_metadata(path: &Path, meta: &Meta, want_dir: bool) -> Result<(), Error> {
    if meta.is_symlink() {
        return Err(unsafe_state(path, "it is a symbolic link"));
    }
    if want_dir && !meta.is_dir() {
        return Err(unsafe_state(path, "it is not a directory"));
    }
    if !want_dir && !meta.is_file() {
        return Err(unsafe_state(path, "it is not a regular file"));
    }
    let euid = rustix::process::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(unsafe_state(
            path,
            format!(
                "it is owned by uid {}, not by this user (uid {euid})",
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        return Err(unsafe_state(
            path,
            format!("it is writable by group or others (mode {mode:o}); run chmod go-w on it"),
        ));
    }
    if mode & 0o077 != 0 {
        let (want, kind) = if want_dir {
            ("700", "directories")
        } else {
            ("600", "files")
        };
        return Err(unsafe_state(
            path,
            format!(
                "it is accessible to group or others (mode {mode:o}); the store keeps its {kind} {want}: run chmod {want} on it"
            ),
        ));
    }
    Ok(())
}
