use serde_json::{Value, json};

use super::*;
use crate::time::Timestamp;

fn t(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap()
}

fn t0() -> Timestamp {
    t("2026-12-01T10:00:00Z")
}

fn bounds() -> Bounds {
    Bounds {
        uses: Some(3),
        budget: None,
        rate: None,
        not_before: t0(),
        not_after: t("2026-12-02T10:00:00Z"),
    }
}

fn invoices() -> Allowance {
    let terms = Terms {
        operation: "mail.send".into(),
        constraints: vec![
            Constraint::new("/to", Test::Glob("*@example.com".into())).unwrap(),
            Constraint::new("/amount", Test::AtMost(5000)).unwrap(),
        ],
        bounds: bounds(),
        agent: None,
        reason: "invoices today".into(),
    };
    Allowance::with_id(RequestId::parse("0123456789ab").unwrap(), terms, t0()).unwrap()
}

fn payload(value: &Value) -> CanonicalPayload {
    CanonicalPayload::from_value(value).unwrap()
}

#[test]
fn it_covers_exactly_what_its_operation_and_constraints_say() {
    let allowance = invoices();
    let ok = payload(&json!({"to": "bob@example.com", "amount": 5000}));
    assert_eq!(
        allowance.covers(Some("mail.send"), Some(&ok), None),
        Ok(None)
    );
    let refused = |op: Option<&str>, value: Option<Value>| {
        let p = value.map(|v| payload(&v));
        allowance.covers(op, p.as_ref(), None).unwrap_err()
    };
    assert!(matches!(
        refused(
            Some("mail.delete"),
            Some(json!({"to": "bob@example.com", "amount": 1}))
        ),
        Uncovered::Operation { .. }
    ));
    assert!(matches!(refused(None, None), Uncovered::Operation { .. }));
    assert_eq!(refused(Some("mail.send"), None), Uncovered::NoPayload);
    assert!(matches!(
        refused(
            Some("mail.send"),
            Some(json!({"to": "bob@example.com", "amount": 5001}))
        ),
        Uncovered::Constraint(Unmet::Fails { .. })
    ));
    // A list of addresses does not meet `*@example.com`.
    assert!(matches!(
        refused(
            Some("mail.send"),
            Some(json!({"to": "x@evil.example, bob@example.com", "amount": 1}))
        ),
        Uncovered::Constraint(Unmet::Fails { .. })
    ));
    // What cannot be evaluated does not hold.
    assert!(matches!(
        refused(Some("mail.send"), Some(json!({"to": "bob@example.com"}))),
        Uncovered::Constraint(Unmet::Missing { .. })
    ));
    assert!(matches!(
        refused(
            Some("mail.send"),
            Some(json!({"to": "bob@example.com", "amount": "1"}))
        ),
        Uncovered::Constraint(Unmet::WrongType { .. })
    ));
    assert!(matches!(
        refused(
            Some("mail.send"),
            Some(json!({"to": "bob@example.com", "amount": 1.5}))
        ),
        Uncovered::Constraint(Unmet::WrongType { .. })
    ));
}

#[test]
fn a_pattern_covers_the_operations_it_matches_and_an_agent_only_its_own() {
    let mut terms = invoices().terms().clone();
    terms.operation = "mail.*".into();
    terms.constraints.clear();
    terms.agent = Some("agent-1".into());
    let allowance = Allowance::new(terms, t0()).unwrap();
    assert_eq!(
        allowance.covers(Some("mail.send"), None, Some("agent-1")),
        Ok(None)
    );
    assert!(matches!(
        allowance.covers(Some("mail.send"), None, Some("agent-2")),
        Err(Uncovered::Agent { .. })
    ));
    assert!(matches!(
        allowance.covers(Some("mail.send"), None, None),
        Err(Uncovered::Agent { .. })
    ));
    assert!(matches!(
        allowance.covers(Some("payments.send"), None, Some("agent-1")),
        Err(Uncovered::Operation { .. })
    ));
}

