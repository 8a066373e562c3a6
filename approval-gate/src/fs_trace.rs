//! A record of what the store does to the disk, for the power-loss tests only (feature
//! `fs-trace`, off by default).
//!
//! Every change `fs.rs` makes is noted here once it has succeeded, in order, on the thread
//! that made it: creates, hard links, writes, truncations, renames, unlinks, directory creations and the
//! fsyncs of files and directories. A test runs one operation under [`record`] and then works
//! out which on-disk states a power loss during that operation could leave: anything not yet
//! covered by a completed fsync may be lost. Not a stable API.

use std::cell::RefCell;
use std::path::PathBuf;

/// One change to the disk, as the store asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// A directory was created.
    Mkdir {
        /// The new directory.
        path: PathBuf,
    },
    /// A new, empty file was created.
    Create {
        /// The new file.
        path: PathBuf,
    },
    /// An existing file was given a second name (a hard link): the same file, no new one.
    Link {
        /// The file's existing name.
        from: PathBuf,
        /// Its new name.
        to: PathBuf,
    },
    /// Bytes were appended to a file.
    Append {
        /// The file written.
        path: PathBuf,
        /// What was appended.
        bytes: Vec<u8>,
    },
    /// Bytes were written at an offset, in one `pwrite`.
    WriteAt {
        /// The file written.
        path: PathBuf,
        /// Where the bytes start.
        offset: u64,
        /// What was written.
        bytes: Vec<u8>,
    },
    /// A file was cut to a length.
    Truncate {
        /// The file cut.
        path: PathBuf,
        /// Its new length.
        len: u64,
    },
    /// A name was moved, replacing whatever was at `to`.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
    },
    /// A name was removed.
    Unlink {
        /// The name removed.
        path: PathBuf,
    },
    /// A file's data (and the size needed to read it) was made durable.
    Fsync {
        /// The file synced.
        path: PathBuf,
    },
    /// A directory's entries were made durable.
    FsyncDir {
        /// The directory synced.
        path: PathBuf,
    },
    /// Everything written so far to the file system was made durable (`syncfs`).
    SyncFs {
        /// The directory whose file system was synced.
        path: PathBuf,
    },
}

thread_local! {
    static RECORDING: RefCell<Option<Vec<FsOp>>> = const { RefCell::new(None) };
}

/// Runs `f`, returning what it returned and every change it made to the disk, in order.
/// Only changes made on this thread are seen.
pub fn record<R>(f: impl FnOnce() -> R) -> (R, Vec<FsOp>) {
    let outer = RECORDING.with(|r| r.borrow_mut().replace(Vec::new()));
    let result = f();
    let ops = RECORDING.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (result, ops.unwrap_or_default())
}

/// How many changes the current [`record`] has seen so far (0 outside one): lets a test mark
/// where in the trace something outside the store, such as a side effect, happened.
#[must_use]
pub fn position() -> usize {
    RECORDING.with(|r| r.borrow().as_ref().map_or(0, Vec::len))
}

/// Notes a change if a recording is on; `op` is only built then.
pub(crate) fn note(op: impl FnOnce() -> FsOp) {
    RECORDING.with(|r| {
        if let Some(ops) = r.borrow_mut().as_mut() {
            ops.push(op());
        }
    });
}

thread_local! {
    static REBOOTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Makes the store see a new run of the machine from now on, on this thread, as after the
/// power loss a test models: indexes kept only for one boot are rebuilt when the store is
/// next opened.
pub fn reboot() {
    REBOOTS.with(|r| r.set(r.get() + 1));
}

/// The boot id as the store sees it: `id`, its last characters replaced after a [`reboot`].
pub(crate) fn boot_tag(id: &'static str) -> &'static str {
    let reboots = REBOOTS.with(std::cell::Cell::get);
    if reboots == 0 {
        return id;
    }
    // One string per simulated boot, for the length of a test run: leaking them is harmless.
    let tag = format!("{}{reboots:08x}", &id[..28]);
    Box::leak(tag.into_boxed_str())
}

thread_local! {
    static OPENS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many files and directories the store has opened (to read, write, sync or list) on
/// this thread so far: a test compares it before and after an operation.
#[must_use]
pub fn opens() -> u64 {
    OPENS.with(std::cell::Cell::get)
}

/// Counts one open.
pub(crate) fn note_open() {
    OPENS.with(|n| n.set(n.get() + 1));
}
