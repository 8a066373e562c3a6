//! The anchor's lock held for a commit, and what it settles first: the entries of a step cut
//! short in this boot, carried into the log; after a power loss (a new boot), the whole
//! journal replayed onto the log and the state files, then a checkpoint.

use std::fs::File;

use rustix::fs::FlockOperation;

use super::anchor::{At, Durability, Head, read_head, write_head};
use super::journal::{self, Effect, Header};
use super::last_line::last_line;
use super::{AuditLog, Tail, file_len, fs};
use crate::audit::{GENESIS, check_line_hash};
use crate::error::Error;

/// The anchor's lock, held for the life of the value, and the anchor as read under it.
pub(super) struct Held<'a> {
    audit: &'a AuditLog,
    file: File,
    /// The anchor: as read, or past the entries carried in (not written yet then).
    pub(super) head: Option<Head>,
    /// The effects of the entries carried in, to be made once a sync covers them.
    carried: Vec<Effect>,
    /// Whether entries were carried in since the anchor was written.
    moved: bool,
}

impl AuditLog {
    /// Takes the anchor's lock and carries into the log any entries a step cut short in this
    /// boot left in the journal.
    pub(super) fn hold(&self) -> Result<Held<'_>, Error> {
        let mut held = self.hold_as_is()?;
        held.catch_up()?;
        Ok(held)
    }

    fn hold_as_is(&self) -> Result<Held<'_>, Error> {
        let file = fs::open_lock_durable(&self.head)?;
        rustix::fs::flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| Error::io("locking", &self.head, e.into()))?;
        let head = read_head(&file, &self.head)?;
        Ok(Held {
            audit: self,
            file,
            head,
            carried: Vec::new(),
            moved: false,
        })
    }

    /// Run when the store is opened: after a power loss (an anchor written in an earlier
    /// boot), replays the journal onto the log and the state files, then checkpoints; in
    /// this boot, carries in a step cut short.
    pub(crate) fn settle(&self) -> Result<(), Error> {
        let mut locked = self.hold_as_is()?;
        match &locked.head {
            None => Ok(()),
            Some(anchor) if anchor.this_boot => {
                locked.catch_up()?;
                locked.settle_carried()
            }
            Some(_) => locked.replay(),
        }
    }
}

