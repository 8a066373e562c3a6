//! What the `PostgreSQL` store keeps of what a caller says, attacked from the agent's own login
//! role in raw SQL (issue 22, findings 4, 5, 6 and 8): the database records who filed and who
//! decided whatever the caller wrote, holds the store's caps and longest time to live itself,
//! refuses a record or audit detail the library could not read back, counts distinct
//! principals, starts an execution only for the session that holds it, and lets the owner
//! re-anchor a chain whose head row disagrees with it.

use std::fmt::Write as _;

use approval_gate::{
    AuditEvent, Binding, Decision, Error, Gate, Location, NewRequest, RequestId, Status,
};
use approval_gate_tests::backend::{Backend, Postgres, Store};
use approval_gate_tests::pg::{admin_url, connect, on_own_thread, run_sql, url_with};
use postgres::Client;
use serde_json::{Value, json};

/// One login role for each group role, named after the store's database; dropped with it.
pub(crate) struct Logins {
    pub(crate) agent: String,
    pub(crate) approver: String,
    pub(crate) executor: String,
}

impl Logins {
    pub(crate) fn create(store: &Store) -> Self {
        let url = Postgres::url(store);
        let db = url
            .rsplit('/')
            .next()
            .and_then(|rest| rest.split('?').next())
            .expect("a database name")
            .to_owned();
        let logins = Self {
            agent: format!("{db}_agent"),
            approver: format!("{db}_approver"),
            executor: format!("{db}_executor"),
        };
        let mut sql = String::new();
        for (login, group) in [
            (&logins.agent, "approval_gate_agent"),
            (&logins.approver, "approval_gate_approver"),
            (&logins.executor, "approval_gate_executor"),
        ] {
            let _ = write!(sql, "CREATE ROLE {login} LOGIN IN ROLE {group};");
        }
        run_sql(admin_url(), &sql);
        logins
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        let sql = format!(
            "DROP ROLE IF EXISTS {}, {}, {}",
            self.agent, self.approver, self.executor
        );
        on_own_thread(move || {
            if let Ok(mut client) = Client::connect(admin_url(), postgres::NoTls) {
                let _ = client.batch_execute(&sql);
            }
        });
    }
}

fn gate_as(store: &Store, login: &str) -> Gate {
    let url = url_with(&Postgres::url(store), login, None);
    Gate::builder()
        .store(Location::parse(&url).expect("a store URL"))
        .open()
        .unwrap_or_else(|e| panic!("open the store as {login}: {e}"))
}

