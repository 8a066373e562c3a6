//! `watch`: print pending requests as they arrive, so a human can keep a terminal open
//! beside the agent.
//!
//! File-system events on the store are only hints that something may have changed: on each
//! one the pending queue is listed again and compared with what was already printed, and a
//! fallback check runs every few seconds in case events are lost. The watcher stops on
//! SIGINT, SIGTERM or SIGHUP, or when its stdout is closed.

use std::collections::HashSet;
use std::io;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use approval_gate::limits::MAX_PAGE;
use approval_gate::{Gate, ListFilter, ListItem, RequestId};
use notify::{RecursiveMode, Watcher};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::Exit;
use super::args::WatchArgs;
use super::output::{self, Style};
use super::render;
use crate::display::escape;

/// How long a stopping watcher waits for notify commands still running.
const NOTIFY_GRACE: Duration = Duration::from_secs(5);

enum Wake {
    /// Something in the store may have changed.
    Changed,
    /// Time to stop: a signal, or nobody reads our output any more.
    Stop,
}

pub(crate) fn watch(gate: &Gate, args: &WatchArgs) -> anyhow::Result<Exit> {
    let (tx, rx) = mpsc::channel();
    let signals = stop_on_signals(tx.clone())?;
    stop_on_hangup(tx.clone());
    // Watch before the first listing so nothing created in between goes unnoticed. Without
    // events (no inotify left, say) the fallback check still finds everything.
    let _watcher = watch_store(gate, tx)
        .inspect_err(|e| {
            output::stderr_line(&format!(
                "approval-gate: warning: no file-system events ({}); checking every {} s",
                escape(&e.to_string()),
                args.fallback_secs
            ));
        })
        .ok();
    output::stderr_line(&format!(
        "approval-gate: watching {} for new requests (Ctrl-C to stop)",
        escape(&gate.location().to_string())
    ));

    let fallback = Duration::from_secs(args.fallback_secs);
    let style = Style::detect();
    let mut notifier = args.notify_cmd.as_deref().map(Notifier::new);
    let mut seen = HashSet::new();
    let mut printed = 0u64;
    let result = 'watch: loop {
        let pending = match pending(gate) {
            Ok(pending) => pending,
            Err(error) => break Err(error.into()),
        };
        let now = gate.now();
        let width = output::width();
        for item in &pending {
            let id = item.id();
            if !seen.insert(id) {
                continue;
            }
            let line = match item {
                ListItem::Request(report) => {
                    let line = render::list_line(report, now, style, width);
                    match render::list_warning(report, style, width) {
                        Some(warning) => format!("{line}\n{warning}"),
                        None => line,
                    }
                }
                ListItem::Unreadable(record) => render::unreadable_line(record, style, width),
            };
            match output::stdout(&format!("{line}\n")) {
                Ok(()) => {}
                // Nobody reads any more: a clean stop.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break 'watch Ok(()),
                Err(e) => break 'watch Err(e.into()),
            }
            if let (Some(notifier), Some(report)) = (&mut notifier, item.report()) {
                notifier.notify(id, report.request().action());
            }
            printed += 1;
            if args.exit_after.is_some_and(|n| printed >= n) {
                break 'watch Ok(());
            }
        }
        // A request leaves the queue for good, so forgetting it keeps `seen` small.
        seen.retain(|id| pending.iter().any(|item| item.id() == *id));
        if let Some(notifier) = &mut notifier {
            notifier.reap();
        }
        match rx.recv_timeout(fallback) {
            Ok(Wake::Changed) | Err(RecvTimeoutError::Timeout) => {}
            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => break Ok(()),
        }
        // A burst of events needs one listing, not one each.
        loop {
            match rx.try_recv() {
                Ok(Wake::Changed) => {}
                Ok(Wake::Stop) => break 'watch Ok(()),
                Err(_) => break,
            }
        }
    };
    signals.close();
    if let Some(notifier) = notifier {
        notifier.finish(Instant::now() + NOTIFY_GRACE);
    }
    result.map(|()| Exit::Done)
}

/// Every pending request, oldest first, after the unreadable records the pending index names.
fn pending(gate: &Gate) -> Result<Vec<ListItem>, approval_gate::Error> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = gate.list(ListFilter::Pending, after, MAX_PAGE)?;
        all.extend(page.items);
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(all),
        }
    }
}

/// Events from the pending index (a marker appears) and from the requests directory (the
/// request file lands just after its marker, and a listing skips a marker without one).
fn watch_store(gate: &Gate, tx: Sender<Wake>) -> notify::Result<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(Wake::Changed);
    })?;
    // Interim: waiting moves into the library (`Gate` change stream).
    if let Some(dir) = gate.dir() {
        for sub in ["pending", "requests"] {
            watcher.watch(&dir.join(sub), RecursiveMode::NonRecursive)?;
        }
    }
    Ok(watcher)
}

fn stop_on_signals(tx: Sender<Wake>) -> io::Result<signal_hook::iterator::Handle> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let handle = signals.handle();
    thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = tx.send(Wake::Stop);
        }
    });
    Ok(handle)
}

/// Stops the watcher when the reader of stdout goes away, even while nothing is printed.
fn stop_on_hangup(tx: Sender<Wake>) {
    thread::spawn(move || {
        let stdout = io::stdout();
        let mut fds = [rustix::event::PollFd::new(
            &stdout,
            rustix::event::PollFlags::empty(),
        )];
        // With no events asked for, poll returns only on an error or hang-up: a pipe whose
        // reader closed, a terminal that went away. A file never does.
        loop {
            match rustix::event::poll(&mut fds, None) {
                Ok(n) if n > 0 => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
        let _ = tx.send(Wake::Stop);
    });
}

/// Runs `--notify-cmd` for new requests. It carries no decision power: it only tells
/// someone to look.
struct Notifier {
    command: String,
    running: Vec<(RequestId, Child)>,
}

impl Notifier {
    fn new(command: &str) -> Self {
        Self {
            command: command.to_owned(),
            running: Vec::new(),
        }
    }

    /// Starts the command for one request. The id and the escaped action go only into the
    /// environment, never into the command text, so no request can inject shell syntax.
    fn notify(&mut self, id: RequestId, action: &str) {
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(&self.command)
            .env("APPROVAL_GATE_ID", id.as_str())
            .env("APPROVAL_GATE_ACTION", escape(action))
            .stdin(Stdio::null());
        // stdout carries the watcher's own lines; the command's output goes to stderr.
        if let Ok(stderr) = io::stderr().as_fd().try_clone_to_owned() {
            command.stdout(Stdio::from(stderr));
        }
        match command.spawn() {
            Ok(child) => self.running.push((id, child)),
            Err(e) => warn(id, &format!("could not start the notify command: {e}")),
        }
    }

    /// Collects finished commands, warning about failures.
    fn reap(&mut self) {
        self.running
            .retain_mut(|(id, child)| match child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() {
                        warn(*id, &format!("the notify command failed ({status})"));
                    }
                    false
                }
                Ok(None) => true,
                Err(_) => false,
            });
    }

    /// Waits for commands still running, until `deadline`; later ones are left to finish
    /// on their own.
    fn finish(mut self, deadline: Instant) {
        while !self.running.is_empty() && Instant::now() < deadline {
            self.reap();
            thread::sleep(Duration::from_millis(20));
        }
    }
}

fn warn(id: RequestId, message: &str) {
    output::stderr_line(&format!(
        "approval-gate: warning: request {id}: {}",
        escape(message)
    ));
}