impl Held<'_> {
    /// The journal, open for appending, with its header written if it has none (a new or
    /// migrated store, or a checkpoint cut short): the log is durable through `tail` then.
    pub(super) fn journal_file(&self, tail: &Tail) -> Result<(File, u64), Error> {
        let path = &self.audit.journal;
        let file = fs::open_lock_durable(path)?;
        let recorded = self.head.as_ref().and_then(|head| head.journal);
        let end = match recorded {
            Some(end) if end > 0 && end <= file_len(&file, path)? => end,
            _ => {
                let found = journal::read(path, 0)?;
                if found.header.is_some() {
                    found.whole
                } else {
                    let header = journal::encode(&Header {
                        after: tail.seq,
                        hash: tail.hash.clone(),
                    });
                    fs::write_at(&file, path, &header, 0)?;
                    header.len() as u64
                }
            }
        };
        Ok((file, end))
    }

    /// Makes room for `need` bytes at `end`: the journal is kept written with zeros ahead
    /// of its entries (a chunk at a time, synced), so that an entry overwrites blocks that
    /// are there already and its `fdatasync` changes no metadata (no file system journal
    /// commit to wait for).
    pub(super) fn room(&self, file: &File, end: u64, need: u64) -> Result<(), Error> {
        let path = &self.audit.journal;
        let length = file_len(file, path)?;
        if end + need <= length {
            return Ok(());
        }
        let more = (end + need - length).max(journal::CHUNK);
        let zeros = vec![0u8; usize::try_from(more).expect("a chunk fits in memory")];
        fs::write_at(file, path, &zeros, length)?;
        fs::sync_data(file, path)
    }

    /// A new log's anchor, before its first line: synced.
    pub(super) fn first_anchor(&self) -> Result<(), Error> {
        let at = At {
            seq: 0,
            hash: GENESIS,
            journal: 0,
        };
        write_head(&self.file, &self.audit.head, &at, Durability::Synced)
    }

    /// Moves the anchor to `tail`, unsynced, recording the journal's length.
    pub(super) fn anchor(&self, tail: &Tail, journal: u64) -> Result<(), Error> {
        let at = At {
            seq: tail.seq,
            hash: &tail.hash,
            journal,
        };
        write_head(&self.file, &self.audit.head, &at, Durability::Lazy)
    }

    /// Makes everything written so far durable, then starts the journal again at `tail`,
    /// and anchors there, synced.
    pub(super) fn checkpoint(&self, tail: &Tail) -> Result<(), Error> {
        fs::sync_fs(&self.audit.root)?;
        self.restart_journal(tail)
    }

    /// Starts the journal again at `tail` and anchors there, synced: everything it held
    /// must be durable already.
    fn restart_journal(&self, tail: &Tail) -> Result<(), Error> {
        let audit = self.audit;
        let file = fs::open_lock_durable(&audit.journal)?;
        fs::truncate(&file, &audit.journal, 0)?;
        let header = journal::encode(&Header {
            after: tail.seq,
            hash: tail.hash.clone(),
        });
        fs::write_at(&file, &audit.journal, &header, 0)?;
        let end = header.len() as u64;
        self.room(&file, end, 0)?;
        let at = At {
            seq: tail.seq,
            hash: &tail.hash,
            journal: end,
        };
        write_head(&self.file, &audit.head, &at, Durability::Synced)
    }

    /// In this boot: entries past the anchor's journal length belong to a commit that was
    /// cut short; their lines not yet in the log are appended, their effects made again,
    /// and the anchor moved past them.
    fn catch_up(&mut self) -> Result<(), Error> {
        let audit = self.audit;
        let Some(head) = &self.head else {
            return Ok(());
        };
        let (length, next) = match fs::open_existing(&audit.journal)? {
            Some(file) => {
                let length = file_len(&file, &audit.journal)?;
                // What follows the anchor's end of the journal: zeros (room kept ahead), or
                // the entries of a step cut short.
                let mut byte = [0u8; 1];
                let next = match head.journal {
                    Some(at) if at < length => {
                        use std::os::unix::fs::FileExt;
                        file.read_at(&mut byte, at)
                            .map_err(|e| Error::io("reading", &audit.journal, e))?;
                        byte[0]
                    }
                    _ => 0,
                };
                (length, next)
            }
            None => (0, 0),
        };
        if length == 0 || head.journal.is_some_and(|at| at <= length) && next == 0 {
            return Ok(());
        }
        // The entries past the anchor start where it says the journal ended (a step cut
        // short, or a deferred one); an anchor from before the journal, or one whose length
        // the journal no longer has (restarted since), is read from the start.
        let from = head
            .journal
            .filter(|&at| at > 0 && at <= length)
            .unwrap_or(0);
        let read = journal::read(&audit.journal, from)?;
        if from == 0 && read.header.is_none() {
            return Ok(());
        }
        let (mut log, mut in_log) = self.log_tail()?;
        let layout = audit.layout();
        // The anchor moves only past entries whose lines are in the log (there already, or
        // appended now), never to a line the journal does not hold.
        let mut anchor = Tail {
            seq: head.seq,
            hash: head.hash.clone(),
        };
        let mut lines = String::new();
        for (entry, _) in &read.entries {
            if entry.seq <= head.seq {
                continue;
            }
            let (seq, hash) =
                check_line_hash(&entry.line).map_err(|problem| Error::AuditBroken {
                    line: entry.seq,
                    problem: format!("in the journal: {problem}"),
                })?;
            if seq == in_log.seq + 1 {
                lines.push_str(&entry.line);
                lines.push('\n');
                in_log = Tail {
                    seq,
                    hash: hash.clone(),
                };
            } else if seq > in_log.seq {
                break;
            }
            anchor = Tail { seq, hash };
        }
        fs::write_all(&mut log, &audit.log, lines.as_bytes())?;
        if read.whole < read.data_end {
            // A torn entry: zeros again, to be written over.
            let file = fs::open_lock_durable(&audit.journal)?;
            let zeros = vec![0u8; usize::try_from(read.data_end - read.whole).expect("in memory")];
            fs::write_at(&file, &audit.journal, &zeros, read.whole)?;
        }
        let journalled = read
            .entries
            .last()
            .map(|(entry, _)| entry.seq)
            .or(read.header.as_ref().map(|header| header.after))
            .unwrap_or(head.seq);
        let carried: Vec<Effect> = read
            .entries
            .iter()
            .filter(|(entry, _)| entry.seq > head.seq)
            .filter_map(|(entry, _)| entry.effect.clone())
            .collect();
        if anchor.seq > journalled {
            // The anchor is past the journal's end (lines added and anchored without it, by
            // hand): the journal starts over there, so that a replay never cuts them.
            for effect in &carried {
                effect.apply(&layout)?;
            }
            self.checkpoint(&anchor)?;
            self.head = read_head(&self.file, &audit.head)?;
            return Ok(());
        }
        // Not written yet, nor their effects made: the entries carried in may not be durable
        // (a step cut short before its sync, or deferred). Whoever holds the lock makes them
        // once a sync covers them ([`Held::made_carried`]).
        self.carried = carried;
        self.moved = true;
        self.head = Some(Head {
            seq: anchor.seq,
            hash: anchor.hash,
            this_boot: true,
            journal: Some(read.whole),
        });
        Ok(())
    }

    /// Whether entries were carried in whose effects are still to be made.
    pub(super) fn carrying(&self) -> bool {
        !self.carried.is_empty()
    }

    /// After a sync of the journal: the effects of the entries carried in, made.
    pub(super) fn made_carried(&mut self) -> Result<(), Error> {
        let layout = self.audit.layout();
        for effect in std::mem::take(&mut self.carried) {
            effect.apply(&layout)?;
        }
        Ok(())
    }

    /// Settles what [`catch_up`](Self::catch_up) carried in with no commit to follow: the
    /// journal synced, the effects made, the anchor moved.
    fn settle_carried(&mut self) -> Result<(), Error> {
        if !self.moved {
            return Ok(());
        }
        self.audit.flush()?;
        self.made_carried()?;
        if let Some(head) = &self.head {
            let tail = Tail {
                seq: head.seq,
                hash: head.hash.clone(),
            };
            let length = head.journal.unwrap_or(0);
            self.anchor(&tail, length)?;
        }
        self.moved = false;
        Ok(())
    }

    /// The log opened for appending, with a torn last line cut, and its last line.
    fn log_tail(&self) -> Result<(File, Tail), Error> {
        let audit = self.audit;
        let mut log = fs::open_append(&audit.log)?;
        let len = file_len(&log, &audit.log)?;
        let (last, torn_from) = last_line(&mut log, len, &audit.log)?;
        if let Some(offset) = torn_from {
            fs::truncate(&log, &audit.log, offset)?;
        }
        let tail = match last {
            None => Tail {
                seq: 0,
                hash: GENESIS.to_owned(),
            },
            Some(line) => {
                let (seq, hash) = check_line_hash(&line).map_err(|problem| Error::AuditBroken {
                    line: 0,
                    problem: format!("last line: {problem}; run `approval-gate audit verify`"),
                })?;
                Tail { seq, hash }
            }
        };
        Ok((log, tail))
    }

    /// After a power loss: the log cut back to what the journal's header says was durable
    /// and its entries' lines appended again, every entry's effect made again in order, then
    /// a checkpoint.
    fn replay(&mut self) -> Result<(), Error> {
        let audit = self.audit;
        let read = journal::read(&audit.journal, 0)?;
        let Some(header) = read.header else {
            // Nothing journalled since everything was last made durable: the anchor is left
            // as it is (the first commit writes the header and moves it).
            return Ok(());
        };
        let last = read.entries.last().map_or(
            Tail {
                seq: header.after,
                hash: header.hash.clone(),
            },
            |(entry, _)| Tail {
                seq: entry.seq,
                hash: check_line_hash(&entry.line).map_or_else(|_| String::new(), |(_, h)| h),
            },
        );
        let layout = audit.layout();
        // An anchor recording more journal than survived was written after entries a power
        // loss took (a deferred step's, never synced): it is set aside, and the replay
        // anchors the log anew at what the journal holds.
        let survived = |head: &&Head| head.journal.is_none_or(|length| length <= read.whole);
        if let Some(head) = self.head.as_ref().filter(survived)
            && head.seq > last.seq
        {
            // The anchor is past the journal's end: lines were added, and the anchor moved,
            // without the journal (by hand). The log is left as it is for `audit verify` to
            // judge, the journal's effects are made again, and it starts over at the anchor.
            let anchor = Tail {
                seq: head.seq,
                hash: head.hash.clone(),
            };
            for (entry, _) in &read.entries {
                if let Some(effect) = &entry.effect {
                    effect.apply(&layout)?;
                }
            }
            self.checkpoint(&anchor)?;
            self.head = read_head(&self.file, &audit.head)?;
            return Ok(());
        }
        let (mut log, found) = self.log_tail()?;
        if (found.seq, &found.hash) != (last.seq, &last.hash) {
            self.rewrite_tail(&mut log, &header, &read.entries)?;
        }
        if read.entries.is_empty() && read.whole == read.data_end {
            // Nothing to replay: anchored in this boot, as it was.
            let length = read.whole;
            self.anchor(&last, length)?;
            self.head = read_head(&self.file, &audit.head)?;
            return Ok(());
        }
        for (entry, _) in &read.entries {
            if let Some(effect) = &entry.effect {
                effect.apply(&layout)?;
            }
        }
        journal::sync_effects(&read.entries, &layout)?;
        fs::sync_data(&log, &audit.log)?;
        self.restart_journal(&last)?;
        self.head = read_head(&self.file, &audit.head)?;
        Ok(())
    }

    /// Cuts the log after line `header.after` (which must be there, as the header made it
    /// durable) and appends the entries' lines.
    fn rewrite_tail(
        &self,
        log: &mut File,
        header: &Header,
        entries: &[(journal::Entry, u64)],
    ) -> Result<(), Error> {
        let audit = self.audit;
        let bytes = fs::read_bounded(&audit.log, u64::MAX / 2)?.unwrap_or_default();
        let mut end = 0usize;
        let mut last = None;
        for _ in 0..header.after {
            let Some(at) = bytes[end..].iter().position(|&b| b == b'\n') else {
                return Err(Error::AuditBroken {
                    line: header.after,
                    problem: format!(
                        "missing: the journal says the log was durable through line {}, but it is shorter",
                        header.after
                    ),
                });
            };
            last = Some(&bytes[end..end + at]);
            end += at + 1;
        }
        if let Some(line) = last {
            let line = std::str::from_utf8(line).unwrap_or_default();
            let found = check_line_hash(line).map(|(_, hash)| hash);
            if found.as_deref() != Ok(header.hash.as_str()) {
                return Err(Error::AuditBroken {
                    line: header.after,
                    problem:
                        "altered: the line does not match the hash the journal recorded for it"
                            .into(),
                });
            }
        }
        fs::truncate(log, &audit.log, end as u64)?;
        let mut lines = String::new();
        for (entry, _) in entries {
            lines.push_str(&entry.line);
            lines.push('\n');
        }
        fs::write_all(log, &audit.log, lines.as_bytes())
    }
}
