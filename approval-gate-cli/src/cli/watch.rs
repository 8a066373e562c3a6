//! `watch`: print pending requests as they arrive, so a human can keep a terminal open
//! beside the agent.
//!
//! The library's [`Arrivals`](approval_gate::Arrivals) yields each pending request once,
//! those already waiting first: it follows the store's change hints and re-lists the queue on
//! each, with a fallback check every few seconds in case hints are lost. The watcher stops on
//! SIGINT, SIGTERM or SIGHUP, or when its stdout is closed.

use std::io;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use approval_gate::{Closer, Gate, ListItem, QueueEvent, RequestId};
use serde_json::json;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::args::WatchArgs;
use crate::settings::Settings;
use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output::{self, Style};
use crate::term::render;

/// How long a stopping watcher waits for notify commands still running.
const NOTIFY_GRACE: Duration = Duration::from_secs(5);

pub(crate) fn watch(settings: &Settings, gate: &Gate, args: &WatchArgs) -> anyhow::Result<Exit> {
    // A bad origin is refused before anything starts. The flag wins over the setting.
    #[cfg(feature = "web")]
    let links = args
        .public_url
        .as_deref()
        .or(settings.public_url.value.as_deref())
        .map(crate::web::public_origin)
        .transpose()?
        .map(|origin| Links { origin });
    #[cfg(not(feature = "web"))]
    let links: Option<Links> = {
        // Without the web page there is no page to link to.
        let _ = settings;
        None
    };
    // Watch before the first listing so nothing created in between goes unnoticed. Without
    // events (no inotify left, say) the fallback check still finds everything.
    let watch = gate
        .watcher()
        .fallback(Duration::from_secs(args.fallback_secs))
        .start();
    if let Some(why) = watch.polling() {
        output::stderr_line(&format!(
            "approval-gate: warning: no file-system events ({}); checking every {} s",
            escape(why),
            args.fallback_secs
        ));
    }
    // A terminal is shown arrivals; `--json` follows decisions too.
    let (mut events, closer): (Box<dyn Iterator<Item = _>>, Closer) = if args.json {
        let events = watch.queue_events();
        let closer = events.closer();
        (Box::new(events), closer)
    } else {
        let arrivals = watch.arrivals();
        let closer = arrivals.closer();
        (
            Box::new(arrivals.map(|item| item.map(QueueEvent::Arrived))),
            closer,
        )
    };
    let signals = stop_on_signals(closer.clone())?;
    stop_on_hangup(closer);
    output::stderr_line(&format!(
        "approval-gate: watching {} for new requests (Ctrl-C to stop)",
        escape(&gate.location().to_string())
    ));

    let style = Style::detect();
    let mut notifier = args.notify_cmd.as_deref().map(Notifier::new);
    let mut printed = 0u64;
    let result = loop {
        let event = match events.next() {
            Some(Ok(event)) => event,
            Some(Err(error)) => break Err(error.into()),
            // Stopped: a signal, or nobody reads our output any more.
            None => break Ok(()),
        };
        let line = match (&event, args.json) {
            (_, true) => match json_line(&event, links.as_ref()) {
                Ok(line) => line,
                Err(error) => break Err(error),
            },
            (QueueEvent::Arrived(item), false) => {
                let mut line = human_line(gate, item, style);
                if let Some(links) = &links {
                    line.push_str("  ");
                    line.push_str(&links.of(item.id()));
                    line.push('\n');
                }
                line
            }
            // Only `--json` asks for anything else.
            (_, false) => continue,
        };
        match output::stdout(&line) {
            Ok(()) => {}
            // Nobody reads any more: a clean stop.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break Ok(()),
            Err(e) => break Err(e.into()),
        }
        if let (Some(notifier), QueueEvent::Arrived(item)) = (&mut notifier, &event)
            && let Some(report) = item.report()
        {
            let page = links.as_ref().map(|links| links.of(item.id()));
            notifier.notify(item.id(), report.request().action(), page.as_deref());
        }
        printed += 1;
        if args.exit_after.is_some_and(|n| printed >= n) {
            break Ok(());
        }
    };
    signals.close();
    if let Some(notifier) = notifier {
        notifier.finish(Instant::now() + NOTIFY_GRACE);
    }
    result.map(|()| Exit::Done)
}

