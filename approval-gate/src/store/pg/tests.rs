//! Unit tests of the PostgreSQL store (those that need a server skip without
//! `APPROVAL_GATE_TEST_PG`, and fail without it in CI).

use std::time::Duration;

use postgres::NoTls;

use super::schema::schema_sql;
use super::*;
use serde_json::Map;

use crate::audit::AuditEvent;
use crate::request::NewRequest;

/// The server of `APPROVAL_GATE_TEST_PG` (a superuser URL), which `.ci/run` sets; without
/// it these tests have nothing to run against, which in CI is a failure.
fn admin_url() -> Option<String> {
    let url = std::env::var("APPROVAL_GATE_TEST_PG").ok();
    assert!(
        url.is_some() || std::env::var_os("CI").is_none(),
        "APPROVAL_GATE_TEST_PG is not set: the PostgreSQL tests cannot run"
    );
    url
}

/// A new database with the schema, dropped at the end of `test`.
fn with_store(test: impl FnOnce(&PgStore) + std::panic::UnwindSafe) {
    let Some(admin) = admin_url() else { return };
    let name = format!("agunit_{}", std::process::id());
    let base = admin.rsplit_once('/').expect("a URL ending in /database").0;
    let url = format!("{base}/{name}");
    let run = |sql: String| {
        let admin = admin.clone();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&admin, NoTls).expect("connect");
            client.batch_execute(&sql).expect("admin SQL");
        })
        .join()
        .expect("admin thread");
    };
    run(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    run(format!("CREATE DATABASE {name}"));
    init(&url).expect("db init");
    let outcome = std::panic::catch_unwind(|| test(&PgStore::open(&url).expect("open")));
    run(format!("DROP DATABASE {name} WITH (FORCE)"));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn file(store: &PgStore, id: &str, action: &str) -> Result<Filed, Error> {
    let now = Timestamp::from_unix_millis(1_767_225_600_000);
    let request = Request::new(
        RequestId::parse(id).unwrap(),
        NewRequest::new(action, "unit"),
        now,
        Duration::from_secs(600),
        1,
    );
    let details = Map::new();
    let entry = Entry {
        ts: now,
        event: AuditEvent::Requested,
        details: &details,
    };
    let caps = Caps {
        max_pending: 100,
        max_requests: 100,
    };
    store.file(&request, caps, &entry)
}

/// The schema checks records against the library's own bounds, written in at install:
/// none is left unwritten, and each is the library's number.
#[test]
fn the_schema_carries_the_librarys_bounds() {
    let sql = schema_sql();
    assert!(!sql.contains("{{"), "a bound left unwritten");
    for (what, bound) in [
        (
            "MAX_ACTION_BYTES",
            crate::limits::MAX_ACTION_BYTES.to_string(),
        ),
        ("MAX_TTL_MS", crate::limits::MAX_TTL.as_millis().to_string()),
        (
            "MAX_DETAILS_BYTES",
            crate::limits::MAX_DETAILS_BYTES.to_string(),
        ),
    ] {
        let template = format!("{{{{{what}}}}}");
        assert!(super::schema::SCHEMA_SQL.contains(&template), "{what}");
        assert!(sql.contains(&bound), "{what} is {bound}");
    }
}

/// The database reads operation names with the library's grammar: the pattern it is
/// given agrees with `check_operation_name` on names either side of every rule.
#[test]
fn the_database_and_the_library_agree_on_operation_names() {
    let Some(admin) = admin_url() else { return };
    let names = [
        "payments.transfer",
        "a",
        "a_b.c9",
        "x.y.z",
        "Payments.transfer",
        "payments-transfer",
        "payments..x",
        ".x",
        "x.",
        "",
        "smtp:send",
        "a/b",
        "é",
        "a b",
        "A",
        "_",
        "0.0",
    ];
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&admin, NoTls).expect("connect");
        for name in names {
            let row = client
                .query_one(
                    "SELECT $1::text ~ $2::text",
                    &[&name, &crate::request::OPERATION_NAME_PATTERN],
                )
                .expect("match");
            let database: bool = row.get(0);
            let library = crate::check_operation_name(name).is_ok();
            assert_eq!(database, library, "{name:?}");
        }
    })
    .join()
    .expect("the check");
}

/// The one path that asks for another id: the database's unique key, not a check before
/// (two filings may pick the same id at once).
#[test]
fn a_taken_id_asks_for_another_and_files_nothing() {
    with_store(|store| {
        assert_eq!(file(store, "a1b2c3d4e5f6", "first").unwrap(), Filed::New);
        assert_eq!(
            file(store, "a1b2c3d4e5f6", "second").unwrap(),
            Filed::IdTaken
        );
        // The same ask again is found, not filed.
        assert_eq!(
            file(store, "0123456789ab", "first").unwrap(),
            Filed::Duplicate(RequestId::parse("a1b2c3d4e5f6").unwrap())
        );
        assert_eq!(store.scan(Scope::Live).unwrap().len(), 1);
        let lines = store.records().expect("the chain");
        assert_eq!(lines.len(), 1, "one requested line: {lines:?}");
    });
}
