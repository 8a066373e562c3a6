//! The directory store's queue index: how many entries the pending index has and how many
//! live records there are (`queue`), and which pending request each ask was filed as
//! (`asks/<hash>`), so that a filing reads the same few files at any queue length.
//!
//! Nothing here is synced, and nothing here is authority: a filing still reads the record an
//! ask points to before it calls it a duplicate. The index holds for one run of the machine:
//! `queue` names the boot it was written in (Linux's boot id), and a store opened in another
//! boot rebuilds it from the records first. Within a run every process reads what every
//! other wrote, so only a power loss, which ends the run, can lose a write here. Where no boot
//! id can be read, every opening of the store rebuilds.
//!
//! Counts move under the `queue` file's lock together with the entries they count, the
//! count first when an entry is made and last when one is removed: a crash between the two
//! can only leave a count too high, which costs a recount when the queue looks full, never
//! a request past a cap.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::boot::{self, BOOT_LEN};
use super::fs;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;

/// The boot tag (36 characters), space, the pending count (20 digits), space, the live count
/// (20 digits), newline: one `pwrite` at offset 0.
const LEN: usize = BOOT_LEN + 1 + 20 + 1 + 20 + 1;

/// What the queue index counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Counts {
    /// Entries of the pending index (`pending/`): pending requests, and pending ones past
    /// their expiry that nothing has read since.
    pub(super) pending: usize,
    /// Live records (`requests/`).
    pub(super) live: usize,
}

/// The paths of the queue index.
#[derive(Debug)]
pub(super) struct Queue {
    file: PathBuf,
    asks: PathBuf,
}

/// The index locked, until dropped: counts may be read and moved, asks noted and forgotten.
pub(super) struct Held<'a> {
    queue: &'a Queue,
    /// Holds the lock (`flock(2)` belongs to the open file) until it is closed.
    file: File,
}

impl Queue {
    pub(super) fn new(root: &Path) -> Self {
        Self {
            file: root.join("queue"),
            asks: root.join("asks"),
        }
    }

    /// Locks the index, for as long as the returned value lives.
    pub(super) fn lock(&self) -> Result<Held<'_>, Error> {
        let mut lock = fd_lock::RwLock::new(fs::open_lock(&self.file)?);
        std::mem::forget(
            lock.write()
                .map_err(|e| Error::io("locking", &self.file, e))?,
        );
        Ok(Held {
            queue: self,
            file: lock.into_inner(),
        })
    }

    fn ask(&self, request: &Request) -> PathBuf {
        self.asks.join(request.ask_key())
    }
}

impl Held<'_> {
    /// The counts, if they were written in this boot and read whole; `None` means the index
    /// must be rebuilt before it is used.
    pub(super) fn counts(&self) -> Result<Option<Counts>, Error> {
        let mut buf = [0u8; LEN];
        let n = self
            .file
            .read_at(&mut buf, 0)
            .map_err(|e| Error::io("reading", &self.queue.file, e))?;
        let Some(boot) = boot::current() else {
            return Ok(None);
        };
        Ok(parse(&buf[..n], boot))
    }

    pub(super) fn set(&self, counts: Counts) -> Result<(), Error> {
        let boot = boot::current().unwrap_or(boot::UNKNOWN);
        let record = format!("{boot} {:020} {:020}\n", counts.pending, counts.live);
        debug_assert_eq!(record.len(), LEN);
        fs::write_at(&self.file, &self.queue.file, record.as_bytes(), 0)
    }

    /// Moves the counts by `pending` and `live`; nothing if they must be rebuilt anyway.
    pub(super) fn adjust(&self, pending: isize, live: isize) -> Result<(), Error> {
        if let Some(counts) = self.counts()? {
            self.set(Counts {
                pending: counts.pending.saturating_add_signed(pending),
                live: counts.live.saturating_add_signed(live),
            })?;
        }
        Ok(())
    }

    /// The request an ask was last filed as, if the index names one.
    pub(super) fn filed_as(&self, request: &Request) -> Result<Option<RequestId>, Error> {
        let Some(bytes) = fs::read_bounded(&self.queue.ask(request), 64)? else {
            return Ok(None);
        };
        // A torn or foreign entry names nothing; the next filing of the ask replaces it.
        Ok(std::str::from_utf8(&bytes)
            .ok()
            .and_then(|id| RequestId::parse(id).ok()))
    }

    /// Notes that `request`'s ask was filed as `request`.
    pub(super) fn note_ask(&self, request: &Request) -> Result<(), Error> {
        fs::write_replace(&self.queue.ask(request), request.id().as_str().as_bytes())
    }

    /// Forgets `request`'s ask, if it still names `request`.
    pub(super) fn forget_ask(&self, request: &Request) -> Result<(), Error> {
        if self.filed_as(request)? == Some(request.id()) {
            fs::remove_if_exists(&self.queue.ask(request))?;
        }
        Ok(())
    }

    /// Forgets every ask (a rebuild notes the pending ones again).
    pub(super) fn forget_all_asks(&self) -> Result<(), Error> {
        for name in fs::list_names(&self.queue.asks)? {
            fs::remove_if_exists(&self.queue.asks.join(name))?;
        }
        Ok(())
    }
}

fn parse(bytes: &[u8], boot: &str) -> Option<Counts> {
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    let mut fields = text.split(' ');
    let (written_in, pending, live) = (fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() || written_in != boot || pending.len() != 20 || live.len() != 20 {
        return None;
    }
    Some(Counts {
        pending: pending.parse().ok()?,
        live: live.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hold_only_for_the_boot_that_wrote_them() {
        let boot = "0123456789abcdef0123456789abcdef0123";
        let other = "fedcba9876543210fedcba9876543210fedc";
        let record = format!("{boot} {:020} {:020}\n", 7, 12);
        assert_eq!(
            parse(record.as_bytes(), boot),
            Some(Counts {
                pending: 7,
                live: 12
            })
        );
        assert_eq!(parse(record.as_bytes(), other), None);
        assert_eq!(parse(&record.as_bytes()[..LEN - 1], boot), None, "torn");
        assert_eq!(parse(b"", boot), None, "empty");
        let short = format!("{boot} 7 12\n");
        assert_eq!(parse(short.as_bytes(), boot), None, "not ours");
    }
}
