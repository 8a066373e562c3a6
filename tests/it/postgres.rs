//! The `PostgreSQL` store's authority, tested as the logins it is meant for: each group role
//! may read and may write only through its own SECURITY DEFINER functions; through the gate,
//! a login can do only its role's steps, and a refused step changes nothing; a login's
//! decisions carry its session user and the database's clock, whatever the gate says; and
//! the audit chain with its head row shows an edited, deleted, swapped or cut row.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use approval_gate::{
    AuditEvent, AuditRecord, Binding, Decision, Error, Gate, Location, ManualClock, NewRequest,
    RequestId, Status, Timestamp,
};
use approval_gate_tests::backend::{Backend, Postgres, Store};
use approval_gate_tests::pg::{admin_url, connect, on_own_thread, url_with};
use approval_gate_tests::{Subject, T0};
use postgres::Client;

const AGENT: &str = "approval_gate_agent";
const APPROVER: &str = "approval_gate_approver";
const EXECUTOR: &str = "approval_gate_executor";
/// A well-formed id no request has.
const NO_SUCH_ID: &str = "a1b2c3d4e5f6";

/// One login role for each group role, named after the store's database (roles are
/// cluster-wide and tests run in parallel); dropped with this value.
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
        for (login, group) in logins.each() {
            let _ = write!(sql, "CREATE ROLE {login} LOGIN IN ROLE {group};");
        }
        approval_gate_tests::pg::run_sql(admin_url(), &sql);
        logins
    }

    /// Each login with its group role.
    fn each(&self) -> [(&str, &'static str); 3] {
        [
            (self.agent.as_str(), AGENT),
            (self.approver.as_str(), APPROVER),
            (self.executor.as_str(), EXECUTOR),
        ]
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        let sql = format!(
            "DROP ROLE IF EXISTS {}, {}, {}",
            self.agent, self.approver, self.executor
        );
        // Best effort: a leftover role is harmless, a panic in a drop is not.
        on_own_thread(move || {
            if let Ok(mut client) = Client::connect(admin_url(), postgres::NoTls) {
                let _ = client.batch_execute(&sql);
            }
        });
    }
}

/// A gate on `store` as `login`, on `clock` (default: the system clock).
pub(crate) fn gate_as(store: &Store, login: &str, clock: Option<ManualClock>) -> Gate {
    let url = url_with(&Postgres::url(store), login, None);
    let mut builder = Gate::builder().store(Location::parse(&url).expect("a store URL"));
    if let Some(clock) = clock {
        builder = builder.clock(clock);
    }
    builder
        .open()
        .unwrap_or_else(|e| panic!("open the store as {login}: {e}"))
}

/// The SQLSTATE a statement is refused with, or `None` if it succeeds.
fn sqlstate(client: &mut Client, sql: &str) -> Option<String> {
    client
        .batch_execute(sql)
        .err()
        .map(|e| code_of(&e).unwrap_or_else(|| panic!("{sql}: not a database error: {e}")))
}

fn code_of(error: &postgres::Error) -> Option<String> {
    error.as_db_error().map(|db| db.code().code().to_owned())
}

fn assert_refused(client: &mut Client, login: &str, sql: &str, code: &str) {
    assert_eq!(
        sqlstate(client, sql).as_deref(),
        Some(code),
        "{login}: {sql} must be refused with SQLSTATE {code}"
    );
}

/// Whether `result` is a refusal for the login's role.
fn not_permitted<T: std::fmt::Debug>(what: &str, result: &Result<T, Error>) {
    assert!(
        matches!(result, Err(Error::NotPermitted { .. })),
        "{what}: expected NotPermitted, got {result:?}"
    );
}

pub(crate) fn ask(gate: &Gate, action: &str) -> RequestId {
    gate.request_approval(NewRequest::new(action, "test"))
        .expect("file a request")
        .request
        .id()
}