/// A new request as a terminal shows it: its list line, its approvals and its warnings.
fn human_line(gate: &Gate, item: &ListItem, style: Style) -> String {
    let width = output::width();
    let mut line = match item {
        ListItem::Request(report) => {
            let mut line = render::list_line(report, gate.now(), style, width);
            for extra in [
                render::list_approvals(report, width),
                render::list_warning(report, style, width),
            ]
            .into_iter()
            .flatten()
            {
                line.push('\n');
                line.push_str(&extra);
            }
            line
        }
        ListItem::Unreadable(record) => render::unreadable_line(record, style, width),
    };
    line.push('\n');
    line
}

/// Where a request's page is on `approval-gate serve`.
#[cfg_attr(not(feature = "web"), allow(dead_code))]
struct Links {
    origin: String,
}

impl Links {
    fn of(&self, id: RequestId) -> String {
        format!("{}/requests/{id}", self.origin)
    }
}

/// A queue event as one line of JSON (`watch --json`), with its page's `url` if known.
fn json_line(event: &QueueEvent, links: Option<&Links>) -> anyhow::Result<String> {
    let mut value = match event {
        QueueEvent::Arrived(ListItem::Request(report)) => {
            json!({ "event": "requested", "request": report })
        }
        QueueEvent::Arrived(ListItem::Unreadable(record)) => {
            json!({ "event": "unreadable", "record": record })
        }
        QueueEvent::Decided(report) => json!({ "event": "decided", "request": report }),
        // A kind of event this build does not know: said as such, never dropped silently.
        other => json!({ "event": "unknown", "detail": format!("{other:?}") }),
    };
    let id = match event {
        QueueEvent::Arrived(item) => Some(item.id()),
        QueueEvent::Decided(report) => Some(report.request().id()),
        _ => None,
    };
    if let (Some(links), Some(id)) = (links, id) {
        value["url"] = json!(links.of(id));
    }
    Ok(render::json_line(&value)?)
}

fn stop_on_signals(stop: Closer) -> io::Result<signal_hook::iterator::Handle> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let handle = signals.handle();
    thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop.close();
        }
    });
    Ok(handle)
}

/// Stops the watcher when the reader of stdout goes away, even while nothing is printed.
fn stop_on_hangup(stop: Closer) {
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
        stop.close();
    });
}

/// Runs `--notify-cmd` for new requests. It carries no decision power: it only tells
/// someone to look.
struct Notifier {
    command: String,
    /// One thread per command still running, reporting how it ended.
    running: Vec<JoinHandle<()>>,
}

impl Notifier {
    fn new(command: &str) -> Self {
        Self {
            command: command.to_owned(),
            running: Vec::new(),
        }
    }

    /// Starts the command for one request.
    fn notify(&mut self, id: RequestId, action: &str, link: Option<&str>) {
        let mut command = crate::notify_cmd::notify_command(&self.command, id, action, link);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return warn(id, &format!("could not start the notify command: {e}")),
        };
        self.running.retain(|thread| !thread.is_finished());
        self.running.push(thread::spawn(move || match child.wait() {
            Ok(status) if !status.success() => {
                warn(id, &format!("the notify command failed ({status})"));
            }
            Ok(_) => {}
            Err(e) => warn(id, &format!("cannot wait for the notify command: {e}")),
        }));
    }

    /// Waits for commands still running, until `deadline`; later ones are left to finish
    /// on their own.
    fn finish(self, deadline: Instant) {
        while self.running.iter().any(|thread| !thread.is_finished()) && Instant::now() < deadline {
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
