//! The harnesses' documented samples (`tests/cli/hooks/README.md` names their sources).

use serde_json::{Value, json};

use super::harness::{Answer, Harness, parse, reply};
use super::{cut, margin, operation, parse_timeout};

const CLAUDE_BASH: &str = include_str!("../../../tests/cli/hooks/claude-code-pretooluse-bash.json");
const CLAUDE_WRITE: &str =
    include_str!("../../../tests/cli/hooks/claude-code-pretooluse-write.json");
const CLAUDE_DENY: &str = include_str!("../../../tests/cli/hooks/claude-code-pretooluse-deny.json");
const CODEX_BASH: &str = include_str!("../../../tests/cli/hooks/codex-permissionrequest-bash.json");
const CODEX_DENY: &str = include_str!("../../../tests/cli/hooks/codex-permissionrequest-deny.json");

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn the_documented_inputs_are_read_with_their_exact_tool_input() {
    let call = parse(Harness::ClaudeCode, CLAUDE_BASH.as_bytes()).unwrap();
    assert_eq!(call.tool, "Bash");
    assert_eq!(call.session.as_deref(), Some("abc123"));
    assert_eq!(call.input, value(CLAUDE_BASH)["tool_input"]);
    let call = parse(Harness::ClaudeCode, CLAUDE_WRITE.as_bytes()).unwrap();
    assert_eq!(call.tool, "Write");
    assert_eq!(call.input, value(CLAUDE_WRITE)["tool_input"]);
    let call = parse(Harness::Codex, CODEX_BASH.as_bytes()).unwrap();
    assert_eq!(call.input, json!({"command": "rm -f /tmp/example"}));
}

#[test]
fn input_for_another_event_or_without_a_tool_is_refused() {
    // Each harness's input is refused by the other: a hook wired to the wrong event denies.
    let wrong = parse(Harness::Codex, CLAUDE_BASH.as_bytes()).unwrap_err();
    assert!(
        wrong.contains("\"PreToolUse\", not PermissionRequest"),
        "{wrong}"
    );
    assert!(parse(Harness::ClaudeCode, CODEX_BASH.as_bytes()).is_err());
    let broken: [&[u8]; 6] = [
        b"",
        b"{",
        b"[]",
        br#"{"hook_event_name": "PreToolUse", "tool_input": {}}"#,
        br#"{"hook_event_name": "PreToolUse", "tool_name": "", "tool_input": {}}"#,
        br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash"}"#,
    ];
    for text in broken {
        assert!(parse(Harness::ClaudeCode, text).is_err(), "{text:?}");
    }
}

#[test]
fn answers_take_the_documented_shapes() {
    let deny = reply(
        Harness::ClaudeCode,
        &Answer::Deny("Database writes are not allowed".into()),
    );
    assert_eq!(value(deny.stdout.as_deref().unwrap()), value(CLAUDE_DENY));
    // Exit 2 blocks in Claude Code whatever stdout holds; a crash's exit 1 would not.
    assert_eq!(deny.code, 2);
    let deny = reply(
        Harness::Codex,
        &Answer::Deny("Blocked by repository policy.".into()),
    );
    assert_eq!(value(deny.stdout.as_deref().unwrap()), value(CODEX_DENY));
    assert_eq!(deny.code, 0);

    let allow = reply(Harness::ClaudeCode, &Answer::Allow("approved".into()));
    let output = value(allow.stdout.as_deref().unwrap());
    assert_eq!(output["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(
        output["hookSpecificOutput"]["permissionDecisionReason"],
        "approved"
    );
    assert_eq!(allow.code, 0);
    let allow = reply(Harness::Codex, &Answer::Allow("approved".into()));
    let output = value(allow.stdout.as_deref().unwrap());
    assert_eq!(
        output["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow"})
    );

    for harness in [Harness::ClaudeCode, Harness::Codex] {
        let quiet = reply(harness, &Answer::NoOpinion);
        assert_eq!((quiet.stdout, quiet.stderr, quiet.code), (None, None, 0));
    }
}

#[test]
fn tool_names_map_to_valid_operation_names() {
    let cases = [
        (Harness::ClaudeCode, "Bash", "hook.claude_code.bash"),
        (
            Harness::ClaudeCode,
            "mcp__slack__send_message",
            "hook.claude_code.mcp__slack__send_message",
        ),
        (Harness::Codex, "apply_patch", "hook.codex.apply_patch"),
        (
            Harness::Codex,
            "Web-Fetch.v2 ✓",
            "hook.codex.web_fetch_v2__",
        ),
    ];
    for (harness, tool, expected) in cases {
        assert_eq!(operation(harness, tool), expected);
        approval_gate::check_operation_name(expected).unwrap();
    }
    let long = operation(Harness::ClaudeCode, &"x".repeat(500));
    approval_gate::check_operation_name(&long).unwrap();
}

#[test]
fn text_is_cut_on_a_character_and_never_holds_a_nul() {
    assert_eq!(cut("abc".into(), 10), "abc");
    let cut_text = cut("é".repeat(10), 8);
    assert!(cut_text.len() <= 8 && cut_text.ends_with('…'), "{cut_text}");
    assert_eq!(cut("a\0b".into(), 10), "a\\0b");
}

#[test]
fn timeouts_are_seconds_or_durations_and_answered_before() {
    assert_eq!(parse_timeout("600").unwrap().as_secs(), 600);
    assert_eq!(parse_timeout("2m").unwrap().as_secs(), 120);
    for bad in ["0", "", "soon", "2d"] {
        assert!(parse_timeout(bad).is_err(), "{bad}");
    }
    assert_eq!(margin(std::time::Duration::from_secs(60)).as_secs(), 5);
    assert_eq!(margin(std::time::Duration::from_secs(1)).as_millis(), 500);
}

#[test]
fn a_call_that_finds_the_approval_used_by_its_twin_is_denied_saying_so() {
    use approval_gate::{Binding, CanonicalPayload, Decision, Gate, NewRequest};

    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::builder()
        .dir(dir.path().join("store"))
        .open()
        .unwrap();
    let payload = CanonicalPayload::from_value(&json!({"command": "git push"})).unwrap();
    let new = NewRequest::new("Bash: git push", "push")
        .operation("hook.claude_code.bash")
        .payload(payload.clone());
    let id = gate.request_approval(new).unwrap().request.id();
    gate.approve(id, &Decision::by("alice")).unwrap();
    let binding = Binding::new("Bash: git push")
        .operation("hook.claude_code.bash")
        .payload(payload);
    // Both calls saw it approved; the first consumes it.
    let seen = gate.status(id).unwrap();
    assert!(matches!(
        super::decided(&gate, &seen, &binding),
        Ok(Answer::Allow(_))
    ));
    // The second reads it after that, spent: no allow, and it says why.
    let spent = gate.status(id).unwrap();
    match super::decided(&gate, &spent, &binding) {
        Err(Answer::Deny(reason)) => assert!(
            reason.contains("already used") && reason.contains("cannot be used"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // Read while still approved, the second call's consume is refused as a replay.
    match super::decided(&gate, &seen, &binding) {
        Err(Answer::Deny(reason)) => assert!(reason.contains("cannot be used"), "{reason}"),
        other => panic!("{other:?}"),
    }
}