/// A connection as `login`, on a thread of its own for each call (`sql_as`).
fn sql_as(store: &Store, login: &str, sql: String) -> Result<Vec<Vec<Option<String>>>, String> {
    let url = url_with(&Postgres::url(store), login, None);
    on_own_thread(move || {
        let mut client = connect(&url);
        client
            .simple_query(&sql)
            .map(|messages| {
                messages
                    .into_iter()
                    .filter_map(|message| match message {
                        postgres::SimpleQueryMessage::Row(row) => Some(
                            (0..row.len())
                                .map(|i| row.get(i).map(str::to_owned))
                                .collect(),
                        ),
                        _ => None,
                    })
                    .collect()
            })
            .map_err(|e| {
                e.as_db_error().map_or_else(
                    || e.to_string(),
                    |db| format!("{} {}", db.code().code(), db.message()),
                )
            })
    })
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A well-formed new record as the library writes it.
fn record(id: &str, action: &str) -> Value {
    json!({
        "version": 1,
        "id": id,
        "action": action,
        "reason": "test",
        "requestedBy": null,
        "operation": null,
        "payloadDigest": null,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "expiresAt": "2026-01-01T01:00:00.000Z",
        "status": "pending",
        "decidedAt": null,
        "decisionReason": null,
        "decidedBy": null,
    })
}

/// `file_request` with the caller's own caps (far above the store's) and `details`.
fn file_sql(record: &Value, details: &str) -> String {
    format!(
        "SELECT approval_gate.file_request({}::jsonb, NULL::text, {}::jsonb, NULL::bigint, 1000000, 1000000, false)",
        quote(&record.to_string()),
        quote(details)
    )
}

fn id_of(n: usize) -> String {
    format!("{:012x}", 0xa000_0000_0000_usize + n)
}

fn count(store: &Store, sql: &str) -> i64 {
    Postgres::query(store, sql)[0][0]
        .as_deref()
        .expect("a count")
        .parse()
        .expect("a number")
}

fn pending(store: &Store) -> i64 {
    count(
        store,
        "SELECT count(*) FROM approval_gate.requests WHERE status = 'pending'",
    )
}

/// Finding 5: the agent's login role calls the filing function itself, naming caps far above
/// the store's and lifetimes far beyond the longest: the store's own limits (100 pending by
/// default, 7 days) hold, and a refused filing stores nothing.
#[test]
fn postgres_an_agent_filing_in_sql_is_held_to_the_stores_caps_and_longest_ttl() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);

    for (years, expires) in [
        ("100 years", "2126-01-01T00:00:00.000Z"),
        ("8 days", "2026-01-09T00:00:00.001Z"),
        ("1 ms", "2026-01-01T00:00:00.001Z"),
    ] {
        let mut long = record(&id_of(9000), "live forever");
        long["expiresAt"] = expires.into();
        let before = Postgres.contents(&store);
        let filed = sql_as(&store, &logins.agent, file_sql(&long, "{}"));
        assert!(filed.is_err(), "a request living {years} was filed");
        assert_eq!(
            approval_gate_tests::changed(&before, &Postgres.contents(&store)),
            Vec::<String>::new(),
            "a refused filing stores nothing"
        );
    }

    let mut refused = Vec::new();
    for n in 0..120 {
        if let Err(error) = sql_as(
            &store,
            &logins.agent,
            file_sql(&record(&id_of(n), &format!("flood {n}")), "{}"),
        ) {
            refused.push(error);
        }
    }
    assert_eq!(pending(&store), 100, "the store's cap of 100 holds");
    assert_eq!(refused.len(), 20, "{refused:?}");
    assert!(
        refused.iter().all(|e| e.starts_with("AG008")),
        "{refused:?}"
    );
    drop(logins);
}

/// A change to a well-formed record.
type Mutation = Box<dyn Fn(&mut Value)>;

/// Finding 5: a record the library could not read back (unknown keys, wrong types, a bad id,
/// oversize fields) is refused at filing, and nothing is stored.
#[test]
fn postgres_an_agent_cannot_file_a_record_the_library_cannot_read() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let id = id_of(1);
    let cases: Vec<(&str, Mutation)> = vec![
        ("an unknown key", Box::new(|r| r["sneaky"] = 1.into())),
        ("a numeric action", Box::new(|r| r["action"] = 5.into())),
        ("a null reason", Box::new(|r| r["reason"] = Value::Null)),
        (
            "an oversize action",
            Box::new(|r| r["action"] = "a".repeat(4097).into()),
        ),
        (
            "an oversize requester",
            Box::new(|r| r["requestedBy"] = "a".repeat(257).into()),
        ),
        (
            "a bad operation",
            Box::new(|r| r["operation"] = "smtp send".into()),
        ),
        ("a bad id", Box::new(|r| r["id"] = "ZZZZ".into())),
        ("version 2", Box::new(|r| r["version"] = 2.into())),
        (
            "a string quorum",
            Box::new(|r| r["requiredApprovals"] = "2".into()),
        ),
        (
            "a quorum of 99",
            Box::new(|r| r["requiredApprovals"] = 99.into()),
        ),
        (
            "a bad digest",
            Box::new(|r| r["payloadDigest"] = "not hex".into()),
        ),
        (
            "a bad timestamp",
            Box::new(|r| r["createdAt"] = "yesterday".into()),
        ),
        ("an array record", Box::new(|r| *r = json!([1, 2]))),
    ];
    let before = Postgres.contents(&store);
    for (what, mutate) in &cases {
        let mut bad = record(&id, "deploy");
        mutate(&mut bad);
        let filed = sql_as(&store, &logins.agent, file_sql(&bad, "{}"));
        assert!(
            filed.as_ref().is_err_and(|e| e.starts_with("AG011")),
            "a record with {what}: {filed:?}"
        );
    }
    assert_eq!(
        approval_gate_tests::changed(&before, &Postgres.contents(&store)),
        Vec::<String>::new(),
        "refused filings store nothing"
    );
    // The well-formed one files, and the library reads it.
    sql_as(
        &store,
        &logins.agent,
        file_sql(&record(&id, "deploy"), "{}"),
    )
    .expect("files");
    let gate = gate_as(&store, &logins.approver);
    let report = gate
        .status(RequestId::parse(&id).unwrap())
        .expect("readable");
    assert_eq!(report.request().action(), "deploy");
    let health = gate.check_health().expect("a health report");
    assert!(health.is_healthy(), "{health:?}");
    drop(gate);
    drop(logins);
}