/// What one group role may and may not call: functions it may not execute at all (42501),
/// steps of `decide` (or refusals to record) it may not take (AG004), and calls it may make,
/// which pass the role check and stop at the missing request (AG003), or for `refuse` of a
/// consume, which records refusals of any id, at an id that is not one (AG005).
struct Plan {
    group: &'static str,
    not_granted: &'static [&'static str],
    not_its_step: &'static [&'static str],
    allowed: &'static [&'static str],
}

const PLANS: [Plan; 3] = [
    Plan {
        group: AGENT,
        not_granted: &["claim", "start_execution", "finish_execution", "archive"],
        not_its_step: &["approve", "revoke", "refuse"],
        allowed: &["deny", "expire", "refuse_decision"],
    },
    Plan {
        group: APPROVER,
        not_granted: &[
            "file_request",
            "claim",
            "start_execution",
            "finish_execution",
        ],
        not_its_step: &["refuse"],
        allowed: &[
            "approve",
            "deny",
            "revoke",
            "expire",
            "archive",
            "refuse_decision",
        ],
    },
    Plan {
        group: EXECUTOR,
        not_granted: &["file_request", "archive"],
        not_its_step: &["approve", "deny", "revoke"],
        allowed: &[
            "expire",
            "claim",
            "refuse",
            "refuse_decision",
            "start_execution",
            "finish_execution",
        ],
    },
];

const TABLES: [(&str, &str); 4] = [
    ("requests", "status"),
    ("audit", "line"),
    ("audit_head", "hash"),
    ("meta", "value"),
];

/// EXECUTE on these is revoked from everyone: only the schema's own functions call them.
const HELPERS: [&str; 10] = [
    "SELECT approval_gate.append(0, 'requested', 'a1b2c3d4e5f6', '{}'::jsonb)",
    "SELECT approval_gate.queue(0)",
    "SELECT approval_gate.now_ms(0)",
    "SELECT approval_gate.who('somebody')",
    "SELECT approval_gate.locked('a1b2c3d4e5f6')",
    "SELECT approval_gate.require('anything', ARRAY['approval_gate_agent'])",
    "SELECT approval_gate.trusted()",
    "SELECT approval_gate.ts_text(0)",
    "SELECT approval_gate.ms_of('2026-01-01T00:00:00.000Z')",
    "SELECT approval_gate.wrong_state('a', 'b', 'c')",
];

/// A call of a step function (or of `decide` with the step `function`) on a missing request.
fn call(function: &str) -> String {
    let rid = format!("'{NO_SUCH_ID}'");
    match function {
        "file_request" => {
            "SELECT approval_gate.file_request('{}'::jsonb, NULL::text, '{}'::jsonb, NULL::bigint, 1, 1, false)"
                .to_owned()
        }
        "refuse" => "SELECT approval_gate.refuse('not an id', 'consume_refused', '{}'::jsonb, NULL::bigint)"
            .to_owned(),
        "refuse_decision" => format!(
            "SELECT approval_gate.refuse({rid}, 'decision_refused', \
             '{{\"operation\":\"deny\",\"reason\":\"wrong_state\",\"detail\":\"\"}}'::jsonb, NULL::bigint)"
        ),
        "claim" | "start_execution" | "finish_execution" | "archive" => {
            format!("SELECT approval_gate.{function}({rid}, '{{}}'::jsonb, NULL::bigint)")
        }
        step => format!(
            "SELECT approval_gate.decide({rid}, '{step}', '{step}', '{{}}'::jsonb, '{{}}'::jsonb, NULL::bigint)"
        ),
    }
}

