//! No Chromium process outlives its test: not after `close()`, not after the test process is
//! killed outright (the watchdog's job).

use std::io::{BufRead, BufReader, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, pidfd_open};

use crate::cdp::{Browser, TIMEOUT};

const PAGE: &str = "data:text/html,<p>a page, so there is a renderer</p>";

/// Set in the child process of [`a_killed_test_process_takes_its_chromium_with_it`].
const ORPHAN: &str = "AG_WEB_TEST_ORPHAN";

#[test]
fn closing_the_browser_leaves_no_chromium_process() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let page = browser.new_context().new_page();
    page.navigate(PAGE);
    assert!(
        browser.version().starts_with("Chrome/"),
        "{}",
        browser.version()
    );
    let group = browser.process_group();
    let dir = browser.directory().to_owned();
    let processes = mentioning(&dir);
    assert!(
        group_members(group).len() >= 3,
        "Chromium, a zygote, a renderer"
    );
    // The group, the crash handlers (sessions of their own) and the watchdog.
    assert!(
        processes.len() > group_members(group).len(),
        "{processes:?}"
    );
    drop(page);
    browser.close();
    // SIGKILL is sent to the whole group at once, but each process dies when the kernel next
    // runs it: on a busy machine a member may still be on its way out. Wait for each exit
    // (bounded), then none may be left.
    let deadline = Instant::now() + TIMEOUT;
    all_exit(&group_members(group), deadline);
    let left = group_members(group);
    assert!(
        left.is_empty(),
        "processes of group {group} outlived close(): {left:?}"
    );
    all_exit(&processes, deadline);
    assert!(!dir.exists(), "close() left {}", dir.display());
}

#[test]
fn a_killed_test_process_takes_its_chromium_with_it() {
    if std::env::var_os(ORPHAN).is_some() {
        // The child: a browser with a page, then wait to be killed.
        let Some(browser) = Browser::launch() else {
            return;
        };
        let page = browser.new_context().new_page();
        page.navigate(PAGE);
        eprintln!("directory {}", browser.directory().display());
        let _ = std::io::stdin().read(&mut [0]);
        return;
    }
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "processes::a_killed_test_process_takes_its_chromium_with_it",
            "--exact",
            "--nocapture",
        ])
        .env(ORPHAN, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run this test binary again");
    let stderr = child.stderr.take().expect("piped");
    let (lines, said) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    let dir: PathBuf = loop {
        match said.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                if let Some(dir) = line.strip_prefix("directory ") {
                    break dir.into();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().expect("wait for the child");
                // It skipped (no Chromium, not CI), as this test would have.
                assert!(status.success(), "the child test failed: {status}");
                return;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child test started no browser within {TIMEOUT:?}");
            }
        }
    };
    let processes = mentioning(&dir);
    assert!(
        processes.len() >= 4,
        "Chromium, a zygote, a renderer, the watchdog: {processes:?}"
    );
    child.kill().expect("kill the child test");
    child.wait().expect("reap the child test");
    // The watchdog removes the directory before it exits.
    all_exit(&processes, deadline);
    assert!(!dir.exists(), "the watchdog left {}", dir.display());
}

/// Waits for each of `pids` to exit (the processes are not children: a pidfd of each,
/// readable once it has exited).
///
/// # Panics
///
/// If any is still running at `deadline`.
fn all_exit(pids: &[u32], deadline: Instant) {
    let mut exits: Vec<(u32, OwnedFd)> = pids
        .iter()
        .filter_map(|&pid| {
            let raw = Pid::from_raw(pid.cast_signed())?;
            Some((pid, pidfd_open(raw, PidfdFlags::empty()).ok()?))
        })
        .collect();
    while !exits.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = Timespec::try_from(left).expect("a timespec");
        let mut fds: Vec<PollFd<'_>> = exits
            .iter()
            .map(|(_, fd)| PollFd::new(fd, PollFlags::IN))
            .collect();
        let ready = poll(&mut fds, Some(&timeout)).expect("poll the pidfds");
        let exited: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        drop(fds);
        assert!(
            ready > 0,
            "still running at the deadline: {:?}",
            exits
                .iter()
                .map(|(pid, _)| command_line(*pid))
                .collect::<Vec<_>>()
        );
        let mut exited = exited.into_iter();
        exits.retain(|_| !exited.next().unwrap_or(false));
    }
}

/// The live (not zombie) processes of process group `group`, from /proc.
fn group_members(group: u32) -> Vec<u32> {
    processes()
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or("", |(_, rest)| rest)
                .split_whitespace()
                .collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string()
        })
        .collect()
}

/// The processes whose command line mentions `dir`: Chromium's (`--user-data-dir`), its
/// crash handlers' (`--database`, under its `HOME`) and the watchdog's.
fn mentioning(dir: &Path) -> Vec<u32> {
    let dir = dir.to_string_lossy().into_owned();
    processes()
        .filter(|&pid| command_line(pid).contains(&dir))
        .collect()
}

fn command_line(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&bytes).replace('\0', " ")
}

fn processes() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
}