/// Audit details no reader can read back: a number past f64, arrays nested deeper than any
/// JSON reader recurses, a megabyte of text, and an integer past 2^53.
fn poisons() -> Vec<String> {
    vec![
        r#"{"n":1e400}"#.to_owned(),
        format!(r#"{{"deep":{}{}}}"#, "[".repeat(5000), "]".repeat(5000)),
        format!(r#"{{"big":"{}"}}"#, "x".repeat(1 << 20)),
        r#"{"n":123456789012345678901234567890}"#.to_owned(),
    ]
}

/// A refused decision's line as `login` records it in SQL, which the database refuses with
/// SQLSTATE `code`.
fn refuse_as(store: &Store, login: &str, id: &str, details: &str, code: &str) {
    let sql = format!(
        "SELECT approval_gate.refuse('{id}', 'decision_refused', {}::jsonb, NULL::bigint)",
        quote(details)
    );
    let result = sql_as(store, login, sql);
    assert!(
        result.as_ref().is_err_and(|e| e.starts_with(code)),
        "{details} of {id}: {result:?}"
    );
}

/// Fails naming any function of the schema `login` may execute that `calls` does not list.
fn assert_may_execute_only(store: &Store, login: &str, calls: &[&str]) {
    let granted = Postgres::query(
        store,
        &format!(
            "SELECT p.proname FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'approval_gate' AND has_function_privilege('{login}', p.oid, 'EXECUTE')
             ORDER BY 1"
        ),
    );
    for known in granted.into_iter().filter_map(|r| r[0].clone()) {
        assert!(
            calls.contains(&known.as_str()),
            "the agent may execute {known}: add it to this test"
        );
    }
}

/// Files `id` as `agent` and approves it by an allowance planted in its window with `poison`
/// as details: refused, the details being unreadable.
fn allow_poisoned(store: &Store, agent: &str, id: &str, poison: &str) {
    let _ = Postgres::query(
        store,
        "INSERT INTO approval_gate.allowances (id, record, granted_by, granted_ms) VALUES
         ('a11a11a11a11', '{\"allowance\": {\"bounds\": {\"notBefore\": \"2000-01-01T00:00:00.000Z\",
          \"notAfter\": \"2100-01-01T00:00:00.000Z\"}}}', 'owner', 0) ON CONFLICT DO NOTHING",
    );
    sql_as(
        store,
        agent,
        file_sql(&record(id, &format!("allow {id}")), "{}"),
    )
    .expect("a clean filing");
    let allowed = sql_as(
        store,
        agent,
        format!(
            "SELECT approval_gate.allow_request('{id}', 'a11a11a11a11', {}::jsonb, NULL::bigint)",
            quote(poison)
        ),
    );
    assert!(
        allowed.as_ref().is_err_and(|e| e.starts_with("AG011")),
        "allow_request: {allowed:?}"
    );
}

/// Finding 6: every function the agent's role may execute, called with poisoned details;
/// afterwards the chain still verifies and reads for everyone.
#[test]
fn postgres_no_agent_call_can_poison_the_audit_chain() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = logins.agent.clone();
    // Takes a lock class and a key, no details: nothing of `hold` reaches the chain.
    let calls = [
        "allow_request",
        "decide",
        "file_request",
        "hold",
        "recover_executions",
        "refuse",
        "seal",
        "wake",
    ];
    assert_may_execute_only(&store, &agent, &calls);

    let mut n = 100;
    for poison in poisons() {
        allow_poisoned(&store, &agent, &id_of(n + 10_000), &poison);
        // Filing.
        n += 1;
        let filed = sql_as(
            &store,
            &agent,
            file_sql(&record(&id_of(n), &format!("poison {n}")), &poison),
        );
        assert!(
            filed.as_ref().is_err_and(|e| e.starts_with("AG011")),
            "{filed:?}"
        );
        // A denial of its own request, and an expiry past its time.
        for (step, status) in [("deny", "denied"), ("expire", "expired")] {
            n += 1;
            let id = id_of(n);
            sql_as(
                &store,
                &agent,
                file_sql(&record(&id, &format!("to {step} {n}")), "{}"),
            )
            .expect("a clean filing");
            if step == "expire" {
                let _ = Postgres::query(
                    &store,
                    &format!("UPDATE approval_gate.requests SET expires_ms = 1 WHERE id = '{id}'"),
                );
            }
            let stored = Postgres::query(
                &store,
                &format!("SELECT record::text FROM approval_gate.requests WHERE id = '{id}'"),
            )[0][0]
                .clone()
                .expect("a record");
            let mut decided: Value = serde_json::from_str(&stored).unwrap();
            decided["status"] = status.into();
            decided["decidedAt"] = "2026-01-01T00:00:01.000Z".into();
            decided["decidedBy"] = "agent".into();
            let decided = sql_as(
                &store,
                &agent,
                format!(
                    "SELECT approval_gate.decide('{id}', '{step}', '{status}', {}::jsonb, {}::jsonb, NULL::bigint)",
                    quote(&decided.to_string()),
                    quote(&poison)
                ),
            );
            assert!(
                decided.as_ref().is_err_and(|e| e.starts_with("AG011")),
                "{step}: {decided:?}"
            );
            // A refused decision's line takes only its three typed fields.
            refuse_as(&store, &agent, &id, &poison, "AG005");
        }
    }
    for call in [
        "SELECT approval_gate.recover_executions(NULL::bigint)",
        "SELECT approval_gate.seal(true)",
        "SELECT approval_gate.wake('a1b2c3d4e5f6')",
    ] {
        let _ = sql_as(&store, &agent, call.to_owned());
    }

    for login in [&logins.agent, &logins.approver, &logins.executor] {
        let gate = gate_as(&store, login);
        let summary = gate
            .verify_audit()
            .unwrap_or_else(|e| panic!("after the agent's calls, verify fails for {login}: {e}"));
        assert!(summary.lines >= 8, "{summary:?}");
        gate.audit_records().expect("the records read");
        // `doctor`'s check: every record readable, the chain whole.
        let health = gate.check_health().expect("a health report");
        assert!(health.is_healthy(), "{login}: {health:?}");
        drop(gate);
    }
    drop(logins);
}

/// Finding 4: a request filed by the agent's login claiming to be from the approver shows
/// the claim beside who filed it, in the record, the report's JSON and every audit line.
#[test]
fn postgres_who_filed_is_the_session_user_beside_the_claimed_requester() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent);
    let approver = gate_as(&store, &logins.approver);
    // What this test shows, the store declares: front ends believe the filer by it.
    assert!(agent.capabilities().filer.is_authenticated());

    let id = agent
        .request_approval(NewRequest::new("deploy", "test").requested_by(&logins.approver))
        .expect("file")
        .request
        .id();
    let report = approver.status(id).expect("status");
    let shown = serde_json::to_value(&report).expect("JSON");
    assert_eq!(shown["requestedBy"], logins.approver.as_str(), "the claim");
    assert_eq!(
        shown["filedBy"],
        logins.agent.as_str(),
        "who filed: {shown}"
    );

    // Raw SQL naming someone else as the filer is overruled.
    let mut forged = record(&id_of(7), "forged");
    forged["filedBy"] = logins.approver.clone().into();
    let _ = sql_as(
        &store,
        &logins.agent,
        file_sql(&forged, r#"{"sessionUser":"x"}"#),
    );
    let stored = Postgres::query(
        &store,
        &format!(
            "SELECT record->>'filedBy' FROM approval_gate.requests WHERE id = '{}'",
            id_of(7)
        ),
    );
    if let Some(row) = stored.first() {
        assert_eq!(row[0].as_deref(), Some(logins.agent.as_str()));
    }

    // A decision naming someone else in free-form details records the session user.
    let decided = Postgres::query(
        &store,
        &format!("SELECT record::text FROM approval_gate.requests WHERE id = '{id}'"),
    )[0][0]
        .clone()
        .unwrap();
    let mut decided: Value = serde_json::from_str(&decided).unwrap();
    decided["status"] = "approved".into();
    decided["decidedAt"] = "2026-01-01T00:00:01.000Z".into();
    decided["decidedBy"] = "the-ceo".into();
    sql_as(
        &store,
        &logins.approver,
        format!(
            "SELECT approval_gate.decide('{id}', 'approve', 'approved', {}::jsonb, {}::jsonb, NULL::bigint)",
            quote(&decided.to_string()),
            quote(r#"{"decidedBy":"the-ceo","sessionUser":"the-ceo","reason":"the-ceo said so"}"#)
        ),
    )
    .expect("the approver approves");
    let report = approver.status(id).expect("status");
    assert_eq!(report.request().status(), Status::Approved);
    assert_eq!(
        report.request().decided_by(),
        Some(logins.approver.as_str())
    );

    let records = approver.audit_records().expect("records");
    let mine: Vec<_> = records.iter().filter(|r| r.id == id).collect();
    assert_eq!(mine.len(), 2, "{mine:?}");
    for (line, who) in mine.iter().zip([&logins.agent, &logins.approver]) {
        assert_eq!(
            line.details.get("sessionUser").and_then(Value::as_str),
            Some(who.as_str()),
            "{line:?}"
        );
    }
    assert_eq!(
        mine[1].details.get("decidedBy").and_then(Value::as_str),
        Some(logins.approver.as_str())
    );
    drop((agent, approver));
    drop(logins);
}

/// Finding 8: two approvals by the same principal are one approver, not a quorum of two.
#[test]
fn postgres_the_database_counts_distinct_principals() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let id = id_of(3);
    let mut filed = record(&id, "pay 9 EUR");
    filed["requiredApprovals"] = 2.into();
    sql_as(&store, &logins.agent, file_sql(&filed, "{}")).expect("file");
    let stored = || -> Value {
        let text = Postgres::query(
            &store,
            &format!("SELECT record::text FROM approval_gate.requests WHERE id = '{id}'"),
        )[0][0]
            .clone()
            .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let approval = json!({
        "principal": "alice@example.com",
        "decidedBy": "x",
        "decidedAt": "2026-01-01T00:00:01.000Z",
        "signature": "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----",
    });
    let decide = |record: &Value, event: &str| {
        sql_as(
            &store,
            &logins.approver,
            format!(
                "SELECT approval_gate.decide('{id}', 'approve', '{event}', {}::jsonb, '{{}}'::jsonb, NULL::bigint)",
                quote(&record.to_string())
            ),
        )
    };
    let mut first = stored();
    first["approvals"] = json!([approval.clone()]);
    decide(&first, "approval_added").expect("the first approval is added");

    let mut second = stored();
    second["approvals"]
        .as_array_mut()
        .unwrap()
        .push(approval.clone());
    second["status"] = "approved".into();
    second["decidedAt"] = "2026-01-01T00:00:02.000Z".into();
    second["decidedBy"] = "x".into();
    let again = decide(&second, "approved");
    assert!(
        again.is_err(),
        "the same principal twice approved a request needing two"
    );
    assert_eq!(stored()["status"], "pending");
    drop(logins);
}

/// Finding 8: an executor starts an execution only on the session that holds its lock, the
/// one recovery watches; a start from any other session would be recorded as dead at once.
#[test]
fn postgres_start_execution_needs_the_executions_lock_held_by_this_session() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent);
    let approver = gate_as(&store, &logins.approver);
    let executor = gate_as(&store, &logins.executor);
    let id = agent
        .request_approval(NewRequest::new("deploy", "test"))
        .unwrap()
        .request
        .id();
    approver.approve(id, &Decision::by("x")).unwrap();
    let _grant = executor
        .consume::<()>(id, &Binding::new("deploy"))
        .expect("consume");
    let before = Postgres.contents(&store);
    let started = sql_as(
        &store,
        &logins.executor,
        format!("SELECT approval_gate.start_execution('{id}', '{{}}'::jsonb, NULL::bigint)"),
    );
    assert!(started.is_err(), "started without holding the lock");
    assert_eq!(
        approval_gate_tests::changed(&before, &Postgres.contents(&store)),
        Vec::<String>::new()
    );
    // Through the gate, which holds it, it starts.
    let outcome = executor.execute_approved(
        id,
        &Binding::new("deploy"),
        |_: &approval_gate::Grant<serde_json::Value>| Ok::<_, Error>(()),
    );
    // Consumed already: the gate refuses a second consume, but the store was not marked.
    assert!(
        matches!(outcome, Err(Error::AlreadyConsumed(_))),
        "{outcome:?}"
    );
    let other = agent
        .request_approval(NewRequest::new("deploy 2", "test"))
        .unwrap()
        .request
        .id();
    approver.approve(other, &Decision::by("x")).unwrap();
    executor
        .execute_approved(
            other,
            &Binding::new("deploy 2"),
            |_: &approval_gate::Grant<serde_json::Value>| Ok::<_, Error>(()),
        )
        .expect("an execution through the gate starts and finishes");
    drop((agent, approver, executor));
    drop(logins);
}

