//! `approve` through a real pseudo-terminal: only the exact code, typed in time for an
//! unchanged pending request, approves; everything else refuses and changes nothing.

use std::process::Command;
use std::time::Duration;

use approval_gate::{EffectiveStatus, NewRequest, RequestId, os_user};
use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

use crate::support::{BIN, HOSTILE, Store, assert_clean, assert_exit, millis_until};

/// A prompt session and everything it printed so far.
struct Prompt {
    session: PtySession,
    transcript: String,
}

impl Prompt {
    fn start(store: &Store, id: RequestId, reason: &[&str]) -> Self {
        let mut command = Command::new(BIN);
        command
            .arg("--dir")
            .arg(&store.path)
            .arg("approve")
            .arg(id.as_str())
            .args(reason)
            .env_remove("APPROVAL_GATE_DIR")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb");
        Self::spawn(command)
    }

    fn spawn(command: Command) -> Self {
        Self {
            session: spawn_command(command, Some(15_000)).expect("spawn in a pty"),
            transcript: String::new(),
        }
    }

    /// Waits for the prompt and returns the code it asks for.
    fn code(&mut self) -> String {
        let (before, prompt) = self
            .session
            .exp_regex(r"Type [0-9a-f]{8} to approve \(anything else cancels\): ")
            .unwrap_or_else(|e| panic!("no prompt: {e}\n{}", self.transcript));
        self.transcript.push_str(&before);
        self.transcript.push_str(&prompt);
        prompt[5..13].to_owned()
    }

    fn type_line(&mut self, line: &str) {
        self.session.send_line(line).unwrap();
    }

    fn end_of_input(&mut self) {
        self.session.send_control('d').unwrap();
    }

    /// Waits for the process to end; its exit code and everything it printed.
    fn finish(mut self) -> (i32, Vec<u8>) {
        let rest = self.session.exp_eof().unwrap();
        self.transcript.push_str(&rest);
        let code = match self.session.process().wait().unwrap() {
            WaitStatus::Exited(_, code) => code,
            other => panic!("approve did not exit normally: {other:?}"),
        };
        // The pty reader turns each byte into the char of the same value.
        let bytes = self.transcript.chars().map(|c| c as u32 as u8).collect();
        (code, bytes)
    }
}

impl Prompt {
    /// Waits for the process and checks it refused with `message` (exit 1) and left the
    /// store byte for byte as `before`; returns what it printed.
    fn refused(self, store: &Store, before: &Snapshot, message: &str) -> String {
        self.refused_with_line(store, before, message, None)
    }

    /// As [`Prompt::refused`], but a refusal of the decision itself (the request moved while
    /// on screen) leaves one `decision_refused` line with `code`, and changes no record.
    fn refused_with_line(
        self,
        store: &Store,
        before: &Snapshot,
        message: &str,
        code: Option<&str>,
    ) -> String {
        let (exit, output) = self.finish();
        let output = text(&output);
        assert_eq!(exit, 1, "{output}");
        assert!(output.contains(message), "expected {message:?} in {output}");
        let lines: Vec<_> = store
            .lines_since(before)
            .into_iter()
            .map(|(event, _, reason)| (event, reason))
            .collect();
        let expected: Vec<_> = code
            .map(|c| (approval_gate::AuditEvent::DecisionRefused, c.to_owned()))
            .into_iter()
            .collect();
        assert_eq!(lines, expected);
        output
    }
}

