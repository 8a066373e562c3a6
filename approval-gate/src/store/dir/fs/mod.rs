//! Careful file operations: no symlinks followed, owner and mode checked, every durable write
//! made crash-safe.
//!
//! Every path the store touches goes through this module, so the rules live in one place:
//! - opens use `O_NOFOLLOW`, and what was opened is checked with `fstat` (regular file, owned by
//!   the effective user, no permission bits for group or others: writable is refused as
//!   unsafe, readable is refused because the docs promise `0600`/`0700` and the store never
//!   changes modes behind its owner's back);
//! - files are created `0600` and directories `0700` whatever the umask;
//! - a replacement is written to a temporary file in the same directory, fsynced, renamed over
//!   the target, and the directory is fsynced;
//! - an exclusive create (`O_CREAT | O_EXCL`) is fsynced together with its directory before
//!   it counts.
//!
//! Each change is also noted for the power-loss tests (`fs_trace`, feature `fs-trace`), so
//! nothing else in the crate may write to the disk except through here.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::OFlags;

use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;

/// Notes a change for the power-loss tests once it has succeeded; nothing without the
/// `fs-trace` feature.
/// Counts an open for the tests that hold filing to the same opens at any queue length.
macro_rules! opened {
    () => {
        #[cfg(feature = "fs-trace")]
        crate::fs_trace::note_open();
    };
}

macro_rules! trace {
    ($variant:ident { $($field:tt)* }) => {
        #[cfg(feature = "fs-trace")]
        crate::fs_trace::note(|| crate::fs_trace::FsOp::$variant { $($field)* });
    };
}

const FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;

fn nofollow() -> i32 {
    OFlags::NOFOLLOW.bits().cast_signed()
}

