//! A hostile agent holding only its own login (with the agent role) and psql tries to jam the
//! `PostgreSQL` store, and the owner of another team's store tries to approve here (issue 22,
//! findings 1, 2, 3 and 7). Each attack runs as the login it is meant for, on the CI cluster:
//!
//! - it cannot take advisory locks or create temporary objects, with which one session fills
//!   the cluster's shared lock table;
//! - a step it may take, left open inside `BEGIN`, holds a row, the audit head, a filing slot
//!   or a request's lock: the humans' and executors' calls that need them give up within the
//!   store's bound with a typed error naming the role and backend pid that held them, and
//!   change nothing; eight filings left open do not hold up a ninth for longer;
//! - it cannot run recovery, and an executor's recovery leaves a live execution alone;
//! - a role that owns another store and may create roles cannot make itself an approver here.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use approval_gate::{
    AuditEvent, Binding, Decision, Error, ErrorCode, Gate, Location, NewRequest, RequestId, Status,
};
use approval_gate_tests::backend::{Backend, Postgres};
use approval_gate_tests::pg::{admin_url, connect, on_own_thread, run_sql, url_with};
use postgres::Client;

use crate::postgres::{Logins, ask, gate_as};

/// Far beyond the store's bound on waits (a few seconds): a call still running after this
/// long is hung.
const HUNG: Duration = Duration::from_secs(90);

/// The store's default bound on a lock wait, and what a blocked call may take beyond it on a
/// loaded machine (finding the holder, a reconnect).
const BOUND: Duration = Duration::from_secs(5 + 15);

/// Runs `f` on a thread of its own and returns what it returns, or panics if it is still
/// running after [`HUNG`]: the test's own bound, which detects a hang instead of joining it.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> (T, Duration) {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HUNG) {
        Ok(value) => (value, started.elapsed()),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what} hung: still waiting after {HUNG:?}")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// The login's backend pid on `client`.
fn pid_of(client: &mut Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pg_backend_pid")
        .get(0)
}

/// Asserts that `result` is the typed refusal of a wait that ran out, naming the role and
/// backend pid that held what it waited for, and that it came within the bound.
fn assert_blocked<T: std::fmt::Debug>(
    what: &str,
    (result, took): (Result<T, Error>, Duration),
    role: &str,
    pid: i32,
) {
    let error = match result {
        Err(error) => error,
        Ok(value) => panic!("{what}: expected a blocked wait, got {value:?}"),
    };
    assert_eq!(error.code(), ErrorCode::Blocked, "{what}: {error}");
    assert!(!error.took_effect(), "{what}: {error}");
    match &error {
        Error::Blocked {
            role: Some(held_by),
            pid: Some(held_pid),
            ..
        } => assert_eq!(
            (held_by.as_str(), *held_pid),
            (role, pid),
            "{what}: the holder: {error}"
        ),
        other => panic!("{what}: the holder was not found: {other}"),
    }
    let text = error.to_string();
    assert!(
        text.contains(&format!("role {role} (backend pid {pid})"))
            && text.contains("nothing changed"),
        "{what}: {text}"
    );
    assert!(
        took < BOUND,
        "{what}: gave up after {took:?}, beyond the bound"
    );
}

/// Takes the lock a denial of `id` takes, as the agent may, and keeps it.
fn hold_request_lock(client: &mut Client, id: RequestId) {
    client
        .execute("SELECT approval_gate.hold(1095192400, $1)", &[&id.as_str()])
        .expect("the agent may take a request's lock, as a denial does");
}

