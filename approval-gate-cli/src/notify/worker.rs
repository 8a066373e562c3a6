//! One worker thread per channel, so a slow channel holds up no other: it claims each
//! message in the ledger, sends it, records it delivered, and tries a failed one again after
//! an exponential backoff with full jitter, until it is delivered or given up on (a dead
//! letter, which `doctor` shows).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use approval_gate::{EffectiveStatus, Gate, NoticeClaim, Notices};

use super::channel::{Channel, Failure};
use super::message::{Delivery, Message};
use crate::term::display::escape;
use crate::term::output;

/// How long a claim keeps other notifiers off a message: longer than any one attempt (the
/// HTTP channels' 10 s, the command's 30 s).
pub(crate) const LEASE: Duration = Duration::from_secs(60);

/// How a failed delivery is tried again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    /// The first delay's ceiling; each attempt doubles it.
    pub(crate) base: Duration,
    /// The most any delay's ceiling grows to.
    pub(crate) cap: Duration,
    /// Attempts before a delivery is given up on.
    pub(crate) attempts: u32,
}

impl Backoff {
    /// 1 s, doubling to at most 5 min, 8 attempts.
    pub(crate) const DEFAULT: Self = Self {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(300),
        attempts: 8,
    };

    /// The delay after failed attempt `attempt` (from 1): uniform in 0 to
    /// min(cap, base × 2^(attempt-1)) ("full jitter"), so notifiers that failed together do
    /// not try again together.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1 << attempt.saturating_sub(1).min(20))
            .min(self.cap);
        let mut raw = [0u8; 8];
        // Without randomness, the ceiling itself: later, never sooner.
        if getrandom::fill(&mut raw).is_err() {
            return ceiling;
        }
        let ceiling_ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(u64::from_le_bytes(raw) % ceiling_ms.saturating_add(1))
    }
}

/// One message to deliver on this worker's channel.
#[derive(Debug)]
pub(crate) struct Job {
    /// Its delivery key.
    pub(crate) key: String,
    /// What it says.
    pub(crate) message: Message,
}

/// How a job ended, for the notifier's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Delivered now, or found delivered or dead in the ledger: never again.
    Done,
    /// Given up on now: a dead letter.
    Dead,
    /// Another notifier holds it, or its request is no longer pending: look again later.
    Left,
}

/// A job's end, reported to the notifier.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Its delivery key.
    pub(crate) key: String,
    /// How it ended.
    pub(crate) ended: Ended,
}

/// What a worker needs.
pub(crate) struct Worker {
    pub(crate) channel: Arc<dyn Channel>,
    pub(crate) notices: Arc<Notices>,
    pub(crate) gate: Gate,
    pub(crate) backoff: Backoff,
    pub(crate) finished: Sender<Finished>,
}

/// A job waiting for its next attempt.
struct Waiting {
    at: Instant,
    attempt: u32,
    job: Job,
}

