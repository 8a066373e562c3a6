//! `hook`: a harness's tool call waits for a human, is allowed once, and everything else is
//! a deny. The inputs are the harnesses' documented samples (`hooks/README.md`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Output, Stdio};

use approval_gate::{EffectiveStatus, RequestId};
use serde_json::{Value, json};

use crate::support::{Store, approve, stdout};

const CLAUDE_BASH: &str = include_str!("hooks/claude-code-pretooluse-bash.json");
const CLAUDE_WRITE: &str = include_str!("hooks/claude-code-pretooluse-write.json");
const CODEX_BASH: &str = include_str!("hooks/codex-permissionrequest-bash.json");

const RULES: &str = "[hooks]\ncommands = [\"git push*\", \"rm -*\"]\ntools = [\"mcp__*__send*\"]\n";

/// A store whose default config file (the one the CLI of these tests reads) holds `rules`.
fn store_with(rules: &str) -> Store {
    let store = Store::new();
    let dir = store.scratch().join("approval-gate");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), rules).unwrap();
    store
}

/// `approval-gate hook HARNESS` started on `input`, its stdin closed.
fn start(store: &Store, harness: &str, input: &str, flags: &[&str]) -> Child {
    let mut args = vec!["hook", harness];
    args.extend_from_slice(flags);
    let mut child = store
        .command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child
}

/// The request the hook filed, from the line it writes once it waits (read as it comes: no
/// sleep), and the running hook.
fn filed(mut child: Child) -> (RequestId, Child, String) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let id = line
        .strip_prefix("approval-gate: waiting for a decision on request ")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no waiting line: {line:?}"));
    (RequestId::parse(id).unwrap(), child, line)
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn answer(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(output)))
}

/// Claude Code's decision and reason, checking the deny exit (2 blocks; 0 only for allow).
fn claude_decision(output: &Output) -> (String, String) {
    let answer = answer(output);
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse");
    let decision = specific["permissionDecision"].as_str().unwrap().to_owned();
    let expected = if decision == "allow" { 0 } else { 2 };
    assert_eq!(output.status.code(), Some(expected), "{decision}");
    let reason = specific["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_owned();
    (decision, reason)
}

#[test]
fn an_approved_git_push_is_allowed_once_and_the_next_call_waits_again() {
    let store = store_with(RULES);
    let (id, hook, _) = filed(start(&store, "claude-code", CLAUDE_BASH, &[]));
    let request = store.gate().status(id).unwrap().into_request();
    let sample: Value = serde_json::from_str(CLAUDE_BASH).unwrap();
    assert_eq!(request.payload().unwrap().to_value(), sample["tool_input"]);
    assert_eq!(request.operation(), Some("hook.claude_code.bash"));
    assert_eq!(request.requested_by(), Some("claude_code session abc123"));
    assert!(request.action().ends_with("git push origin main"));

    let (code, asked, printed) =
        approve(store.command(&["approve", &id.to_string(), "ship", "it"]));
    assert!(asked && code == 0, "{printed}");
    let (decision, reason) = claude_decision(&finish(hook));
    assert_eq!(decision, "allow");
    assert!(
        reason.contains(&id.to_string()) && reason.contains("ship it"),
        "{reason}"
    );
    let status = store.gate().status(id).unwrap().effective_status();
    assert_eq!(status, EffectiveStatus::Consumed);

    // The same call again is a new request: the spent approval never answers it.
    let (again, hook, _) = filed(start(&store, "claude-code", CLAUDE_BASH, &[]));
    assert_ne!(again, id);
    let denied = store.run(&["deny", &again.to_string(), "not", "twice"]);
    assert_eq!(denied.status.code(), Some(0), "{}", stdout(&denied));
    let (decision, reason) = claude_decision(&finish(hook));
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("denied") && reason.contains("not twice"),
        "{reason}"
    );
}

#[test]
fn two_identical_calls_waiting_together_share_one_approval_and_only_one_is_allowed() {
    let store = store_with(RULES);
    let (id, first, _) = filed(start(&store, "claude-code", CLAUDE_BASH, &[]));
    let (joined, second, _) = filed(start(&store, "claude-code", CLAUDE_BASH, &[]));
    assert_eq!(
        joined, id,
        "the same call of the same session joins the pending request"
    );
    let (code, asked, printed) = approve(store.command(&["approve", &id.to_string()]));
    assert!(asked && code == 0, "{printed}");
    let mut decisions = [first, second].map(|hook| claude_decision(&finish(hook)));
    decisions.sort();
    assert_eq!(decisions[0].0, "allow");
    assert_eq!(decisions[1].0, "deny");
    assert!(
        decisions[1].1.contains("cannot be used"),
        "{}",
        decisions[1].1
    );
}