/// The events of the lines added between two contents, sorted: each must be a refusal of a
/// blocked step (reason `blocked`), and nothing else may have changed.
fn blocked_lines(
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    after: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut lines: Vec<String> = approval_gate_tests::changed(before, after)
        .iter()
        .map(|key| {
            let line = String::from_utf8_lossy(&after[key]).into_owned();
            assert!(
                key.starts_with("audit/") && line.contains(r#""reason": "blocked""#),
                "the blocked steps changed {key}: {line}"
            );
            line.split(' ').next().unwrap_or_default().to_owned()
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn an_agent_idle_in_a_transaction_cannot_hang_approve_consume_or_verify() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent, None);
    let approver = gate_as(&store, &logins.approver, None);
    let executor = gate_as(&store, &logins.executor, None);
    let agent_url = url_with(&Postgres::url(&store), &logins.agent, None);

    let denied_by_jam = ask(&agent, "deploy one");
    let to_consume = ask(&agent, "deploy two");
    approver
        .approve(to_consume, &Decision::by("alice"))
        .expect("approve");
    let later = ask(&agent, "deploy three");

    // The agent denies its own request inside BEGIN, seals its audit row there (a step does
    // not seal in its own transaction, but any login of the store may seal), and sits there:
    // it holds that request's row and the chain's head row.
    let mut jam = connect(&agent_url);
    let jam_pid = pid_of(&mut jam);
    jam.batch_execute("BEGIN").unwrap();
    jam.execute(
        "SELECT approval_gate.decide($1, 'deny', 'denied',
             record || jsonb_build_object('status', 'denied', 'decidedAt', '2026-01-01T00:00:00.000Z',
                                          'decidedBy', 'agent', 'decisionReason', 'jam'),
             '{}'::jsonb, NULL)
         FROM approval_gate.requests WHERE id = $1",
        &[&denied_by_jam.as_str()],
    )
    .expect("an agent may deny its own request");
    jam.execute("SELECT approval_gate.seal(false)", &[])
        .expect("an agent may seal the chain");
    // A second agent session takes the lock a denial takes on an approved request, and keeps it.
    let mut lock_jam = connect(&agent_url);
    let lock_pid = pid_of(&mut lock_jam);
    hold_request_lock(&mut lock_jam, to_consume);

    let before = Postgres.contents(&store);
    let human = approver.clone();
    assert_blocked(
        "approve a request whose row the agent holds",
        bounded("approve", move || {
            human.approve(denied_by_jam, &Decision::by("alice"))
        }),
        &logins.agent,
        jam_pid,
    );
    let exec = executor.clone();
    assert_blocked(
        "consume an approval whose lock the agent holds",
        bounded("consume", move || {
            exec.consume::<()>(to_consume, &Binding::new("deploy two"))
                .map(drop)
        }),
        &logins.agent,
        lock_pid,
    );
    // Nothing changed but the lines that record the refused decision and the refused consume
    // (every refusal leaves one), left unsealed to the head row's holder.
    assert_eq!(
        blocked_lines(&before, &Postgres.contents(&store)),
        ["consume_refused", "decision_refused"]
    );
    // A step that commits meanwhile leaves its audit row to the head row's holder; reading
    // the chain waits for that holder, within the bound.
    approver
        .approve(later, &Decision::by("alice"))
        .expect("a step on another request goes on");
    // The bound is the store URL's to set (libpq's `options`); this reader waits one second.
    let impatient = format!(
        "{}?options=-c%20lock_timeout%3D1s",
        url_with(&Postgres::url(&store), &logins.approver, None)
    );
    let reader = open_as(&impatient);
    let (result, took) = bounded("verify", move || reader.verify_audit().map(drop));
    assert!(
        matches!(&result, Err(Error::Blocked { what, after, .. })
                 if what.contains("head row") && after == "1s"),
        "{result:?}"
    );
    assert_blocked(
        "audit verify while the agent holds the head row",
        (result, took),
        &logins.agent,
        jam_pid,
    );

    // Once the agent lets go, everything goes on, and the chain is whole.
    jam.batch_execute("ROLLBACK").unwrap();
    drop(lock_jam);
    approver
        .approve(denied_by_jam, &Decision::by("alice"))
        .expect("approve once the agent let go");
    let _grant = executor
        .consume::<()>(to_consume, &Binding::new("deploy two"))
        .expect("consume once the agent let go");
    assert_eq!(
        approver.verify_audit().expect("a whole chain").lines,
        9,
        "three requested, three approved, the blocked approval and consume refused, one consumed"
    );
    drop((agent, approver, executor, jam));
    drop(logins);
}

#[test]
fn eight_agent_filings_left_open_hold_up_a_ninth_no_longer_than_the_bound() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent, None);
    let template = ask(&agent, "the record the open filings copy");
    let agent_url = url_with(&Postgres::url(&store), &logins.agent, None);

    let mut open = Vec::new();
    for n in 0..8 {
        let mut client = connect(&agent_url);
        let pid = pid_of(&mut client);
        client.batch_execute("BEGIN").unwrap();
        // Not `000000000000`: that is the store's own id, which no request may have.
        let id = format!("0000000000a{n}");
        client
            .execute(
                "SELECT approval_gate.file_request(
                     record || jsonb_build_object('id', $2::text, 'action', 'open filing ' || $2),
                     payload, '{}'::jsonb, NULL, 1000, 1000, false)
                 FROM approval_gate.requests WHERE id = $1",
                &[&template.as_str(), &id],
            )
            .expect("an agent may file");
        open.push((client, pid));
    }
    let pids: Vec<i32> = open.iter().map(|(_, pid)| *pid).collect();

    let ninth = agent.clone();
    let (result, took) = bounded("a ninth filing", move || {
        ninth
            .request_approval(NewRequest::new("the ninth filing", "test"))
            .map(|filed| filed.request.id())
    });
    match result {
        // Another design may file it in the bound; this one's slots make it wait for one.
        Ok(_) => assert!(took < BOUND, "filed, after {took:?}"),
        Err(error) => {
            let held_by = pids
                .iter()
                .copied()
                .find(|pid| error.to_string().contains(&format!("pid {pid}")))
                .unwrap_or_else(|| panic!("the error names one of the open filings: {error}"));
            assert_blocked(
                "a ninth filing",
                (Err::<(), _>(error), took),
                &logins.agent,
                held_by,
            );
        }
    }
    drop(open);
    ask(&agent, "a filing once they let go");
    drop(agent);
    drop(logins);
}