/// Finding 6: the owner re-anchors a chain whose head row disagrees with it, as on files;
/// the `reanchored` line says who did and what was found. A group role may not.
#[test]
fn postgres_the_owner_reanchors_a_cut_chain_and_the_line_names_who() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let owner = store.gate();
    for n in 0..3 {
        owner
            .request_approval(NewRequest::new(format!("deploy {n}"), "test"))
            .unwrap();
    }
    // Read once, so that every line is sealed (a burst of steps shares one seal) and line 3
    // is there to cut.
    assert_eq!(owner.verify_audit().expect("a whole chain").lines, 3);
    let _ = Postgres::query(&store, "DELETE FROM approval_gate.audit WHERE seq = 3");
    assert!(matches!(
        owner.verify_audit(),
        Err(Error::AuditBroken { line: 3, .. })
    ));
    let agent = gate_as(&store, &logins.agent);
    let refused = agent.reanchor_audit("mallory");
    assert!(refused.is_err(), "{refused:?}");

    let done = owner
        .reanchor_audit("owner-on-call")
        .expect("the owner re-anchors");
    assert_eq!(done.found_lines, 2);
    assert_eq!(done.previous_anchor, Some(3));
    assert_eq!(done.seq, 3);
    let summary = owner.verify_audit().expect("whole again");
    assert_eq!(summary.lines, 3);
    let records = owner.audit_records().unwrap();
    let line = records.last().unwrap();
    assert_eq!(line.event, AuditEvent::Reanchored);
    assert_eq!(line.id, RequestId::STORE);
    assert_eq!(line.details["by"], "owner-on-call");
    assert!(line.details["sessionUser"].is_string(), "{line:?}");
    assert_eq!(line.details["foundLines"], 2);
    // Appends work again.
    owner
        .request_approval(NewRequest::new("deploy 9", "test"))
        .unwrap();
    assert_eq!(owner.verify_audit().unwrap().lines, 4);
    drop((owner, agent));
    drop(logins);
}

