//! `allow` through a real pseudo-terminal, signed with a key made by the real `ssh-keygen`:
//! the allowance shown in words, confirmed by the code, signed and kept; listed by
//! `allowances`; requests it covers approved as they are filed and consumed within its
//! bounds. Without a terminal, with a bad constraint, a window over 7 days or a wrong code,
//! nothing is signed or written. (An operation that needs two approvers: `sign_allowance.rs`.)

use std::process::{Command, Stdio};

use approval_gate::{
    Binding, CanonicalPayload, Clock as _, Gate, Grant, NewRequest, RequestId, Status, SystemClock,
};
use rexpect::process::WaitStatus;
use rexpect::session::spawn_command;
use serde_json::Value;

use crate::signed::Team;
use crate::support::{Store, assert_clean, assert_exit, json};

/// What a session printed, and how it ended.
pub(crate) struct Ended {
    pub(crate) exit: i32,
    pub(crate) printed: String,
    pub(crate) asked: bool,
}

/// Runs `command` in a pty; types the code it asks for (or `answer`, if given); waits for
/// the end.
pub(crate) fn in_terminal(command: Command, answer: Option<&str>) -> Ended {
    let mut session = spawn_command(command, Some(20_000)).expect("spawn in a pty");
    let mut printed = String::new();
    let prompt = session.exp_regex(r"Type [0-9a-f]{8} to (allow|sign) \(anything else cancels\): ");
    let asked = if let Ok((before, prompt)) = prompt {
        printed.push_str(&before);
        printed.push_str(&prompt);
        session.send_line(answer.unwrap_or(&prompt[5..13])).unwrap();
        true
    } else {
        // Anything still waiting for an answer gets end of input, which never allows.
        let _ = session.send_control('d');
        false
    };
    printed.push_str(&session.exp_eof().unwrap_or_default());
    let exit = match session.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("allow did not exit normally: {other:?}\n{printed}"),
    };
    Ended {
        exit,
        printed,
        asked,
    }
}

/// A terminal on one side only: stdout to a file, or stdin from /dev/null.
pub(crate) const ONE_SIDE: [&str; 2] = ["> \"$OUT\"", "< /dev/null"];

/// `inner` run by a shell with `redirect` (one of [`ONE_SIDE`], `$OUT` being `out`), so that
/// in a pty it has a terminal on the other side only.
pub(crate) fn redirected(inner: &Command, redirect: &str, out: &std::path::Path) -> Command {
    let mut shell = Command::new("/bin/sh");
    shell
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(inner.get_program())
        .args(inner.get_args())
        .env("OUT", out);
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => shell.env(name, value),
            None => shell.env_remove(name),
        };
    }
    shell
}