#[test]
fn an_agent_cannot_run_recovery_and_an_executors_spares_a_live_execution() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent, None);
    let approver = gate_as(&store, &logins.approver, None);
    let executor = gate_as(&store, &logins.executor, None);
    let agent_url = url_with(&Postgres::url(&store), &logins.agent, None);
    let action = "pay 3 EUR while recovery is tried";
    let id = ask(&agent, action);
    approver.approve(id, &Decision::by("alice")).unwrap();

    let other_executor = gate_as(&store, &logins.executor, None);
    let outcome = executor.execute_approved(
        id,
        &Binding::new(action),
        |_: &approval_gate::Grant<serde_json::Value>| {
            // The agent calls recovery by hand while the executor runs.
            let url = agent_url.clone();
            let refused = on_own_thread(move || {
                connect(&url)
                    .query("SELECT approval_gate.recover_executions(NULL)", &[])
                    .err()
                    .and_then(|e| e.as_db_error().map(|db| db.code().code().to_owned()))
            });
            assert_eq!(
                refused.as_deref(),
                Some("42501"),
                "the agent role may not run recovery"
            );
            // Another executor's recovery: the execution is alive, so it is not touched.
            let recovered = other_executor.recover().expect("an executor recovers");
            assert!(
                recovered.unknown_outcomes.is_empty(),
                "a live execution was recorded unknown: {recovered:?}"
            );
            Ok::<_, Error>(())
        },
    );
    assert!(outcome.is_ok(), "{outcome:?}");
    let finished: Vec<_> = executor
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
        .collect();
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0].details["outcome"], "ok", "{finished:?}");
    executor.verify_audit().unwrap();
    drop((agent, approver, executor, other_executor));
    drop(logins);
}

/// What a cluster's administrator runs once in a database whose store a role other than a
/// superuser owns (docs/postgres.md): the advisory-lock functions are PUBLIC's no longer,
/// and the owner keeps what its functions use.
fn admin_prepares(url: &str, owner: &str) {
    run_sql(
        url,
        &format!(
            "DO $$
             DECLARE f regprocedure;
             BEGIN
                 FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                          WHERE p.pronamespace = 'pg_catalog'::regnamespace
                            AND p.proname ~ '^pg_(try_)?advisory_(xact_)?lock'
                 LOOP
                     EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
                     EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO {owner}', f);
                 END LOOP;
             END
             $$"
        ),
    );
}

