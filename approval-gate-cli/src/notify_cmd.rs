//! The shell command run for a request by `watch --notify-cmd` and by `notify`'s command
//! channel: one piece of code, so both pass the request the same safe way.

use std::io;
use std::os::fd::AsFd as _;
use std::process::{Command, Stdio};

use approval_gate::RequestId;

use crate::term::display::escape;

/// `sh -c COMMAND` for one request (`watch --notify-cmd`, and `notify`'s command channel).
/// The id, the escaped action and the page link go only into the environment
/// (`APPROVAL_GATE_ID`, `APPROVAL_GATE_ACTION`, `APPROVAL_GATE_URL`), never into the command
/// text, so no request can inject shell syntax. Its stdout goes to our stderr (our stdout
/// carries our own lines); its stdin is empty.
pub(crate) fn notify_command(
    shell_command: &str,
    id: RequestId,
    action: &str,
    link: Option<&str>,
) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(shell_command)
        .env("APPROVAL_GATE_ID", id.as_str())
        .env("APPROVAL_GATE_ACTION", escape(action))
        .stdin(Stdio::null());
    if let Some(link) = link {
        command.env("APPROVAL_GATE_URL", link);
    }
    if let Ok(stderr) = io::stderr().as_fd().try_clone_to_owned() {
        command.stdout(Stdio::from(stderr));
    }
    command
}
