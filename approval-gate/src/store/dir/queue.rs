//! The directory store's queue index, `queue`: the pending requests (each with the key of
//! its ask) and the number of live records, so that a filing and a listing of pending
//! requests read one small file at any queue length, and create none but the record.
//!
//! Nothing here is synced, and nothing here is authority: a filing still reads the record an
//! ask points to before it calls it a duplicate, and a listing reads each record it lists.
//! The index holds for one run of the machine: it names the boot it was written in (Linux's
//! boot id), and a store opened in another boot rebuilds it from the records first. Within a
//! run every process reads what every other wrote, so only a power loss, which ends the run,
//! can lose a write here. It ends with a check line, so a write cut short by a crash reads
//! as no index at all, and is rebuilt. Where no boot id can be read, every opening of the
//! store rebuilds it.
//!
//! An entry is made before its record and removed after its request is decided, so a crash
//! between the two leaves an entry too many, never one too few: a filing that finds the
//! queue full counts again from the records before it refuses.
//!
//! ```text
//! <boot> <live records>
//! <id> <ask key>          one line per pending request, in filing order
//! end <entries> <check>   the first 16 hex digits of the BLAKE3 hash of the lines above
//! ```

use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::boot::{self, BOOT_LEN};
use super::fs;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;

/// Smallest size of the index file (see [`Held::write`]).
const MIN_SIZE: usize = 4096;

/// Largest index read: far above any queue the caps allow (about 30 bytes an entry).
const MAX_INDEX: u64 = 64 * 1024 * 1024;

/// Hex digits of an ask key: enough that unequal asks never meet in practice, and a match is
/// checked against the record anyway.
const ASK_LEN: usize = 16;

/// The ask key of an entry whose record could not be read: matches no ask.
const NO_ASK: &str = "----------------";

/// What the queue index holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Index {
    /// Live records (`requests/`).
    pub(super) live: usize,
    /// Pending requests (and ones past their expiry that nothing has read since), with the
    /// key of each one's ask, in filing order.
    pub(super) pending: Vec<(RequestId, String)>,
}

impl Index {
    /// The pending request filed with `request`'s ask, if the index names one.
    pub(super) fn filed_as(&self, request: &Request) -> Option<RequestId> {
        let ask = ask_key(request);
        self.pending
            .iter()
            .rev()
            .find(|(_, key)| *key == ask)
            .map(|(id, _)| *id)
    }

    pub(super) fn has(&self, id: RequestId) -> bool {
        self.pending.iter().any(|(entry, _)| *entry == id)
    }

    pub(super) fn add(&mut self, request: &Request) {
        self.pending.push((request.id(), ask_key(request)));
    }

    /// An entry for a record that cannot be read (it may be pending).
    pub(super) fn add_unreadable(&mut self, id: RequestId) {
        self.pending.push((id, NO_ASK.to_owned()));
    }

    /// Removes `id`'s entry; whether it had one.
    pub(super) fn remove(&mut self, id: RequestId) -> bool {
        let before = self.pending.len();
        self.pending.retain(|(entry, _)| *entry != id);
        self.pending.len() != before
    }

    pub(super) fn ids(&self) -> Vec<RequestId> {
        self.pending.iter().map(|(id, _)| *id).collect()
    }

    fn encode(&self, boot: &str) -> Vec<u8> {
        let mut text = format!("{boot} {}\n", self.live);
        for (id, ask) in &self.pending {
            text.push_str(id.as_str());
            text.push(' ');
            text.push_str(ask);
            text.push('\n');
        }
        let check = check(text.as_bytes());
        let _ = writeln!(text, "end {} {check}", self.pending.len());
        text.into_bytes()
    }

    fn decode(bytes: &[u8], boot: &str) -> Option<Self> {
        let used = bytes
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |last| last + 1);
        let text = std::str::from_utf8(&bytes[..used]).ok()?;
        let body_end = text.strip_suffix('\n')?.rfind('\n')? + 1;
        let (body, end) = text.split_at(body_end);
        let mut end = end.strip_suffix('\n')?.split(' ');
        let (Some("end"), Some(count), Some(sum), None) =
            (end.next(), end.next(), end.next(), end.next())
        else {
            return None;
        };
        if sum != check(body.as_bytes()) {
            return None;
        }
        let mut lines = body.lines();
        let (written_in, live) = lines.next()?.split_once(' ')?;
        if written_in != boot {
            return None;
        }
        let mut index = Self {
            live: live.parse().ok()?,
            pending: Vec::new(),
        };
        for line in lines {
            let (id, ask) = line.split_once(' ')?;
            if ask.len() != ASK_LEN {
                return None;
            }
            index
                .pending
                .push((RequestId::parse(id).ok()?, ask.to_owned()));
        }
        (count.parse::<usize>().ok()? == index.pending.len()).then_some(index)
    }
}

fn check(body: &[u8]) -> String {
    blake3::hash(body).to_hex()[..16].to_owned()
}