/// Connects as `login` directly and checks every refusal and permission of its `plan`.
fn check_login(url: &str, login: &str, plan: &Plan) {
    let mut client = connect(url);
    let user: String = client
        .query_one("SELECT session_user::text", &[])
        .expect("session_user")
        .get(0);
    assert_eq!(user, login);
    for (table, column) in TABLES {
        let t = format!("approval_gate.{table}");
        assert_eq!(
            sqlstate(&mut client, &format!("SELECT count(*) FROM {t}")),
            None,
            "{login} may read {t}"
        );
        for sql in [
            format!("INSERT INTO {t} DEFAULT VALUES"),
            format!("UPDATE {t} SET {column} = {column}"),
            format!("DELETE FROM {t}"),
            format!("TRUNCATE {t}"),
        ] {
            assert_refused(&mut client, login, &sql, "42501");
        }
    }
    // On a connection of its own: after a refused COPY the client's protocol state is out
    // of step with the server's.
    let mut copier = connect(url);
    let copy = match copier.copy_in("COPY approval_gate.audit FROM STDIN") {
        Err(e) => code_of(&e),
        Ok(mut writer) => {
            let _ = writer.write_all(b"999\ta1b2c3d4e5f6\trequested\t{}\n");
            writer.finish().err().and_then(|e| code_of(&e))
        }
    };
    assert_eq!(copy.as_deref(), Some("42501"), "{login}: COPY FROM STDIN");
    for sql in [
        "SELECT nextval('approval_gate.audit_pos')",
        "SELECT setval('approval_gate.audit_pos', 1)",
        "CREATE TABLE approval_gate.x (a int)",
        "CREATE FUNCTION approval_gate.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    ] {
        assert_refused(&mut client, login, sql, "42501");
    }
    for sql in HELPERS {
        assert_refused(&mut client, login, sql, "42501");
    }
    for function in plan.not_granted {
        assert_refused(&mut client, login, &call(function), "42501");
    }
    for step in plan.not_its_step {
        assert_refused(&mut client, login, &call(step), "AG004");
    }
    // The refusals above are the roles', not a schema nobody can use.
    for function in plan.allowed {
        let code = if *function == "refuse" {
            "AG005"
        } else {
            "AG003"
        };
        assert_refused(&mut client, login, &call(function), code);
    }
}

#[test]
fn each_role_can_write_only_through_its_own_functions() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    // Something in every table, so a refused UPDATE or DELETE would have had rows to touch.
    let owner = store.gate();
    let id = ask(&owner, "deploy");
    owner.approve(id, &Decision::by("owner")).expect("approve");
    let before = Postgres.contents(&store);

    for (login, group) in logins.each() {
        let plan = PLANS
            .iter()
            .find(|plan| plan.group == group)
            .expect("a plan for every group");
        let (url, login) = (
            url_with(&Postgres::url(&store), login, None),
            login.to_owned(),
        );
        on_own_thread(move || check_login(&url, &login, plan));
    }

    // The one sequence numbers audit rows as they are appended; no group role may use it.
    assert_eq!(
        Postgres::query(
            &store,
            "SELECT c.relname, bool_or(has_sequence_privilege(r, c.oid, 'USAGE, SELECT, UPDATE'))
             FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace,
             unnest(ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor',
                          'approval_gate_notifier']) r
             WHERE n.nspname = 'approval_gate' AND c.relkind = 'S'
             GROUP BY c.relname"
        ),
        vec![vec![Some("audit_pos".to_owned()), Some("f".to_owned())]],
        "the schema's only sequence is the audit rows', and no group role may use it"
    );
    assert_eq!(
        approval_gate_tests::changed(&before, &Postgres.contents(&store)),
        Vec::<String>::new(),
        "refused statements changed nothing"
    );
    drop(owner);
    drop(logins);
}