#[test]
fn the_statement_is_canonical_json_of_every_term_and_not_a_decision_statement() {
    let allowance = invoices();
    let statement = String::from_utf8(allowance.statement("alice@x", 2).unwrap()).unwrap();
    assert_eq!(
        statement,
        r#"{"agent":null,"bounds":{"budget":null,"notAfter":"2026-12-02T10:00:00.000Z","notBefore":"2026-12-01T10:00:00.000Z","rate":null,"uses":3},"constraints":[{"glob":"*@example.com","pointer":"/to"},{"atMost":5000,"pointer":"/amount"}],"createdAt":"2026-12-01T10:00:00.000Z","id":"0123456789ab","operation":"mail.send","principal":"alice@x","reason":"invoices today","requiredApprovals":2,"statement":"approval-gate allowance","version":1}"#
    );
    // Every term is signed: change any, and the statement changes.
    let mut edited = allowance.terms().clone();
    edited.constraints[1] = Constraint::new("/amount", Test::AtMost(5001)).unwrap();
    let edited = Allowance::with_id(allowance.id(), edited, t0()).unwrap();
    assert_ne!(
        edited.statement("alice@x", 2).unwrap(),
        statement.as_bytes()
    );
    assert_ne!(
        allowance.statement("bob@x", 2).unwrap(),
        statement.as_bytes()
    );
    assert_ne!(
        allowance.statement("alice@x", 1).unwrap(),
        statement.as_bytes()
    );
    assert!(allowance.statement("", 1).is_err());
}

#[test]
fn bounds_admit_uses_up_to_each_limit_and_refuse_at_the_edge() {
    let mut b = bounds();
    b.budget = Some(Budget {
        pointer: "/amount".into(),
        total: 100,
    });
    b.rate = Some(Rate {
        count: 2,
        period: std::time::Duration::from_secs(60),
    });
    let now = t("2026-12-01T12:00:00Z");
    let mut usage = Usage::default();
    assert_eq!(b.admit(&usage, Some(100), now), Ok(()));
    assert!(matches!(
        b.admit(&usage, Some(101), now),
        Err(Exhausted::Budget { .. })
    ));
    assert!(matches!(
        b.admit(&usage, None, now),
        Err(Exhausted::Amount { .. })
    ));
    usage.spent = 60;
    assert_eq!(b.admit(&usage, Some(40), now), Ok(()));
    assert!(matches!(
        b.admit(&usage, Some(41), now),
        Err(Exhausted::Budget { .. })
    ));
    // The rate: two uses in the last minute fill it; one just outside does not count.
    usage.recent = vec![now.saturating_sub(std::time::Duration::from_secs(59)), now];
    assert!(matches!(
        b.admit(&usage, Some(1), now),
        Err(Exhausted::Rate { .. })
    ));
    usage.recent = vec![now.saturating_sub(std::time::Duration::from_secs(60)), now];
    assert_eq!(b.admit(&usage, Some(1), now), Ok(()));
    usage.recent.clear();
    usage.uses = 2;
    assert_eq!(b.admit(&usage, Some(1), now), Ok(()));
    usage.uses = 3;
    assert!(matches!(
        b.admit(&usage, Some(1), now),
        Err(Exhausted::Uses { limit: 3 })
    ));
    usage.uses = 0;
    // The window, at its edges: both ends are inside.
    assert_eq!(b.admit(&usage, Some(1), b.not_before), Ok(()));
    assert_eq!(b.admit(&usage, Some(1), b.not_after), Ok(()));
    let before = b
        .not_before
        .saturating_sub(std::time::Duration::from_millis(1));
    let after = b
        .not_after
        .saturating_add(std::time::Duration::from_millis(1));
    assert!(matches!(
        b.admit(&usage, Some(1), before),
        Err(Exhausted::NotYet { .. })
    ));
    assert!(matches!(
        b.admit(&usage, Some(1), after),
        Err(Exhausted::Ended { .. })
    ));
}

#[test]
fn a_negative_or_fractional_amount_is_never_counted() {
    let mut b = bounds();
    b.budget = Some(Budget {
        pointer: "/amount".into(),
        total: 100,
    });
    for amount in [json!(-5), json!(2.5), json!("5"), json!(null)] {
        assert!(
            matches!(
                b.amount(&json!({ "amount": amount })),
                Err(Exhausted::Amount { .. })
            ),
            "{amount}"
        );
    }
    assert_eq!(b.amount(&json!({"amount": 7})), Ok(Some(7)));
}

