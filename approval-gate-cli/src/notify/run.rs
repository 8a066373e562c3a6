//! `approval-gate notify`: the notifier's loop. It reads the pending queue (on each of the
//! store's change hints, at the next reminder or escalation due, and on a fallback timer),
//! works out what is due ([`super::due`]), and hands each message not yet delivered to its
//! channel's worker ([`super::worker`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use approval_gate::{Closer, Gate, ListFilter, ListItem, Request, RequestId, Timestamp};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::config::Config;
use super::due::due;
use super::message::{Message, delivery_key};
use super::worker::{Backoff, Ended, Finished, Job, Worker, log};
use crate::settings::Settings;
use crate::term::Exit;

/// `approval-gate notify`.
#[derive(Debug, clap::Args)]
pub(crate) struct NotifyArgs {
    /// Deliver what is due now, trying each message until it is delivered or given up on,
    /// then exit (for cron): 0 if nothing was given up on, 1 if something was.
    #[arg(long)]
    pub(crate) once: bool,
    /// The first retry's delay ceiling, in milliseconds (for tests).
    #[arg(long, hide = true, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) retry_base_ms: u64,
    /// Seconds between fallback reads of the queue, in case the store's hints are lost.
    #[arg(long, hide = true, value_name = "SECONDS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) fallback_secs: u64,
}

/// The most requests read per page of the queue.
const PAGE: usize = 500;

pub(crate) fn notify(settings: &Settings, args: &NotifyArgs) -> anyhow::Result<Exit> {
    let path = match (&settings.config.path, settings.config.found) {
        (Some(path), true) => path.clone(),
        _ => bail!(
            "no config file: `approval-gate notify` reads its channels from the config file's \
             [notify] table (--config FILE, APPROVAL_GATE_CONFIG, or \
             ~/.config/approval-gate/config.toml; see docs/notify.md)"
        ),
    };
    // Every channel is built, and every secret read, before anything starts.
    let config = Config::from_file(&path).map_err(anyhow::Error::msg)?;
    let origin = origin(settings)?;
    let gate = settings.open()?;
    let notices = Arc::new(gate.notices().context("cannot start the notifier")?);
    let watch = gate
        .watcher()
        .fallback(Duration::from_secs(args.fallback_secs))
        .start();
    let mut changes = watch.changes();
    let backoff = Backoff {
        base: Duration::from_millis(args.retry_base_ms),
        ..Backoff::DEFAULT
    };
    let (finished_tx, finished) = mpsc::channel();
    let signals = stop_on_signals(changes.closer(), finished_tx.clone())?;
    let workers = start_workers(&config, &gate, &notices, backoff, &finished_tx);
    log(&format!(
        "{} channel(s) on {}{}",
        config.channels.len(),
        gate.location(),
        if args.once { "" } else { " (Ctrl-C to stop)" }
    ));
    let mut notifier = Notifier {
        config,
        origin,
        workers,
        in_flight: HashSet::new(),
        done: HashSet::new(),
        dead: 0,
    };
    let result = if args.once {
        notifier.once(&gate, &finished)
    } else {
        notifier.run(&gate, &mut changes, &finished)
    };
    signals.close();
    result?;
    log("stopped");
    Ok(if notifier.dead > 0 && args.once {
        Exit::Refused
    } else {
        Exit::Done
    })
}

/// The notifier's state between reads of the queue.
struct Notifier {
    config: Config,
    origin: Option<String>,
    /// Each channel's job queue, by channel index.
    workers: Vec<Sender<Job>>,
    /// Keys handed to a worker and not finished.
    in_flight: HashSet<String>,
    /// Keys found or made final (delivered or dead) of requests still pending.
    done: HashSet<String>,
    /// Messages given up on by this run.
    dead: usize,
}

impl Notifier {
    /// Delivers what is due now, and waits until each is delivered or given up on (or a
    /// signal stops it: what is left is not in the ledger, so the next run sends it).
    fn once(&mut self, gate: &Gate, finished: &Receiver<Finished>) -> anyhow::Result<()> {
        self.offer(gate)?;
        while !self.in_flight.is_empty() {
            let Ok(end) = finished.recv() else { break };
            if end.key.is_empty() {
                break;
            }
            self.finished(&end);
        }
        Ok(())
    }