/// Runs `f`, expecting it to be refused as not permitted and to change no record in `store`:
/// the only change is the refusal's own audit line, `decision_refused` for a decision (once:
/// a second try of the same adds none), none for a consume (only executors record those).
fn refused_unchanged<T: std::fmt::Debug>(
    store: &Store,
    what: &str,
    f: impl Fn() -> Result<T, Error>,
) {
    let before: BTreeMap<String, Vec<u8>> = Postgres.contents(store);
    not_permitted(what, &f());
    let after = Postgres.contents(store);
    let added: Vec<String> = approval_gate_tests::changed(&before, &after)
        .into_iter()
        .filter(|key| key != "head")
        .map(|key| {
            assert!(
                key.starts_with("audit/") && !before.contains_key(&key),
                "{what}: {key}"
            );
            let line: serde_json::Value = serde_json::from_slice(&after[&key]).unwrap();
            assert_eq!(line["reason"], "not_permitted", "{what}: {line}");
            line["event"].as_str().unwrap().to_owned()
        })
        .collect();
    let expected: &[&str] = if what.ends_with("consumes") {
        &[]
    } else {
        &["decision_refused"]
    };
    assert_eq!(added, expected, "{what}: the refusal's lines");
    not_permitted(what, &f());
    assert_eq!(
        approval_gate_tests::changed(&after, &Postgres.contents(store)),
        Vec::<String>::new(),
        "{what}: the same refusal again adds no line"
    );
}

#[test]
fn through_the_gate_an_agent_cannot_approve_consume_or_revoke_and_nothing_changes() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let agent = gate_as(&store, &logins.agent, None);
    let approver = gate_as(&store, &logins.approver, None);
    let executor = gate_as(&store, &logins.executor, None);
    let by = Decision::by("someone");

    let one = ask(&agent, "deploy one");
    refused_unchanged(&store, "agent approves", || agent.approve(one, &by));
    assert_eq!(
        agent.status(one).unwrap().request().status(),
        Status::Pending
    );
    approver.approve(one, &by).expect("the approver approves");

    let binding = Binding::new("deploy one");
    refused_unchanged(&store, "agent consumes", || {
        agent.consume::<()>(one, &binding)
    });
    assert!(!Postgres.claimed(&store, one));
    refused_unchanged(&store, "approver consumes", || {
        approver.consume::<()>(one, &binding)
    });
    assert!(!Postgres.claimed(&store, one));

    let two = ask(&agent, "deploy two");
    refused_unchanged(&store, "executor approves", || executor.approve(two, &by));
    refused_unchanged(&store, "executor denies", || executor.deny(two, &by));

    let _grant = executor
        .consume::<()>(one, &binding)
        .expect("the executor consumes");
    assert!(Postgres.claimed(&store, one));
    let again = executor.consume::<()>(one, &binding);
    assert!(
        matches!(again, Err(Error::AlreadyConsumed(id)) if id == one),
        "{again:?}"
    );
    let records = executor.audit_records().unwrap();
    assert_eq!(
        records
            .iter()
            .filter(|r| r.id == one && r.event == AuditEvent::Consumed)
            .count(),
        1
    );
    assert!(
        records
            .iter()
            .any(|r| r.id == one && r.event == AuditEvent::ConsumeReplayed)
    );

    let three = ask(&agent, "deploy three");
    approver.approve(three, &by).expect("the approver approves");
    refused_unchanged(&store, "agent revokes", || agent.revoke(three, &by));
    refused_unchanged(&store, "executor revokes", || executor.revoke(three, &by));
    assert_eq!(
        agent.status(three).unwrap().request().status(),
        Status::Approved
    );
    approver.revoke(three, &by).expect("the approver revokes");
    assert_eq!(
        agent.status(three).unwrap().request().status(),
        Status::Revoked
    );

    let denied = agent.deny(two, &by).expect("an agent may deny");
    assert_eq!(denied.request().status(), Status::Denied);
    assert_eq!(
        agent.status(two).unwrap().request().status(),
        Status::Denied
    );
    agent.verify_audit().expect("the chain is whole");

    drop((agent, approver, executor));
    drop(logins);
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("fits")
}

fn assert_now(what: &str, ts: Timestamp) {
    let off = (ts.unix_millis() - now_ms()).abs();
    assert!(
        off < 5_000,
        "{what} is {ts:?}, {off} ms from the system clock"
    );
}