/// Finding 5: the store's caps are the owner's, set by `db init` from the operator's
/// settings, changeable only by the owner, and each change is an audit line naming who.
#[test]
fn postgres_the_owner_sets_the_stores_caps_and_the_change_is_audited() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let url = Postgres::url(&store);
    let init = move |max_pending: usize| {
        let url = url.clone();
        let limits = approval_gate::Limits::default()
            .max_pending(max_pending)
            .max_requests(50);
        on_own_thread(move || approval_gate::postgres::init_with_limits(&url, &limits))
            .expect("db init")
    };
    init(3);
    init(3); // the same caps again: no second line
    for n in 0..5 {
        let _ = sql_as(
            &store,
            &logins.agent,
            file_sql(&record(&id_of(n), &format!("cap {n}")), "{}"),
        );
    }
    assert_eq!(pending(&store), 3, "the owner's cap of 3 holds");
    // A gate asking for more is held to the store's cap, and told it.
    let agent = gate_as(&store, &logins.agent);
    let refused = agent.request_approval(NewRequest::new("one more", "test"));
    assert!(
        matches!(
            refused,
            Err(Error::QueueFull {
                pending: 3,
                limit: 3
            })
        ),
        "{refused:?}"
    );
    // No group role may change them.
    for login in [&logins.agent, &logins.approver, &logins.executor] {
        let set = sql_as(
            &store,
            login,
            "SELECT approval_gate.set_limits(100000, 100000, NULL)".to_owned(),
        );
        assert!(
            set.as_ref().is_err_and(|e| e.starts_with("42501")),
            "{login}: {set:?}"
        );
    }
    init(4);
    let records = agent.audit_records().expect("records");
    let set: Vec<_> = records
        .iter()
        .filter(|r| r.event == AuditEvent::LimitsSet)
        .collect();
    assert_eq!(set.len(), 2, "100 to 3, then 3 to 4: {set:?}");
    assert_eq!(set[0].id, RequestId::STORE);
    assert_eq!(set[0].details["previousMaxPending"], 100);
    assert_eq!(set[0].details["maxPending"], 3);
    assert_eq!(set[1].details["maxPending"], 4);
    assert!(set[1].details["sessionUser"].is_string());
    agent.verify_audit().expect("whole");
    drop(agent);
    drop(logins);
}

