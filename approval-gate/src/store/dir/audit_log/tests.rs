//! Tests of the directory store's audit log: appends, every kind of edit found at its line,
//! the anchor, re-anchoring, and the last line read from the end.

use super::anchor::write_head_as;
use super::last_line::{LastLine, TAIL_READ, last_line_in};
use super::*;
use crate::audit::MAX_LINE;
use crate::store::dir::boot;

fn log_with(n: u64) -> (tempfile::TempDir, AuditLog) {
    let tmp = tempfile::tempdir().unwrap();
    let audit = AuditLog::new(tmp.path());
    let id = RequestId::parse("0123456789ab").unwrap();
    for i in 0..n {
        let mut details = Map::new();
        details.insert("n".into(), Value::from(i));
        audit
            .append(
                Timestamp::from_unix_millis(1_000 + i.cast_signed()),
                AuditEvent::Requested,
                id,
                &details,
            )
            .unwrap();
    }
    (tmp, audit)
}

/// An anchor at line `seq`, with the journal's length as it is (nothing to carry in).
fn at<'a>(audit: &AuditLog, seq: u64, hash: &'a str) -> At<'a> {
    At {
        seq,
        hash,
        journal: std::fs::metadata(&audit.journal).map_or(0, |m| m.len()),
    }
}