fn last_of(records: &[AuditRecord], id: RequestId, event: AuditEvent) -> AuditRecord {
    records
        .iter()
        .rev()
        .find(|r| r.id == id && r.event == event)
        .unwrap_or_else(|| panic!("no {event:?} record for {id}"))
        .clone()
}

#[test]
fn decided_by_is_the_session_user_and_times_are_the_databases() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let five_years = 5 * 365 * 24 * 3600 * 1000;
    let past = ManualClock::new(Timestamp::from_unix_millis(T0.unix_millis() - five_years));
    let agent = gate_as(&store, &logins.agent, Some(past.clone()));
    let approver = gate_as(&store, &logins.approver, Some(past.clone()));

    let id = ask(&agent, "deploy");
    let report = approver
        .approve(id, &Decision::by("somebody-else"))
        .expect("approve");
    assert_eq!(
        report.request().decided_by(),
        Some(logins.approver.as_str())
    );
    let stored = approver.status(id).expect("status");
    let request = stored.request();
    assert_eq!(request.status(), Status::Approved);
    assert_eq!(request.decided_by(), Some(logins.approver.as_str()));
    assert_now("decidedAt", request.decided_at().expect("decided"));
    assert_now("createdAt", request.created_at());
    assert_eq!(
        request.created_at().millis_until(request.expires_at()),
        3_600_000,
        "the default time to live, from the database's filing time"
    );
    let records = approver.audit_records().unwrap();
    let requested = last_of(&records, id, AuditEvent::Requested);
    assert_now("the requested line", requested.ts);
    let approved_line = last_of(&records, id, AuditEvent::Approved);
    assert_now("the approved line", approved_line.ts);
    assert_eq!(
        approved_line
            .details
            .get("decidedBy")
            .and_then(|v| v.as_str()),
        Some(logins.approver.as_str())
    );

    // The database's clock decides an approval's expiry, not the executor's.
    let agent_now = gate_as(&store, &logins.agent, None);
    let short = agent_now
        .request_approval(
            NewRequest::new("deploy soon", "test").ttl(approval_gate::limits::MIN_TTL),
        )
        .expect("file")
        .request
        .id();
    approver
        .approve(short, &Decision::by("x"))
        .expect("approve");
    let filed = approver.status(short).unwrap().request().created_at();
    assert_now("the short request's createdAt", filed);
    let due =
        filed.unix_millis() + i64::try_from(approval_gate::limits::MIN_TTL.as_millis()).unwrap();
    let wait = u64::try_from(due + 1_500 - now_ms()).unwrap_or(0);
    std::thread::sleep(Duration::from_millis(wait));
    let stuck = ManualClock::new(filed);
    let executor = gate_as(&store, &logins.executor, Some(stuck));
    let refused = executor.consume::<()>(short, &Binding::new("deploy soon"));
    assert!(
        matches!(refused, Err(Error::ApprovalExpired { id, .. }) if id == short),
        "{refused:?}"
    );
    assert!(!Postgres.claimed(&store, short));
    let records = executor.audit_records().unwrap();
    let line = last_of(&records, short, AuditEvent::ConsumeRefused);
    assert_eq!(
        line.details.get("reason").and_then(|v| v.as_str()),
        Some("approval_expired"),
        "{line:?}"
    );
    assert_now("the consume_refused line", line.ts);
    assert!(
        !records
            .iter()
            .any(|r| r.id == short && r.event == AuditEvent::Consumed)
    );

    drop((agent, agent_now, approver, executor));
    drop(logins);
}

/// A fresh store (superuser gate) with six audit lines; the store and the subject.
fn six_lines() -> Subject {
    let subject = Subject::new(&Postgres);
    let a = subject.approved("deploy a", None, None); // 1, 2
    let b = subject.ask("deploy b", None, None); // 3
    subject.gate.deny(b, &Decision::by("tester")).unwrap(); // 4
    let _grant = subject
        .gate
        .consume::<()>(a, &Binding::new("deploy a"))
        .unwrap(); // 5
    let _ = subject.ask("deploy c", None, None); // 6
    let summary = subject.gate.verify_audit().expect("a whole chain");
    assert_eq!(summary.lines, 6);
    subject
}

