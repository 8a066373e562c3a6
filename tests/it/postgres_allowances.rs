//! Allowances on PostgreSQL, attacked from each role's own login (issue 41): only an
//! approver grants or revokes one, every role may read them, and no role writes their tables
//! but through the schema's functions: an agent cannot make, widen, extend, un-revoke or
//! refill one, nor delete a use to get it back.

use approval_gate::Clock as _;
use approval_gate::allowance::{Allowance, SignedAllowance};
use approval_gate::{Decision, ErrorCode, Gate, Location, Policy};
use approval_gate_tests::backend::{Backend, Postgres, Store};
use approval_gate_tests::pg::{connect, on_own_thread, url_with};
use approval_gate_tests::ssh::Approver;
use approval_gate_tests::suite::allowances::{Team, sign, terms};
use approval_gate_tests::suite::allowed::{consume, file};

use crate::postgres_records::Logins;

/// The suite's terms for `operation`, made now (the database's clock decides here), signed.
fn signed_now(operation: &str, by: &Approver) -> SignedAllowance {
    let now = approval_gate::SystemClock.now();
    let mut terms = terms(operation);
    terms.bounds.not_before = now;
    terms.bounds.not_after = now.saturating_add(std::time::Duration::from_secs(86_400));
    sign(Allowance::new(terms, now).expect("an allowance"), 1, &[by])
}

fn gate_as(store: &Store, login: &str, policy: Policy) -> Gate {
    let url = url_with(&Postgres::url(store), login, None);
    Gate::builder()
        .store(Location::parse(&url).expect("a store URL"))
        .policy(policy)
        .open()
        .unwrap_or_else(|e| panic!("open the store as {login}: {e}"))
}

/// Runs `sql` as `login`: the SQLSTATE of its refusal, or `None` if it ran.
fn refused_as(store: &Store, login: &str, sql: &str) -> Option<String> {
    let url = url_with(&Postgres::url(store), login, None);
    let sql = sql.to_owned();
    on_own_thread(move || {
        let mut client = connect(&url);
        client.batch_execute(&sql).err().map(|e| {
            e.code()
                .map_or_else(|| e.to_string(), |c| c.code().to_owned())
        })
    })
}

