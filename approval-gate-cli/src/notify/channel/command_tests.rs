use super::*;
use crate::notify::channel::webhook::tests::message;
use crate::notify::message::Kind;

fn channel(command: &str) -> ShellCommand {
    let table: toml::Table = format!("command = {command:?}").parse().unwrap();
    ShellCommand::from_table("desk", &table).unwrap()
}

#[test]
fn the_request_is_in_the_environment_only_with_its_kind_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let command = format!(
        "printf '%s|%s|%s|%s|%s|%s' \"$APPROVAL_GATE_ID\" \"$APPROVAL_GATE_ACTION\" \
         \"$APPROVAL_GATE_URL\" \"$APPROVAL_GATE_KIND\" \"$APPROVAL_GATE_KEY\" \
         \"$APPROVAL_GATE_ATTEMPT\" > {out:?}"
    );
    let hostile = "$(touch pwned) `touch pwned2`";
    let delivery = Delivery {
        key: "0123456789ab.desk.reminder",
        attempt: 3,
    };
    let ran = channel(&command).send(&message(Kind::Reminder, hostile), &delivery);
    assert_eq!(ran, Ok(()));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!(
            "0123456789ab|{hostile}|https://approvals.example.com/requests/0123456789ab|\
             reminder|0123456789ab.desk.reminder|3"
        )
    );
    assert!(!dir.path().join("pwned").exists());
}

#[test]
fn a_failing_command_is_tried_again() {
    let delivery = Delivery {
        key: "k",
        attempt: 1,
    };
    let failure = channel("exit 3")
        .send(&message(Kind::Filed, "x"), &delivery)
        .unwrap_err();
    assert!(matches!(failure, Failure::Retry(_)), "{failure:?}");
    assert!(failure.reason().contains("exit status: 3"), "{failure:?}");
}

/// Whether process `pid` has ended (gone, or a zombie not yet reaped).
fn ended(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[test]
fn a_command_over_its_time_is_killed_with_its_group_and_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // A grandchild that would outlive a kill of the shell alone.
    let mut channel = channel(&format!("sleep 600 & echo $! > {pid_file:?}; wait"));
    channel.limit = Duration::from_millis(300);
    let delivery = Delivery {
        key: "k",
        attempt: 1,
    };
    let failure = channel
        .send(&message(Kind::Filed, "x"), &delivery)
        .unwrap_err();
    assert!(matches!(failure, Failure::Retry(_)), "{failure:?}");
    assert!(failure.reason().contains("killed"), "{failure:?}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.trim();
    // SIGKILL is delivered at once, but the end is seen by polling /proc: bounded, not timed.
    let bound = std::time::Instant::now() + Duration::from_secs(20);
    while !ended(pid) {
        assert!(
            std::time::Instant::now() < bound,
            "sleep {pid} outlived the kill"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_table_holds_only_a_command() {
    for (text, needle) in [
        ("", ".command: missing"),
        ("command = \"\"", ".command: must be a shell command"),
        (
            "command = \"true\"\nshell = \"bash\"",
            ".shell: unknown key",
        ),
    ] {
        let table: toml::Table = text.parse().unwrap();
        let error = ShellCommand::from_table("desk", &table).unwrap_err();
        assert!(error.starts_with(needle), "{text:?}: {error}");
    }
}