#[test]
fn the_owner_of_another_store_cannot_make_itself_an_approver_here() {
    // Store A: its own database, owned (schema and all) by a role that may create roles.
    let admin = admin_url();
    let a = approval_gate_tests::pg::create_database();
    let a_name = a.rsplit('/').next().unwrap().to_owned();
    let owner_a = format!("{a_name}_owner");
    run_sql(
        admin,
        &format!(
            "CREATE ROLE {owner_a} LOGIN CREATEROLE; ALTER DATABASE {a_name} OWNER TO {owner_a}"
        ),
    );
    admin_prepares(&a, &owner_a);
    let a_as_owner = url_with(&a, &owner_a, None);
    let init = a_as_owner.clone();
    on_own_thread(move || approval_gate::postgres::init(&init)).expect("A's owner runs db init");

    // Store B: another team's, with its own logins.
    let b = Postgres.fresh();
    let logins = Logins::create(&b);
    let agent = gate_as(&b, &logins.agent, None);
    let approver = gate_as(&b, &logins.approver, None);
    let id = ask(&agent, "deploy on team B");

    // A's owner makes itself an approver (a cluster-wide role) and approves on B.
    let as_owner_a = url_with(&Postgres::url(&b), &owner_a, None);
    run_sql(
        &a_as_owner,
        &format!("GRANT approval_gate_approver TO {owner_a}"),
    );
    let intruder = open_as(&as_owner_a);
    let before = Postgres.contents(&b);
    let result = intruder.approve(id, &Decision::by("team B's approver"));
    assert!(
        matches!(result, Err(ref e) if e.code() == ErrorCode::NotPermitted),
        "A's owner approved on B: {result:?}"
    );
    assert_eq!(
        approval_gate_tests::changed(&before, &Postgres.contents(&b)),
        Vec::<String>::new(),
        "the refused approval changed nothing"
    );
    // The same membership counts in A, whose owner granted it.
    let a_admin = open_as(&a);
    let in_a = ask(&a_admin, "deploy on team A");
    let a_gate = open_as(&a_as_owner);
    a_gate
        .approve(in_a, &Decision::by("owner of A"))
        .expect("A's owner approves on its own store");

    // Nor can it log in as the group role itself.
    run_sql(&a_as_owner, "ALTER ROLE approval_gate_approver LOGIN");
    let as_group = url_with(&Postgres::url(&b), "approval_gate_approver", None);
    let result = Gate::builder()
        .store(Location::parse(&as_group).unwrap())
        .open()
        .and_then(|gate| gate.approve(id, &Decision::by("x")));
    run_sql(admin, "ALTER ROLE approval_gate_approver NOLOGIN");
    assert!(
        matches!(result, Err(ref e) if e.code() == ErrorCode::NotPermitted),
        "a login as the group role approved on B: {result:?}"
    );

    // B's own approver, granted by B's administrator, still approves.
    approver
        .approve(id, &Decision::by("alice"))
        .expect("B's approver approves");
    assert_eq!(
        agent.status(id).unwrap().request().status(),
        Status::Approved
    );
    drop((agent, approver, intruder, a_gate, a_admin));
    drop(logins);
    approval_gate_tests::pg::drop_database(&a);
    run_sql(admin, &format!("DROP ROLE IF EXISTS {owner_a}"));
}