fn broken_at<T: std::fmt::Debug>(result: Result<T, Error>) -> u64 {
    match result {
        Err(Error::AuditBroken { line, .. }) => line,
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

fn line_of(store: &Store, seq: u64) -> String {
    Postgres::query(
        store,
        &format!("SELECT line FROM approval_gate.audit WHERE seq = {seq}"),
    )[0][0]
        .clone()
        .expect("a line")
}

/// Changes one ASCII letter or digit near the middle of the row's line.
fn edit_line(store: &Store, seq: u64) {
    let mut line = line_of(store, seq).into_bytes();
    let at = (line.len() / 2..line.len())
        .find(|&i| line[i].is_ascii_alphanumeric())
        .expect("a letter past the middle");
    line[at] = if line[at] == b'a' { b'b' } else { b'a' };
    let line = String::from_utf8(line).expect("UTF-8");
    let _ = Postgres::query(
        store,
        &format!(
            "UPDATE approval_gate.audit SET line = '{}' WHERE seq = {seq}",
            line.replace('\'', "''")
        ),
    );
}

fn rows(store: &Store) -> String {
    Postgres::query(store, "SELECT count(*) FROM approval_gate.audit")[0][0]
        .clone()
        .expect("a count")
}

#[test]
fn audit_verify_detects_an_edited_deleted_or_reordered_row_and_a_cut_tail() {
    // (a) An edited middle row: verify finds it. Filing checks only the last row against
    // the head row (`check_appendable`), so it still appends, and verify still finds it.
    let s = six_lines();
    edit_line(&s.store, 3);
    assert_eq!(broken_at(s.gate.verify_audit()), 3);
    let _ = s.ask("deploy d", None, None);
    assert_eq!(rows(&s.store), "7");
    assert_eq!(broken_at(s.gate.verify_audit()), 3);
    // An edited last row: verify finds it, and filing refuses before writing anything.
    let s = six_lines();
    edit_line(&s.store, 6);
    assert_eq!(broken_at(s.gate.verify_audit()), 6);
    let before = Postgres.contents(&s.store);
    assert_eq!(
        broken_at(s.gate.request_approval(NewRequest::new("deploy d", "test"))),
        6
    );
    assert_eq!(before, Postgres.contents(&s.store));

    // (b) A deleted middle row.
    let s = six_lines();
    let _ = Postgres::query(&s.store, "DELETE FROM approval_gate.audit WHERE seq = 3");
    assert_eq!(broken_at(s.gate.verify_audit()), 3);

    // (c) Two rows' lines swapped: seen at the first.
    let s = six_lines();
    let _ = Postgres::query(
        &s.store,
        "UPDATE approval_gate.audit a SET line = b.line FROM approval_gate.audit b
         WHERE (a.seq, b.seq) IN ((2, 3), (3, 2))",
    );
    assert_eq!(broken_at(s.gate.verify_audit()), 2);

    // (d) The last row deleted, the head row still naming it: the cut tail is seen, at the
    // missing line, and filing refuses.
    let s = six_lines();
    let _ = Postgres::query(&s.store, "DELETE FROM approval_gate.audit WHERE seq = 6");
    assert_eq!(broken_at(s.gate.verify_audit()), 6);
    assert_eq!(
        broken_at(s.gate.request_approval(NewRequest::new("deploy d", "test"))),
        6
    );
    assert_eq!(rows(&s.store), "5");

    // (e) The documented limit: the last row deleted AND the head row set back to the line
    // before, consistently. A superuser (or the schema's owner) can rewrite history this way
    // and nothing in the database shows it: the head row catches only a cut that did not also
    // rewrite the head. Catching this needs a copy of the head kept outside the database.
    let s = six_lines();
    let _ = Postgres::query(
        &s.store,
        "DELETE FROM approval_gate.audit WHERE seq = 6;
         UPDATE approval_gate.audit_head SET seq = 5,
             hash = substring((SELECT line FROM approval_gate.audit WHERE seq = 5)
                              FROM '\"hash\":\"([0-9a-f]{64})\"}$')",
    );
    assert_eq!(s.gate.verify_audit().expect("undetectable").lines, 5);
    let _ = s.ask("deploy d", None, None);
    assert_eq!(s.gate.verify_audit().expect("still whole").lines, 6);
}

/// A database with the schema on a cluster of this test's own; its URL.
fn own_database(cluster: &approval_gate_tests::pg::Cluster) -> String {
    approval_gate_tests::pg::run_sql(cluster.url(), "CREATE DATABASE waits");
    let url = url_with(cluster.url(), "postgres", Some("waits"));
    let init = url.clone();
    on_own_thread(move || approval_gate::postgres::init(&init)).expect("db init");
    url
}

/// The server restarts while a wait is blocked: every session ends, the LISTEN connection
/// with them. The wait's fallback re-read is set far beyond the test's limits, so only a
/// reconnected LISTEN (and the re-read it triggers) can end it in time; and it must end with
/// the decision made after the restart, read anew, not with anything cached.
#[test]
fn a_wait_survives_a_database_restart_and_still_answers_correctly() {
    let cluster = approval_gate_tests::pg::Cluster::start(false);
    let url = own_database(&cluster);
    let open = || {
        Gate::builder()
            .store(Location::parse(&url).unwrap())
            .open()
            .unwrap()
    };
    let gate = open();
    let id = ask(&gate, "pay 5 EUR across a restart");
    let watch = gate.watcher().fallback(Duration::from_secs(600)).start();
    assert_eq!(watch.polling(), None, "the wait listens, it does not poll");

    let waiter = std::thread::spawn(move || watch.wait_for_decision(id, Duration::from_secs(120)));
    std::thread::sleep(Duration::from_millis(300));
    cluster.restart();
    // Let the listener notice and reconnect, then decide from another gate, as a human's
    // CLI on another machine would.
    std::thread::sleep(Duration::from_millis(500));
    let deciding = std::time::Instant::now();
    open()
        .approve(id, &Decision::by("alice"))
        .expect("approve after the restart");

    let outcome = waiter.join().unwrap();
    let woke_after = deciding.elapsed();
    match outcome.expect("the wait survives the restart") {
        approval_gate::Waited::Decided(report) => {
            assert_eq!(report.request().status(), Status::Approved);
        }
        other @ approval_gate::Waited::TimedOut(_) => panic!("timed out: {other:?}"),
    }
    assert!(
        woke_after < Duration::from_secs(10),
        "the decision reached the wait {woke_after:?} after it was made: LISTEN did not come back"
    );

    // The gate opened before the restart still works: a read on a lost session runs again
    // on a new one, and a write goes out on a live session, never on a dead one.
    assert_eq!(
        gate.status(id).unwrap().request().status(),
        Status::Approved
    );
    let later = ask(&gate, "a second request after the restart");
    gate.deny(later, &Decision::by("alice"))
        .expect("a write after the restart");
    assert_eq!(gate.verify_audit().unwrap().lines, 4);
}

/// An executor whose session is cut while the approved action runs (a network partition, an
/// administrator's `pg_terminate_backend`) is, for the database, a dead executor: the next
/// gate to open the store records `outcome unknown`. The executor itself goes on and its
/// action finishes, but its own outcome is no longer recorded over the `unknown`, and the
/// approval can never run again.
#[test]
fn an_executor_whose_session_is_cut_mid_execution_is_recorded_unknown_and_never_rerun() {
    let store = Postgres.fresh();
    let gate = store.gate();
    let action = "pay 7 EUR with the session cut";
    let id = ask(&gate, action);
    gate.approve(id, &Decision::by("alice")).unwrap();
    let url = Postgres::url(&store);

    let mut runs = 0;
    let outcome = gate.execute_approved(
        id,
        &Binding::new(action),
        |_: &approval_gate::Grant<serde_json::Value>| {
            runs += 1;
            // The execution's advisory lock is held by exactly one session: end it.
            let rows = Postgres::query(
                &store,
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_locks
                 WHERE locktype = 'advisory' AND classid = 1095192401 AND granted",
            );
            assert_eq!(rows.len(), 1, "one session holds the execution's lock");
            // Another process opens the store meanwhile; opening runs recovery, which finds
            // the execution dead and records it.
            let other = Gate::builder()
                .store(Location::parse(&url).unwrap())
                .open()
                .unwrap();
            let unknown = other
                .audit_records()
                .unwrap()
                .into_iter()
                .filter(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
                .count();
            assert_eq!(unknown, 1, "recorded while the action still runs");
            Ok::<_, Error>(())
        },
    );
    assert!(outcome.is_ok(), "the action itself ran: {outcome:?}");
    assert_eq!(runs, 1);

    let finished: Vec<AuditRecord> = gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id && r.event == AuditEvent::ExecutionFinished)
        .collect();
    assert_eq!(finished.len(), 1, "one outcome: {finished:?}");
    assert_eq!(finished[0].details["outcome"], "unknown");
    assert_eq!(finished[0].details["recovered"], true);
    // Nothing runs again: not through this gate, not through a new one.
    let again = gate.execute_approved(
        id,
        &Binding::new(action),
        |_: &approval_gate::Grant<serde_json::Value>| Ok::<_, Error>(()),
    );
    assert!(
        matches!(again, Err(Error::AlreadyConsumed(got)) if got == id),
        "{again:?}"
    );
    assert!(gate.recover().unwrap().is_empty(), "recovered once");
    gate.verify_audit().unwrap();
}

fn unsealed(store: &Store) -> String {
    Postgres::query(
        store,
        "SELECT count(*) FROM approval_gate.audit WHERE seq IS NULL",
    )[0][0]
        .clone()
        .expect("a count")
}

/// A step's `wake` seals the step's row unless a seal sealed rows a moment ago (schema
/// version 3: a burst of steps shares one seal); a row it leaves is sealed by the next read
/// of the chain. The last seal's time is set by hand, far in the past or in the future, so
/// that nothing here depends on how fast the machine is.
#[test]
fn a_wake_seals_its_step_unless_a_seal_just_ran_and_a_read_seals_what_is_left() {
    let s = Subject::new(&Postgres);
    let _ = Postgres::query(
        &s.store,
        "UPDATE approval_gate.audit_head SET sealed_at = '-infinity'",
    );
    let id = s.ask("deploy a", None, None);
    assert_eq!(unsealed(&s.store), "0", "sealed by the filing's own wake");

    let _ = Postgres::query(
        &s.store,
        "UPDATE approval_gate.audit_head SET sealed_at = clock_timestamp() + interval '1 hour'",
    );
    s.gate.deny(id, &Decision::by("tester")).unwrap();
    let _ = s.ask("deploy b", None, None);
    assert_eq!(unsealed(&s.store), "2", "left to a later seal");

    let summary = s.gate.verify_audit().expect("a whole chain");
    assert_eq!(summary.lines, 3);
    assert_eq!(unsealed(&s.store), "0", "the read sealed them");
    assert_eq!(
        Postgres::query(
            &s.store,
            "SELECT (sealed_at <= clock_timestamp())::text FROM approval_gate.audit_head"
        )[0][0]
            .as_deref(),
        Some("true"),
        "the seal noted its time"
    );
    let events: Vec<AuditEvent> = s
        .gate
        .audit_records()
        .unwrap()
        .iter()
        .map(|record| record.event)
        .collect();
    assert_eq!(
        events,
        [
            AuditEvent::Requested,
            AuditEvent::Denied,
            AuditEvent::Requested
        ]
    );
}
