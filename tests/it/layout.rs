//! The on-disk layout: symlinks and loose permissions refused, hostile ids never reach the
//! filesystem, listing pending reads only pending requests, archive retires only what can
//! never be used.

use std::collections::BTreeSet;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::time::Duration;

use approval_gate::{
    AuditEvent, Decision, EffectiveStatus, Error, Gate, ListFilter, ListItem, RequestId,
};
use approval_gate_tests::{Fixture, binding, changed, snapshot};

const DAY: Duration = Duration::from_secs(24 * 3600);

#[test]
fn a_fresh_store_is_private_whatever_the_umask() {
    let fx = Fixture::new();
    let _id = fx.approved("a", None, None);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fx.dir), 0o700);
    for dir in ["requests", "claims", "locks", "archive"] {
        assert_eq!(mode(&fx.dir.join(dir)), 0o700, "{dir}");
    }
    for (path, _) in snapshot(&fx.dir) {
        let full = fx.dir.join(&path);
        if full.is_file() {
            assert_eq!(mode(&full), 0o600, "{}", path.display());
        }
    }
}

#[test]
fn a_store_is_opened_where_its_parent_directories_do_not_exist_yet() {
    // `Gate::open("/var/lib/app/gate")` on a fresh machine: the directories above the store
    // are made (with the process's umask; the store's own are 0700, as above).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("var").join("lib").join("gate");
    let gate = Gate::open(&dir).unwrap();
    let id = gate
        .request_approval(approval_gate::NewRequest::new("pay", "q"))
        .unwrap()
        .request
        .id();
    assert!(dir.join("requests").is_dir());
    assert!(gate.status(id).is_ok());
}

#[test]
fn a_symlinked_state_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    Gate::open(&real).unwrap();
    let link = tmp.path().join("link");
    symlink(&real, &link).unwrap();
    assert!(matches!(Gate::open(&link), Err(Error::UnsafeState { .. })));
}

#[test]
fn symlinked_state_files_are_refused_and_nothing_is_written_through_them() {
    let elsewhere = tempfile::tempdir().unwrap();
    let decoy = elsewhere.path().join("decoy");
    std::fs::write(&decoy, b"untouched").unwrap();

    // The requests directory.
    let fx = Fixture::new();
    std::fs::remove_dir(fx.dir.join("requests")).unwrap();
    symlink(elsewhere.path(), fx.dir.join("requests")).unwrap();
    assert!(matches!(
        Gate::open(&fx.dir),
        Err(Error::UnsafeState { .. })
    ));

    // A request file.
    let fx = Fixture::new();
    let id = fx.ask("a", None, None);
    let path = fx.dir.join("requests").join(format!("{id}.json"));
    std::fs::rename(&path, elsewhere.path().join("moved.json")).unwrap();
    symlink(elsewhere.path().join("moved.json"), &path).unwrap();
    assert!(matches!(fx.gate.status(id), Err(Error::UnsafeState { .. })));
    assert!(matches!(
        fx.gate.approve(id, &Decision::by("h")),
        Err(Error::UnsafeState { .. })
    ));

    // A claim file: a planted link neither counts as a grant nor gets written through.
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    let claim = fx.dir.join("claims").join(format!("{id}.used"));
    symlink(&decoy, &claim).unwrap();
    let result = fx.gate.consume::<()>(id, &binding("a", None, None));
    assert!(
        matches!(result, Err(Error::UnsafeState { .. })),
        "{result:?}"
    );
    let dangling = elsewhere.path().join("nowhere");
    std::fs::remove_file(&claim).unwrap();
    symlink(&dangling, &claim).unwrap();
    assert!(
        fx.gate
            .consume::<()>(id, &binding("a", None, None))
            .is_err()
    );
    assert!(!dangling.exists(), "claim written through a symlink");

    // The audit log.
    let fx = Fixture::new();
    let _first = fx.ask("a", None, None);
    let audit = fx.dir.join("audit.jsonl");
    std::fs::remove_file(&audit).unwrap();
    symlink(&decoy, &audit).unwrap();
    assert!(matches!(
        Gate::open(&fx.dir),
        Err(Error::UnsafeState { .. })
    ));
    let refused = fx
        .gate
        .request_approval(approval_gate::NewRequest::new("b", "r"));
    assert!(refused.is_err());
    assert_eq!(std::fs::read(&decoy).unwrap(), b"untouched");
}

