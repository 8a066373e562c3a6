//! `watch` prints requests as they arrive, runs the notify command with data only in its
//! environment, and stops cleanly.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Stdio};
use std::time::{Duration, Instant};

use approval_gate_cli::term::display::escape;

use crate::support::{Store, assert_clean};

/// Starts `watch` and waits until it says it is watching.
fn start(store: &Store, args: &[&str]) -> (Child, BufReader<ChildStderr>) {
    let mut command = store.command(&["watch"]);
    command
        .args(args)
        .current_dir(store.scratch())
        // Wide enough that the hostile action is printed whole.
        .env("COLUMNS", "300")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("watching"), "{line}");
    (child, stderr)
}

/// Waits for the child to exit within `limit`; its exit code.
fn wait(child: &mut Child, limit: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited, not killed");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("watch did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn new_requests_are_printed_and_notified_through_the_environment_only() {
    let store = Store::new();
    // One write of one line per notification: the commands of two requests run at once, and
    // two appends each could interleave.
    let notify = r#"printf '%s\t%s\n' "$APPROVAL_GATE_ID" "$APPROVAL_GATE_ACTION" >> notified.txt"#;
    // The fallback check is far off: only file-system events can make this test pass in time.
    let (mut child, mut stderr) = start(
        &store,
        &[
            "--exit-after",
            "2",
            "--fallback-secs",
            "60",
            "--notify-cmd",
            notify,
        ],
    );
    let started = Instant::now();
    let hostile = "$(touch pwned1) `touch pwned2`; touch pwned3 \"' \x1b[2J\rapproved\n";
    let first = store.ask("send the weekly report");
    let second = store.ask(hostile);
    assert_eq!(wait(&mut child, Duration::from_secs(20)), 0);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "event-driven, not the fallback"
    );
    let mut printed = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut printed)
        .unwrap();
    let mut errors = String::new();
    stderr.read_to_string(&mut errors).unwrap();
    assert_clean("watch", &printed);
    let printed = String::from_utf8(printed).unwrap();
    assert!(printed.contains(first.id().as_str()), "{printed}");
    assert!(printed.contains(second.id().as_str()), "{printed}");
    assert!(printed.contains(r"\u{1b}[2J\rapproved\n"), "{printed}");
    assert_eq!(printed.lines().count(), 2, "{printed}");

    let dir = store.scratch();
    // Each request notified once, with its own action, in whatever order the two commands,
    // which run at once, finished their writes.
    let notified = std::fs::read_to_string(dir.join("notified.txt")).unwrap();
    let mut notified: Vec<&str> = notified.lines().collect();
    notified.sort_unstable();
    let mut expected = vec![
        format!("{}\tsend the weekly report", first.id()),
        format!("{}\t{}", second.id(), escape(hostile)),
    ];
    expected.sort_unstable();
    assert_eq!(notified, expected, "{errors}");
    for file in ["pwned1", "pwned2", "pwned3"] {
        assert!(
            !dir.join(file).exists(),
            "the shell ran {file} from the action"
        );
    }
}

#[test]
fn requests_already_waiting_are_printed_at_start() {
    let store = Store::new();
    let waiting = store.ask("already here");
    let (mut child, _stderr) = start(&store, &["--exit-after", "1"]);
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
    let mut printed = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    assert!(printed.contains(waiting.id().as_str()));
}

#[test]
fn lookalikes_are_escaped_and_warned_about_under_the_line() {
    let store = Store::new();
    let spoofed = store.ask("wire $500 to p\u{430}ypal");
    let (mut child, _stderr) = start(&store, &["--exit-after", "1"]);
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
    let mut printed = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    assert_clean("watch", printed.as_bytes());
    let lines: Vec<_> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert!(
        lines[0].ends_with(r"wire $500 to p\u{430}ypal"),
        "{printed}"
    );
    assert_eq!(
        lines[1],
        format!(
            "  warning: look-alike letters in action: approval-gate show {}",
            spoofed.id()
        )
    );
}