fn ask_key(request: &Request) -> String {
    request.ask_key()[..ASK_LEN].to_owned()
}

/// The path of the queue index.
#[derive(Debug)]
pub(super) struct Queue {
    file: PathBuf,
}

/// The index locked, until dropped.
pub(super) struct Held<'a> {
    path: &'a Path,
    /// Holds the lock (`flock(2)` belongs to the open file) until it is closed.
    file: File,
}

impl Queue {
    pub(super) fn new(root: &Path) -> Self {
        Self {
            file: root.join("queue"),
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
            path: &self.file,
            file: lock.into_inner(),
        })
    }
}

impl Held<'_> {
    /// The index, if it was written whole in this boot; `None` means it must be rebuilt
    /// before it is used.
    pub(super) fn read(&self) -> Result<Option<Index>, Error> {
        let Some(boot) = boot::current() else {
            return Ok(None);
        };
        let len = fs::Meta::of_file(&self.file)
            .map_err(|e| Error::io("inspecting", self.path, e))?
            .len();
        if len > MAX_INDEX {
            return Ok(None);
        }
        let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
        self.file
            .read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io("reading", self.path, e))?;
        Ok(Index::decode(&bytes, boot))
    }

    /// Replaces the index: one `pwrite` from the start, padded with NULs to a power of two
    /// (at least 4 KiB), so that the file keeps its size, and its blocks, while the queue
    /// stays within it. A file that grows or shrinks has blocks allocated, which every
    /// journal commit (each fsync of the store's other files) would then write out first.
    pub(super) fn write(&self, index: &Index) -> Result<(), Error> {
        let boot = boot::current().unwrap_or(boot::UNKNOWN);
        debug_assert_eq!(boot.len(), BOOT_LEN);
        let mut bytes = index.encode(boot);
        let size = bytes.len().next_power_of_two().max(MIN_SIZE);
        bytes.resize(size, 0);
        fs::write_at(&self.file, self.path, &bytes, 0)?;
        let len = fs::Meta::of_file(&self.file)
            .map_err(|e| Error::io("inspecting", self.path, e))?
            .len();
        if len != size as u64 {
            fs::truncate(&self.file, self.path, size as u64)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOT: &str = "0123456789abcdef0123456789abcdef0123";

    fn index() -> Index {
        Index {
            live: 12,
            pending: vec![
                (
                    RequestId::parse("a1b2c3d4e5f6").unwrap(),
                    "0123456789abcdef".into(),
                ),
                (RequestId::parse("0a0b0c0d0e0f").unwrap(), NO_ASK.into()),
            ],
        }
    }

    #[test]
    fn an_index_reads_back_only_whole_and_only_in_the_boot_that_wrote_it() {
        let bytes = index().encode(BOOT);
        assert_eq!(Index::decode(&bytes, BOOT), Some(index()));
        let other = "fedcba9876543210fedcba9876543210fedc";
        assert_eq!(Index::decode(&bytes, other), None, "another boot");
        for cut in 0..bytes.len() {
            assert_eq!(Index::decode(&bytes[..cut], BOOT), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[BOOT_LEN + 2] = b'9';
        assert_eq!(Index::decode(&flipped, BOOT), None, "a changed line");
        let empty = Index::default().encode(BOOT);
        assert_eq!(Index::decode(&empty, BOOT), Some(Index::default()));
        let mut padded = bytes.clone();
        padded.resize(4096, 0);
        assert_eq!(Index::decode(&padded, BOOT), Some(index()), "padding");
    }

    #[test]
    fn entries_are_found_by_id_and_removed_once() {
        let mut index = index();
        let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
        assert!(index.has(id));
        assert!(index.remove(id));
        assert!(!index.remove(id));
        assert!(!index.has(id));
        assert_eq!(index.ids(), [RequestId::parse("0a0b0c0d0e0f").unwrap()]);
    }

    #[test]
    fn the_file_keeps_a_power_of_two_size_and_shrinks_back_with_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let queue = Queue::new(dir.path());
        let held = queue.lock().unwrap();
        let size = || std::fs::metadata(dir.path().join("queue")).unwrap().len();
        held.write(&index()).unwrap();
        assert_eq!(size(), MIN_SIZE as u64);
        // A long queue takes the next power of two that holds it, and gives it back.
        let mut long = Index::default();
        for n in 0..400u64 {
            let id = RequestId::parse(&format!("{n:012x}")).unwrap();
            long.pending.push((id, NO_ASK.into()));
        }
        held.write(&long).unwrap();
        let grown = size();
        assert!(
            grown > MIN_SIZE as u64 && grown.is_power_of_two(),
            "{grown}"
        );
        held.write(&index()).unwrap();
        assert_eq!(size(), MIN_SIZE as u64);
        if boot::current().is_some() {
            assert_eq!(held.read().unwrap(), Some(index()));
        }
    }
}