fn open_as(url: &str) -> Gate {
    let url = url.to_owned();
    Gate::builder()
        .store(Location::parse(&url).expect("a store URL"))
        .open()
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// Each of these takes an entry in the cluster's shared lock table, or makes one: a session
/// looping over them fills it, and then every store of the cluster fails.
const LOCK_TABLE_FILLERS: [&str; 9] = [
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_advisory_lock(1, 2)",
    "SELECT pg_advisory_lock_shared(1)",
    "SELECT pg_try_advisory_lock(1)",
    "SELECT pg_try_advisory_lock_shared(1, 2)",
    "BEGIN; SELECT pg_advisory_xact_lock(1); COMMIT",
    "BEGIN; SELECT pg_try_advisory_xact_lock_shared(1); COMMIT",
    "CREATE TEMP TABLE filler (a int)",
    "CREATE TEMPORARY SEQUENCE filler",
];

#[test]
fn no_role_of_the_store_can_take_advisory_locks_or_create_temporary_objects() {
    // A database of its own: what `db init` revokes on the database itself is not copied
    // with it as a template.
    let url = approval_gate_tests::pg::create_database();
    let init = url.clone();
    on_own_thread(move || approval_gate::postgres::init(&init)).expect("db init");
    let name = url.rsplit('/').next().unwrap().to_owned();
    let logins = [
        (format!("{name}_agent"), "approval_gate_agent"),
        (format!("{name}_approver"), "approval_gate_approver"),
        (format!("{name}_executor"), "approval_gate_executor"),
    ];
    for (login, group) in &logins {
        run_sql(
            admin_url(),
            &format!("CREATE ROLE {login} LOGIN IN ROLE {group}"),
        );
    }
    for (login, _) in &logins {
        let url = url_with(&url, login, None);
        let login = login.clone();
        on_own_thread(move || {
            let mut client = connect(&url);
            for sql in LOCK_TABLE_FILLERS {
                let refused = client
                    .batch_execute(sql)
                    .err()
                    .and_then(|e| e.as_db_error().map(|db| db.code().code().to_owned()));
                let _ = client.batch_execute("ROLLBACK");
                assert_eq!(refused.as_deref(), Some("42501"), "{login}: {sql}");
            }
            let held: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'",
                    &[],
                )
                .unwrap()
                .get(0);
            assert_eq!(held, 0, "{login} holds no advisory lock");
        });
    }
    // What the store's own functions take, an agent takes one at a time: taking a second
    // request's lock lets go of the first.
    let agent_url = url_with(&url, &logins[0].0, None);
    on_own_thread(move || {
        let mut client = connect(&agent_url);
        for id in ["a1b2c3d4e5f6", "0123456789ab", "fedcba987654"] {
            client
                .execute("SELECT approval_gate.hold(1095192400, $1)", &[&id])
                .expect("a request's lock");
        }
        let held: Vec<i64> = client
            .query(
                "SELECT objid::bigint FROM pg_locks
                 WHERE pid = pg_backend_pid() AND locktype = 'advisory'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let last: i64 = client
            .query_one("SELECT hashtext('fedcba987654')::bigint & 4294967295", &[])
            .unwrap()
            .get(0);
        assert_eq!(held, vec![last], "one lock a session, the last taken");
        let other_class = client
            .execute("SELECT approval_gate.hold(7, 'a1b2c3d4e5f6')", &[])
            .err()
            .and_then(|e| e.as_db_error().map(|db| db.code().code().to_owned()));
        assert_eq!(
            other_class.as_deref(),
            Some("AG005"),
            "a lock the store does not use"
        );
    });
    approval_gate_tests::pg::drop_database(&url);
    run_sql(
        admin_url(),
        &format!(
            "DROP ROLE IF EXISTS {}, {}, {}",
            logins[0].0, logins[1].0, logins[2].0
        ),
    );
}

/// An owner who is not a superuser cannot revoke PUBLIC's advisory-lock functions: its
/// `db init` refuses, saying what to run, and leaves nothing behind; after a superuser ran
/// that, the same init succeeds.
#[test]
fn an_owners_db_init_refuses_while_the_lock_table_is_open() {
    let admin = admin_url();
    let url = approval_gate_tests::pg::create_database();
    let name = url.rsplit('/').next().unwrap().to_owned();
    let owner = format!("{name}_owner");
    run_sql(
        admin,
        &format!("CREATE ROLE {owner} LOGIN CREATEROLE; ALTER DATABASE {name} OWNER TO {owner}"),
    );
    let as_owner = url_with(&url, &owner, None);
    let init = as_owner.clone();
    let refused = on_own_thread(move || approval_gate::postgres::init(&init));
    match &refused {
        Err(Error::Database { problem, .. }) => assert!(
            problem.contains("pg_advisory") && problem.contains("superuser"),
            "{problem}"
        ),
        other => panic!("expected a refusal naming what to run, got {other:?}"),
    }
    let schema = on_own_thread({
        let url = url.clone();
        move || {
            connect(&url)
                .query_one(
                    "SELECT count(*) FROM pg_namespace WHERE nspname = 'approval_gate'",
                    &[],
                )
                .unwrap()
                .get::<_, i64>(0)
        }
    });
    assert_eq!(schema, 0, "a refused init leaves nothing behind");
    admin_prepares(&url, &owner);
    let init = as_owner.clone();
    on_own_thread(move || approval_gate::postgres::init(&init)).expect("then the owner's init");
    approval_gate_tests::pg::drop_database(&url);
    run_sql(admin, &format!("DROP ROLE IF EXISTS {owner}"));
}