#[test]
fn bounds_that_do_not_bound_are_refused() {
    let made = t0();
    let mut b = bounds();
    b.uses = None;
    assert!(
        b.check(made)
            .unwrap_err()
            .contains("uses, a budget or a rate")
    );
    let mut b = bounds();
    b.not_after = made.saturating_add(MAX_WINDOW + std::time::Duration::from_millis(1));
    assert!(b.check(made).unwrap_err().contains("7 days"));
    b.not_after = made.saturating_add(MAX_WINDOW);
    assert_eq!(b.check(made), Ok(()));
    let mut b = bounds();
    b.not_after = b.not_before;
    assert!(b.check(made).is_err());
    let mut b = bounds();
    b.uses = Some(0);
    assert!(b.check(made).is_err());
    let mut b = bounds();
    b.rate = Some(Rate {
        count: 1,
        period: std::time::Duration::from_millis(1500),
    });
    assert!(b.check(made).is_err());
}

#[test]
fn constraints_read_back_what_they_write_and_refuse_anything_else() {
    for constraint in invoices().terms().constraints.iter().chain([
        &Constraint::new("/a~1b", Test::OneOf(vec![json!("x"), json!(3)])).unwrap(),
        &Constraint::new("/n", Test::AtLeast(-4)).unwrap(),
    ]) {
        assert_eq!(
            &Constraint::from_json(&constraint.to_json()).unwrap(),
            constraint
        );
    }
    for bad in [
        json!({"pointer": "/a", "glob": "x", "atMost": 3}),
        json!({"pointer": "/a"}),
        json!({"pointer": "a", "glob": "x"}),
        json!({"pointer": "/a~2", "glob": "x"}),
        json!({"pointer": "/a", "oneOf": []}),
        json!({"pointer": "/a", "oneOf": [1.5]}),
        json!({"pointer": "/a", "oneOf": [{"x": 1}]}),
        json!({"pointer": "/a", "atMost": 1.5}),
        json!({"pointer": "/a", "atMost": 9_007_199_254_740_992_i64}),
        json!({"pointer": "/a", "regex": ".*"}),
    ] {
        assert!(Constraint::from_json(&bad).is_err(), "{bad}");
    }
}

#[test]
fn constraint_globs_never_stretch_over_a_separator() {
    assert!(constraint::glob_matches("bob@example.com", "*@example.com"));
    assert!(constraint::glob_matches(
        "a.b@example.com",
        "?.?@example.com"
    ));
    for text in [
        "x@evil.example,bob@example.com",
        "x@evil.example bob@example.com",
        "x@evil.example;bob@example.com",
        "<x@evil.example>bob@example.com",
        "x\n@example.com",
    ] {
        assert!(!constraint::glob_matches(text, "*@example.com"), "{text:?}");
    }
    assert!(!constraint::glob_matches(
        "bob@example.com.evil",
        "*@example.com"
    ));
}

#[test]
fn patterns_overlap_when_some_name_matches_both() {
    for (a, b) in [
        ("payments.*", "payments.refund"),
        ("payments.*", "*"),
        ("*.refund", "payments.*"),
        ("pay?ents.x", "payments.*"),
        ("mail.send", "mail.send"),
    ] {
        assert!(patterns_overlap(a, b), "{a} {b}");
        assert!(patterns_overlap(b, a), "{b} {a}");
    }
    for (a, b) in [
        ("payments.*", "mail.*"),
        ("mail.send", "mail.sent"),
        ("a?", "a"),
        ("*.x", "*.y"),
    ] {
        assert!(!patterns_overlap(a, b), "{a} {b}");
        assert!(!patterns_overlap(b, a), "{b} {a}");
    }
}

#[test]
fn it_says_what_it_allows_in_words() {
    let lines = invoices().describe();
    assert_eq!(
        lines,
        [
            "operation mail.send",
            "/to matches \"*@example.com\"",
            "/amount is at most 5000",
            "at most 3 times",
            "from 2026-12-01T10:00:00.000Z until 2026-12-02T10:00:00.000Z",
        ]
    );
}

