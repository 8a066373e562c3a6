//! The claim's refusals: for every state a request can be in and a clock before, at and past
//! its expiry, `approval_gate.claim` answers what `Gate::consume` answers from the same state
//! (the expiry recorded if due, then [`rules::check_consumable`]), with the same code, the
//! first that applies in the same order. The database judges what it can see: the request's
//! existence, archive, status, claim, expiry and quorum count. What only the library can judge
//! (signatures and their trust, the executor's action, operation and payload) the gate checks
//! before it asks for the claim, and is not compared here.

use serde_json::json;

use super::super::rows::compose;
use super::{Db, LATE, T0, T1, with_db};
use crate::error::{Error, ErrorCode};
use crate::id::RequestId;
use crate::policy::Policy;
use crate::request::{Binding, Request, Status};
use crate::rules::{self, Stage};
use crate::time::Timestamp;

/// The requests' expiry, to the millisecond: still valid at it, expired a millisecond on.
const EXPIRY: i64 = T0 + 600_000;

/// What a claim came to: taken, or refused with a code.
type Answer = Result<(), String>;

/// An approver's key, so that a gate holds a policy: with it, the quorum is counted.
const ED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";

impl Db {
    /// What the library answers to a consume of `id` at `at` with the binding it was
    /// approved for, from the row as stored: the gate's own order, without its store.
    fn rules_answer(&mut self, id: &str, at: i64, policy: Option<&Policy>) -> Answer {
        let code = |error: &Error| Err(error.code().to_string());
        let rid = RequestId::parse(id).expect("an id");
        let row = self
            .client
            .query_opt(
                "SELECT record::text, payload, claimed_ms IS NOT NULL, archived
                 FROM approval_gate.requests WHERE id = $1",
                &[&id],
            )
            .expect("a read");
        let Some(row) = row else {
            return code(&Error::NotFound(rid));
        };
        let (record, payload, claimed, archived): (String, Option<String>, bool, bool) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        if archived {
            return code(&Error::Archived(rid));
        }
        let now = Timestamp::from_unix_millis(at);
        let mut request =
            Request::decode(rid, &compose(&record, payload.as_deref())).expect("a record");
        if rules::expiry_due(&request, now) {
            request.decide(Status::Expired, now, None);
        }
        let binding = Binding::new(request.action());
        // As `Gate::required_approvals` counts them: the policy's number or the recorded one.
        let policy = policy.map(|policy| {
            let required = policy.required_approvals(request.operation());
            (policy, required.max(request.required_approvals()))
        });
        match rules::check_consumable::<serde_json::Value>(&request, claimed, &binding, policy, now)
        {
            Ok(_) => Ok(()),
            Err(refusal) => code(&refusal),
        }
    }

    /// What the schema's claim answers to a claim of `id` at `at`, as the library reads it.
    fn schema_answer(&mut self, id: &str, at: i64) -> Answer {
        match self.client.query_one(
            "SELECT approval_gate.claim($1, '{}'::jsonb, $2)",
            &[&id, &at],
        ) {
            Ok(row) => match row.get::<_, String>(0).as_str() {
                "claimed" => Ok(()),
                "already_consumed" => Err(ErrorCode::AlreadyConsumed.to_string()),
                reason => Err(reason.to_owned()),
            },
            Err(error) => match error.code().map(postgres::error::SqlState::code) {
                Some("AG003") => Err(ErrorCode::NotFound.to_string()),
                Some("AG006") => Err(ErrorCode::Archived.to_string()),
                _ => panic!("claim of {id}: {error}"),
            },
        }
    }

    /// Rewrites the row of `id` as its owner could, beyond what the steps allow: approved
    /// with no approvals though it needs two, its claim made or not.
    fn approved_without_quorum(&mut self, id: &str, claimed: bool) {
        let mut record = self.record(id);
        record["status"] = "approved".into();
        record["decidedAt"] = super::ts(T1).into();
        record["decidedBy"] = "rules".into();
        record["requiredApprovals"] = 2.into();
        record["approvals"] = json!([]);
        self.client
            .execute(
                "UPDATE approval_gate.requests SET record = $2::text::jsonb, status = 'approved',
                     claimed_ms = CASE WHEN $3 THEN $4::bigint END
                 WHERE id = $1",
                &[&id, &record.to_string(), &claimed, &T1],
            )
            .expect("the owner rewrites the row");
    }
}

/// What the walk found: every answer, and where the two sides differ.
#[derive(Default)]
struct Walk {
    answers: Vec<Answer>,
    disagreements: Vec<String>,
}

impl Walk {
    /// Both sides' answers to one claim, compared; a refusal leaves the request where it was.
    fn claim(&mut self, db: &mut Db, id: &str, at: i64, policy: Option<&Policy>, case: &str) {
        let before = db.stage_or_none(id);
        let rules = db.rules_answer(id, at, policy);
        let schema = db.schema_answer(id, at);
        if schema != rules {
            self.disagreements.push(format!(
                "{case} at T0+{}s: the schema {schema:?}, the rules {rules:?}",
                (at - T0) / 1000
            ));
        }
        if schema.is_err() {
            assert_eq!(
                db.stage_or_none(id),
                before,
                "{case}: a refusal moves nothing"
            );
        }
        self.answers.push(schema);
    }
}

impl Db {
    fn stage_or_none(&mut self, id: &str) -> Option<Stage> {
        let exists = self
            .client
            .query_opt("SELECT 1 FROM approval_gate.requests WHERE id = $1", &[&id])
            .expect("a read")
            .is_some();
        exists.then(|| self.stage(id))
    }
}

#[test]
fn every_refusal_of_a_claim_is_the_rules_in_the_rules_order() {
    with_db("claim", |db| {
        let mut walk = Walk::default();
        for stage in Stage::ALL {
            for at in [T1, EXPIRY, LATE] {
                let id = db.at(stage, false);
                walk.claim(db, &id, at, None, stage.as_str());
            }
        }
        // Nobody filed it.
        walk.claim(db, "0000000fffff", T1, None, "an id nobody filed");
        // What the steps never leave but an owner can write: an approval short of its quorum,
        // spent or not, in time or not. The library counts the quorum before the claim and
        // the expiry, and so must the schema.
        let policy = Policy::from_allowed_signers(&format!("a@x {ED}")).expect("a policy");
        for claimed in [false, true] {
            for at in [T1, LATE] {
                let id = db.file(true);
                db.approved_without_quorum(&id, claimed);
                let case = format!("an approval without its quorum, claimed: {claimed}");
                walk.claim(db, &id, at, Some(&policy), &case);
            }
        }
        assert!(walk.disagreements.is_empty(), "{:#?}", walk.disagreements);
        // The walk met every refusal the schema can give, and a claim taken.
        let mut codes = walk.answers;
        codes.sort();
        codes.dedup();
        let expected: Vec<Answer> = std::iter::once(Ok(()))
            .chain(
                [
                    ErrorCode::AlreadyConsumed,
                    ErrorCode::ApprovalExpired,
                    ErrorCode::Archived,
                    ErrorCode::Denied,
                    ErrorCode::Expired,
                    ErrorCode::InsufficientApprovals,
                    ErrorCode::NotApproved,
                    ErrorCode::NotFound,
                    ErrorCode::Revoked,
                ]
                .map(|code| Err(code.to_string())),
            )
            .collect();
        let mut expected = expected;
        expected.sort();
        assert_eq!(codes, expected);
    });
}
