//! The rulebook and the schema agree: for every stage a request can stand at and every event
//! that could be recorded of it, the PostgreSQL functions take the step exactly when
//! [`rules::next_stage`](crate::rules::next_stage) allows it, and leave the request where it
//! says. The transitions are written once, in Rust; the schema enforces them again against a
//! hostile client, and this test holds the two together.

use postgres::{Client, NoTls};
use serde_json::{Value, json};

use super::init;
use crate::audit::AuditEvent;
use crate::rules::{EVENTS, Stage, next_stage};

mod claim;

/// The filing time, and a minute later, when every decision of the test is taken.
const T0: i64 = 1_767_225_600_000;
const T1: i64 = T0 + 60_000;
/// Past the requests' ten-minute lifetime: when expiries are recorded.
const LATE: i64 = T0 + 11 * 60_000;
/// A month on: when archiving may take any finished request.
const MONTH: i64 = T0 + 30 * 24 * 3600 * 1000;
/// The lock class of a running execution (`approval_gate.hold`).
const EXECUTION_LOCK: i32 = 1_095_192_401;

fn ts(ms: i64) -> String {
    crate::time::Timestamp::from_unix_millis(ms).to_string()
}

struct Db {
    client: Client,
    next: u64,
}

impl Db {
    /// Files a new request at [`T0`] (a quorum of two when `quorum`), as the superuser.
    fn file(&mut self, quorum: bool) -> String {
        self.next += 1;
        let id = format!("{:012x}", 0xb000_0000_0000_u64 + self.next);
        let mut record = json!({
            "version": crate::request::FORMAT_VERSION, "id": id, "action": format!("rules {id}"),
            "reason": "the rules agree", "requestedBy": null, "operation": null,
            "payloadDigest": null, "createdAt": ts(T0), "expiresAt": ts(T0 + 600_000),
            "status": "pending", "decidedAt": null, "decisionReason": null, "decidedBy": null,
        });
        if quorum {
            record["requiredApprovals"] = 2.into();
        }
        self.client
            .query_one(
                "SELECT approval_gate.file_request($1::text::jsonb, NULL, '{}'::jsonb, $2, 1000, 1000, false)",
                &[&record.to_string(), &T0],
            )
            .expect("files");
        id
    }

    fn record(&mut self, id: &str) -> Value {
        let text: String = self
            .client
            .query_one(
                "SELECT record::text FROM approval_gate.requests WHERE id = $1",
                &[&id],
            )
            .expect("the row")
            .get(0);
        serde_json::from_str(&text).expect("JSON")
    }

    /// Records `event` of `id` through the schema's own step, built as the library builds
    /// it; whether the step was taken.
    fn attempt(&mut self, id: &str, event: AuditEvent) -> bool {
        let mut record = self.record(id);
        let decided = |record: &mut Value, status: &str| {
            record["status"] = status.into();
            record["decidedAt"] = ts(T1).into();
            record["decidedBy"] = "rules".into();
        };
        let (step, at) = match event {
            AuditEvent::Approved => {
                let approvals = record["approvals"].as_array().map_or(0, Vec::len);
                if approvals == 1 {
                    add_approval(&mut record, "bob");
                }
                decided(&mut record, "approved");
                ("approve", T1)
            }
            AuditEvent::ApprovalAdded => {
                add_approval(&mut record, "alice");
                ("approve", T1)
            }
            AuditEvent::Denied => {
                decided(&mut record, "denied");
                ("deny", T1)
            }
            AuditEvent::Revoked => {
                decided(&mut record, "revoked");
                ("revoke", T1)
            }
            AuditEvent::Expired => {
                decided(&mut record, "expired");
                record["decidedBy"] = Value::Null;
                ("expire", LATE)
            }
            AuditEvent::Consumed => {
                return self
                    .client
                    .query_one(
                        "SELECT approval_gate.claim($1, '{}'::jsonb, $2)",
                        &[&id, &T1],
                    )
                    .is_ok_and(|row| row.get::<_, String>(0) == "claimed");
            }
            AuditEvent::ExecutionStarted => {
                self.client
                    .execute("SELECT approval_gate.hold($1, $2)", &[&EXECUTION_LOCK, &id])
                    .expect("the superuser holds the execution lock");
                return self.call("start_execution", id, T1);
            }
            AuditEvent::ExecutionFinished => return self.call("finish_execution", id, T1),
            AuditEvent::Archived => return self.call("archive", id, MONTH),
            other => panic!("{other:?} moves no request"),
        };
        let name = serde_json::to_value(event).expect("an event name");
        let name = name.as_str().expect("a string");
        self.client
            .query_one(
                "SELECT approval_gate.decide($1, $2, $3, $4::text::jsonb, '{}'::jsonb, $5)",
                &[&id, &step, &name, &record.to_string(), &at],
            )
            .is_ok()
    }

    fn call(&mut self, function: &str, id: &str, at: i64) -> bool {
        let sql = format!("SELECT approval_gate.{function}($1, '{{}}'::jsonb, $2)");
        self.client.query_one(&sql, &[&id, &at]).is_ok()
    }