/// Finding 14, from the agent's side: a refused decision leaves a line, and the agent, which
/// may record its own refusals, cannot flood the chain with them. Of a request the store has,
/// with one of the library's codes, one role's same refusal is kept once however often it is
/// tried or however its detail varies; anything else is refused and adds nothing.
#[test]
fn postgres_an_agent_cannot_flood_the_chain_with_refused_decisions() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent);
    let id = agent
        .request_approval(NewRequest::new("wire $100", "invoice"))
        .expect("filed")
        .request
        .id();
    // Through the gate: the agent's try at approving is refused and leaves one line.
    let refused = agent.approve(id, &Decision::by("alice"));
    assert!(
        matches!(refused, Err(Error::NotPermitted { .. })),
        "{refused:?}"
    );
    let lines = |store: &Store| {
        count(
            store,
            &format!(
                "SELECT count(*) FROM approval_gate.audit
                 WHERE event = 'decision_refused' AND id = '{id}'"
            ),
        )
    };
    assert_eq!(lines(&store), 1);
    let line = agent.audit_records().unwrap().pop().unwrap();
    assert_eq!(line.event, AuditEvent::DecisionRefused);
    assert_eq!(line.details["operation"], "approve");
    assert_eq!(line.details["reason"], "not_permitted");
    assert_eq!(line.details["sessionUser"], logins.agent.as_str());

    // In raw SQL: the same refusal a thousand times with a different detail each time.
    let mut batch = String::new();
    for n in 0..1000 {
        let _ = write!(
            batch,
            "SELECT approval_gate.refuse('{id}', 'decision_refused', \
             '{{\"operation\":\"approve\",\"reason\":\"not_permitted\",\"detail\":\"try {n}\"}}', NULL);"
        );
    }
    sql_as(&store, &logins.agent, batch).expect("a repeat is taken and kept once");
    assert_eq!(lines(&store), 1);

    // A made-up code, step or field, an oversize detail, an id no request has: refused.
    let big = "x".repeat(2000);
    for (details, rid, code) in [
        (
            r#"{"operation":"approve","reason":"try_1","detail":""}"#.to_owned(),
            id.to_string(),
            "AG005",
        ),
        (
            r#"{"operation":"consume","reason":"not_permitted","detail":""}"#.to_owned(),
            id.to_string(),
            "AG005",
        ),
        (
            r#"{"operation":"deny","reason":"not_permitted","detail":"","n":1}"#.to_owned(),
            id.to_string(),
            "AG005",
        ),
        (
            r#"{"operation":"deny","reason":"not_permitted"}"#.to_owned(),
            id.to_string(),
            "AG005",
        ),
        (
            format!(r#"{{"operation":"deny","reason":"not_permitted","detail":"{big}"}}"#),
            id.to_string(),
            "AG005",
        ),
        (
            r#"{"operation":"deny","reason":"not_permitted","detail":""}"#.to_owned(),
            id_of(7),
            "AG003",
        ),
    ] {
        refuse_as(&store, &logins.agent, &rid, &details, code);
    }
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM approval_gate.audit WHERE event = 'decision_refused'"
        ),
        1
    );
    // A different step's refusal is a new line; the chain verifies for everyone.
    sql_as(
        &store,
        &logins.agent,
        format!(
            "SELECT approval_gate.refuse('{id}', 'decision_refused', \
             '{{\"operation\":\"revoke\",\"reason\":\"wrong_state\",\"detail\":\"\"}}', NULL)"
        ),
    )
    .expect("another refusal");
    assert_eq!(lines(&store), 2);
    agent.verify_audit().expect("the chain verifies");
    drop(agent);
    drop(logins);
}