fn lines(audit: &AuditLog) -> Vec<String> {
    std::fs::read_to_string(&audit.log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Reads the log's lines, lets `change` edit them, writes them back, and returns them.
fn edit(audit: &AuditLog, change: impl FnOnce(&mut Vec<String>)) -> Vec<String> {
    let mut all = lines(audit);
    change(&mut all);
    rewrite(audit, &all);
    all
}

fn rewrite(audit: &AuditLog, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(&audit.log, text).unwrap();
}

fn broken_line(audit: &AuditLog) -> u64 {
    match audit.verify() {
        Err(Error::AuditBroken { line, .. }) => line,
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

#[test]
fn appended_lines_chain_and_verify() {
    let (_tmp, audit) = log_with(5);
    let summary = audit.verify().unwrap();
    assert_eq!(summary.lines, 5);
    let records = audit.records().unwrap();
    assert_eq!(records.len(), 5);
    assert_eq!(records[3].seq, 4);
    assert_eq!(records[3].details["n"], Value::from(3));
    assert_eq!(records[0].event, AuditEvent::Requested);
}

#[test]
fn flipping_any_line_is_found_at_that_line() {
    for target in 0..5 {
        let (_tmp, audit) = log_with(5);
        edit(&audit, |all| {
            all[target] = all[target].replacen("\"n\":", "\"m\":", 1);
        });
        assert_eq!(broken_line(&audit), target as u64 + 1, "line {target}");
    }
}

#[test]
fn deleting_any_line_is_found_at_its_position() {
    for target in 0..5 {
        let (_tmp, audit) = log_with(5);
        edit(&audit, |all| {
            all.remove(target);
        });
        assert_eq!(broken_line(&audit), target as u64 + 1, "line {target}");
    }
}

#[test]
fn swapping_and_duplicating_lines_is_found() {
    let (_tmp, audit) = log_with(5);
    edit(&audit, |all| {
        all.swap(1, 2);
    });
    assert_eq!(broken_line(&audit), 2);

    let (_tmp, audit) = log_with(5);
    edit(&audit, |all| {
        all.insert(3, all[2].clone());
    });
    assert_eq!(broken_line(&audit), 4);

    // Duplicating the last line looks like an append, but the anchor says otherwise.
    let (_tmp, audit) = log_with(5);
    edit(&audit, |all| {
        all.push(all[4].clone());
    });
    assert_eq!(broken_line(&audit), 6);
}

#[test]
fn a_torn_unacknowledged_tail_is_cut_on_the_next_append() {
    let (_tmp, audit) = log_with(3);
    let mut text = std::fs::read(&audit.log).unwrap();
    text.extend_from_slice(b"{\"seq\":4,\"ts\":");
    std::fs::write(&audit.log, &text).unwrap();
    assert_eq!(broken_line(&audit), 4);
    let id = RequestId::parse("0123456789ab").unwrap();
    audit
        .append(
            Timestamp::from_unix_millis(9),
            AuditEvent::Approved,
            id,
            &Map::new(),
        )
        .unwrap();
    assert_eq!(audit.verify().unwrap().lines, 4);
}

#[test]
fn appends_refuse_to_extend_a_truncated_log() {
    let (_tmp, audit) = log_with(3);
    edit(&audit, |all| {
        all.pop();
    });
    let id = RequestId::parse("0123456789ab").unwrap();
    let result = audit.append(
        Timestamp::from_unix_millis(9),
        AuditEvent::Approved,
        id,
        &Map::new(),
    );
    assert!(
        matches!(result, Err(Error::AuditBroken { .. })),
        "{result:?}"
    );
    assert_eq!(lines(&audit).len(), 2, "nothing appended to a broken log");
}

fn append_one(audit: &AuditLog) -> Result<u64, Error> {
    let id = RequestId::parse("0123456789ab").unwrap();
    audit.append(
        Timestamp::from_unix_millis(9),
        AuditEvent::Approved,
        id,
        &Map::new(),
    )
}

/// Appends move the anchor without syncing it: a power loss may leave it lines behind the
/// log (never ahead), written in a boot that has ended. Such a log verifies, takes
/// appends, and its anchor catches up; a truncation below the anchor is still refused.
#[test]
fn an_anchor_a_power_loss_left_behind_is_moved_on() {
    let (_tmp, audit) = log_with(5);
    let line_2 = check_line_hash(&lines(&audit)[1]).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&audit.head)
        .unwrap();
    let ended = "00000000-0000-0000-0000-000000000000";
    let at = at(&audit, 2, &line_2.1);
    write_head_as(&file, &audit.head, &at, Durability::Lazy, ended).unwrap();
    assert_eq!(audit.verify().unwrap().lines, 5);
    assert_eq!(append_one(&audit).unwrap(), 6);
    let head = read_head(&file, &audit.head).unwrap().unwrap();
    assert_eq!(head.seq, 6, "the anchor caught up");
    assert_eq!(head.this_boot, boot::current().is_some());

    edit(&audit, |all| all.truncate(4));
    assert_eq!(broken_line(&audit), 5);
    assert!(append_one(&audit).is_err());
}

/// The same anchor written in this boot allows one line past it, not three.
#[test]
fn in_this_boot_at_most_one_line_is_past_the_anchor() {
    if boot::current().is_none() {
        return; // No boot id here: every anchor is from an unknown boot.
    }
    let (_tmp, audit) = log_with(5);
    let line_2 = check_line_hash(&lines(&audit)[1]).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&audit.head)
        .unwrap();
    write_head(
        &file,
        &audit.head,
        &at(&audit, 2, &line_2.1),
        Durability::Lazy,
    )
    .unwrap();
    assert_eq!(broken_line(&audit), 4);
    assert!(append_one(&audit).is_err());
    let line_4 = check_line_hash(&lines(&audit)[3]).unwrap();
    write_head(
        &file,
        &audit.head,
        &at(&audit, 4, &line_4.1),
        Durability::Lazy,
    )
    .unwrap();
    assert_eq!(audit.verify().unwrap().lines, 5);
}

/// An anchor of the format before anchors named their boot reads as from an ended boot.
#[test]
fn an_anchor_without_its_boot_reads_as_from_an_ended_one() {
    let (_tmp, audit) = log_with(3);
    let line_1 = check_line_hash(&lines(&audit)[0]).unwrap();
    std::fs::write(&audit.head, format!("{:020} {}\n", 1, line_1.1)).unwrap();
    let file = std::fs::File::open(&audit.head).unwrap();
    let head = read_head(&file, &audit.head).unwrap().unwrap();
    assert_eq!((head.seq, head.this_boot), (1, false));
    assert_eq!(audit.verify().unwrap().lines, 3);
}

#[test]
fn a_deleted_anchor_and_a_truncated_tail_are_refused_and_reported() {
    let (_tmp, audit) = log_with(3);
    edit(&audit, |all| {
        all.pop();
    });
    std::fs::remove_file(&audit.head).unwrap();
    let result = append_one(&audit);
    assert!(
        matches!(result, Err(Error::AuditBroken { .. })),
        "{result:?}"
    );
    assert_eq!(
        lines(&audit).len(),
        2,
        "nothing appended to an unanchored log"
    );
    assert_eq!(broken_line(&audit), 1);
    // Still refused on the next try, and still reported: nothing re-anchors by itself.
    assert!(append_one(&audit).is_err());
    assert_eq!(broken_line(&audit), 1);
}

#[test]
fn a_deleted_anchor_alone_is_refused_and_reported() {
    let (_tmp, audit) = log_with(3);
    std::fs::remove_file(&audit.head).unwrap();
    assert!(matches!(append_one(&audit), Err(Error::AuditBroken { .. })));
    assert_eq!(lines(&audit).len(), 3);
    assert_eq!(broken_line(&audit), 1);
    // An emptied anchor is the same as a deleted one.
    std::fs::write(&audit.head, b"").unwrap();
    assert!(matches!(append_one(&audit), Err(Error::AuditBroken { .. })));
    assert_eq!(lines(&audit).len(), 3);
}

#[test]
fn a_brand_new_log_needs_no_anchor() {
    let (_tmp, audit) = log_with(0);
    assert_eq!(audit.verify().unwrap().lines, 0);
    assert_eq!(append_one(&audit).unwrap(), 1);
    assert_eq!(audit.verify().unwrap().lines, 1);
}

#[test]
fn reanchoring_records_what_was_found_and_appends_work_again() {
    let (_tmp, audit) = log_with(3);
    let all = edit(&audit, |all| {
        all.pop();
    });
    std::fs::remove_file(&audit.head).unwrap();
    let found_hash = check_line_hash(&all[1]).unwrap().1;

    let done = audit
        .reanchor(Timestamp::from_unix_millis(50), "alice")
        .unwrap();
    assert_eq!(done.found_lines, 2);
    assert_eq!(done.found_last_hash, found_hash);
    assert_eq!(done.previous_anchor, None);
    assert_eq!(done.seq, 3);
    assert!(done.problem.contains("unanchored"), "{}", done.problem);
    assert_eq!(audit.verify().unwrap().lines, 3);

    let records = audit.records().unwrap();
    let line = &records[2];
    assert_eq!(line.event, AuditEvent::Reanchored);
    assert_eq!(line.id, RequestId::STORE);
    assert_eq!(line.details["by"], "alice");
    assert_eq!(line.details["foundLines"], 2);
    assert_eq!(line.details["foundLastHash"], found_hash.as_str());
    assert_eq!(line.details["previousAnchor"], Value::Null);

    assert_eq!(append_one(&audit).unwrap(), 4);
    assert_eq!(audit.verify().unwrap().lines, 4);
}

#[test]
fn reanchoring_accepts_a_truncation_the_anchor_saw_and_cuts_a_torn_line() {
    let (_tmp, audit) = log_with(4);
    edit(&audit, |all| {
        all.truncate(2);
    });
    let mut text = std::fs::read(&audit.log).unwrap();
    text.extend_from_slice(b"{\"seq\":3,");
    std::fs::write(&audit.log, &text).unwrap();
    assert!(append_one(&audit).is_err());

    let done = audit
        .reanchor(Timestamp::from_unix_millis(50), "bob")
        .unwrap();
    assert_eq!(done.previous_anchor, Some(4));
    assert_eq!(done.found_lines, 2);
    assert_eq!(done.torn_bytes_cut, 9);
    let records = audit.records().unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[2].details["previousAnchor"], 4);
    assert_eq!(records[2].details["tornBytesCut"], 9);
    assert_eq!(audit.verify().unwrap().lines, 3);
}

#[test]
fn reanchoring_refuses_a_sound_log_and_an_edited_one() {
    let (_tmp, audit) = log_with(3);
    let before = std::fs::read(&audit.log).unwrap();
    assert!(matches!(
        audit.reanchor(Timestamp::from_unix_millis(50), "alice"),
        Err(Error::InvalidInput { .. })
    ));
    edit(&audit, |all| {
        all[1] = all[1].replacen("\"n\":", "\"m\":", 1);
    });
    std::fs::remove_file(&audit.head).unwrap();
    let edited = std::fs::read(&audit.log).unwrap();
    assert_ne!(before, edited);
    assert!(matches!(
        audit.reanchor(Timestamp::from_unix_millis(50), "alice"),
        Err(Error::AuditBroken { line: 2, .. })
    ));
    assert_eq!(
        std::fs::read(&audit.log).unwrap(),
        edited,
        "nothing written"
    );
}

#[test]
fn concurrent_appends_from_threads_stay_whole_and_linear() {
    let (_tmp, audit) = log_with(0);
    let id = RequestId::parse("0123456789ab").unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let audit = audit.clone();
            s.spawn(move || {
                for i in 0..20 {
                    let mut details = Map::new();
                    details.insert("t".into(), Value::from(t));
                    details.insert("pad".into(), Value::from("x".repeat(i * 100)));
                    audit
                        .append(
                            Timestamp::from_unix_millis(1),
                            AuditEvent::Requested,
                            id,
                            &details,
                        )
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(audit.verify().unwrap().lines, 160);
}

/// The last line as read before the growing windows: the whole widest window at once.
fn last_line_whole(bytes: &[u8]) -> Result<LastLine, Error> {
    let len = bytes.len() as u64;
    let window = len.min(2 * MAX_LINE as u64);
    let start = len - window;
    last_line_in(bytes[start as usize..].to_vec(), start, true)
        .map(|found| found.expect("the widest window always answers"))
}

#[test]
fn the_last_line_read_in_growing_windows_is_the_one_the_whole_window_finds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let window = TAIL_READ as usize;
    // Lines whose lengths straddle each window's edge, a line as long as any record may
    // be, and one longer; each log with and without a torn tail of several lengths.
    let lengths = [
        0,
        1,
        40,
        window - 2,
        window - 1,
        window,
        window + 1,
        8 * window - 1,
        8 * window + 1,
        MAX_LINE - 1,
        MAX_LINE + 7,
        2 * MAX_LINE + 3,
    ];
    let mut cases = 0;
    for &before in &[0, 1, 3] {
        for &last in &lengths {
            for &torn in &[0, 1, window, 9 * window, 2 * MAX_LINE + 1] {
                let mut bytes = Vec::new();
                for n in 0..before {
                    bytes.extend(std::iter::repeat_n(b'a' + n, 50 + 3 * window * n as usize));
                    bytes.push(b'\n');
                }
                if last > 0 || before == 0 {
                    bytes.extend(std::iter::repeat_n(b'z', last));
                    bytes.push(b'\n');
                }
                bytes.extend(std::iter::repeat_n(b't', torn));
                std::fs::write(&path, &bytes).unwrap();
                let mut file = File::open(&path).unwrap();
                let read = last_line(&mut file, bytes.len() as u64, &path);
                let whole = last_line_whole(&bytes);
                match (&read, &whole) {
                    (Ok(read), Ok(whole)) => assert_eq!(read, whole),
                    (Err(read), Err(whole)) => assert_eq!(read.to_string(), whole.to_string()),
                    _ => panic!(
                        "{before} lines, a last of {last} bytes, {torn} torn: {read:?} against {whole:?}"
                    ),
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 3 * lengths.len() * 5);
}