/// `allow ARGS --key alice` on the team's store, `mail.send` needing one approver.
fn allow(team: &Team, args: &[&str]) -> Command {
    let key = team.key("alice");
    let mut all = vec!["allow"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--key", key.to_str().unwrap()]);
    team.command(2, &all)
}

fn gate(team: &Team) -> Gate {
    Gate::builder()
        .dir(&team.store.path)
        .policy(team.policy(2))
        .open()
        .unwrap()
}

fn invoice(amount: u64) -> String {
    format!(r#"{{"amount":{amount},"to":"bob@example.com"}}"#)
}

/// Files an invoice through a gate holding the policy, as the agent would.
fn file(gate: &Gate, amount: u64) -> approval_gate::Request {
    let ask = NewRequest::new("send the invoice", "due")
        .operation("mail.send")
        .payload(CanonicalPayload::from_json_text(&invoice(amount)).unwrap());
    gate.request_approval(ask).unwrap().request
}

fn consume(gate: &Gate, id: RequestId, amount: u64) -> Result<Grant<Value>, approval_gate::Error> {
    let binding = Binding::new("send the invoice")
        .operation("mail.send")
        .payload(CanonicalPayload::from_json_text(&invoice(amount)).unwrap());
    gate.consume(id, &binding)
}

#[test]
fn an_allowance_made_at_the_terminal_approves_covered_requests_within_its_bounds() {
    let team = Team::new();
    let ended = in_terminal(
        allow(
            &team,
            &[
                "mail.send",
                "--matches",
                "/to=*@example.com",
                "--at-most",
                "/amount=5000",
                "--uses",
                "2",
                "--budget",
                "/amount=6000",
                "--until",
                "2h",
                "this",
                "month\u{202e}s invoices",
            ],
        ),
        None,
    );
    let printed = &ended.printed;
    assert_eq!(ended.exit, 0, "{printed}");
    // The allowance in words, before the prompt, escaped as agent text is.
    let prompt = printed.find("Type ").unwrap();
    for words in [
        "operation mail.send",
        "/to matches \"*@example.com\"",
        "at most 2 times",
        "/amount adding up to at most 6000 over all uses",
        "month\\u{202e}s invoices",
        "signed by alice@example.com (1 of the 1 the operation needs)",
    ] {
        let at = printed
            .find(words)
            .unwrap_or_else(|| panic!("{words:?} not in {printed}"));
        assert!(at < prompt, "{words:?} after the prompt: {printed}");
    }
    assert_clean("allow's screen", printed.as_bytes());
    assert!(printed.contains("allowed "), "{printed}");

    let listed = json(&team.command(2, &["allowances", "--json"]).output().unwrap());
    let [made] = listed.as_array().unwrap().as_slice() else {
        panic!("one allowance: {listed}");
    };
    assert_eq!(made["principals"], serde_json::json!(["alice@example.com"]));
    assert_eq!(made["usesLeft"], 2);
    assert_eq!(made["active"], true);
    assert_eq!(made["terms"]["reason"], "this month\u{202e}s invoices");
    let id = made["id"].as_str().unwrap();
    let until = approval_gate::Timestamp::parse_rfc3339(
        made["terms"]["bounds"]["notAfter"].as_str().unwrap(),
    )
    .unwrap();
    assert!(SystemClock.now().millis_until(until) <= 2 * 3600 * 1000);

    // Filed afterwards: approved by it as filed, consumed within its bounds.
    let gate = gate(&team);
    let over = file(&gate, 5001);
    assert_eq!(
        over.status(),
        Status::Pending,
        "over --at-most: for a human"
    );
    let first = file(&gate, 3000);
    assert_eq!(
        first.allowance().map(|a| a.to_string()),
        Some(id.to_owned())
    );
    let _grant = consume(&gate, first.id(), 3000).unwrap();
    let second = file(&gate, 3000);
    assert_eq!(second.status(), Status::Approved);
    let _grant = consume(&gate, second.id(), 3000).unwrap();
    let third = file(&gate, 1);
    assert_eq!(third.status(), Status::Pending, "its 2 uses are spent");
    let listed = json(&team.command(2, &["allowances", "--json"]).output().unwrap());
    assert_eq!(listed[0]["usesLeft"], 0);
    assert_eq!(listed[0]["budgetLeft"], 0);
}

#[test]
fn without_a_terminal_nothing_is_allowed() {
    let team = Team::new();
    let before = team.store.snapshot();
    let message = "allow needs an interactive terminal on stdin and stdout";
    let output = allow(&team, &["mail.send", "--uses", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 1, message);
    // A terminal on one side only: stdout to a file, then stdin from /dev/null.
    let out = team.store.scratch().join("out.txt");
    for redirect in ONE_SIDE {
        let shell = redirected(&allow(&team, &["mail.send", "--uses", "1"]), redirect, &out);
        let ended = in_terminal(shell, None);
        let all = ended.printed + &std::fs::read_to_string(&out).unwrap_or_default();
        assert_eq!(ended.exit, 1, "{redirect}: {all}");
        assert!(!ended.asked, "{redirect}: no prompt without a terminal");
        assert!(all.contains(message), "{redirect}: {all}");
    }
    assert_eq!(
        Store::changed(&before, &team.store.snapshot()),
        Vec::<String>::new()
    );
}

#[test]
fn a_bad_constraint_or_a_window_over_seven_days_is_refused_and_nothing_is_written() {
    let team = Team::new();
    let before = team.store.snapshot();
    let usage = |args: &[&str], message: &str| {
        let output = allow(&team, args).stdin(Stdio::null()).output().unwrap();
        assert_exit(&output, 2, message);
    };
    usage(
        &["mail.send", "--at-most", "/amount=lots", "--uses", "1"],
        "\"lots\" is not an exact integer",
    );
    usage(
        &["mail.send", "--is", "to=bob@example.com", "--uses", "1"],
        "\"to\" is not a JSON Pointer",
    );
    usage(
        &["mail.send", "--uses", "1", "--until", "8days"],
        "8days is more than 7 days",
    );
    // What the library refuses, at the terminal, before any prompt.
    let later = SystemClock
        .now()
        .saturating_add(std::time::Duration::from_secs(8 * 86_400))
        .to_string();
    for (args, exit, message) in [
        (
            vec!["mail.send", "--uses", "1", "--until", later.as_str()],
            2,
            "invalid allowance: its window may end at most 7 days after it is made",
        ),
        (
            vec!["mail.send", "--matches", "/to=", "--uses", "1"],
            2,
            "/to: a glob is 1 to 256 bytes",
        ),
        (
            vec!["mail.send", "--matches", "/to=*@example.com"],
            2,
            "an allowance needs a number of uses, a budget or a rate",
        ),
    ] {
        let ended = in_terminal(allow(&team, &args), None);
        assert!(!ended.asked, "{args:?}: {}", ended.printed);
        assert_eq!(ended.exit, exit, "{args:?}: {}", ended.printed);
        assert!(
            ended.printed.contains(message),
            "{args:?}: expected {message:?} in {}",
            ended.printed
        );
    }
    // A key the approvers file does not trust: refused before the screen.
    let mallory = team.key("mallory");
    let ended = in_terminal(
        team.command(
            2,
            &[
                "allow",
                "mail.send",
                "--uses",
                "1",
                "--key",
                mallory.to_str().unwrap(),
            ],
        ),
        None,
    );
    assert!(!ended.asked, "{}", ended.printed);
    assert_eq!(ended.exit, 1, "{}", ended.printed);
    assert!(
        ended.printed.contains("does not trust the key")
            && ended
                .printed
                .contains("nothing was allowed; sign with an approver's key"),
        "{}",
        ended.printed
    );
    // A wrong code: shown, refused, nothing signed.
    let ended = in_terminal(
        allow(&team, &["mail.send", "--uses", "1"]),
        Some("00000000"),
    );
    assert!(ended.asked);
    assert_eq!(ended.exit, 1, "{}", ended.printed);
    assert!(
        ended
            .printed
            .contains("the confirmation code did not match: nothing was allowed")
    );
    assert_eq!(
        Store::changed(&before, &team.store.snapshot()),
        Vec::<String>::new()
    );
    assert!(gate(&team).allowances().unwrap().is_empty());
}

#[test]
fn json_prints_the_allowance_made_and_is_lists_mix_strings_and_exact_integers() {
    let team = Team::new();
    let ended = in_terminal(
        allow(
            &team,
            &[
                "mail.send",
                "--is",
                "/to=bob@example.com",
                "--is",
                "/code=042",
                "--is",
                "/to=carol@example.com",
                "--is",
                "/amount:=7",
                "--rate",
                "5/1h",
                "--json",
            ],
        ),
        None,
    );
    assert_eq!(ended.exit, 0, "{}", ended.printed);
    let after = &ended.printed[ended.printed.find("cancels): ").unwrap() + 10..];
    let made: Value = serde_json::from_str(&after[after.find('{').unwrap()..]).unwrap();
    assert_eq!(made["principals"], serde_json::json!(["alice@example.com"]));
    assert_eq!(
        made["terms"]["constraints"],
        serde_json::json!([
            {"pointer": "/to", "oneOf": ["bob@example.com", "carol@example.com"]},
            {"pointer": "/code", "oneOf": ["042"]},
            {"pointer": "/amount", "oneOf": [7]},
        ])
    );
    assert_eq!(made["terms"]["bounds"]["rate"]["count"], 5);
    assert_eq!(gate(&team).allowances().unwrap().len(), 1);
}

#[test]
fn signing_as_a_principal_the_key_is_not_trusted_for_keeps_nothing() {
    let team = Team::new();
    let before = team.store.snapshot();
    let ended = in_terminal(
        allow(
            &team,
            &["mail.send", "--uses", "1", "--as", "bob@example.com"],
        ),
        None,
    );
    assert!(ended.asked, "{}", ended.printed);
    assert_eq!(ended.exit, 1, "{}", ended.printed);
    assert!(
        ended
            .printed
            .contains("nothing was allowed: the gate did not keep allowance")
            && ended
                .printed
                .contains("which the policy does not trust for bob@example.com"),
        "{}",
        ended.printed
    );
    assert!(gate(&team).allowances().unwrap().is_empty());
    let changed = Store::changed(&before, &team.store.snapshot());
    assert!(
        changed.iter().all(|p| !p.starts_with("allowances")),
        "{changed:?}"
    );
}