    /// Delivers what is due, as it comes due, until stopped.
    fn run(
        &mut self,
        gate: &Gate,
        changes: &mut approval_gate::Changes,
        finished: &Receiver<Finished>,
    ) -> anyhow::Result<()> {
        loop {
            while let Ok(end) = finished.try_recv() {
                if !end.key.is_empty() {
                    self.finished(&end);
                }
            }
            let next = self.offer(gate)?;
            // A job that ends (done, dead, or left to another notifier) is looked at again on
            // the next read: a short wait, so the wait for hints is not the only wake-up.
            let wake = next.map_or(Duration::from_secs(3600), |at| {
                Duration::from_millis(u64::try_from(gate.now().millis_until(at)).unwrap_or(0))
            });
            let deadline = Instant::now() + wake.min(Duration::from_secs(3600));
            if changes.next_before(deadline).is_none() && changes.is_closed() {
                return Ok(());
            }
        }
    }

    /// Reads the queue and hands every message due now and not yet final to its worker;
    /// when the next message falls due.
    fn offer(&mut self, gate: &Gate) -> anyhow::Result<Option<Timestamp>> {
        let now = gate.now();
        let pending = pending(gate)?;
        let ids: HashSet<RequestId> = pending.iter().map(Request::id).collect();
        // A decided request's keys are never offered again: forget them.
        self.done
            .retain(|key| key_id(key).is_some_and(|id| ids.contains(&id)));
        let mut next: Option<Timestamp> = None;
        for request in &pending {
            for due in due(&self.config, request) {
                if due.at > now {
                    next = Some(next.map_or(due.at, |n| n.min(due.at)));
                    continue;
                }
                let channel = &self.config.channels[due.channel];
                let key = delivery_key(request.id(), &channel.name, due.kind);
                if self.in_flight.contains(&key) || self.done.contains(&key) {
                    continue;
                }
                let link = self
                    .origin
                    .as_ref()
                    .map(|origin| format!("{origin}/requests/{}", request.id()));
                let job = Job {
                    key: key.clone(),
                    message: Message::new(request, due.kind, link),
                };
                if self.workers[due.channel].send(job).is_ok() {
                    self.in_flight.insert(key);
                }
            }
        }
        Ok(next)
    }

    fn finished(&mut self, end: &Finished) {
        self.in_flight.remove(&end.key);
        match end.ended {
            Ended::Done => {
                self.done.insert(end.key.clone());
            }
            Ended::Dead => {
                self.dead += 1;
                self.done.insert(end.key.clone());
            }
            Ended::Left => {}
        }
    }
}

/// The request id a delivery key starts with.
fn key_id(key: &str) -> Option<RequestId> {
    RequestId::parse(key.split('.').next()?).ok()
}

/// Every pending request, page by page.
fn pending(gate: &Gate) -> anyhow::Result<Vec<Request>> {
    let mut requests = Vec::new();
    let mut after = None;
    loop {
        let page = gate.list(ListFilter::Pending, after, PAGE)?;
        for item in &page.items {
            // One that cannot be read has nothing to tell (doctor shows it).
            if let ListItem::Request(report) = item {
                requests.push(report.request().clone());
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(requests),
        }
    }
}

/// One worker thread per channel.
fn start_workers(
    config: &Config,
    gate: &Gate,
    notices: &Arc<approval_gate::Notices>,
    backoff: Backoff,
    finished: &Sender<Finished>,
) -> Vec<Sender<Job>> {
    let mut senders = Vec::new();
    for configured in &config.channels {
        let (jobs_tx, jobs) = mpsc::channel();
        let worker = Worker {
            channel: Arc::clone(&configured.channel),
            notices: Arc::clone(notices),
            gate: gate.clone(),
            backoff,
            finished: finished.clone(),
        };
        thread::spawn(move || worker.run(&jobs));
        senders.push(jobs_tx);
    }
    senders
}

/// The page links' origin: `public_url`, checked as `serve` checks it.
#[cfg_attr(not(feature = "web"), allow(clippy::unnecessary_wraps))]
fn origin(settings: &Settings) -> anyhow::Result<Option<String>> {
    let Some(url) = &settings.public_url.value else {
        return Ok(None);
    };
    #[cfg(feature = "web")]
    let origin = crate::web::public_origin(url)
        .with_context(|| format!("public_url ({})", settings.public_url.source))?;
    #[cfg(not(feature = "web"))]
    let origin = url.trim_end_matches('/').to_owned();
    Ok(Some(origin))
}

/// Stops the notifier on SIGINT or SIGTERM: its wait for hints ends, and so does a
/// `--once` run's wait for its workers (told by a [`Finished`] with no key).
fn stop_on_signals(
    stop: Closer,
    finished: Sender<Finished>,
) -> std::io::Result<signal_hook::iterator::Handle> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            log(&format!("stopping (signal {signal})"));
            stop.close();
            let _ = finished.send(Finished {
                key: String::new(),
                ended: Ended::Left,
            });
        }
    });
    Ok(handle)
}