type Snapshot = std::collections::BTreeMap<std::path::PathBuf, Option<Vec<u8>>>;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_right_code_approves() {
    let store = Store::new();
    let request = store.ask_full("send invoice 1042", r#"{"to":"alice@example.com"}"#);
    let mut prompt = Prompt::start(&store, request.id(), &["looks", "right"]);
    let code = prompt.code();
    prompt.type_line(&code);
    let (exit, output) = prompt.finish();
    let output = text(&output);
    assert_eq!(exit, 0, "{output}");
    assert!(
        output.contains(&format!("approved {}", request.id())),
        "{output}"
    );
    // The screen showed everything the human decides on.
    for shown in [
        "send invoice 1042",
        "the invoice is due",
        "billing-agent",
        "smtp.send",
        "\"to\": \"alice@example.com\"",
        &request.payload_digest().unwrap().to_hex(),
        "expires",
    ] {
        assert!(output.contains(shown), "{shown:?} not shown in {output}");
    }
    let report = store.gate().status(request.id()).unwrap();
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(report.request().decided_by(), Some(os_user().as_str()));
    assert_eq!(report.request().decision_reason(), Some("looks right"));
}

/// Runs a prompt to completion with `answer` and checks it refused without changing a byte.
fn assert_refused(answer: impl FnOnce(&mut Prompt, &str), message: &str) {
    let store = Store::new();
    let request = store.ask_full("wire $100", r#"{"amount":100}"#);
    let before = store.snapshot();
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    let code = prompt.code();
    answer(&mut prompt, &code);
    prompt.refused(&store, &before, message);
    let status = store
        .gate()
        .status(request.id())
        .unwrap()
        .effective_status();
    assert_eq!(status, EffectiveStatus::Pending);
}

#[test]
fn a_wrong_code_refuses() {
    assert_refused(
        |prompt, code| {
            let first = if code.starts_with('0') { '1' } else { '0' };
            prompt.type_line(&format!("{first}{}", &code[1..]));
        },
        "the confirmation code did not match: nothing was approved",
    );
}

#[test]
fn the_code_with_extra_spaces_refuses() {
    assert_refused(
        |prompt, code| prompt.type_line(&format!(" {code}")),
        "did not match",
    );
}

#[test]
fn an_empty_line_refuses() {
    assert_refused(|prompt, _| prompt.type_line(""), "did not match");
}

#[test]
fn end_of_input_refuses() {
    assert_refused(
        |prompt, _| prompt.end_of_input(),
        "no confirmation (end of input): nothing was approved",
    );
}

#[test]
fn the_code_without_enter_then_end_of_input_refuses() {
    assert_refused(
        |prompt, code| {
            prompt.session.send(code).unwrap();
            prompt.session.flush().unwrap();
            prompt.end_of_input();
            prompt.end_of_input();
        },
        "no confirmation (end of input)",
    );
}

#[test]
fn a_request_that_expires_while_shown_is_refused() {
    let store = Store::new();
    // Filed 7 s ago with the shortest time to live: it expires 3 s from now.
    let gate = store.gate_ago(Duration::from_secs(7));
    let ask = NewRequest::new("deploy to production", "release day").ttl(Duration::from_secs(10));
    let request = gate.request_approval(ask).unwrap().request;
    let before = store.snapshot();
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    let code = prompt.code();
    let wait = millis_until(request.expires_at()) + 100;
    std::thread::sleep(Duration::from_millis(wait.try_into().unwrap_or(0)));
    prompt.type_line(&code);
    let message = format!(
        "request {} expired while it was on screen: nothing was approved",
        request.id()
    );
    prompt.refused(&store, &before, &message);
}

#[test]
fn a_request_edited_while_shown_is_refused() {
    let store = Store::new();
    let request = store.ask("pay $5 to bob");
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    let code = prompt.code();
    // Someone rewrites the record behind the human's back.
    let file = store
        .path
        .join("requests")
        .join(format!("{}.json", request.id()));
    let original = std::fs::read_to_string(&file).unwrap();
    let edited = original.replace("pay $5 to bob", "pay $5000 to eve");
    assert_ne!(original, edited);
    std::fs::write(&file, edited).unwrap();
    let before = store.snapshot();
    prompt.type_line(&code);
    let message = format!("request {} changed while it was on screen", request.id());
    prompt.refused_with_line(&store, &before, &message, Some("changed"));
}

#[test]
fn a_request_denied_while_shown_is_refused() {
    let store = Store::new();
    let request = store.ask("rotate the keys");
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    let code = prompt.code();
    store
        .gate()
        .deny(request.id(), &approval_gate::Decision::by("someone else"))
        .unwrap();
    let before = store.snapshot();
    prompt.type_line(&code);
    prompt.refused_with_line(
        &store,
        &before,
        "(it is now denied): nothing was approved",
        Some("wrong_state"),
    );
}

#[test]
fn a_second_approve_is_refused() {
    let store = Store::new();
    let request = store.ask("restart the service");
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    let code = prompt.code();
    prompt.type_line(&code);
    assert_eq!(prompt.finish().0, 0);
    let before = store.snapshot();
    let message = format!(
        "cannot approve request {}: it is approved_unconsumed",
        request.id()
    );
    let output = Prompt::start(&store, request.id(), &[]).refused(&store, &before, &message);
    assert!(!output.contains("Type "), "no prompt for a decided request");
}

#[test]
fn approving_an_unknown_id_is_refused() {
    let store = Store::new();
    let id = RequestId::parse("0123456789ab").unwrap();
    let (exit, output) = Prompt::start(&store, id, &[]).finish();
    assert_eq!(exit, 1);
    assert!(text(&output).contains("request 0123456789ab not found"));
}

#[test]
fn without_a_terminal_nothing_is_approved() {
    let store = Store::new();
    let request = store.ask("drop the table");
    let id = request.id().to_string();
    let before = store.snapshot();
    let message = "approve needs an interactive terminal on stdin and stdout";
    // Neither stdin nor stdout a terminal.
    assert_exit(&store.run(&["approve", &id]), 1, message);
    // stdin a terminal, stdout a file; then stdout a terminal, stdin not.
    let out = store.scratch().join("out.txt");
    for redirect in ["> \"$3\"", "< /dev/null"] {
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(format!(
                "exec \"$0\" --dir \"$1\" approve \"$2\" {redirect}"
            ))
            .arg(BIN)
            .arg(&store.path)
            .arg(&id)
            .arg(&out)
            .env("NO_COLOR", "1");
        let (exit, output) = Prompt::spawn(command).finish();
        assert_eq!(exit, 1, "{redirect}: {}", text(&output));
        let all = text(&output) + &std::fs::read_to_string(&out).unwrap_or_default();
        assert!(all.contains(message), "{redirect}: {all}");
        assert!(
            !all.contains("Type "),
            "{redirect}: no prompt without a terminal"
        );
    }
    assert_eq!(
        Store::changed(&before, &store.snapshot()),
        Vec::<String>::new()
    );
}

#[test]
fn the_prompt_shows_hostile_text_only_escaped() {
    let store = Store::new();
    let action = HOSTILE.concat();
    let mut payload = serde_json::Map::new();
    for (index, text) in HOSTILE.iter().enumerate() {
        payload.insert(format!("{text}{index}"), serde_json::Value::from(*text));
    }
    let ask = NewRequest::new(action.as_str(), HOSTILE[5])
        .requested_by(HOSTILE[7])
        .payload(approval_gate::CanonicalPayload::from_value(&payload.into()).unwrap());
    let request = store.gate().request_approval(ask).unwrap().request;
    let mut prompt = Prompt::start(&store, request.id(), &[]);
    prompt.code();
    prompt.end_of_input();
    let (exit, output) = prompt.finish();
    assert_eq!(exit, 1);
    // NO_COLOR and TERM=dumb: not a single ESC may reach the terminal.
    assert_clean("approve prompt", &output);
    let output = text(&output);
    assert!(
        output.contains(r"\u{1b}[2J\u{1b}[Hscreen cleared"),
        "{output}"
    );
    assert!(
        output.contains(r"send $5 to bob\rapproved: send $5 to bob"),
        "{output}"
    );
    assert!(output.contains(r"\u{9b}2J"), "{output}");
    assert!(
        output.contains(r"\u202e"),
        "payload strings escaped as JSON: {output}"
    );
}

#[test]
fn the_prompt_escapes_lookalikes_warns_and_its_code_still_approves() {
    let store = Store::new();
    let request = store.ask_full(
        "send invoice 1042 to alice@ex\u{430}mple.com",
        r#"{"to":"alice@ex\u0430mple.com","note":"Müller, Москва"}"#,
    );
    let mut prompt = Prompt::start(&store, request.id(), &["checked"]);
    let code = prompt.code();
    // The pty reader turns each byte into the char of the same value.
    let screen: Vec<u8> = prompt.transcript.chars().map(|c| c as u32 as u8).collect();
    let screen = text(&screen);
    prompt.type_line(&code);
    let (exit, output) = prompt.finish();
    let output = text(&output);
    assert_eq!(exit, 0, "{output}");
    assert_clean("approve prompt", output.as_bytes());
    for shown in [
        r"send invoice 1042 to alice@ex\u{430}mple.com",
        r#""to": "alice@ex\u0430mple.com""#,
        r#""note": "Müller, Москва""#,
        r#"warning: look-alike letters in action: \u{430} (Cyrillic, like "a")"#,
        r#"warning: look-alike letters in payload.to: \u{430} (Cyrillic, like "a")"#,
    ] {
        assert!(
            screen.contains(shown),
            "{shown:?} not on the screen: {screen}"
        );
    }
    // The warnings come before the question, where the human reads them last.
    let warned = screen.find("warning: look-alike").unwrap();
    assert!(warned < screen.find("Type ").unwrap(), "{screen}");
    assert_eq!(screen.matches("alice@ex\u{430}mple").count(), 0, "{screen}");
    let status = store
        .gate()
        .status(request.id())
        .unwrap()
        .effective_status();
    assert_eq!(status, EffectiveStatus::ApprovedUnconsumed);
}