#[test]
fn a_record_reads_back_as_written_and_nothing_else_reads() {
    let mut terms = invoices().terms().clone();
    terms.bounds.budget = Some(Budget {
        pointer: "/amount".into(),
        total: 9000,
    });
    terms.bounds.rate = Some(Rate {
        count: 4,
        period: std::time::Duration::from_secs(3600),
    });
    terms.agent = Some("agent-1".into());
    let allowance = Allowance::new(terms, t0()).unwrap();
    let record = allowance.to_json();
    assert_eq!(Allowance::from_json(&record).unwrap(), allowance);
    let mut extra = record.clone();
    extra["approved"] = json!(true);
    assert!(Allowance::from_json(&extra).is_err());
    let mut widened = record.clone();
    widened["bounds"]["notAfter"] = json!("2026-12-30T10:00:00.000Z");
    assert!(
        Allowance::from_json(&widened)
            .unwrap_err()
            .contains("7 days")
    );
    let mut bad = record;
    bad["bounds"]["budget"] = json!({"pointer": "/amount", "total": -1});
    assert!(Allowance::from_json(&bad).is_err());
}

mod signed {
    use ssh_key::private::Ed25519Keypair;
    use ssh_key::{HashAlg, LineEnding, PrivateKey};

    use super::*;
    use crate::Policy;
    use crate::request::SIGNATURE_NAMESPACE;

    struct Approver {
        principal: &'static str,
        key: PrivateKey,
    }

    impl Approver {
        fn new(principal: &'static str, seed: u8) -> Self {
            Self {
                principal,
                key: PrivateKey::from(Ed25519Keypair::from_seed(&[seed; 32])),
            }
        }

        fn line(&self) -> String {
            format!(
                "{} {}\n",
                self.principal,
                self.key.public_key().to_openssh().unwrap()
            )
        }

        fn sign(&self, allowance: &Allowance, required: u32) -> AllowanceSignature {
            let statement = allowance.statement(self.principal, required).unwrap();
            self.sign_bytes(&statement)
        }

        fn sign_bytes(&self, bytes: &[u8]) -> AllowanceSignature {
            AllowanceSignature {
                principal: self.principal.to_owned(),
                signature: self
                    .key
                    .sign(SIGNATURE_NAMESPACE, HashAlg::Sha512, bytes)
                    .unwrap()
                    .to_pem(LineEnding::LF)
                    .unwrap(),
            }
        }
    }

    fn alice() -> Approver {
        Approver::new("alice@example.com", 1)
    }

    fn bob() -> Approver {
        Approver::new("bob@example.com", 2)
    }

    fn policy() -> Policy {
        Policy::from_allowed_signers(&(alice().line() + &bob().line()))
            .and_then(|p| p.require("payments.refund", 3))
            .and_then(|p| p.require("payments.*", 2))
            .and_then(|p| p.require("*", 1))
            .unwrap()
    }

    fn signed(allowance: Allowance, required: u32, by: &[&Approver]) -> SignedAllowance {
        let signatures = by.iter().map(|a| a.sign(&allowance, required)).collect();
        SignedAllowance {
            allowance,
            required,
            signatures,
        }
    }

    fn wires() -> Allowance {
        let mut terms = invoices().terms().clone();
        terms.operation = "payments.wire".into();
        Allowance::new(terms, t0()).unwrap()
    }

    #[test]
    fn a_trusted_signature_of_the_whole_statement_counts() {
        let now = t("2026-12-01T12:00:00Z");
        let ok = signed(invoices(), 1, &[&alice()]);
        assert_eq!(ok.verify(&policy(), "mail.send", now), Ok(()));
        let both = signed(wires(), 2, &[&alice(), &bob()]);
        assert_eq!(both.verify(&policy(), "payments.wire", now), Ok(()));
    }

    /// One human is one approver however the approvers file names them: one key listed
    /// under two names, or one name with two keys, counts once, and cannot co-sign as a
    /// second approver.
    #[test]
    fn one_key_or_one_principal_counts_once() {
        let now = t("2026-12-01T12:00:00Z");
        let ops = Approver::new("alice-ops@example.com", 1);
        let laptop = Approver::new("alice@example.com", 3);
        let policy = Policy::from_allowed_signers(&(alice().line() + &ops.line() + &laptop.line()))
            .and_then(|p| p.require("payments.*", 2))
            .unwrap();
        for (second, why) in [(&ops, "this key"), (&laptop, "this principal")] {
            let both = signed(wires(), 2, &[&alice(), second]);
            assert_eq!(both.counted(&policy, now), 1, "{why}");
            assert_eq!(
                both.verify(&policy, "payments.wire", now),
                Err(Forged::Insufficient {
                    counted: 1,
                    required: 2
                }),
                "{why}"
            );
            let first = signed(wires(), 2, &[&alice()]);
            let refused = first
                .check_another(&second.sign(&wires_of(&first), 2), &policy, now)
                .unwrap_err();
            assert!(
                matches!(&refused, Forged::BadSignature { problem, .. } if problem.starts_with(why)),
                "{why}: {refused}"
            );
        }
    }

