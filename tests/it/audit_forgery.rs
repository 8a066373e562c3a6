//! Edits to the directory store's `audit.jsonl` and its anchor: an edited line is reported at
//! that line; a careful forger rewrites a line and recomputes its own hash; malformed tails
//! are refused with a reason, never a panic. Each test states what the chain and the anchor must catch
//! whatever the implementation looks like.

use approval_gate::{AuditEvent, Decision, Error};
use approval_gate_tests::Fixture;

/// `,"hash":"` + 64 hex + `"}`: each line ends with the hash of everything before it.
const HASH_SUFFIX: usize = 9 + 64 + 2;

/// A store whose audit log has `n` lines (requests), written and anchored by the store.
fn store_with_lines(n: usize) -> Fixture {
    let fx = Fixture::new();
    for i in 0..n {
        let _ = fx.ask(&format!("action {i}"), None, None);
    }
    assert_eq!(fx.gate.verify_audit().unwrap().lines, n as u64);
    fx
}

fn log_path(fx: &Fixture) -> std::path::PathBuf {
    fx.dir.join("audit.jsonl")
}

fn lines(fx: &Fixture) -> Vec<String> {
    std::fs::read_to_string(log_path(fx))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(fx: &Fixture, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(log_path(fx), text).unwrap();
}

/// Rewrites what a line says and gives it a correct hash of its own, as a forger would.
fn forge(line: &str) -> String {
    let prefix = &line[..line.len() - HASH_SUFFIX];
    assert!(prefix.contains("action "), "{line}");
    let forged = prefix.replacen("action ", "ACTION ", 1);
    let hash = blake3::hash(forged.as_bytes()).to_hex();
    format!("{forged},\"hash\":\"{hash}\"}}")
}

fn broken(result: Result<impl std::fmt::Debug, Error>) -> (u64, String) {
    match result {
        Err(Error::AuditBroken { line, problem }) => (line, problem),
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

/// A refused append adds nothing to the log.
fn append_is_refused(fx: &Fixture) -> String {
    let before = std::fs::read(log_path(fx)).unwrap();
    let refused = fx
        .gate
        .request_approval(approval_gate::NewRequest::new("one more", "test"));
    let (_, problem) = broken(refused.map(|s| s.request.id()));
    assert_eq!(
        std::fs::read(log_path(fx)).unwrap(),
        before,
        "nothing appended"
    );
    problem
}

#[test]
fn a_middle_line_rewritten_with_its_own_hash_recomputed_breaks_the_next_link() {
    let fx = store_with_lines(5);
    let mut all = lines(&fx);
    all[2] = forge(&all[2]);
    write_lines(&fx, &all);
    // Line 3 is self-consistent now; only line 4's link to it gives the forgery away.
    let (line, problem) = broken(fx.gate.verify_audit());
    assert_eq!(line, 4, "{problem}");
    assert!(problem.contains("link"), "{problem}");
    assert!(
        fx.gate.audit_records().is_err(),
        "records are not served from it"
    );
}

#[test]
fn the_last_line_rewritten_with_its_own_hash_recomputed_is_caught_by_the_anchor() {
    let fx = store_with_lines(4);
    let mut all = lines(&fx);
    all[3] = forge(&all[3]);
    write_lines(&fx, &all);
    // No later line links to it: only the anchor's hash of line 4 can tell.
    let (line, problem) = broken(fx.gate.verify_audit());
    assert_eq!(line, 4, "{problem}");
    assert!(problem.contains("anchor"), "{problem}");
    // Appending would chain new lines onto the forgery: refused.
    let problem = append_is_refused(&fx);
    assert!(problem.contains("anchor"), "{problem}");
}

#[test]
fn the_last_line_rewritten_and_the_anchor_removed_is_refused() {
    let fx = store_with_lines(4);
    let mut all = lines(&fx);
    all[3] = forge(&all[3]);
    write_lines(&fx, &all);
    std::fs::remove_file(fx.dir.join("audit.head")).unwrap();
    let (_, problem) = broken(fx.gate.verify_audit());
    assert!(
        problem.contains("anchor") || problem.contains("audit.head"),
        "{problem}"
    );
}

fn with_last_line(fx: &Fixture, last: &[u8]) {
    let mut bytes = std::fs::read(log_path(fx)).unwrap();
    bytes.extend_from_slice(last);
    std::fs::write(log_path(fx), bytes).unwrap();
}

#[test]
fn very_short_last_lines_are_refused_not_panicked_on() {
    for last in ["", "x", "{}", "\"}", &"x".repeat(HASH_SUFFIX)] {
        let fx = store_with_lines(2);
        with_last_line(&fx, format!("{last}\n").as_bytes());
        let (line, problem) = broken(fx.gate.verify_audit());
        assert_eq!(line, 3, "{last:?}: {problem}");
        let problem = append_is_refused(&fx);
        assert!(problem.contains("last line"), "{last:?}: {problem}");
    }
}

#[test]
fn a_multibyte_character_across_the_hash_boundary_is_refused_not_panicked_on() {
    // Long enough for a hash suffix, which would start inside a two-byte character.
    for pad in ["a", "{\"seq\":3,"] {
        let fx = store_with_lines(2);
        let last = format!("{pad}{}", "é".repeat(HASH_SUFFIX));
        assert!(!last.is_char_boundary(last.len() - HASH_SUFFIX), "{last}");
        with_last_line(&fx, format!("{last}\n").as_bytes());
        let (line, problem) = broken(fx.gate.verify_audit());
        assert_eq!(line, 3, "{problem}");
        let problem = append_is_refused(&fx);
        assert!(problem.contains("last line"), "{problem}");
    }
}

#[test]
fn a_last_line_longer_than_any_record_is_refused_for_that_reason() {
    let fx = store_with_lines(2);
    // Ends like a record (a valid line of its own), after more bytes than a record can hold.
    let all = lines(&fx);
    let mut last = "x".repeat(600 * 1024).into_bytes();
    last.extend_from_slice(all[1].as_bytes());
    last.push(b'\n');
    with_last_line(&fx, &last);
    let problem = append_is_refused(&fx);
    assert!(
        problem.contains("longer than any audit record"),
        "{problem}"
    );
}

#[test]
fn an_anchor_naming_the_right_line_with_the_wrong_hash_is_refused_by_append() {
    let fx = store_with_lines(3);
    let head = fx.dir.join("audit.head");
    let text = std::fs::read_to_string(&head).unwrap();
    let (seq, rest) = text.trim_end().split_once(' ').unwrap();
    let (hash, boot) = rest.split_once(' ').unwrap();
    assert_eq!(seq.parse::<u64>().unwrap(), 3);
    let flipped: String = hash
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    std::fs::write(&head, format!("{seq} {flipped} {boot}\n")).unwrap();
    let (line, problem) = broken(fx.gate.verify_audit());
    assert_eq!(line, 3, "{problem}");
    let problem = append_is_refused(&fx);
    assert!(problem.contains("anchor"), "{problem}");
    // An approval is an append too: it is refused and nothing is approved.
    let id = fx
        .gate
        .list(approval_gate::ListFilter::Pending, None, 10)
        .unwrap()
        .items[0]
        .report()
        .expect("a readable request")
        .request()
        .id();
    assert!(fx.gate.approve(id, &Decision::by("alice")).is_err());
    assert!(
        !std::fs::read_to_string(log_path(&fx))
            .unwrap()
            .contains(&format!("{:?}", AuditEvent::Approved).to_lowercase())
    );
}

#[test]
fn an_edited_log_is_reported_at_the_edited_line() {
    let fx = Fixture::new();
    for i in 0..4 {
        let _ = fx.ask(&format!("req {i}"), None, None);
    }
    let path = fx.dir.join("audit.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("req 2", "req 9", 1);
    std::fs::write(&path, edited).unwrap();
    match fx.gate.verify_audit() {
        Err(Error::AuditBroken { line, .. }) => assert_eq!(line, 3),
        other => panic!("edit not detected: {other:?}"),
    }
}

#[test]
fn a_log_cut_short_behind_its_anchor_is_refused_at_the_first_missing_line() {
    let fx = store_with_lines(3);
    let mut all = lines(&fx);
    all.pop();
    write_lines(&fx, &all);
    // Both the append and `verify` point at line 3: the first line the anchor vouches for
    // that is gone.
    let refused = fx
        .gate
        .request_approval(approval_gate::NewRequest::new("one more", "test"));
    let (line, problem) = broken(refused.map(|s| s.request.id()));
    assert_eq!(line, 3, "{problem}");
    assert!(
        problem.contains("ends at line 2 but its anchor records line 3"),
        "{problem}"
    );
    let (line, problem) = broken(fx.gate.verify_audit());
    assert_eq!(line, 3, "{problem}");
    assert!(problem.contains("missing"), "{problem}");
    assert_eq!(lines(&fx).len(), 2, "nothing appended");
}

#[test]
fn lines_added_past_the_anchor_are_reported_at_the_first_one_no_crash_explains() {
    let fx = store_with_lines(3);
    let head = fx.dir.join("audit.head");
    let anchored_at_3 = std::fs::read(&head).unwrap();
    // Two more lines, correctly chained and hashed (here by the store itself), then the
    // anchor put back: what someone who appends without the store's anchor leaves.
    let _ = fx.ask("action 3", None, None);
    let _ = fx.ask("action 4", None, None);
    std::fs::write(&head, anchored_at_3).unwrap();
    // A crash between a line and its anchor leaves at most one line past the anchor, so
    // line 4 could be that; line 5 cannot.
    let (line, problem) = broken(fx.gate.verify_audit());
    assert_eq!(line, 5, "{problem}");
    assert!(
        problem.contains("the anchor records line 3 but the log has 5 lines"),
        "{problem}"
    );
    let problem = append_is_refused(&fx);
    assert!(problem.contains("anchor records line 3"), "{problem}");
}

#[test]
fn an_anchor_that_is_not_a_head_record_is_refused_as_such() {
    // A hash one digit short, and one of the right length that is not hex.
    for bad_hash in ["a".repeat(63), "g".repeat(64)] {
        let fx = store_with_lines(3);
        let head = fx.dir.join("audit.head");
        std::fs::write(&head, format!("{:020} {bad_hash}\n", 3)).unwrap();
        let (_, problem) = broken(fx.gate.verify_audit());
        assert!(
            problem.contains("not a valid head record"),
            "{bad_hash}: {problem}"
        );
        let problem = append_is_refused(&fx);
        assert!(
            problem.contains("not a valid head record"),
            "{bad_hash}: {problem}"
        );
        // Re-anchoring records that reason, not a disagreement with a hash that is not one.
        let done = fx.gate.reanchor_audit("alice").unwrap();
        assert!(
            done.problem.contains("not a valid head record"),
            "{bad_hash}: {}",
            done.problem
        );
    }
}