#[test]
fn postgres_only_an_approver_grants_or_revokes_an_allowance_and_no_role_writes_its_tables() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let team = Team::new();
    let agent = gate_as(&store, &logins.agent, team.policy());
    let approver = gate_as(&store, &logins.approver, team.policy());
    let executor = gate_as(&store, &logins.executor, team.policy());

    // An agent, or an executor, holding a human's signed allowance still cannot keep it.
    let wanted = signed_now("mail.send", &team.alice);
    for (who, gate) in [("agent", &agent), ("executor", &executor)] {
        let refused = gate.allow(wanted.clone()).expect_err(who);
        assert_eq!(refused.code(), ErrorCode::NotPermitted, "{who}: {refused}");
    }
    let aid = approver
        .allow(wanted)
        .expect("an approver grants it")
        .allowance
        .allowance
        .id();
    // Everyone may read them.
    for gate in [&agent, &approver, &executor] {
        assert_eq!(gate.allowances().expect("read").len(), 1);
    }
    let refused = agent
        .revoke_allowance(aid, &Decision::by("agent"))
        .expect_err("an agent cannot revoke");
    assert_eq!(refused.code(), ErrorCode::NotPermitted);

    // The plain claim, which counts nothing, refuses a request an allowance approved.
    let other = r#"{"amount":10,"to":"carol@example.com"}"#;
    let bypass = file(&agent, other);
    assert_eq!(bypass.allowance(), Some(aid));
    let url = url_with(&Postgres::url(&store), &logins.executor, None);
    let sql = format!(
        "SELECT approval_gate.claim('{}', '{{}}', NULL)",
        bypass.id()
    );
    let answer: String = on_own_thread(move || connect(&url).query_one(&sql, &[]).unwrap().get(0));
    assert_eq!(answer, "allowance_not_covering");
    assert!(!Postgres.claimed(&store, bypass.id()));

    // A use, counted by the executor's claim.
    let payload = r#"{"amount":10,"to":"bob@example.com"}"#;
    let request = file(&agent, payload);
    assert_eq!(
        request.allowance(),
        Some(aid),
        "the agent's filing is approved by it"
    );
    let _grant = consume(&executor, request.id(), payload).expect("runs");
    assert_eq!(agent.allowance(aid).expect("read").usage.uses, 1);

    // No role writes the tables, nor calls what it may not.
    let record = format!(
        "SELECT approval_gate.grant_allowance((SELECT record FROM approval_gate.allowances \
         WHERE id = '{aid}') || '{{}}'::jsonb, '{{}}', NULL)"
    );
    for login in [&logins.agent, &logins.approver, &logins.executor] {
        for sql in [
            "UPDATE approval_gate.allowances SET uses = 0, spent = 0, revoked_ms = NULL".to_owned(),
            "DELETE FROM approval_gate.allowance_uses".to_owned(),
            "UPDATE approval_gate.allowances SET record = jsonb_set(record, '{allowance,bounds,uses}', '1000')".to_owned(),
            format!(
                "INSERT INTO approval_gate.allowance_uses VALUES ('{aid}', '0123456789ab', 0, 0)"
            ),
        ] {
            assert_eq!(
                refused_as(&store, login, &sql).as_deref(),
                Some("42501"),
                "{login}: {sql}"
            );
        }
    }
    for login in [&logins.agent, &logins.executor] {
        assert!(
            refused_as(&store, login, &record).is_some(),
            "{login} grants"
        );
        assert!(
            refused_as(
                &store,
                login,
                &format!("SELECT approval_gate.revoke_allowance('{aid}', '{{}}', NULL)")
            )
            .is_some(),
            "{login} revokes"
        );
    }
    // Only an executor counts a use.
    for login in [&logins.agent, &logins.approver] {
        assert!(
            refused_as(
                &store,
                login,
                &format!(
                    "SELECT approval_gate.claim_under('{}', '{aid}', 1, '{{}}', NULL)",
                    request.id()
                )
            )
            .is_some(),
            "{login} claims"
        );
    }
    assert_eq!(agent.allowance(aid).expect("read").usage.uses, 1);

    approver
        .revoke_allowance(aid, &Decision::by("approver"))
        .expect("an approver revokes it");
    assert!(agent.allowance(aid).expect("read").revoked);
    approver.verify_audit().expect("the chain verifies");
}

/// A proposed allowance is co-signed only through an approver's login: an agent or an
/// executor holding the co-signer's real signature cannot add it, nor call the schema's
/// function with anything else.
#[test]
fn postgres_only_an_approver_adds_a_cosignature() {
    let store = Postgres.fresh();
    let logins = Logins::create(&store);
    let team = Team::new();
    let agent = gate_as(&store, &logins.agent, team.policy());
    let approver = gate_as(&store, &logins.approver, team.policy());
    let executor = gate_as(&store, &logins.executor, team.policy());
    let now = approval_gate::SystemClock.now();
    let mut terms = terms("payments.refund");
    terms.bounds.not_before = now;
    terms.bounds.not_after = now.saturating_add(std::time::Duration::from_secs(86_400));
    let allowance = Allowance::new(terms, now).expect("an allowance");
    let proposed = sign(allowance.clone(), 2, &[&team.alice]);
    let aid = allowance.id();
    approver
        .propose_allowance(proposed.clone())
        .expect("an approver proposes it");
    let bob = sign(allowance, 2, &[&team.bob]).signatures.remove(0);
    for (who, gate) in [("agent", &agent), ("executor", &executor)] {
        let refused = gate.cosign_allowance(aid, &bob).expect_err(who);
        assert_eq!(refused.code(), ErrorCode::NotPermitted, "{who}: {refused}");
        let sql = format!(
            "SELECT approval_gate.cosign_allowance('{aid}', \
             '{{\"principal\":\"x\",\"signature\":\"y\"}}', '{{}}', NULL)"
        );
        let login = if who == "agent" {
            &logins.agent
        } else {
            &logins.executor
        };
        assert!(refused_as(&store, login, &sql).is_some(), "{who} co-signs");
    }
    assert_eq!(
        agent.allowance(aid).expect("read").allowance,
        proposed,
        "nothing was added"
    );
    let complete = approver.cosign_allowance(aid, &bob).expect("co-signed");
    assert!(complete.is_active());
    approver.verify_audit().expect("the chain verifies");
}