/// A change made to a record before it is handed to `decide`.
type Edit<'a> = &'a dyn Fn(&mut Value);

/// Finding 5, at a decision: `decide` checks only the fields a decision may change (the rest
/// must be the filed ones, which passed the whole check), and refuses a decision the library
/// could not read back (AG011) or one that touches anything else (AG005).
#[test]
fn postgres_a_decision_the_library_cannot_read_is_refused() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let id = id_of(2);
    sql_as(
        &store,
        &logins.agent,
        file_sql(&record(&id, "deploy"), "{}"),
    )
    .expect("files");
    let stored: Value = serde_json::from_str(
        Postgres::query(
            &store,
            &format!("SELECT record::text FROM approval_gate.requests WHERE id = '{id}'"),
        )[0][0]
            .as_deref()
            .expect("a record"),
    )
    .unwrap();
    let denial = |edit: &dyn Fn(&mut Value)| {
        let mut decided = stored.clone();
        decided["status"] = "denied".into();
        decided["decidedAt"] = "2026-01-01T00:00:01.000Z".into();
        decided["decidedBy"] = "agent".into();
        edit(&mut decided);
        sql_as(
            &store,
            &logins.agent,
            format!(
                "SELECT approval_gate.decide('{id}', 'deny', 'denied', {}::jsonb, '{{}}'::jsonb, NULL::bigint)",
                quote(&decided.to_string())
            ),
        )
    };
    let before = Postgres.contents(&store);
    let cases: [(&str, Edit, &str); 7] = [
        (
            "an oversize reason",
            &|r| r["decisionReason"] = "r".repeat(4097).into(),
            "AG011",
        ),
        ("a numeric decider", &|r| r["decidedBy"] = 7.into(), "AG011"),
        (
            "a decision time in words",
            &|r| r["decidedAt"] = "yesterday".into(),
            "AG011",
        ),
        (
            "no decision time",
            &|r| r["decidedAt"] = Value::Null,
            "AG011",
        ),
        (
            "an approval of a number",
            &|r| r["approvals"] = json!([1]),
            "AG011",
        ),
        (
            "an unknown status",
            &|r| r["status"] = "maybe".into(),
            "AG011",
        ),
        (
            "a changed action",
            &|r| r["action"] = "deploy everything".into(),
            "AG005",
        ),
    ];
    for (what, edit, code) in cases {
        let refused = denial(edit);
        assert!(
            refused.as_ref().is_err_and(|e| e.starts_with(code)),
            "a denial with {what}: {refused:?}"
        );
    }
    assert_eq!(
        approval_gate_tests::changed(&before, &Postgres.contents(&store)),
        Vec::<String>::new(),
        "refused decisions change nothing"
    );
    denial(&|_| {}).expect("the well-formed denial is taken");
    let gate = gate_as(&store, &logins.approver);
    let report = gate
        .status(RequestId::parse(&id).unwrap())
        .expect("readable");
    assert_eq!(report.request().status(), Status::Denied);
    drop(gate);
    drop(logins);
}
