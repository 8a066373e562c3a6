//! The human CLI on a `PostgreSQL` store, through the real binary (and a real pty where the
//! command needs a terminal): `db init` sets a database up, safely twice or four times at
//! once; every command reads and decides on the database's requests; an approval by a login
//! role records that login, and a login without the approver role cannot approve; `watch`
//! sees a request filed by another process as soon as the database announces it.

use std::fmt::Write as _;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use approval_gate::{
    AuditEvent, CanonicalPayload, Clock, Decision, EffectiveStatus, Error, Gate, Limits,
    ListFilter, ManualClock, NewRequest, Request, RequestId, StatusReport, SystemClock,
};
use approval_gate_tests::backend::{Backend, Postgres, Store};
use approval_gate_tests::pg;
use rexpect::process::WaitStatus;
use rexpect::session::spawn_command;
use serde_json::Value;
use tempfile::TempDir;

use crate::support::{
    BIN, assert_exit, assert_success, json, operator_settings_of_this_test_only, stderr, stdout,
};

const ROLES: [&str; 4] = [
    "approval_gate_agent",
    "approval_gate_approver",
    "approval_gate_executor",
    "approval_gate_notifier",
];

/// The CLI on one store URL, with operator settings of this test only.
struct Cli {
    url: String,
    /// `XDG_CONFIG_HOME` of the runs: no config file.
    home: TempDir,
}

impl Cli {
    fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The same store, logged in as `login`.
    fn as_login(&self, login: &str) -> Self {
        Self::new(&pg::url_with(&self.url, login, None))
    }

    /// The binary without a store setting.
    fn bare(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_remove("APPROVAL_GATE_DIR")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            // Wide enough that no action is cut.
            .env("COLUMNS", "200");
        operator_settings_of_this_test_only(&mut command, self.home.path());
        command
    }

    /// `approval-gate --store URL ARGS…`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.bare(&["--store", &self.url]);
        command.args(args);
        command
    }

    /// Runs a command without a terminal.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("the CLI runs")
    }

    /// Runs a command with the store given as `APPROVAL_GATE_STORE` instead of `--store`.
    fn run_with_env(&self, args: &[&str]) -> Output {
        self.bare(args)
            .env("APPROVAL_GATE_STORE", &self.url)
            .stdin(Stdio::null())
            .output()
            .expect("the CLI runs")
    }
}

/// Runs `approve ID REASON` in a pty with `USER` and `LOGNAME` set to `os_user`, and types
/// the code it shows if it asks; its exit code, whether it asked, and what it printed.
fn approve_in_pty(cli: &Cli, id: RequestId, reason: &str, os_user: &str) -> (i32, bool, String) {
    let mut command = cli.command(&["approve", id.as_str(), reason]);
    command.env("USER", os_user).env("LOGNAME", os_user);
    crate::support::approve(command)
}

/// The name of the database of `url`.
fn database_name(url: &str) -> String {
    let rest = url.rsplit('/').next().expect("a database in the URL");
    rest.split('?').next().unwrap_or(rest).to_owned()
}

/// A database made by [`pg::create_database`], dropped with this value (best effort).
struct Database(String);

impl Database {
    fn create() -> Self {
        Self(pg::create_database())
    }

    /// Runs `sql` as the superuser and returns the rows, each column as text.
    fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        Postgres::query(&Store::new(self.0.clone(), ()), sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let url = self.0.clone();
        // On a thread of its own: a failure there is reported, never a panic in a drop.
        let _ = std::thread::spawn(move || pg::drop_database(&url)).join();
    }
}

/// Login roles made for one test (roles are cluster-wide: their names carry the test's
/// database), dropped with this value (best effort).
struct Logins(Vec<String>);

impl Logins {
    /// Creates each login as a member of its group role.
    fn create(logins: &[(&str, &str)]) -> Self {
        let mut sql = String::new();
        for (login, group) in logins {
            let _ = write!(sql, "CREATE ROLE {login} LOGIN; GRANT {group} TO {login};");
        }
        pg::run_sql(pg::admin_url(), &sql);
        Self(
            logins
                .iter()
                .map(|(login, _)| (*login).to_owned())
                .collect(),
        )
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        let sql = format!("DROP ROLE IF EXISTS {}", self.0.join(", "));
        let _ = std::thread::spawn(move || pg::run_sql(pg::admin_url(), &sql)).join();
    }
}