    /// Where the row says the request stands.
    fn stage(&mut self, id: &str) -> Stage {
        let row = self
            .client
            .query_one(
                "SELECT status, claimed_ms IS NOT NULL, started, executing, archived
                 FROM approval_gate.requests WHERE id = $1",
                &[&id],
            )
            .expect("the row");
        let (status, claimed, started, executing, archived): (String, bool, bool, bool, bool) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        if archived {
            Stage::Archived
        } else if executing {
            Stage::Executing
        } else if started {
            Stage::Executed
        } else if claimed {
            Stage::Consumed
        } else {
            Stage::ALL
                .into_iter()
                .find(|stage| stage.as_str() == status)
                .unwrap_or_else(|| panic!("status {status}"))
        }
    }

    /// A new request brought to `stage` through the schema's steps; with `quorum`, one that
    /// needs two approvals (so that adding one is a step it may take).
    fn at(&mut self, stage: Stage, quorum: bool) -> String {
        let path: &[AuditEvent] = match stage {
            Stage::Pending => &[],
            Stage::Approved => &[AuditEvent::Approved],
            Stage::Consumed => &[AuditEvent::Approved, AuditEvent::Consumed],
            Stage::Executing => &[
                AuditEvent::Approved,
                AuditEvent::Consumed,
                AuditEvent::ExecutionStarted,
            ],
            Stage::Executed => &[
                AuditEvent::Approved,
                AuditEvent::Consumed,
                AuditEvent::ExecutionStarted,
                AuditEvent::ExecutionFinished,
            ],
            Stage::Denied => &[AuditEvent::Denied],
            Stage::Expired => &[AuditEvent::Expired],
            Stage::Revoked => &[AuditEvent::Approved, AuditEvent::Revoked],
            Stage::Archived => &[AuditEvent::Denied, AuditEvent::Archived],
        };
        let id = self.file(quorum);
        for &event in path {
            if quorum && event == AuditEvent::Approved {
                assert!(self.attempt(&id, AuditEvent::ApprovalAdded), "{id}: added");
            }
            assert!(
                self.attempt(&id, event),
                "{id}: {event:?} on the way to {stage:?}"
            );
        }
        assert_eq!(self.stage(&id), stage, "{id}");
        id
    }
}

fn add_approval(record: &mut Value, principal: &str) {
    let approval = json!({
        "principal": format!("{principal}@example.com"), "decidedBy": principal,
        "decidedAt": ts(T1), "signature": "not checked by the schema",
    });
    match record["approvals"].as_array_mut() {
        Some(approvals) => approvals.push(approval),
        None => record["approvals"] = json!([approval]),
    }
}

/// Runs `test` on a fresh database named after `tag` with the schema installed, connected as
/// the superuser, on a thread of its own (the sync client must not run on a runtime's
/// thread); drops the database after. Skips outside CI without `APPROVAL_GATE_TEST_PG`.
fn with_db(tag: &str, test: impl FnOnce(&mut Db) + Send + 'static) {
    // The server of `APPROVAL_GATE_TEST_PG` (a superuser URL), which `.ci/run` sets.
    let Ok(admin) = std::env::var("APPROVAL_GATE_TEST_PG") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "APPROVAL_GATE_TEST_PG is not set: the PostgreSQL tests cannot run"
        );
        return;
    };
    let name = format!("ag{tag}_{}", std::process::id());
    let base = admin.rsplit_once('/').expect("a URL ending in /database").0;
    let url = format!("{base}/{name}");
    std::thread::spawn(move || {
        let mut server = Client::connect(&admin, NoTls).expect("connect");
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            server.batch_execute(&sql).expect("a database");
        }
        init(&url).expect("db init");
        let mut db = Db {
            client: Client::connect(&url, NoTls).expect("connect"),
            next: 0,
        };
        test(&mut db);
        drop(db);
        server
            .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .expect("drop");
    })
    .join()
    .expect("the rules and the schema agree");
}

#[test]
fn every_transition_the_schema_takes_is_the_rules_and_no_other() {
    with_db("rules", |db| {
        let moves: Vec<AuditEvent> = EVENTS
            .into_iter()
            .filter(|event| crate::rules::effect(*event) == crate::rules::Effect::Moves)
            .collect();
        assert_eq!(moves.len(), 9, "{moves:?}");
        let mut taken = 0;
        for from in Stage::ALL {
            for &event in &moves {
                let id = db.at(from, event == AuditEvent::ApprovalAdded);
                let rules = next_stage(from, event);
                let schema = db.attempt(&id, event);
                assert_eq!(
                    schema,
                    rules.is_some(),
                    "{event:?} from {from:?}: the schema {} it, the rules {}",
                    if schema { "takes" } else { "refuses" },
                    if rules.is_some() {
                        "allow it"
                    } else {
                        "do not"
                    },
                );
                let now = db.stage(&id);
                assert_eq!(now, rules.unwrap_or(from), "{event:?} from {from:?}");
                taken += usize::from(schema);
            }
        }
        // The walk took steps as well as refusing them.
        assert!(taken >= 12, "{taken}");
    });
}