#[test]
fn sigterm_stops_it_cleanly() {
    let store = Store::new();
    let (mut child, _stderr) = start(&store, &[]);
    // The shell's own `kill`: a minimal system may have no kill binary.
    let status = std::process::Command::new("/bin/sh")
        .args(["-c", "kill -TERM \"$0\"", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
}

#[test]
fn closing_its_output_stops_it() {
    let store = Store::new();
    let (mut child, _stderr) = start(&store, &["--fallback-secs", "60"]);
    drop(child.stdout.take());
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
}

#[test]
fn a_failing_notify_command_is_reported_on_stderr() {
    let store = Store::new();
    let waiting = store.ask("notify me");
    let (mut child, mut stderr) = start(&store, &["--exit-after", "1", "--notify-cmd", "exit 3"]);
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
    let mut errors = String::new();
    stderr.read_to_string(&mut errors).unwrap();
    assert!(
        errors.contains(&format!(
            "request {}: the notify command failed",
            waiting.id()
        )),
        "{errors}"
    );
}

#[test]
fn json_prints_one_object_per_line_for_each_request_and_each_decision() {
    let store = Store::new();
    let waiting = store.ask("already here");
    // The fallback check is far off: each line below is waited for, woken by events.
    let (mut child, _stderr) = start(
        &store,
        &["--json", "--exit-after", "4", "--fallback-secs", "60"],
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> serde_json::Value {
        let line = lines.next().expect("a line").expect("readable");
        assert_clean("watch --json", line.as_bytes());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let first = next();
    assert_eq!(first["event"], "requested", "{first}");
    assert_eq!(first["request"]["id"], waiting.id().as_str());
    assert_eq!(first["request"]["effectiveStatus"], "pending");

    let arriving = store.ask("send the weekly report");
    let second = next();
    assert_eq!(second["event"], "requested", "{second}");
    assert_eq!(second["request"]["id"], arriving.id().as_str());
    assert_eq!(second["request"]["action"], "send the weekly report");

    let gate = store.gate();
    gate.deny(waiting.id(), &approval_gate::Decision::by("bob"))
        .unwrap();
    let denied = next();
    assert_eq!(denied["event"], "decided", "{denied}");
    assert_eq!(denied["request"]["id"], waiting.id().as_str());
    assert_eq!(denied["request"]["effectiveStatus"], "denied");

    gate.approve(arriving.id(), &approval_gate::Decision::by("alice"))
        .unwrap();
    let approved = next();
    assert_eq!(approved["event"], "decided", "{approved}");
    assert_eq!(approved["request"]["id"], arriving.id().as_str());
    assert_eq!(
        approved["request"]["effectiveStatus"],
        "approved_unconsumed"
    );
    assert_eq!(wait(&mut child, Duration::from_secs(20)), 0);
}

#[cfg(feature = "web")]
#[test]
fn with_a_public_url_each_request_carries_its_page_link() {
    let store = Store::new();
    let waiting = store.ask("already here");
    let notify = r#"printf '%s\n' "$APPROVAL_GATE_URL" >> urls.txt"#;
    let (mut child, _stderr) = start(
        &store,
        &[
            "--exit-after",
            "1",
            "--public-url",
            "https://approvals.example.com",
            "--notify-cmd",
            notify,
        ],
    );
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
    let mut printed = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    let link = format!("https://approvals.example.com/requests/{}", waiting.id());
    assert!(printed.contains(&format!("  {link}\n")), "{printed}");
    let urls = std::fs::read_to_string(store.scratch().join("urls.txt")).unwrap();
    assert_eq!(urls, format!("{link}\n"));

    let (mut child, _stderr) = start(
        &store,
        &[
            "--json",
            "--exit-after",
            "1",
            "--public-url",
            "https://approvals.example.com:8443/",
        ],
    );
    assert_eq!(wait(&mut child, Duration::from_secs(10)), 0);
    let mut json = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut json)
        .unwrap();
    let event: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        event["url"],
        format!(
            "https://approvals.example.com:8443/requests/{}",
            waiting.id()
        )
    );
}

#[cfg(feature = "web")]
#[test]
fn a_public_url_that_is_no_origin_is_refused_before_watching() {
    let store = Store::new();
    for bad in [
        "http://approvals.example.com",
        "https://a.example/path",
        "https://192.0.2.1",
    ] {
        let output = store
            .command(&["watch", "--public-url", bad])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("--public-url"),
            "{bad}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[cfg(feature = "web")]
#[test]
fn without_the_flag_the_page_link_comes_from_the_public_url_setting() {
    let store = Store::new();
    let waiting = store.ask("already here");
    let config = store.scratch().join("approval-gate/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "public_url = \"https://file.example.com\"\n").unwrap();
    let link = |origin: &str| format!("{origin}/requests/{}", waiting.id());
    let printed = |extra: &[&str], env: Option<&str>| {
        let mut command = store.command(&["watch", "--json", "--exit-after", "1"]);
        command.args(extra).stdin(Stdio::null());
        if let Some(url) = env {
            command.env("APPROVAL_GATE_PUBLIC_URL", url);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let event: serde_json::Value = serde_json::from_slice(output.stdout.trim_ascii()).unwrap();
        event["url"].as_str().unwrap().to_owned()
    };
    // The config file, then the variable over it, then the flag over both.
    assert_eq!(printed(&[], None), link("https://file.example.com"));
    assert_eq!(
        printed(&[], Some("https://env.example.com")),
        link("https://env.example.com")
    );
    assert_eq!(
        printed(
            &["--public-url", "https://flag.example.com"],
            Some("https://env.example.com")
        ),
        link("https://flag.example.com")
    );
}

#[cfg(feature = "web")]
#[test]
fn serve_takes_its_origin_from_the_public_url_setting_without_the_flag() {
    let store = Store::new();
    // Not an origin serve accepts (plain http to a host name): refused, naming it, which
    // shows serve read it from the variable.
    let output = store
        .command(&["serve", "--listen", "127.0.0.1:0"])
        .env("APPROVAL_GATE_PUBLIC_URL", "http://approvals.example.com")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("approvals.example.com"), "{stderr}");
}