#[test]
fn state_writable_by_others_is_refused() {
    let fx = Fixture::new();
    let id = fx.ask("a", None, None);
    let path = fx.dir.join("requests").join(format!("{id}.json"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
    assert!(matches!(fx.gate.status(id), Err(Error::UnsafeState { .. })));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&fx.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(
        Gate::open(&fx.dir),
        Err(Error::UnsafeState { .. })
    ));
}

#[test]
fn hostile_ids_are_rejected_before_touching_the_filesystem() {
    let fx = Fixture::new();
    let before = snapshot(&fx.dir);
    for hostile in [
        "..",
        "../../../etc/passwd",
        "a1b2c3/d4e5f6",
        "a1b2c3d4e5f\0",
        "a1b2c3d4e5f6a1b2c3d4e5f6",
        "A1B2C3D4E5F6",
        "zzzzzzzzzzzz",
        "\u{ff0e}\u{ff0e}\u{ff0f}etc\u{ff0f}pw",
        "",
    ] {
        assert!(
            matches!(
                hostile.parse::<RequestId>(),
                Err(approval_gate::InvalidId { .. })
            ),
            "{hostile:?}"
        );
    }
    assert_eq!(
        changed(&before, &snapshot(&fx.dir)),
        Vec::<std::path::PathBuf>::new()
    );
}

/// Writes a finished (denied) request file directly, as the store would have.
fn plant_finished(fx: &Fixture, n: usize) -> Vec<RequestId> {
    let template = fx.ask("template", None, None);
    fx.gate.deny(template, &Decision::by("h")).unwrap();
    let text =
        std::fs::read_to_string(fx.dir.join("requests").join(format!("{template}.json"))).unwrap();
    (0..n)
        .map(|i| {
            let id = RequestId::parse(&format!("{i:012x}")).unwrap();
            let body = text.replace(template.as_str(), id.as_str());
            let path = fx.dir.join("requests").join(format!("{id}.json"));
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            id
        })
        .collect()
}

#[test]
fn listing_pending_reads_no_finished_request() {
    let fx = Fixture::new();
    let finished = plant_finished(&fx, 3000);
    let pending: BTreeSet<_> = (0..20)
        .map(|i| fx.ask(&format!("pending {i}"), None, None))
        .collect();
    assert_eq!(
        fx.gate
            .list(ListFilter::Denied, None, 1000)
            .unwrap()
            .items
            .len(),
        1000
    );

    // Make every finished request unreadable as a request: if listing pending read any of
    // them, it would fail.
    for id in &finished {
        std::fs::write(
            fx.dir.join("requests").join(format!("{id}.json")),
            b"not json",
        )
        .unwrap();
    }
    let page = fx.gate.list(ListFilter::Pending, None, 100).unwrap();
    let listed: BTreeSet<_> = page.items.iter().map(ListItem::id).collect();
    assert_eq!(listed, pending);
    assert!(page.items.iter().all(|item| {
        item.report()
            .is_some_and(|r| r.effective_status() == EffectiveStatus::Pending)
    }));
    // The proof is sound: a listing that does read history finds them unreadable.
    let all = fx.gate.list(ListFilter::All, None, 10).unwrap();
    assert_eq!(all.items.len(), 10);
    assert!(all.items.iter().all(|item| item.unreadable().is_some()));
}

#[test]
fn each_filter_has_its_own_name_and_line_of_help() {
    let names: BTreeSet<&str> = ListFilter::ALL.iter().map(|f| f.name()).collect();
    let abouts: BTreeSet<&str> = ListFilter::ALL.iter().map(|f| f.about()).collect();
    assert_eq!(names.len(), ListFilter::ALL.len());
    assert_eq!(abouts.len(), ListFilter::ALL.len());
    assert!(names.contains("pending") && names.contains("all"));
    assert!(ListFilter::All.about().contains("pending first"));
    assert!(abouts.iter().all(|about| about.len() > 5));
}

/// Every id of a listing, page by page from `after`, `limit` at a time.
fn ids(gate: &Gate, filter: ListFilter, after: Option<RequestId>, limit: usize) -> Vec<RequestId> {
    let page = gate.list(filter, after, limit).unwrap();
    page.items.iter().map(ListItem::id).collect()
}

#[test]
fn a_cursor_that_left_the_list_keeps_its_place() {
    let fx = Fixture::new();
    let asked: Vec<RequestId> = (0..5)
        .map(|i| {
            fx.advance(Duration::from_millis(5));
            fx.ask(&format!("p{i}"), None, None)
        })
        .collect();
    // Pending: the page's last request is denied before the next page is asked for.
    let first = fx.gate.list(ListFilter::Pending, None, 2).unwrap();
    assert_eq!(first.next_after, Some(asked[1]));
    fx.gate.deny(asked[1], &Decision::by("h")).unwrap();
    assert_eq!(
        ids(&fx.gate, ListFilter::Pending, Some(asked[1]), 2),
        [asked[2], asked[3]]
    );
    // Approved: the page's last approval is spent before the next page is asked for.
    let approved: Vec<RequestId> = (0..4)
        .map(|i| {
            fx.advance(Duration::from_millis(5));
            fx.approved(&format!("a{i}"), None, None)
        })
        .collect();
    let first = fx.gate.list(ListFilter::Approved, None, 2).unwrap();
    assert_eq!(first.next_after, Some(approved[1]));
    let grant = fx
        .gate
        .consume::<()>(approved[1], &binding("a1", None, None));
    assert!(grant.is_ok(), "{grant:?}");
    assert_eq!(
        ids(&fx.gate, ListFilter::Approved, Some(approved[1]), 2),
        [approved[2], approved[3]]
    );
    // A page that holds exactly the rest says there is no more.
    let last = fx
        .gate
        .list(ListFilter::Approved, Some(approved[1]), 2)
        .unwrap();
    assert_eq!(last.next_after, None);
}

#[test]
fn pagination_visits_every_request_exactly_once_in_a_stable_order_pending_first() {
    let fx = Fixture::new();
    let mut all = Vec::new();
    for i in 0..23 {
        all.push(fx.ask(&format!("r{i}"), None, None));
        if i % 3 == 0 {
            fx.advance(Duration::from_millis(5));
        }
    }
    for id in all.iter().step_by(4) {
        fx.gate.deny(*id, &Decision::by("h")).unwrap();
    }
    for filter in [ListFilter::All, ListFilter::Pending, ListFilter::Denied] {
        for limit in [1, 4, 7, 100] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let page = fx.gate.list(filter, after, limit).unwrap();
                assert!(page.items.len() <= limit);
                seen.extend(page.items.iter().map(ListItem::id));
                match page.next_after {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            let expected: Vec<_> = match filter {
                ListFilter::All => all.clone(),
                ListFilter::Denied => all.iter().step_by(4).copied().collect(),
                _ => all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % 4 != 0)
                    .map(|(_, id)| *id)
                    .collect(),
            };
            // Pending requests first (under `all`), then the rest, each oldest first.
            let mut sorted_expected = expected.clone();
            sorted_expected.sort_by_key(|id| {
                let report = fx.gate.status(*id).unwrap();
                let decided = report.effective_status() != EffectiveStatus::Pending;
                (decided, report.request().created_at(), *id)
            });
            assert_eq!(seen, sorted_expected, "{filter:?} limit {limit}");
        }
    }
    assert!(matches!(
        fx.gate.list(ListFilter::All, None, 0),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn archive_moves_only_old_finished_requests_and_they_can_never_be_used() {
    let fx = Fixture::new();
    let consumed = fx.approved("consumed", None, None);
    let _grant = fx
        .gate
        .consume::<()>(consumed, &binding("consumed", None, None))
        .unwrap();
    let denied = fx.ask("denied", None, None);
    fx.gate.deny(denied, &Decision::by("h")).unwrap();
    let approved_unused = fx.approved("approved unused", None, None);
    let old_pending = fx.ask("old pending", None, None);

    fx.advance(7 * DAY);
    let young = fx.ask("young", None, None);
    assert!(
        fx.gate.archive(0).unwrap().archived.is_empty(),
        "nothing is 8 days old yet"
    );

    fx.advance(DAY + Duration::from_secs(3600));
    let untouched = snapshot(&fx.dir);
    let dry = fx.gate.plan_archive(0).unwrap().archived;
    assert_eq!(
        changed(&untouched, &snapshot(&fx.dir)),
        Vec::<std::path::PathBuf>::new(),
        "a dry run changes nothing"
    );
    let mut expected = vec![consumed, denied, approved_unused, old_pending];
    expected.sort();
    let mut dry_sorted = dry.clone();
    dry_sorted.sort();
    assert_eq!(dry_sorted, expected);
    // Listing records the expiry of the pending ones, so the next archive has only
    // archiving left to do.
    fx.gate.list(ListFilter::All, None, 100).unwrap();
    let before = snapshot(&fx.dir);
    assert_eq!(
        fx.gate.archive(30).unwrap().archived,
        Vec::<RequestId>::new(),
        "none is 30 days old"
    );
    assert_eq!(
        changed(&before, &snapshot(&fx.dir)),
        Vec::<std::path::PathBuf>::new()
    );

    let mut archived = fx.gate.archive(8).unwrap().archived;
    archived.sort();
    assert_eq!(archived, expected);
    for id in &expected {
        assert!(matches!(fx.gate.status(*id), Err(Error::Archived(_))));
        assert!(matches!(
            fx.gate
                .consume::<()>(*id, &binding("approved unused", None, None)),
            Err(Error::Archived(_))
        ));
        assert!(matches!(
            fx.gate.approve(*id, &Decision::by("h")),
            Err(Error::Archived(_))
        ));
    }
    assert!(
        fx.dir
            .join("archive")
            .join(format!("{consumed}.used"))
            .exists()
    );
    assert_eq!(
        fx.gate.status(young).unwrap().effective_status(),
        EffectiveStatus::Expired
    );
    fx.gate.verify_audit().unwrap();
}

#[test]
fn an_empty_or_torn_claim_still_counts_as_consumed() {
    for content in [&b""[..], b"{\"consumedAt\":\"2026-"] {
        let fx = Fixture::new();
        let id = fx.approved("a", None, None);
        let claim = fx.dir.join("claims").join(format!("{id}.used"));
        std::fs::write(&claim, content).unwrap();
        std::fs::set_permissions(&claim, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            fx.gate.status(id).unwrap().effective_status(),
            EffectiveStatus::Consumed
        );
        assert!(matches!(
            fx.gate.consume::<()>(id, &binding("a", None, None)),
            Err(Error::AlreadyConsumed(_))
        ));
        assert!(matches!(
            fx.gate.revoke(id, &Decision::by("h")),
            Err(Error::WrongState { .. })
        ));
    }
}

#[test]
fn recovery_logs_an_unlogged_claim_once_and_never_unspends_it() {
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    // A crash right after the claim: the claim exists, the `consumed` line does not.
    let claim = fx.dir.join("claims").join(format!("{id}.used"));
    std::fs::write(&claim, b"").unwrap();
    std::fs::set_permissions(&claim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let consumed_lines = |gate: &Gate| {
        gate.audit_records()
            .unwrap()
            .iter()
            .filter(|r| r.id == id && r.event == approval_gate::AuditEvent::Consumed)
            .count()
    };
    assert_eq!(consumed_lines(&fx.gate), 0);
    let recovery = fx.gate.recover().unwrap();
    assert_eq!(recovery.consumed, vec![id]);
    assert_eq!(consumed_lines(&fx.gate), 1);
    // Idempotent, also through a fresh open.
    assert!(fx.gate.recover().unwrap().is_empty());
    let reopened = Gate::open(&fx.dir).unwrap();
    assert!(reopened.recover().unwrap().is_empty());
    assert_eq!(consumed_lines(&reopened), 1);
    assert!(matches!(
        reopened.consume::<()>(id, &binding("a", None, None)),
        Err(Error::AlreadyConsumed(_))
    ));
    reopened.verify_audit().unwrap();
}

#[test]
fn recovery_marks_an_abandoned_execution_unknown_but_leaves_a_live_one_alone() {
    use approval_gate::{AuditEvent, Grant};
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    let gate = fx.gate.clone();
    // While the closure runs, recovery (as from another process) must not touch it.
    gate.execute_approved(id, &binding("a", None, None), |_: &Grant<()>| {
        let other = Gate::open(&fx.dir).unwrap();
        assert!(
            other.recover().unwrap().is_empty(),
            "a live execution was recovered"
        );
        Ok::<_, Error>(())
    })
    .unwrap();
    let finished = |gate: &Gate| {
        gate.audit_records()
            .unwrap()
            .iter()
            .filter(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
            .map(|r| r.details["outcome"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(finished(&fx.gate), ["ok"]);
    assert!(fx.gate.recover().unwrap().is_empty());

    // Now simulate a process that died between `execution_started` and its outcome: its
    // marker is left behind, unlocked, and the log has a start without a finish.
    let id = fx.approved("b", None, None);
    let grant = fx
        .gate
        .consume::<()>(id, &binding("b", None, None))
        .unwrap();
    drop(grant);
    let marker = fx.dir.join("claims").join(format!("{id}.exec"));
    std::fs::write(&marker, b"").unwrap();
    std::fs::set_permissions(&marker, std::fs::Permissions::from_mode(0o600)).unwrap();
    // No start line: nothing ran, so nothing to report, and the marker goes.
    assert!(fx.gate.recover().unwrap().is_empty());
    assert!(!marker.exists());
}

#[test]
fn a_claim_that_cannot_be_created_is_an_io_error_not_a_replay() {
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    // Without its directory the claim cannot be made, for a reason other than "it exists".
    std::fs::remove_dir(fx.dir.join("claims")).unwrap();
    let result = fx.gate.consume::<()>(id, &binding("a", None, None));
    assert!(matches!(result, Err(Error::Io { .. })), "{result:?}");
    let replays = fx
        .gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.event == AuditEvent::ConsumeReplayed)
        .count();
    assert_eq!(replays, 0, "not recorded as a replay");
}

#[test]
fn a_state_directory_swapped_for_a_symlink_after_open_is_refused_when_next_synced() {
    let fx = Fixture::new();
    let id = fx.approved("a", None, None);
    let claims = fx.dir.join("claims");
    let elsewhere = fx.tmp.path().join("elsewhere");
    std::fs::rename(&claims, &elsewhere).unwrap();
    symlink(&elsewhere, &claims).unwrap();
    // A claim is made unsynced, its journal entry synced: the consume goes through the link
    // (whoever can swap the store's directories can write its files anyway).
    let _grant = fx
        .gate
        .consume::<()>(id, &binding("a", None, None))
        .unwrap();
    // After a power loss the journal is replayed and what it made is synced, directories
    // included: there the link is refused, and the store does not open on it.
    approval_gate::fs_trace::reboot();
    let reopened = Gate::open(&fx.dir);
    // O_NOFOLLOW | O_DIRECTORY on a link fails (ENOTDIR); following it would succeed.
    assert!(
        matches!(
            &reopened,
            Err(Error::UnsafeState { .. }
                | Error::Io {
                    op: "opening directory",
                    ..
                })
        ),
        "{:?}",
        reopened.map(drop)
    );
}

#[test]
fn a_long_lived_request_is_archived_only_once_its_expiry_is_8_days_past() {
    let fx = Fixture::new();
    let week = Duration::from_secs(7 * 24 * 3600);
    let id = fx
        .gate
        .request_approval(approval_gate::NewRequest::new("long lived", "r").ttl(week))
        .unwrap()
        .request
        .id();
    fx.gate.deny(id, &Decision::by("h")).unwrap();
    // Created 9 days ago, expired 2 days ago: old enough by creation, not by expiry.
    fx.advance(9 * DAY);
    assert_eq!(
        fx.gate.plan_archive(8).unwrap().archived,
        Vec::<RequestId>::new()
    );
    assert_eq!(
        fx.gate.archive(8).unwrap().archived,
        Vec::<RequestId>::new()
    );
    assert!(fx.gate.status(id).is_ok(), "still live");
    // 15 days after creation the expiry is 8 days past.
    fx.advance(6 * DAY);
    assert_eq!(fx.gate.archive(8).unwrap().archived, vec![id]);
    assert!(matches!(fx.gate.status(id), Err(Error::Archived(_))));
}

#[test]
fn filing_again_after_expiry_or_a_decision_files_anew_even_with_a_stale_index_entry() {
    let fx = Fixture::new();
    let ask = || approval_gate::NewRequest::new("rotate the key", "r");
    // Expired while pending: the same ask is a new request, and the old one neither counts
    // nor is handed out again (its expiry is recorded when it is next read).
    let first = fx.gate.request_approval(ask()).unwrap().request.id();
    fx.advance(2 * 3600 * std::time::Duration::from_secs(1));
    let second = fx.gate.request_approval(ask()).unwrap();
    assert!(!second.deduplicated);
    assert_ne!(second.request.id(), first);
    assert_eq!(
        fx.gate.status(first).unwrap().effective_status(),
        EffectiveStatus::Expired
    );
    // Denied, with its index entry left behind (a crash between the decision and the
    // cleanup, here the index put back as it was): the same ask is still a new request, and
    // a listing drops the stale entry.
    let second = second.request.id();
    let queue = fx.dir.join("queue");
    let indexed = std::fs::read(&queue).unwrap();
    fx.gate.deny(second, &Decision::by("h")).unwrap();
    std::fs::write(&queue, &indexed).unwrap();
    assert!(names(&queue, second), "the stale entry is back");
    let third = fx.gate.request_approval(ask()).unwrap();
    assert!(
        !third.deduplicated,
        "a denied request is never handed out again"
    );
    assert_ne!(third.request.id(), second);
    let listed = fx.gate.list(ListFilter::Pending, None, 10).unwrap();
    assert_eq!(listed.items.len(), 1, "only the third is pending");
    assert!(
        !names(&queue, second),
        "the stale entry of a decided request is removed"
    );
}

/// Whether the queue index names `id`.
fn names(queue: &std::path::Path, id: RequestId) -> bool {
    std::fs::read_to_string(queue)
        .unwrap()
        .lines()
        .any(|line| line.starts_with(id.as_str()))
}

#[test]
fn an_index_entry_without_its_record_is_left_to_filing_not_removed_by_a_listing() {
    let fx = Fixture::new();
    // What a filing in progress looks like between its index entry and its record (and
    // before its journal entry: a new boot's replay checkpoints the journal first, so that
    // it does not make the record again).
    let id = fx.ask("in progress", None, None);
    approval_gate::fs_trace::reboot();
    drop(Gate::open(&fx.dir).unwrap());
    std::fs::remove_file(fx.dir.join("requests").join(format!("{id}.json"))).unwrap();
    let queue = fx.dir.join("queue");
    let page = fx.gate.list(ListFilter::Pending, None, 10).unwrap();
    assert!(page.items.is_empty());
    assert!(
        names(&queue, id),
        "a listing may run during a filing: it leaves the entry"
    );
    // A filing reads the queue index, not the queue: the entry stays until the index is
    // rebuilt, under the filing lock, when no filing can be in progress.
    let _filed = fx.ask("something else", None, None);
    assert!(names(&queue, id), "a filing does not read the queue");
    approval_gate::fs_trace::reboot();
    drop(Gate::open(&fx.dir).unwrap());
    assert!(
        !names(&queue, id),
        "rebuilding the index drops an entry without a record"
    );
}

/// Filing reads the queue index, not the queue: it opens as many files with 60 requests
/// pending and 40 decided as with none (counted by the store's own record, `fs_trace`).
#[test]
fn filing_opens_the_same_files_at_any_queue_length() {
    let limits = approval_gate::Limits::default().max_pending(1_000);
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::builder()
        .dir(dir.path().join("g"))
        .limits(limits)
        .open()
        .unwrap();
    let opens_to_file = |n: usize| {
        let before = approval_gate::fs_trace::opens();
        gate.request_approval(approval_gate::NewRequest::new(format!("ask {n}"), "q"))
            .unwrap();
        approval_gate::fs_trace::opens() - before
    };
    let _warm = opens_to_file(0);
    let empty = opens_to_file(1);
    for n in 2..102 {
        let id = gate
            .request_approval(approval_gate::NewRequest::new(format!("ask {n}"), "q"))
            .unwrap()
            .request
            .id();
        if n % 5 < 2 {
            gate.deny(id, &Decision::by("h")).unwrap();
        }
    }
    assert_eq!(
        gate.list(ListFilter::Pending, None, 1_000)
            .unwrap()
            .items
            .len(),
        62
    );
    assert_eq!(opens_to_file(200), empty);
}

#[test]
fn a_consume_whose_line_is_durable_leaves_the_marker_recovery_skips_it_by() {
    // `claims/<id>.logged` says the `consumed` line is written, so that recovery on every
    // open need not read the log for that claim (docs/authorization-states.md).
    let fx = Fixture::new();
    let id = fx.approved("pay", None, None);
    let grant = fx
        .gate
        .consume::<()>(id, &binding("pay", None, None))
        .unwrap();
    assert_eq!(grant.id(), id);
    assert!(fx.dir.join("claims").join(format!("{id}.used")).is_file());
    assert!(
        fx.dir.join("claims").join(format!("{id}.logged")).is_file(),
        "no marker: recovery would read the log for this claim on every open"
    );
    assert!(fx.gate.recover().unwrap().is_empty());
}

#[test]
fn processes_opening_a_fresh_store_at_once_all_succeed() {
    // Several agents and their servers may start together on a store nobody has made yet:
    // whoever loses the race to create a directory checks what the winner made and goes on.
    for round in 0..50 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("gate");
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            let opens: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        Gate::open(&dir).map(drop)
                    })
                })
                .collect();
            for open in opens {
                let opened = open.join().unwrap();
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        });
    }
}

/// What each operation costs in syncs on the directory store, counted from the store's own
/// record of its writes (`fs_trace`), for docs/benchmarks.md: a change here is a change of
/// the durability protocol, to be measured and written down there.
#[test]
fn the_syncs_of_each_operation_are_as_documented() {
    use approval_gate::fs_trace::{self, FsOp};

    let fx = Fixture::new();
    let syncs = |ops: &[FsOp]| {
        // Every file synced is the journal: one sync per step.
        for op in ops {
            if let FsOp::Fsync { path } | FsOp::SyncFs { path } = op {
                assert!(path.ends_with("journal.wal"), "{op:?} in {ops:#?}");
            }
        }
        let files = ops
            .iter()
            .filter(|op| matches!(op, FsOp::Fsync { .. }))
            .count();
        let dirs = ops
            .iter()
            .filter(|op| matches!(op, FsOp::FsyncDir { .. }))
            .count();
        (files, dirs)
    };
    // Not the store's first line: a fresh log's first append also makes its anchor.
    let _first = fx.ask("warm up", None, None);
    let (submitted, filing) = fs_trace::record(|| {
        fx.gate
            .request_approval(approval_gate::NewRequest::new("pay", "agent"))
            .unwrap()
    });
    let id = submitted.request.id();
    let ((), approving) =
        fs_trace::record(|| drop(fx.gate.approve(id, &Decision::by("alice")).unwrap()));
    let (ran, executing) = fs_trace::record(|| {
        fx.gate.execute_approved(
            id,
            &binding("pay", None, None),
            |_: &approval_gate::Grant<()>| Ok::<_, Error>(()),
        )
    });
    ran.unwrap();
    let other = fx.ask("deny me", None, None);
    let ((), denying) =
        fs_trace::record(|| drop(fx.gate.deny(other, &Decision::by("bob")).unwrap()));
    // (file fsyncs, directory fsyncs) per operation.
    assert_eq!(
        [
            syncs(&filing),
            syncs(&approving),
            syncs(&executing),
            syncs(&denying)
        ],
        [(1, 0), (1, 0), (2, 0), (1, 0)],
        "filing, approving, execute_approved (consume and start at once, finish), denying: the \
         journal's fdatasync, once a step"
    );
    // An execution creates one file, its claim; its two marks are names of the claim
    // (hard links), which cost no new inode.
    let made = |ops: &[FsOp]| {
        let files = ops
            .iter()
            .filter(|op| matches!(op, FsOp::Create { .. }))
            .count();
        let links = ops
            .iter()
            .filter(|op| matches!(op, FsOp::Link { .. }))
            .count();
        (files, links)
    };
    assert_eq!(made(&executing), (1, 2), "{executing:#?}");
    // A consume refused inside `execute_approved` (another action than the one approved)
    // is deferred like any, and its refusal's line is then flushed: one sync, nothing run.
    let refused = fx.approved("refuse me", None, None);
    let (ran, refusing) = fs_trace::record(|| {
        fx.gate.execute_approved(
            refused,
            &binding("another action", None, None),
            |_: &approval_gate::Grant<()>| -> Result<(), Error> {
                unreachable!("a refused consume runs nothing")
            },
        )
    });
    assert!(matches!(ran, Err(Error::ActionMismatch(_))), "{ran:?}");
    assert_eq!(syncs(&refusing), (1, 0), "{refusing:#?}");
}
