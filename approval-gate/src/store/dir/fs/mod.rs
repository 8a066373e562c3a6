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
//!   the target, and the directory is fsynced; or, for a file the journal can write again
//!   (`write_atomic_unsynced`), the same without the fsyncs;
//! - an exclusive create (`O_CREAT | O_EXCL`) is fsynced together with its directory before
//!   it counts, unless the journal makes it durable (`create_exclusive_unsynced`).
//!
//! Each change is also noted for the power-loss tests (`fs_trace`, feature `fs-trace`), so
//! nothing else in the crate may write to the disk except through here.
//!
//! `safety` holds the checks, `open` the opens, `names` every change to a directory's
//! entries, `file` writes and fsyncs, `inspect` what only looks.

/// Counts an open for the tests that hold filing to the same opens at any queue length.
macro_rules! opened {
    () => {
        #[cfg(feature = "fs-trace")]
        crate::fs_trace::note_open();
    };
}

/// Notes a change for the power-loss tests once it has succeeded; nothing without the
/// `fs-trace` feature.
macro_rules! trace {
    ($variant:ident { $($field:tt)* }) => {
        #[cfg(feature = "fs-trace")]
        crate::fs_trace::note(|| crate::fs_trace::FsOp::$variant { $($field)* });
    };
}

const FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;

// The macros above are in scope in the files below, declared after them.
mod file;
mod inspect;
mod meta;
mod names;
mod open;
mod safety;
#[cfg(test)]
mod tests;

pub(crate) use file::{sync_data, sync_dir, sync_fs, truncate, write_all, write_at};
pub(crate) use inspect::{count_entries, exists, list_names, read_bounded, still_at};
pub(crate) use meta::Meta;
pub(crate) use names::{
    Failed, create_dir_all, create_exclusive, create_exclusive_unsynced, ensure_dir, mark,
    remove_if_exists, rename_durable, write_atomic, write_atomic_unsynced,
};
pub(crate) use open::{open_append, open_existing, open_existing_rw, open_lock, open_lock_durable};