/// The only value of a one-row, one-column query.
fn scalar(rows: &[Vec<Option<String>>]) -> String {
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0][0].clone().expect("not NULL")
}

#[test]
fn db_init_is_idempotent_and_safe_concurrently() {
    // Twice in a row: the second finds everything in place.
    let db = Database::create();
    let cli = Cli::new(&db.0);
    let first = cli.run(&["db", "init"]);
    assert_success(&first);
    assert!(
        stdout(&first).starts_with("schema approval_gate at version 5 in "),
        "{}",
        stdout(&first)
    );
    for role in ROLES {
        assert!(stdout(&first).contains(role), "{}", stdout(&first));
    }
    let again = json(&cli.run(&["db", "init", "--json"]));
    assert_eq!(again["schemaVersion"], 5, "{again}");
    assert_eq!(again["roles"], serde_json::json!(ROLES), "{again}");
    assert_eq!(
        scalar(&db.query(
            "SELECT string_agg(value, ',') FROM approval_gate.meta WHERE key = 'schema_version'"
        )),
        "5"
    );
    assert_eq!(
        scalar(&db.query(&format!(
            "SELECT count(*) FROM pg_roles WHERE rolname IN ('{}')",
            ROLES.join("', '")
        ))),
        "4"
    );
    // The store works, and is empty.
    let listed = cli.run(&["list"]);
    assert_success(&listed);
    assert_eq!(stdout(&listed), "no pending requests\n");

    // Four at once on another fresh database: all succeed, and the schema is there once.
    let other = Database::create();
    let cli = Cli::new(&other.0);
    let children: Vec<_> = (0..4)
        .map(|_| {
            cli.command(&["db", "init", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(json(&output)["schemaVersion"], 5);
    }
    assert_eq!(
        scalar(
            &other
                .query("SELECT count(*) || ' ' || string_agg(value, ',') FROM approval_gate.meta")
        ),
        "1 5"
    );
    assert_eq!(
        scalar(&other.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'approval_gate'")),
        "1"
    );
    assert_eq!(
        scalar(&other.query("SELECT count(*) || ' ' || max(seq) FROM approval_gate.audit_head")),
        "1 0"
    );
    assert_eq!(
        scalar(&other.query("SELECT count(*) FROM approval_gate.requests")),
        "0"
    );
    let verified = cli.run(&["audit", "verify"]);
    assert_success(&verified);
    assert!(stdout(&verified).starts_with("audit log ok: 0 lines"));

    // A directory store has nothing to initialise: refused, and nothing is created.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let cli = Cli::new(dir.to_str().unwrap());
    let refused = cli.run(&["db", "init"]);
    assert_exit(&refused, 1, "db init sets up a PostgreSQL store");
    assert!(
        stderr(&refused).contains("postgres://"),
        "{}",
        stderr(&refused)
    );
    let refused = cli.run(&["db", "init", "--json"]);
    assert_eq!(refused.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(report["error"]["code"], "not_postgres", "{report}");
    assert!(!dir.exists(), "db init created a directory store");

    // A database without the schema: an error (not a refusal) that says what to run.
    let bare = Database::create();
    let cli = Cli::new(&bare.0);
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["show", "0123456789ab"],
    ] {
        let output = cli.run(args);
        assert_exit(&output, 2, "run `approval-gate db init");
    }
    assert_eq!(
        scalar(&bare.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'approval_gate'")),
        "0",
        "list created the schema"
    );
}

/// What version 3 added taken out again: `audit_head.sealed_at`, and `decide` returning its
/// position (a stand-in: only the return type matters to the migration).
const BEFORE_VERSION_3: &str = "ALTER TABLE approval_gate.audit_head DROP COLUMN sealed_at;
     DROP FUNCTION approval_gate.decide(text, text, text, jsonb, jsonb, bigint);
     CREATE FUNCTION approval_gate.decide(rid text, step text, event text, record jsonb,
         details jsonb, given_ms bigint) RETURNS bigint LANGUAGE sql AS $$ SELECT 0::bigint $$;";

/// A store made by schema version 1 (emulated: what versions 2 and 3 added taken out, what
/// version 2 dropped put back), with requests pending: this build refuses it until `db init`,
/// which migrates it in place, counting the pending requests once from the rows; after that
/// the store files, decides and verifies as a new one does.
#[test]
fn db_init_migrates_a_version_1_store() {
    migrates_from(
        1,
        "ALTER TABLE approval_gate.filing_slots DROP COLUMN pending;
         DROP TABLE approval_gate.settled;
         DROP INDEX approval_gate.audit_refused;
         CREATE INDEX audit_by_request ON approval_gate.audit (id);
         DROP FUNCTION approval_gate.require(text, text[]);
         CREATE FUNCTION approval_gate.require(what text, roles text[]) RETURNS void
             LANGUAGE plpgsql AS $$ BEGIN END $$;",
    );
}

/// The same from version 2: `db init` adds what version 3 did, and the store works on.
#[test]
fn db_init_migrates_a_version_2_store() {
    migrates_from(2, "");
}

/// The same from version 3: `db init` lets approvers hold the passkeys' counter lock.
#[test]
fn db_init_migrates_a_version_3_store() {
    migrates_from(3, "");
}

/// The same from version 4: `db init` adds the notifications ledger and its role, and the
/// allowances' tables and functions.
#[test]
fn db_init_migrates_a_version_4_store() {
    migrates_from(4, "");
}

/// What version 5 added taken out again: the notifications ledger and the allowances.
const BEFORE_VERSION_5: &str =
    "DROP FUNCTION approval_gate.claim_notice(text, text, bigint, bigint);
     DROP FUNCTION approval_gate.record_notice(text, text, text, integer, bigint);
     DROP TABLE approval_gate.notices;
     DROP FUNCTION approval_gate.grant_allowance(jsonb, jsonb, bigint);
     DROP FUNCTION approval_gate.revoke_allowance(text, jsonb, bigint);
     DROP TABLE approval_gate.allowance_uses; DROP TABLE approval_gate.allowances;";

/// What version 4 added taken out again: the passkeys' counter lock (class 1095192405) in
/// `hold`.
const BEFORE_VERSION_4: &str = "CREATE OR REPLACE FUNCTION approval_gate.hold(class int, key text)
     RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
     BEGIN
         IF class NOT IN (1095192400, 1095192401, 1095192402) THEN
             RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'not a lock of this store';
         END IF;
         PERFORM pg_advisory_unlock_all();
         PERFORM pg_advisory_lock(class, hashtext(key));
     END $$;";

fn migrates_from(version: u32, older: &str) {
    let store = Postgres.fresh();
    let gate = store.gate();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            gate.request_approval(NewRequest::new(format!("deploy {n}"), "migrate"))
                .unwrap()
                .request
                .id(),
        );
    }
    gate.approve(ids[0], &Decision::by("alice")).unwrap();
    drop(gate);
    let query = |sql: &str| Postgres::query(&store, sql);
    let bound = "SELECT ((SELECT sum(pending) FROM approval_gate.filing_slots)
                         - (SELECT sum(settled) FROM approval_gate.settled))::text";
    // Version 1 had no counters: `db init` counts the 2 pending requests once. Version 2 kept
    // them (a store the suite reuses may hold more than its rows: the bound only has to be
    // at least the pending requests), and `db init` leaves them as they are.
    let counted = if version == 1 {
        "2".to_owned()
    } else {
        scalar(&query(bound))
    };
    let before_3 = if version < 3 { BEFORE_VERSION_3 } else { "" };
    let before_4 = if version < 4 { BEFORE_VERSION_4 } else { "" };
    let _ = query(&format!(
        "UPDATE approval_gate.meta SET value = '{version}' WHERE key = 'schema_version';
         {BEFORE_VERSION_5} {before_4} {before_3} {older}"
    ));
    let cli = Cli::new(store.location());
    assert_exit(
        &cli.run(&["list"]),
        2,
        &format!("holds schema version {version}, this build uses 5"),
    );

    let migrated = cli.run(&["db", "init", "--json"]);
    assert_success(&migrated);
    assert_eq!(json(&migrated)["schemaVersion"], 5);
    assert_eq!(
        scalar(&query(
            "SELECT (SELECT value FROM approval_gate.meta WHERE key = 'schema_version') || ' '
                    || (to_regclass('approval_gate.audit_by_request') IS NULL) || ' '
                    || pg_get_function_result('approval_gate.require(text, text[])'::regprocedure) || ' '
                    || pg_get_function_result('approval_gate.decide(text, text, text, jsonb, jsonb, bigint)'::regprocedure) || ' '
                    || (SELECT count(*) FROM approval_gate.audit_head WHERE sealed_at IS NOT NULL) || ' '
                    || (pg_get_functiondef('approval_gate.hold(integer, text)'::regprocedure) LIKE '%1095192405%') || ' '
                    || (to_regprocedure('approval_gate.claim_notice(text, text, bigint, bigint)') IS NOT NULL) || ' '
                    || (to_regclass('approval_gate.allowance_uses') IS NOT NULL)"
        )),
        "5 true boolean text 1 true true true"
    );
    assert_eq!(scalar(&query(bound)), counted);
    // Again: nothing counted twice.
    assert_success(&cli.run(&["db", "init"]));
    assert_eq!(scalar(&query(bound)), counted);

    let gate = store.gate();
    gate.deny(ids[1], &Decision::by("alice")).unwrap();
    let more = gate
        .request_approval(NewRequest::new("deploy 3", "migrate"))
        .unwrap()
        .request
        .id();
    gate.approve(more, &Decision::by("alice")).unwrap();
    // Two decided, one filed: one fewer.
    assert_eq!(
        scalar(&query(bound)),
        (counted.parse::<i64>().unwrap() - 1).to_string()
    );
    assert_eq!(gate.verify_audit().unwrap().lines, 7);
    let listed = cli.run(&["list"]);
    assert_success(&listed);
    assert!(
        stdout(&listed).contains(&ids[2].to_string()),
        "{}",
        stdout(&listed)
    );
}

/// `report` as the library serialises it, without its payload; and the payload's bytes.
fn report_json(report: &StatusReport) -> (Value, Option<Vec<u8>>) {
    let mut value = serde_json::to_value(report).unwrap();
    value.as_object_mut().unwrap().remove("payload");
    let payload = report.request().payload().map(|p| p.as_bytes().to_vec());
    (value, payload)
}

/// A printed request as [`report_json`] splits it, its payload canonicalised again.
fn printed_json(mut printed: Value) -> (Value, Option<Vec<u8>>) {
    let payload = printed.as_object_mut().unwrap().remove("payload");
    let payload = payload.filter(|p| !p.is_null()).map(|p| {
        CanonicalPayload::from_value(&p)
            .unwrap()
            .as_bytes()
            .to_vec()
    });
    (printed, payload)
}

/// What the lifecycle test files: two requests ten days old, one denied and one never
/// decided, and two new pending ones.
struct Filed {
    old_denied: RequestId,
    old_expired: RequestId,
    invoice: Request,
    backups: RequestId,
}

#[test]
fn the_human_cli_lists_shows_approves_denies_revokes_and_archives_on_postgres() {
    let store = Postgres.fresh();
    let cli = Cli::new(store.location());
    let gate = store.gate();
    let filed = file(&store);
    lists_and_shows(&cli, &gate, &filed);
    approves_denies_and_revokes(&cli, &gate, &filed);
    archives(&store, &cli, &gate, &filed);
    verifies_the_audit_chain(&cli, &gate);
}

fn file(store: &Store) -> Filed {
    // A superuser's gate, as an agent would file with (its clock and names are taken as
    // given); and one on a clock ten days back, for requests old enough to archive.
    let gate = store.gate();
    let ten_days_ago = SystemClock
        .now()
        .saturating_sub(Duration::from_secs(10 * 24 * 3600));
    let old = store.open(Some(ManualClock::new(ten_days_ago)), Limits::default());
    let old_denied = old
        .request_approval(NewRequest::new("old and denied", "last week"))
        .unwrap()
        .request
        .id();
    old.deny(old_denied, &Decision::by("alice")).unwrap();
    let old_expired = old
        .request_approval(NewRequest::new("old and never decided", "last week"))
        .unwrap()
        .request
        .id();
    let invoice = gate
        .request_approval(
            NewRequest::new("send invoice 1042", "the invoice is due")
                .requested_by("billing-agent")
                .operation("smtp.send")
                .payload(
                    CanonicalPayload::from_json_text(r#"{"to":"alice@example.com"}"#).unwrap(),
                ),
        )
        .unwrap()
        .request;
    let backups = gate
        .request_approval(NewRequest::new("delete the backups", "the disk is full"))
        .unwrap()
        .request
        .id();
    Filed {
        old_denied,
        old_expired,
        invoice,
        backups,
    }
}

/// `list`, `list all`, `list --json`, `show` and `show --json` on the four requests.
fn lists_and_shows(cli: &Cli, gate: &Gate, filed: &Filed) {
    let Filed {
        old_denied,
        old_expired,
        ref invoice,
        backups,
    } = *filed;
    let invoice_id = invoice.id();
    // list: the pending ones; list all: every one.
    let listed = cli.run(&["list"]);
    assert_success(&listed);
    let text = stdout(&listed);
    for shown in [
        invoice_id.as_str(),
        "send invoice 1042",
        // The requester column is 12 wide.
        "billing-age…",
        backups.as_str(),
        "delete the backups",
    ] {
        assert!(text.contains(shown), "{shown:?} not listed: {text}");
    }
    assert!(!text.contains(old_denied.as_str()), "{text}");
    assert!(!text.contains(old_expired.as_str()), "{text}");
    let all = stdout(&cli.run(&["list", "all"]));
    for id in [old_denied, old_expired, invoice_id, backups] {
        assert!(all.contains(id.as_str()), "{id} not in list all: {all}");
    }

    // list --json: exactly the library's pending reports.
    let page = json(&cli.run(&["list", "--json"]));
    let items = page["items"].as_array().expect("items");
    let expected = gate.list(ListFilter::Pending, None, 100).unwrap().items;
    assert_eq!(items.len(), 2, "{page}");
    assert_eq!(items.len(), expected.len());
    for item in &expected {
        let report = item.report().expect("readable");
        let printed = items
            .iter()
            .find(|i| i["id"] == report.request().id().as_str())
            .unwrap_or_else(|| panic!("{} not in {page}", report.request().id()));
        assert_eq!(printed_json(printed.clone()), report_json(report));
    }

    // show: everything a human decides on; show --json: the library's report.
    let shown = cli.run(&["show", invoice_id.as_str()]);
    assert_success(&shown);
    let text = stdout(&shown);
    for field in [
        invoice_id.as_str(),
        "send invoice 1042",
        "the invoice is due",
        "billing-agent",
        "smtp.send",
        "\"to\": \"alice@example.com\"",
        &invoice.payload_digest().unwrap().to_hex(),
    ] {
        assert!(text.contains(field), "{field:?} not shown: {text}");
    }
    let printed = json(&cli.run(&["show", invoice_id.as_str(), "--json"]));
    assert_eq!(printed["effectiveStatus"], "pending");
    assert_eq!(
        printed_json(printed),
        report_json(&gate.status(invoice_id).unwrap())
    );
}

/// `approve` (in a pty) of the invoice, `deny` of the backups, `revoke` of the invoice.
fn approves_denies_and_revokes(cli: &Cli, gate: &Gate, filed: &Filed) {
    let (invoice_id, backups) = (filed.invoice.id(), filed.backups);
    // approve, in a pty, with the code read off the screen.
    let (exit, asked, printed) = approve_in_pty(cli, invoice_id, "checked on postgres", "carol");
    assert!(asked, "no prompt: {printed}");
    assert_eq!(exit, 0, "{printed}");
    assert!(
        printed.contains(&format!(
            "approved {invoice_id}: trusted code may run it once"
        )),
        "{printed}"
    );
    let report = gate.status(invoice_id).unwrap();
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    // A superuser session's name is taken as given: the CLI's user.
    assert_eq!(report.request().decided_by(), Some("carol"));
    assert_eq!(
        report.request().decision_reason(),
        Some("checked on postgres")
    );

    // deny.
    let denied = cli.run(&["deny", backups.as_str(), "too", "risky"]);
    assert_success(&denied);
    assert_eq!(
        stdout(&denied),
        format!("denied {backups}: delete the backups\n")
    );
    let report = gate.status(backups).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Denied);
    assert_eq!(report.request().decision_reason(), Some("too risky"));
    assert_exit(
        &cli.run(&["deny", backups.as_str()]),
        1,
        &format!("cannot deny request {backups}: it is denied"),
    );

    // revoke the approved one.
    let revoked = json(&cli.run(&["revoke", invoice_id.as_str(), "changed my mind", "--json"]));
    assert_eq!(revoked["effectiveStatus"], "revoked", "{revoked}");
    let report = gate.status(invoice_id).unwrap();
    assert_eq!(report.effective_status(), EffectiveStatus::Revoked);
    assert_eq!(report.request().decision_reason(), Some("changed my mind"));
    assert_exit(
        &cli.run(&["revoke", invoice_id.as_str()]),
        1,
        "cannot revoke",
    );
}

/// `archive` moves the two old requests out of the live store, and only them.
fn archives(store: &Store, cli: &Cli, gate: &Gate, filed: &Filed) {
    let (old_denied, old_expired) = (filed.old_denied, filed.old_expired);
    let (invoice_id, backups) = (filed.invoice.id(), filed.backups);
    // archive: the dry run changes nothing; then the two old ones move, the new ones stay.
    let mut old_ids = [old_denied, old_expired].map(|id| id.to_string());
    old_ids.sort();
    let before = Postgres.contents(store);
    let dry = cli.run(&["archive", "--older-than-days", "0", "--dry-run"]);
    assert_success(&dry);
    // In no particular order.
    let text = stdout(&dry);
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.pop(),
        Some("would archive 2 requests (dry run: nothing changed)"),
        "{text}"
    );
    lines.sort_unstable();
    assert_eq!(
        lines,
        old_ids.each_ref().map(|id| format!("would archive {id}")),
        "{text}"
    );
    assert_eq!(
        Postgres.contents(store),
        before,
        "the dry run changed the store"
    );
    let archived = cli.run(&["archive", "--older-than-days", "0", "--json"]);
    // The minimum age applies, and the CLI says so.
    assert!(
        stderr(&archived).contains("at least 8 days ago"),
        "{}",
        stderr(&archived)
    );
    let archived = json(&archived);
    let mut moved: Vec<String> = archived["archived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    moved.sort();
    assert_eq!(moved, old_ids, "{archived}");
    assert_eq!(archived["skipped"], serde_json::json!([]));
    let all = stdout(&cli.run(&["list", "all"]));
    for id in [old_denied, old_expired] {
        assert!(!all.contains(id.as_str()), "{id} still listed: {all}");
        assert!(
            matches!(gate.status(id), Err(Error::Archived(archived)) if archived == id),
            "{:?}",
            gate.status(id)
        );
        assert_exit(
            &cli.run(&["show", id.as_str()]),
            1,
            "is archived and can no longer be used",
        );
    }
    for id in [invoice_id, backups] {
        assert!(all.contains(id.as_str()), "{id} not listed: {all}");
    }
    let again = cli.run(&["archive", "--older-than-days", "0"]);
    assert_success(&again);
    assert!(stdout(&again).ends_with("archived 0 requests\n"));
}

/// `audit verify` counts every line the library reads.
fn verifies_the_audit_chain(cli: &Cli, gate: &Gate) {
    // audit verify, with the store from the environment: every line the library reads.
    let records = gate.audit_records().unwrap();
    let verified = cli.run_with_env(&["audit", "verify"]);
    assert_success(&verified);
    assert!(
        stdout(&verified).starts_with(&format!(
            "audit log ok: {} lines, last hash ",
            records.len()
        )),
        "{} vs {} records",
        stdout(&verified),
        records.len()
    );
    let verified = json(&cli.run_with_env(&["audit", "verify", "--json"]));
    assert_eq!(verified["ok"], true);
    assert_eq!(verified["lines"], records.len());
    let events: Vec<AuditEvent> = records.iter().map(|r| r.event).collect();
    for event in [
        AuditEvent::Approved,
        AuditEvent::Denied,
        AuditEvent::Revoked,
        AuditEvent::Archived,
    ] {
        assert!(events.contains(&event), "{event:?} not in {events:?}");
    }
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == AuditEvent::Archived)
            .count(),
        2
    );
}