    fn wires_of(signed: &SignedAllowance) -> Allowance {
        signed.allowance.clone()
    }

    #[test]
    fn every_forgery_is_refused_with_its_reason() {
        let now = t("2026-12-01T12:00:00Z");
        let policy = policy();
        // No signature at all.
        let unsigned = signed(invoices(), 1, &[]);
        assert_eq!(
            unsigned.verify(&policy, "mail.send", now),
            Err(Forged::Unsigned)
        );
        // Signed by a key the approvers file does not hold.
        let stranger = Approver::new("alice@example.com", 9);
        let untrusted = signed(invoices(), 1, &[&stranger]);
        assert!(matches!(
            untrusted.verify(&policy, "mail.send", now),
            Err(Forged::Untrusted { .. })
        ));
        // A constraint edited after signing.
        let mut edited = signed(invoices(), 1, &[&alice()]);
        let mut terms = edited.allowance.terms().clone();
        terms.constraints[1] = Constraint::new("/amount", Test::AtMost(500_000)).unwrap();
        edited.allowance = Allowance::with_id(edited.allowance.id(), terms, t0()).unwrap();
        assert!(matches!(
            edited.verify(&policy, "mail.send", now),
            Err(Forged::BadSignature { .. })
        ));
        // A wider window written over the signed one.
        let mut widened = signed(invoices(), 1, &[&alice()]);
        let mut terms = widened.allowance.terms().clone();
        terms.bounds.uses = Some(300);
        widened.allowance = Allowance::with_id(widened.allowance.id(), terms, t0()).unwrap();
        assert!(matches!(
            widened.verify(&policy, "mail.send", now),
            Err(Forged::BadSignature { .. })
        ));
        // Signed as one of 1 where the operation needs 2; and as one of 2 by one approver.
        let low = signed(wires(), 1, &[&alice()]);
        assert_eq!(
            low.verify(&policy, "payments.wire", now),
            Err(Forged::QuorumTooLow {
                signed: 1,
                required: 2
            })
        );
        let short = signed(wires(), 2, &[&alice()]);
        assert_eq!(
            short.verify(&policy, "payments.wire", now),
            Err(Forged::Insufficient {
                counted: 1,
                required: 2
            })
        );
        // One approver twice is one approver.
        let twice = signed(wires(), 2, &[&alice(), &alice()]);
        assert_eq!(
            twice.verify(&policy, "payments.wire", now),
            Err(Forged::Insufficient {
                counted: 1,
                required: 2
            })
        );
        // Bob's key signing as alice is not alice.
        let mut posing = signed(wires(), 2, &[&alice(), &bob()]);
        posing.signatures[1].principal = "alice@example.com".into();
        assert!(posing.verify(&policy, "payments.wire", now).is_err());
    }

    #[test]
    fn a_signature_of_any_other_statement_is_not_an_allowance() {
        let now = t("2026-12-01T12:00:00Z");
        let allowance = invoices();
        // The same terms, signed as bytes that are not the allowance statement (a decision
        // statement says "approval-gate decision"): refused.
        let mut statement: Value =
            serde_json::from_slice(&allowance.statement("alice@example.com", 1).unwrap()).unwrap();
        statement["statement"] = json!("approval-gate decision");
        let other = CanonicalPayload::from_value(&statement).unwrap();
        let forged = SignedAllowance {
            allowance,
            required: 1,
            signatures: vec![alice().sign_bytes(other.as_bytes())],
        };
        assert!(matches!(
            forged.verify(&policy(), "mail.send", now),
            Err(Forged::BadSignature { .. })
        ));
    }

    #[test]
    fn a_pattern_needs_the_most_any_row_it_reaches_asks() {
        let policy = policy();
        assert_eq!(policy.allowance_quorum("payments.*"), 3);
        assert_eq!(policy.allowance_quorum("payments.wire"), 2);
        assert_eq!(policy.allowance_quorum("mail.send"), 1);
        assert_eq!(policy.allowance_quorum("*"), 3);
        assert_eq!(policy.allowance_quorum("*.refund"), 3);
    }
}
