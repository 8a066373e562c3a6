//! The other set-up that holds against findings 10 and 12 of issue 37: the PostgreSQL store,
//! the agent holding only the agent role. It cannot clear a claim or write a revoked request
//! back to approved, in SQL or through the gate, and `exec` (as the executor's login, under a
//! system policy, with a signed approval) refuses the replay and the un-revoke.

use std::fmt::Write as _;
use std::process::{Command, Output, Stdio};

use approval_gate::{Gate, Location, NewRequest, RequestId};
use approval_gate_tests::backend::{Backend, Postgres};
use approval_gate_tests::pg;

use crate::exec::{ACTION, OP, PAYLOAD, RECORDER};
use crate::exec_policy::{keygen, write};
use crate::support::{
    BIN, approve, assert_exit, assert_success, operator_settings_of_this_test_only,
};

/// Login roles of one test, dropped with it (best effort).
struct Logins {
    agent: String,
    approver: String,
    executor: String,
}

impl Logins {
    fn create(url: &str) -> Self {
        let db = url.rsplit('/').next().unwrap().split('?').next().unwrap();
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
            let _ = write!(sql, "CREATE ROLE {login} LOGIN; GRANT {group} TO {login};");
        }
        pg::run_sql(pg::admin_url(), &sql);
        logins
    }
}

impl Drop for Logins {
    fn drop(&mut self) {
        let sql = format!(
            "DROP ROLE IF EXISTS {}, {}, {}",
            self.agent, self.approver, self.executor
        );
        let _ = std::thread::spawn(move || pg::run_sql(pg::admin_url(), &sql)).join();
    }
}

/// Runs `sql` as `url`'s login: whether the database took it.
fn sql_as(url: &str, sql: &str) -> bool {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    pg::on_own_thread(move || pg::connect(&url).batch_execute(&sql).is_ok())
}

#[test]
fn on_postgres_the_agent_role_can_neither_replay_nor_unrevoke() {
    let store = Postgres.fresh();
    let url = store.location().to_owned();
    let logins = Logins::create(&url);
    let agent_url = pg::url_with(&url, &logins.agent, None);
    let approver_url = pg::url_with(&url, &logins.approver, None);
    let executor_url = pg::url_with(&url, &logins.executor, None);

    let scratch = tempfile::tempdir().unwrap();
    let signers = scratch.path().join("allowed_signers");
    let alice = keygen(scratch.path(), "alice");
    write(&signers, &format!("alice@example.com {alice}\n"));
    let system = scratch.path().join("policy.toml");
    write(
        &system,
        &format!("approvers = {:?}\n", signers.to_str().unwrap()),
    );
    let payload = scratch.path().join("payload.json");
    std::fs::write(&payload, PAYLOAD).unwrap();
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let runs = || std::fs::read_to_string(out.join("runs")).map_or(0, |t| t.lines().count());

    let cli = |store: &str, args: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .args(["--store", store])
            .args(args)
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            .env("OUT", &out)
            .env_remove("SSH_AUTH_SOCK");
        operator_settings_of_this_test_only(&mut command, scratch.path());
        command.env("APPROVAL_GATE_SYSTEM_POLICY", &system);
        command
    };
    let agent = Gate::builder()
        .store(Location::parse(&agent_url).unwrap())
        .open()
        .unwrap();
    let signed = || -> RequestId {
        let ask = NewRequest::new(ACTION, "the invoice is due")
            .operation(OP)
            .payload(approval_gate::CanonicalPayload::from_json_text(PAYLOAD).unwrap());
        let id = agent.request_approval(ask).unwrap().request.id();
        let mut approving = cli(&approver_url, &["approve", id.as_str(), "--key"]);
        approving.arg(scratch.path().join("alice"));
        let (code, asked, printed) = approve(approving);
        assert_eq!((code, asked), (0, true), "{printed}");
        id
    };
    let exec = |id: RequestId| -> Output {
        cli(&executor_url, &["exec", id.as_str(), "--operation", OP])
            .arg("--payload-file")
            .arg(&payload)
            .args(["--", "sh", "-c", RECORDER])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    let id = signed();
    assert_success(&exec(id));
    assert_eq!(runs(), 1);
    // The replay: clear the claim. The agent's role may not.
    let replay = format!(
        "UPDATE approval_gate.requests SET claimed_ms = NULL, started = false, \
         status = 'approved', record = jsonb_set(record, '{{status}}', '\"approved\"') \
         WHERE id = '{id}'"
    );
    assert!(!sql_as(&agent_url, &replay), "the agent cleared the claim");
    assert_exit(&exec(id), 114, "already");

    // The un-revoke: write the revoked request back to approved.
    let revoked = signed();
    let revoke = cli(
        &approver_url,
        &["revoke", revoked.as_str(), "changed my mind"],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_success(&revoke);
    let unrevoke = format!(
        "UPDATE approval_gate.requests SET status = 'approved', \
         record = jsonb_set(record, '{{status}}', '\"approved\"') WHERE id = '{revoked}'"
    );
    assert!(!sql_as(&agent_url, &unrevoke), "the agent un-revoked");
    assert_exit(&exec(revoked), 113, "revoked");
    assert_eq!(runs(), 1);
    // The same statements from the database's owner do what the agent wanted: the role,
    // not the statement, is what stopped it.
    assert!(sql_as(&url, &replay));
    assert!(sql_as(&url, &unrevoke));
    assert_success(&exec(id));
    assert_success(&exec(revoked));
    assert_eq!(runs(), 3);
    // On PostgreSQL the store is not this account's to rewrite: no warning.
    let again = exec(revoked);
    assert_exit(&again, 114, "already");
    assert!(
        !crate::support::stderr(&again).contains("can rewrite the store"),
        "warned on postgres"
    );
}