#[test]
fn approve_as_a_login_role_records_that_user() {
    let store = Postgres.fresh();
    let db = database_name(&Postgres::url(&store));
    let alice = format!("alice_{db}");
    let agent = format!("agent_{db}");
    let _logins = Logins::create(&[
        (&alice, "approval_gate_approver"),
        (&agent, "approval_gate_agent"),
    ]);
    let gate = store.gate();
    let cli = Cli::new(store.location());
    let wire = gate
        .request_approval(NewRequest::new(
            "wire 1200 EUR to ACME Ltd",
            "the invoice is due",
        ))
        .unwrap()
        .request
        .id();

    // Alice approves at her terminal, whatever the operating system calls her.
    let (exit, asked, printed) =
        approve_in_pty(&cli.as_login(&alice), wire, "looks right", "mallory");
    assert!(asked, "no prompt: {printed}");
    assert_eq!(exit, 0, "{printed}");
    assert!(printed.contains(&format!("approved {wire}")), "{printed}");
    let report = gate.status(wire).unwrap();
    assert_eq!(
        report.effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
    assert_eq!(report.request().decided_by(), Some(alice.as_str()));
    assert_eq!(report.request().decision_reason(), Some("looks right"));
    let json_report = json(&cli.run(&["show", wire.as_str(), "--json"]));
    assert_eq!(json_report["decidedBy"], alice.as_str(), "{json_report}");
    // The database's clock set the decision time: now, give or take.
    let decided_at = report.request().decided_at().expect("a decision time");
    let off = SystemClock.now().millis_until(decided_at).abs();
    assert!(off < 60_000, "decided {off} ms away from now");

    // An agent's login sees the request and the prompt, and its approval is refused.
    let other = gate
        .request_approval(NewRequest::new("drop the table", "cleanup"))
        .unwrap()
        .request
        .id();
    let before = Postgres.contents(&store);
    let (exit, asked, printed) = approve_in_pty(&cli.as_login(&agent), other, "", &agent);
    assert!(asked, "no prompt: {printed}");
    assert_eq!(exit, 1, "{printed}");
    assert!(
        printed.contains(&format!("{agent} is not permitted to approve")),
        "{printed}"
    );
    // Nor may it revoke Alice's approval: refused, with the code in --json.
    let revoked = cli
        .as_login(&agent)
        .run(&["revoke", wire.as_str(), "--json"]);
    assert_exit(&revoked, 1, "not permitted");
    let error: Value = serde_json::from_slice(&revoked.stdout).unwrap();
    assert_eq!(error["error"]["code"], "not_permitted", "{error}");
    assert_eq!(error["error"]["id"], wire.as_str(), "{error}");
    // Each refusal left its line, and changed nothing else.
    let after = Postgres.contents(&store);
    let mut added = Vec::new();
    for key in approval_gate_tests::changed(&before, &after) {
        if key == "head" {
            continue;
        }
        assert!(
            key.starts_with("audit/") && !before.contains_key(&key),
            "{key} changed"
        );
        let line: Value = serde_json::from_slice(&after[&key]).unwrap();
        assert_eq!(line["sessionUser"], agent.as_str(), "{line}");
        added.push((
            line["event"].clone(),
            line["operation"].clone(),
            line["reason"].clone(),
        ));
    }
    let refused = |operation: &str| {
        (
            "decision_refused".into(),
            operation.into(),
            "not_permitted".into(),
        )
    };
    assert_eq!(added, [refused("approve"), refused("revoke")]);
    assert_eq!(
        gate.status(other).unwrap().effective_status(),
        EffectiveStatus::Pending
    );
    assert_eq!(
        gate.status(wire).unwrap().effective_status(),
        EffectiveStatus::ApprovedUnconsumed
    );
}

#[test]
fn watch_prints_a_request_filed_from_another_process() {
    let store = Postgres.fresh();
    let cli = Cli::new(store.location());
    // The fallback check is a minute off: only the database's notification can be in time.
    let command = cli.command(&["watch", "--fallback-secs", "60"]);
    let mut session = spawn_command(command, Some(10_000)).expect("spawn in a pty");
    session
        .exp_string("for new requests (Ctrl-C to stop)")
        .expect("watch starts");
    // Its LISTEN session is up, so the request below is announced, not found at start.
    let listening = Instant::now();
    while scalar(&Postgres::query(
        &store,
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN approval_gate'",
    )) != "1"
    {
        assert!(
            listening.elapsed() < Duration::from_secs(10),
            "watch never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let gate = store.gate();
    for action in ["send the weekly report", "rotate the keys"] {
        let filed = Instant::now();
        let id = gate
            .request_approval(NewRequest::new(action, "it is monday"))
            .unwrap()
            .request
            .id();
        session
            .exp_string(id.as_str())
            .unwrap_or_else(|e| panic!("{id} not printed: {e}"));
        session
            .exp_string(action)
            .unwrap_or_else(|e| panic!("{action:?} not printed: {e}"));
        assert!(
            filed.elapsed() < Duration::from_secs(5),
            "printed after {:?}",
            filed.elapsed()
        );
    }

    // Ctrl-C stops it cleanly.
    session.send_control('c').unwrap();
    session.exp_eof().expect("watch stops on Ctrl-C");
    match session.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => assert_eq!(code, 0),
        other => panic!("watch did not exit normally: {other:?}"),
    }
}

/// Issue 22, finding 4: the agent's login files claiming to be the approver. `show --json`,
/// `show`, `list` and the approve prompt show the claim and, beside it, the login the
/// database authenticated.
#[test]
fn show_list_and_the_prompt_show_who_filed_beside_the_claimed_requester() {
    let store = Postgres.fresh();
    let db = database_name(&Postgres::url(&store));
    let alice = format!("alice_{db}");
    let agent = format!("agent_{db}");
    let _logins = Logins::create(&[
        (&alice, "approval_gate_approver"),
        (&agent, "approval_gate_agent"),
    ]);
    let cli = Cli::new(store.location());
    let as_agent = Gate::builder()
        .store(
            approval_gate::Location::parse(&pg::url_with(&Postgres::url(&store), &agent, None))
                .unwrap(),
        )
        .open()
        .unwrap();
    let id = as_agent
        .request_approval(NewRequest::new("wire 900 EUR", "urgent").requested_by(alice.clone()))
        .unwrap()
        .request
        .id();

    let shown = json(&cli.run(&["show", id.as_str(), "--json"]));
    assert_eq!(shown["requestedBy"], alice.as_str(), "{shown}");
    assert_eq!(shown["filedBy"], agent.as_str(), "{shown}");

    let text = stdout(&cli.run(&["show", id.as_str()]));
    assert!(
        text.contains(&format!("requested by    {alice} (claimed)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("filed by        {agent} (database user)")),
        "{text}"
    );
    let listed = stdout(&cli.run(&["list"]));
    assert!(
        listed.contains(&format!("filed by: {agent} (database user)")),
        "{listed}"
    );

    let (exit, asked, printed) = approve_in_pty(&cli.as_login(&alice), id, "ok", &alice);
    assert!(asked, "no prompt: {printed}");
    assert_eq!(exit, 0, "{printed}");
    assert!(
        printed.contains(&format!("{agent} (database user)")),
        "the prompt shows who filed: {printed}"
    );
    drop(as_agent);
}

#[test]
fn exec_runs_a_command_once_on_postgres_however_many_race() {
    let store = Postgres.fresh();
    let cli = Cli::new(store.location());
    let gate = store.gate();
    let payload = r#"{"to":"alice@example.com"}"#;
    let id = gate
        .request_approval(
            NewRequest::new("send invoice 1042", "the invoice is due")
                .operation("smtp.send")
                .payload(CanonicalPayload::from_json_text(payload).unwrap()),
        )
        .unwrap()
        .request
        .id();
    gate.approve(id, &Decision::by("alice")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("payload.json");
    std::fs::write(&file, payload).unwrap();
    let runs = scratch.path().join("runs");
    let racers: Vec<_> = (0..8)
        .map(|_| {
            cli.command(&["exec", id.as_str(), "--operation", "smtp.send"])
                .arg("--payload-file")
                .arg(&file)
                .args(["--", "sh", "-c", "cat >> \"$RUNS\"; echo >> \"$RUNS\""])
                .env("RUNS", &runs)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes: Vec<Option<i32>> = racers
        .into_iter()
        .map(|mut child| child.wait().unwrap().code())
        .collect();
    codes.sort_unstable();
    let mut expected = vec![Some(114); 7];
    expected.insert(0, Some(0));
    assert_eq!(codes, expected);
    // Once, with the approved bytes.
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        format!("{payload}\n")
    );
    let events: Vec<AuditEvent> = gate
        .audit_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.id == id)
        .map(|r| r.event)
        .collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == AuditEvent::ExecutionFinished)
            .count(),
        1,
        "{events:?}"
    );
}