fn is_symlink_error(error: &io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

fn unsafe_state(path: &Path, problem: impl Into<String>) -> Error {
    Error::UnsafeState {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

fn map_open_error(op: &'static str, path: &Path, error: io::Error) -> Error {
    if is_symlink_error(&error) {
        unsafe_state(path, "it is a symbolic link")
    } else {
        Error::io(op, path, error)
    }
}

/// Checks ownership and mode of something already opened or `lstat`ed.
fn check_metadata(path: &Path, meta: &fs::Metadata, want_dir: bool) -> Result<(), Error> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(unsafe_state(path, "it is a symbolic link"));
    }
    if want_dir && !kind.is_dir() {
        return Err(unsafe_state(path, "it is not a directory"));
    }
    if !want_dir && !kind.is_file() {
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
    let mode = meta.mode() & 0o7777;
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
    match fs::symlink_metadata(path) {
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
            let meta = fs::symlink_metadata(path).map_err(|e| Error::io("inspecting", path, e))?;
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
            let meta = file
                .metadata()
                .map_err(|e| Error::io("inspecting", path, e))?;
            check_metadata(path, &meta, false)?;
            Ok(Some(file))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(map_open_error("opening", path, e)),
    }
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
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(unsafe_state(path, "it is a symbolic link"))
        }
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspecting", path, e)),
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

/// Creates `path` exclusively with `bytes`, then fsyncs it and its directory.
///
/// Returns `false` (and writes nothing) if anything already exists at `path`, including a
/// dangling symlink: `O_EXCL` never follows one.
/// A failure once the name exists is [`Failed::After`]: the claim is made, durable or not.
pub(crate) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool, Failed> {
    failpoint!("fs::op");
    let mut file = match create_new(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(map_open_error("creating", path, e).into()),
    };
    // Once the name exists the claim is made; the content is only informative. Sync both so
    // that the claim survives a crash before anything that depends on it happens.
    sync_claim(&mut file, path, bytes).map_err(Failed::After)?;
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

/// [`write_atomic`] but for the fsync of the directory, which the caller makes with
/// [`sync_dir`] (after letting go of a lock, say): the new content is durable and in place,
/// its name not yet durable.
pub(crate) fn write_atomic_unsynced_name(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    failpoint!("fs::op");
    replace(path, bytes)
}

/// Writes a temporary file beside `path`, fsyncs it and renames it over `path`.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
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
        sync_file(&file, &tmp)?;
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
    let existed = fs::symlink_metadata(path).is_ok();
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
    let meta = file
        .metadata()
        .map_err(|e| Error::io("inspecting", path, e))?;
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

/// Whether `path` still names the file `held` describes (same device and inode), without
/// following a link: a file opened by name may have been unlinked, or replaced, since.
pub(crate) fn still_at(held: &fs::Metadata, path: &Path) -> Result<bool, Error> {
    failpoint!("fs::op");
    match fs::symlink_metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspecting", path, e)),
    }
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

fn parent(path: &Path) -> Result<&Path, Error> {
    path.parent()
        .ok_or_else(|| unsafe_state(path, "it has no parent directory"))
}

fn sync_parent(path: &Path) -> Result<(), Error> {
    sync_dir(parent(path)?)
}

/// fsyncs a directory so that entries created, renamed or removed in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    failpoint!("fs::op");
    opened!();
    let handle = OpenOptions::new()
        .read(true)
        .custom_flags(nofollow() | OFlags::DIRECTORY.bits().cast_signed())
        .open(dir)
        .map_err(|e| map_open_error("opening directory", dir, e))?;
    handle
        .sync_all()
        .map_err(|e| Error::io("syncing directory", dir, e))?;
    trace!(FsyncDir {
        path: dir.to_path_buf()
    });
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn created_files_and_dirs_have_private_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        ensure_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let file = dir.join("f");
        write_atomic(&file, b"x").unwrap();
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert!(create_exclusive(&dir.join("c"), b"").unwrap());
        assert!(!create_exclusive(&dir.join("c"), b"").unwrap());
        assert_eq!(fs::metadata(dir.join("c")).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn symlinks_are_refused_everywhere() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        ensure_dir(&real).unwrap();
        fs::write(real.join("target"), b"secret").unwrap();
        let link_dir = tmp.path().join("link");
        symlink(&real, &link_dir).unwrap();
        assert!(matches!(
            ensure_dir(&link_dir),
            Err(Error::UnsafeState { .. })
        ));

        let link_file = real.join("file-link");
        symlink(real.join("target"), &link_file).unwrap();
        assert!(matches!(
            open_existing(&link_file),
            Err(Error::UnsafeState { .. })
        ));
        assert!(matches!(
            open_lock(&link_file),
            Err(Error::UnsafeState { .. })
        ));
        assert!(matches!(
            open_append(&link_file),
            Err(Error::UnsafeState { .. })
        ));
        assert!(matches!(exists(&link_file), Err(Error::UnsafeState { .. })));
        // An exclusive create never writes through a link, dangling or not.
        assert!(!create_exclusive(&link_file, b"claim").unwrap());
        let dangling = real.join("dangling");
        symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        assert!(!create_exclusive(&dangling, b"claim").unwrap());
        assert!(!tmp.path().join("nowhere").exists());
        assert_eq!(fs::read(real.join("target")).unwrap(), b"secret");
    }

    #[test]
    fn a_path_that_cannot_be_inspected_is_an_error_not_an_absence() {
        // `exists` answers whether a claim, an execution marker or an archived record is
        // there: an inspection that fails (here ENOTDIR, a path through a file) must not read
        // as "not there", which would show a spent approval as unspent.
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        fs::write(&file, b"").unwrap();
        assert!(exists(&file).unwrap());
        assert!(!exists(&tmp.path().join("missing")).unwrap());
        assert!(matches!(
            exists(&file.join("x")),
            Err(Error::Io {
                op: "inspecting",
                ..
            })
        ));
    }

    #[test]
    fn still_at_tells_the_held_file_from_a_replacement_and_reports_what_it_cannot_inspect() {
        // An execution marker is locked, then checked to be still at its name: only then is
        // the lock the one every other executor takes.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("m");
        fs::write(&path, b"").unwrap();
        let held = fs::symlink_metadata(&path).unwrap();
        assert!(still_at(&held, &path).unwrap());
        // Another file on the same device, then that file renamed over the name.
        let other = tmp.path().join("other");
        fs::write(&other, b"").unwrap();
        assert!(!still_at(&held, &other).unwrap());
        fs::rename(&other, &path).unwrap();
        assert!(!still_at(&held, &path).unwrap());
        fs::remove_file(&path).unwrap();
        assert!(!still_at(&held, &path).unwrap());
        // A path through a file (ENOTDIR) is an error, not "another file is there now".
        fs::write(&other, b"").unwrap();
        assert!(matches!(
            still_at(&held, &other.join("x")),
            Err(Error::Io {
                op: "inspecting",
                ..
            })
        ));
    }

    #[test]
    fn remove_if_exists_is_quiet_about_a_missing_file_only() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        fs::write(&file, b"").unwrap();
        remove_if_exists(&file).unwrap();
        assert!(!file.exists());
        remove_if_exists(&file).unwrap();
        // What cannot be removed (a directory: EISDIR, root included) is an error, not
        // "already gone": an execution marker left in place must not be reported removed.
        let dir = tmp.path().join("d");
        fs::create_dir(&dir).unwrap();
        assert!(matches!(
            remove_if_exists(&dir),
            Err(Error::Io { op: "removing", .. })
        ));
        assert!(dir.is_dir());
    }

    #[test]
    fn writable_by_others_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        ensure_dir(&dir).unwrap();
        let file = dir.join("f");
        write_atomic(&file, b"x").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            open_existing(&file),
            Err(Error::UnsafeState { .. })
        ));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(ensure_dir(&dir), Err(Error::UnsafeState { .. })));
    }

    #[test]
    fn readable_by_group_or_others_is_refused_with_the_mode_to_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        ensure_dir(&dir).unwrap();
        let file = dir.join("f");
        write_atomic(&file, b"x").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        match open_existing(&file) {
            Err(Error::UnsafeState { problem, .. }) => {
                assert!(
                    problem.contains("mode 644") && problem.contains("chmod 600"),
                    "{problem}"
                );
            }
            other => panic!("a 0644 file was accepted: {other:?}"),
        }
        assert!(matches!(open_lock(&file), Err(Error::UnsafeState { .. })));
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(
            open_existing(&file),
            Err(Error::UnsafeState { .. })
        ));
        // Not changed behind the owner's back.
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
        fs::set_permissions(&file, fs::Permissions::from_mode(0o400)).unwrap();
        assert!(
            open_existing(&file).unwrap().is_some(),
            "fewer bits are fine"
        );

        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        match ensure_dir(&dir) {
            Err(Error::UnsafeState { problem, .. }) => {
                assert!(
                    problem.contains("mode 755") && problem.contains("chmod 700"),
                    "{problem}"
                );
            }
            other => panic!("a 0755 directory was accepted: {other:?}"),
        }
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o755);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn a_failed_directory_sync_after_the_rename_is_told_apart() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let error = Failed::After(Error::io("syncing directory", "d", io::Error::other("x")));
        assert!(matches!(
            error.on(id, "deny"),
            Error::DurabilityUnknown {
                operation: "deny",
                ..
            }
        ));
        let error = Failed::Before(Error::io("renaming", "d", io::Error::other("x")));
        assert!(matches!(error.on(id, "deny"), Error::Io { .. }));
    }

    #[test]
    fn mark_names_the_file_again_or_makes_one_and_leaves_an_existing_mark() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let claim = dir.path().join("a.used");
        std::fs::write(&claim, b"{}").unwrap();
        let logged = dir.path().join("a.logged");
        mark(&claim, &logged).unwrap();
        let (c, l) = (claim.metadata().unwrap(), logged.metadata().unwrap());
        assert_eq!(
            (c.ino(), c.nlink()),
            (l.ino(), 2),
            "a second name of the claim"
        );
        // Again: the existing mark stays, and no error.
        mark(&claim, &logged).unwrap();
        assert_eq!(claim.metadata().unwrap().nlink(), 2);
        // Without the file to name, a new empty file.
        let orphan = dir.path().join("b.logged");
        mark(&dir.path().join("b.used"), &orphan).unwrap();
        assert_eq!(std::fs::read(&orphan).unwrap(), b"");
        // Nowhere to put it: the error of the fallback.
        let nowhere = dir.path().join("missing").join("c.logged");
        assert!(matches!(mark(&claim, &nowhere), Err(Error::Io { .. })));
    }

    #[test]
    fn touch_makes_a_marker_once_and_reports_what_it_cannot_make() {
        let tmp = tempfile::tempdir().unwrap();
        let marker = tmp.path().join("m");
        touch(&marker).unwrap();
        touch(&marker).unwrap();
        assert!(marker.exists());
        // No such directory: an error, not a marker silently missing.
        let nowhere = tmp.path().join("missing").join("m");
        assert!(matches!(touch(&nowhere), Err(Error::Io { .. })));
    }

    #[test]
    fn bounded_read_refuses_oversized_files() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        write_atomic(&file, &[b'a'; 11]).unwrap();
        assert!(read_bounded(&file, 11).unwrap().is_some());
        assert!(matches!(
            read_bounded(&file, 10),
            Err(Error::Corrupt { .. })
        ));
        assert!(
            read_bounded(&tmp.path().join("missing"), 10)
                .unwrap()
                .is_none()
        );
    }
}