impl Worker {
    /// Runs jobs from `jobs` until it is closed (the notifier stops), retrying failed ones
    /// on their backoff. Jobs still waiting for a retry then are left: their messages are
    /// not in the ledger, so the next notifier sends them.
    pub(crate) fn run(self, jobs: &Receiver<Job>) {
        let mut waiting: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
        let mut parked: std::collections::HashMap<u64, Waiting> = std::collections::HashMap::new();
        let mut seq = 0u64;
        loop {
            let next = match waiting.peek() {
                Some(Reverse((at, _))) => {
                    jobs.recv_timeout(at.saturating_duration_since(Instant::now()))
                }
                None => jobs.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            let (job, attempt) = match next {
                Ok(job) => (job, 1),
                Err(RecvTimeoutError::Timeout) => {
                    let Some(Reverse((_, id))) = waiting.pop() else {
                        continue;
                    };
                    let Some(parked) = parked.remove(&id) else {
                        continue;
                    };
                    (parked.job, parked.attempt)
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if let Some(retry) = self.attempt(job, attempt) {
                seq += 1;
                waiting.push(Reverse((retry.at, seq)));
                parked.insert(seq, retry);
            }
        }
    }

    /// One attempt of `job`; the job again, with when to try it next, if it failed and may
    /// be tried again.
    fn attempt(&self, job: Job, attempt: u32) -> Option<Waiting> {
        let channel = self.channel.name();
        if attempt > 1 && !self.still_pending(&job) {
            self.finish(job.key, Ended::Left);
            return None;
        }
        match self.notices.claim(&job.key, LEASE) {
            Ok(NoticeClaim::Mine) => {}
            Ok(NoticeClaim::Delivered | NoticeClaim::Dead) => {
                self.finish(job.key, Ended::Done);
                return None;
            }
            Ok(_) => {
                self.finish(job.key, Ended::Left);
                return None;
            }
            Err(error) => {
                return self.failed(job, attempt, &format!("the ledger: {error}"), false);
            }
        }
        let delivery = Delivery {
            key: &job.key,
            attempt,
        };
        match self.channel.send(&job.message, &delivery) {
            Ok(()) => {
                match self.notices.delivered(&job.key) {
                    Ok(()) => log(&format!(
                        "delivered {} on {channel} (attempt {attempt})",
                        job.key
                    )),
                    // Sent, but not recorded: a later notifier sends it again (at least once).
                    Err(error) => log(&format!(
                        "delivered {} on {channel} (attempt {attempt}), but the ledger did not \
                         record it: {error}",
                        job.key
                    )),
                }
                self.finish(job.key, Ended::Done);
                None
            }
            Err(failure) => {
                let permanent = matches!(failure, Failure::Permanent(_));
                self.failed(job, attempt, failure.reason(), permanent)
            }
        }
    }

    /// A failed attempt: tried again after its backoff, or dead-lettered when permanent or
    /// the last.
    fn failed(&self, job: Job, attempt: u32, reason: &str, permanent: bool) -> Option<Waiting> {
        let channel = self.channel.name();
        if permanent || attempt >= self.backoff.attempts {
            match self.notices.dead(&job.key, reason, attempt) {
                Ok(()) => log(&format!(
                    "dead letter {} on {channel} after {attempt} attempt(s): {reason}",
                    job.key
                )),
                Err(error) => log(&format!(
                    "dead letter {} on {channel} after {attempt} attempt(s): {reason} (not \
                     recorded: {error})",
                    job.key
                )),
            }
            self.finish(job.key, Ended::Dead);
            return None;
        }
        let delay = self.backoff.delay(attempt);
        log(&format!(
            "retry {} on {channel} (attempt {attempt} failed: {reason}); next in {:.3} s",
            job.key,
            delay.as_secs_f64()
        ));
        Some(Waiting {
            at: Instant::now() + delay,
            attempt: attempt + 1,
            job,
        })
    }

    /// Whether the job's request still waits for a decision (an error counts as yes: the
    /// attempt goes ahead, and the claim or the send says what is wrong).
    fn still_pending(&self, job: &Job) -> bool {
        self.gate.status(job.message.id).map_or(true, |report| {
            report.effective_status() == EffectiveStatus::Pending
        })
    }

    fn finish(&self, key: String, ended: Ended) {
        // The notifier may be gone (stopping): nothing to tell.
        let _ = self.finished.send(Finished { key, ended });
    }
}

/// One line on stderr, the notifier's log.
pub(crate) fn log(line: &str) {
    output::stderr_line(&format!("approval-gate notify: {}", escape(line)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_to_its_cap_with_full_jitter() {
        let backoff = Backoff::DEFAULT;
        for attempt in 1..=12 {
            let ceiling = Duration::from_secs(1 << (attempt - 1)).min(Duration::from_secs(300));
            for _ in 0..20 {
                assert!(backoff.delay(attempt) <= ceiling, "{attempt}");
            }
        }
        // Jitter: 20 draws under a 5-minute ceiling are not all the same.
        let draws: std::collections::HashSet<Duration> =
            (0..20).map(|_| backoff.delay(10)).collect();
        assert!(draws.len() > 1);
    }
}