#[test]
fn codex_is_answered_in_its_own_format() {
    let store = store_with(RULES);
    let (id, hook, _) = filed(start(&store, "codex", CODEX_BASH, &[]));
    let request = store.gate().status(id).unwrap().into_request();
    assert_eq!(request.operation(), Some("hook.codex.bash"));
    assert_eq!(
        request.payload().unwrap().to_value(),
        json!({"command": "rm -f /tmp/example"})
    );
    let (code, asked, printed) = approve(store.command(&["approve", &id.to_string()]));
    assert!(asked && code == 0, "{printed}");
    let output = finish(hook);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        answer(&output)["hookSpecificOutput"],
        json!({"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}})
    );
}

#[test]
fn a_call_matching_no_pattern_gets_no_opinion_and_files_nothing() {
    let store = store_with(RULES);
    let before = store.snapshot();
    for (harness, input) in [("claude-code", CLAUDE_WRITE), ("codex", CODEX_BASH)] {
        let input = input.replace("rm -f /tmp/example", "ls /tmp");
        let output = finish(start(&store, harness, &input, &[]));
        assert_eq!(output.status.code(), Some(0));
        assert!(output.stdout.is_empty(), "{}", stdout(&output));
    }
    assert!(Store::changed(&before, &store.snapshot()).is_empty());
}

#[test]
fn malformed_input_a_broken_store_and_a_timeout_each_deny() {
    let store = store_with(RULES);
    for input in [
        "",
        "{",
        "[]",
        r#"{"hook_event_name": "PreToolUse"}"#,
        CODEX_BASH,
    ] {
        let (decision, reason) = claude_decision(&finish(start(&store, "claude-code", input, &[])));
        assert_eq!(decision, "deny", "{input}");
        assert!(reason.contains("hook input"), "{reason}");
    }
    let output = finish(start(&store, "codex", "{", &[]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        answer(&output)["hookSpecificOutput"]["decision"]["behavior"],
        "deny"
    );

    // A store that cannot be opened: its directory is a regular file.
    let file = store.scratch().join("not-a-store");
    std::fs::write(&file, "").unwrap();
    let mut args = vec!["hook", "claude-code"];
    let file = file.to_str().unwrap().to_owned();
    args.extend(["--dir", &file]);
    let mut command = store.command(&args);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(CLAUDE_BASH.as_bytes())
        .unwrap();
    let (decision, reason) = claude_decision(&finish(child));
    assert_eq!(decision, "deny");
    assert!(reason.contains("store"), "{reason}");

    // Nobody decides: the hook answers before the harness's timeout, saying so.
    let (id, hook, _) = filed(start(
        &store,
        "claude-code",
        CLAUDE_BASH,
        &["--timeout", "1"],
    ));
    let (decision, reason) = claude_decision(&finish(hook));
    assert_eq!(decision, "deny");
    assert!(
        reason.contains(&format!(
            "no decision on request {id} before the hook's timeout"
        )),
        "{reason}"
    );
}

#[test]
fn a_setting_that_cannot_be_used_denies_every_call() {
    let store = store_with("[hooks]\ncommands = \"git push*\"\n");
    for input in [CLAUDE_BASH, CLAUDE_WRITE] {
        let (decision, reason) = claude_decision(&finish(start(&store, "claude-code", input, &[])));
        assert_eq!(decision, "deny");
        assert!(
            reason.contains("settings cannot be used") && reason.contains("hooks"),
            "{reason}"
        );
    }
}

#[test]
fn an_approval_never_covers_a_changed_tool_input() {
    let store = store_with(RULES);
    let (approved, hook, _) = filed(start(
        &store,
        "claude-code",
        CLAUDE_BASH,
        &["--timeout", "1"],
    ));
    assert_eq!(claude_decision(&finish(hook)).0, "deny");
    let (code, asked, printed) = approve(store.command(&["approve", &approved.to_string()]));
    assert!(asked && code == 0, "{printed}");

    let changed = CLAUDE_BASH.replace("git push origin main", "git push --force origin main");
    let (other, hook, _) = filed(start(&store, "claude-code", &changed, &["--timeout", "1"]));
    assert_ne!(other, approved);
    assert_eq!(claude_decision(&finish(hook)).0, "deny");
    let status = store.gate().status(approved).unwrap().effective_status();
    assert_eq!(status, EffectiveStatus::ApprovedUnconsumed);
}
