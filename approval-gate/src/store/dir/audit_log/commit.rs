//! Group commit: the steps waiting in one process share one write and one fdatasync of the
//! journal.
//!
//! A step queues its line and effect and waits. If no thread of the process is committing,
//! it becomes the leader: it takes the anchor's lock (which serialises every process's
//! commits), writes every queued entry to the journal in one `write`, fdatasyncs it once,
//! then appends their lines to `audit.jsonl`, makes their effects and moves the anchor, none
//! of it synced, and hands each step its result. Steps that queued meanwhile form the next
//! group. Another process waits for the lock at most one commit, whose sync is its only slow
//! part.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use super::journal::{self, Effect};
use super::{AuditLog, fs};
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::id::RequestId;
use crate::time::Timestamp;

/// One step to commit.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) ts: Timestamp,
    pub(crate) event: AuditEvent,
    pub(crate) id: RequestId,
    pub(crate) details: Map<String, Value>,
    /// What the step changes beside its line, kept in the journal for replay.
    pub(crate) effect: Option<Effect>,
    /// Whether the step may return before its entry is durable (set from this thread's
    /// deferral when committed).
    pub(crate) deferred: bool,
    /// Whether the caller has made the effect already (before the line: a filing's record,
    /// a claim, an execution's marker), or the commit is to make it once the line is
    /// durable.
    pub(crate) made: bool,
}

thread_local! {
    /// Set while this thread's steps may return before they are durable
    /// ([`Store::defer_durability`](crate::store::Store::defer_durability)).
    static DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`Store::defer_durability`](crate::store::Store::defer_durability) for this thread.
pub(crate) fn defer_durability(on: bool) {
    DEFERRED.with(|deferred| deferred.set(on));
}

/// Whether this thread's steps are deferred now.
pub(crate) fn durability_deferred() -> bool {
    DEFERRED.with(std::cell::Cell::get)
}

/// What a step's commit came to: its line's position, or why not. `Failed::After` once its
/// entry may be in the journal.
pub(crate) type Outcome = Result<u64, fs::Failed>;

/// The steps waiting in this process, shared by every clone of the log.
#[derive(Debug, Default)]
pub(crate) struct Group {
    state: Mutex<Waiting>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    queue: Vec<(u64, Step)>,
    leading: bool,
    results: HashMap<u64, Outcome>,
    /// Groups committed so far (each one write and one sync of the journal).
    groups: u64,
}

impl Group {
    /// Whether a thread of this process is committing now.
    pub(crate) fn committing(&self) -> bool {
        self.lock().leading
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Lets the next thread lead even if this leader panicked.
struct Leading<'a>(&'a Group);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.0.lock().leading = false;
        self.0.done.notify_all();
    }
}

impl AuditLog {
    /// Makes every entry written to the journal so far durable.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        match fs::open_existing(&self.journal)? {
            Some(file) => fs::sync_data(&file, &self.journal),
            None => Ok(()),
        }
    }

    /// Commits `step`: returns once its entry is durable (and its line and effect written).
    pub(crate) fn commit(&self, mut step: Step) -> Outcome {
        step.deferred = durability_deferred();
        let group = &self.group;
        let ticket = {
            let mut waiting = group.lock();
            let ticket = waiting.next;
            waiting.next += 1;
            waiting.queue.push((ticket, step));
            ticket
        };
        let mut waiting = group.lock();
        loop {
            if let Some(outcome) = waiting.results.remove(&ticket) {
                return outcome;
            }
            if waiting.leading {
                waiting = group
                    .done
                    .wait(waiting)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            waiting.leading = true;
            waiting.groups += 1;
            let batch = std::mem::take(&mut waiting.queue);
            drop(waiting);
            let leading = Leading(group);
            let outcomes = self.commit_batch(&batch);
            {
                let mut waiting = group.lock();
                for ((ticket, _), outcome) in batch.iter().zip(outcomes) {
                    waiting.results.insert(*ticket, outcome);
                }
            }
            drop(leading);
            waiting = group.lock();
        }
    }

    /// Writes, syncs and applies `batch` under the anchor's lock: one outcome per step.
    fn commit_batch(&self, batch: &[(u64, Step)]) -> Vec<Outcome> {
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(batch.len());
        match self.commit_locked(batch, &mut outcomes) {
            Ok(()) => outcomes,
            Err(failed) => {
                // The whole group failed at one point: the first step gets the error, the
                // others the same in words, before or after as it was.
                let text = match &failed {
                    fs::Failed::Before(e) | fs::Failed::After(e) => e.to_string(),
                };
                let after = matches!(failed, fs::Failed::After(_));
                let mut all = vec![Err(failed)];
                for _ in 1..batch.len() {
                    let error = Error::io(
                        "committing to",
                        &self.journal,
                        std::io::Error::other(text.clone()),
                    );
                    all.push(Err(if after {
                        fs::Failed::After(error)
                    } else {
                        fs::Failed::Before(error)
                    }));
                }
                all
            }
        }
    }

    fn commit_locked(
        &self,
        batch: &[(u64, Step)],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), fs::Failed> {
        let mut held = self.hold()?;
        let mut log = fs::open_append(&self.log)?;
        let mut tail = self.tail(&mut log, held.head.as_ref(), true)?;
        if held.head.is_none() {
            // A brand new log: anchor it, durably, before its first line, so that from now
            // on a log with content and no anchor can only mean the anchor was removed.
            held.first_anchor()?;
        }
        let (wal, end) = held.journal_file(&tail)?;
        let mut entries = Vec::new();
        let mut lines = String::new();
        let mut positions = Vec::with_capacity(batch.len());
        for (_, step) in batch {
            let (seq, hash, line) =
                self.format_line(&tail, step.ts, step.event, step.id, &step.details)?;
            entries.extend(journal::encode(&journal::Entry {
                seq,
                line: line.trim_end().to_owned(),
                effect: step.effect.clone(),
            }));
            lines.push_str(&line);
            positions.push(seq);
            tail = super::Tail { seq, hash };
        }
        crate::faults::failpoint!("fs::op");
        crate::faults::failpoint!("audit::before_write");
        // From the write on, the group's entries may be in the journal: every failure is
        // `After`, and the next commit (or opening) carries them in.
        // Only a group of deferred steps whose effects their callers made (a consume's
        // claim), with nothing carried in, goes unsynced: the next step's sync covers it.
        let synced = held.carrying() || batch.iter().any(|(_, step)| !step.deferred || !step.made);
        let mut written = || -> Result<u64, Error> {
            held.room(&wal, end, entries.len() as u64)?;
            fs::write_at(&wal, &self.journal, &entries, end)?;
            crate::faults::failpoint!("audit::before_sync");
            // A group of deferred steps only is made durable by the next step's sync.
            if synced {
                fs::sync_data(&wal, &self.journal)?;
            }
            crate::faults::failpoint!("fs::op");
            fs::write_all(&mut log, &self.log, lines.as_bytes())?;
            Ok(end + entries.len() as u64)
        };
        let length = written().map_err(fs::Failed::After)?;
        let layout = self.layout();
        // Entries a step cut short left, carried in under this lock: durable now, with this
        // group's.
        let mut all_made = held.made_carried().is_ok();
        for ((_, step), seq) in batch.iter().zip(positions) {
            let made = match &step.effect {
                Some(effect) if !step.made => effect.apply(&layout),
                _ => Ok(()),
            };
            all_made &= made.is_ok();
            outcomes.push(made.map(|()| seq).map_err(fs::Failed::After));
        }
        if !all_made {
            // The anchor stays before the group, so that the next commit, or opening the
            // store, makes the effects that failed (each can be made again).
            return Ok(());
        }
        // After an unsynced group the anchor may name entries a power loss takes: it records
        // the journal's length, which then exceeds what survived, and replay sets it aside.
        crate::faults::failpoint!("audit::before_head");
        held.anchor(&tail, length).map_err(fs::Failed::After)?;
        if length > super::CHECKPOINT_AT {
            // Every step of the group is durable already; a checkpoint that fails is tried
            // again by the next commit, the journal being still too long.
            let _ = held.checkpoint(&tail);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn step(n: u64) -> Step {
        let mut details = Map::new();
        details.insert("n".into(), Value::from(n));
        Step {
            ts: Timestamp::from_unix_millis(1_796_000_000_000),
            event: AuditEvent::Requested,
            id: RequestId::parse("0123456789ab").unwrap(),
            details,
            effect: None,
            deferred: false,
            made: true,
        }
    }

    /// Sixteen threads commit while another process holds the anchor's lock (its commit
    /// under way): the first to come leads alone, the fifteen that queue meanwhile are
    /// committed as one group, one write and one sync, and every line is in the chain.
    #[test]
    fn steps_that_wait_together_share_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(dir.path());
        audit.commit(step(0)).unwrap();
        let before = audit.group.lock().groups;
        // Another process's commit: the anchor's lock held on a file description of its own.
        let other = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&audit.head)
            .unwrap();
        rustix::fs::flock(&other, rustix::fs::FlockOperation::LockExclusive).unwrap();
        let seqs = std::thread::scope(|s| {
            let first = s.spawn(|| audit.commit(step(1)));
            let deadline = Instant::now() + Duration::from_secs(30);
            let wait_for = |done: &dyn Fn(&Waiting) -> bool| {
                while !done(&audit.group.lock()) {
                    assert!(Instant::now() < deadline, "the threads never queued");
                    std::thread::sleep(Duration::from_millis(1));
                }
            };
            wait_for(&|w| w.leading);
            let rest: Vec<_> = (2..=16)
                .map(|n| {
                    let audit = &audit;
                    s.spawn(move || audit.commit(step(n)))
                })
                .collect();
            wait_for(&|w| w.queue.len() == 15);
            rustix::fs::flock(&other, rustix::fs::FlockOperation::Unlock).unwrap();
            let mut seqs = vec![first.join().unwrap().unwrap()];
            seqs.extend(rest.into_iter().map(|h| h.join().unwrap().unwrap()));
            seqs
        });
        assert_eq!(
            audit.group.lock().groups - before,
            2,
            "one group for the leader, one for the fifteen"
        );
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (2..=17).collect::<Vec<u64>>(), "{seqs:?}");
        assert_eq!(audit.verify().unwrap().lines, 17);
    }

    /// Past its length limit the journal is checkpointed: everything made durable, the
    /// journal started again at the log's end (a header and room, no entry), the anchor
    /// synced there; the next steps go on from it, and the chain holds throughout.
    #[test]
    fn a_journal_past_its_limit_starts_again_and_the_chain_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(dir.path());
        let big = |n: u64| {
            let mut step = step(n);
            step.details
                .insert("note".into(), Value::from("x".repeat(5_000)));
            step
        };
        let mut restarted_at = None;
        for n in 0..8 {
            let seq = audit.commit(big(n)).unwrap();
            let read = journal::read(&audit.journal, 0).unwrap();
            if read.entries.is_empty() {
                // Checkpointed by this step: the header names it, and nothing follows.
                assert_eq!(read.header.as_ref().map(|h| h.after), Some(seq));
                restarted_at = Some(seq);
                break;
            }
        }
        let restarted_at = restarted_at.expect("a checkpoint within 8 steps of 5 KB");
        let next = audit.commit(step(99)).unwrap();
        assert_eq!(next, restarted_at + 1);
        let read = journal::read(&audit.journal, 0).unwrap();
        assert_eq!(read.entries.len(), 1);
        assert_eq!(read.entries[0].0.seq, next);
        assert_eq!(audit.verify().unwrap().lines, next);
    }
}
