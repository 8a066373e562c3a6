//! An allowance for an operation that needs two approvers, made at two terminals: `allow`
//! by the first proposes it (shown in words as a proposal before the code is asked for), it
//! approves nothing, `allowances` lists it as proposed; `sign-allowance` by the second shows
//! it with who signed it before and completes it, and only then does it approve what it
//! covers. Signing twice, signing a revoked one, or signing without a terminal changes
//! nothing.

use std::process::{Command, Stdio};

use approval_gate::{CanonicalPayload, Gate, NewRequest, Status};

use crate::allow::{ONE_SIDE, in_terminal, redirected};
use crate::signed::Team;
use crate::support::{Store, assert_clean, assert_exit, json};

/// `approval-gate <args> --key <name>` on the team's store, `payments.*` needing two.
fn as_approver(team: &Team, name: &str, args: &[&str]) -> Command {
    let key = team.key(name);
    let mut all = args.to_vec();
    all.extend_from_slice(&["--key", key.to_str().unwrap()]);
    team.command(2, &all)
}

fn refund(gate: &Gate, amount: u64) -> approval_gate::Request {
    let ask = NewRequest::new("refund the customer", "support")
        .operation("payments.refund")
        .payload(
            CanonicalPayload::from_json_text(&format!(
                r#"{{"amount":{amount},"to":"bob@example.com"}}"#
            ))
            .unwrap(),
        );
    gate.request_approval(ask).unwrap().request
}

/// Proposes `payments.*` up to 500 a use, twice, as Alice: the allowance's id.
fn propose(team: &Team) -> String {
    let ended = in_terminal(
        as_approver(
            team,
            "alice",
            &[
                "allow",
                "payments.*",
                "--at-most",
                "/amount=500",
                "--uses",
                "2",
                "refunds",
            ],
        ),
        None,
    );
    let printed = &ended.printed;
    assert_eq!(ended.exit, 0, "{printed}");
    let prompt = printed.find("Type ").unwrap();
    for words in [
        "signed by alice@example.com (1 of the 2 the operation needs)",
        "your signature proposes this allowance",
        "It approves nothing until 1 more sign it",
    ] {
        let at = printed
            .find(words)
            .unwrap_or_else(|| panic!("{words:?} not in {printed}"));
        assert!(at < prompt, "{words:?} after the prompt: {printed}");
    }
    let proposed = printed
        .split("proposed ")
        .nth(1)
        .unwrap_or_else(|| panic!("no 'proposed' in {printed}"));
    assert!(
        proposed.contains("(1 of 2 signatures): it approves nothing until 1 more approver signs"),
        "{printed}"
    );
    proposed[..12].to_owned()
}

#[test]
fn an_allowance_two_approvers_sign_at_two_terminals_approves_only_once_both_have() {
    let team = Team::new();
    let id = propose(&team);
    let gate = Gate::builder()
        .dir(&team.store.path)
        .policy(team.policy(2))
        .open()
        .unwrap();
    assert_eq!(
        refund(&gate, 100).status(),
        Status::Pending,
        "a proposal approves nothing"
    );
    let listed = json(&team.command(2, &["allowances", "--json"]).output().unwrap());
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["active"], false);
    assert_eq!(listed[0]["signaturesMissing"], 1);
    let text = team.command(2, &["allowances"]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "{id} proposed, needs 1 more signature, payments.*:"
        )),
        "{text}"
    );

    // Alice cannot sign it a second time: refused before any screen.
    let again = in_terminal(as_approver(&team, "alice", &["sign-allowance", &id]), None);
    assert_eq!(again.exit, 2, "{}", again.printed);
    assert!(!again.asked, "{}", again.printed);
    assert!(
        again
            .printed
            .contains("alice@example.com has signed allowance"),
        "{}",
        again.printed
    );

    // Bob sees it in words, with Alice's signature, and signs.
    let ended = in_terminal(as_approver(&team, "bob", &["sign-allowance", &id]), None);
    let printed = &ended.printed;
    assert_eq!(ended.exit, 0, "{printed}");
    let prompt = printed.find("Type ").unwrap();
    for words in [
        "operation payments.*",
        "/amount is at most 500",
        "signed by alice@example.com (before you)",
        "signed by bob@example.com (2 of the 2 the operation needs)",
        "Allowing approves, without asking anyone",
    ] {
        let at = printed
            .find(words)
            .unwrap_or_else(|| panic!("{words:?} not in {printed}"));
        assert!(at < prompt, "{words:?} after the prompt: {printed}");
    }
    assert_clean("sign-allowance's screen", printed.as_bytes());
    assert!(
        printed.contains(&format!("allowed {id} (2 of 2)")),
        "{printed}"
    );

    // (Another amount: the same request again would be the pending one, deduplicated.)
    let covered = refund(&gate, 200);
    assert_eq!(covered.status(), Status::Approved);
    assert_eq!(covered.allowance().map(|a| a.to_string()), Some(id.clone()));

    // Complete: nobody signs it again.
    let more = in_terminal(as_approver(&team, "bob", &["sign-allowance", &id]), None);
    assert_eq!(more.exit, 2, "{}", more.printed);
    assert!(!more.asked);
    assert!(
        more.printed.contains("has all the signatures it needs"),
        "{}",
        more.printed
    );
}

#[test]
fn signing_a_revoked_allowance_a_wrong_code_or_without_a_terminal_changes_nothing() {
    let team = Team::new();
    let id = propose(&team);

    let before = team.store.snapshot();
    let output = as_approver(&team, "bob", &["sign-allowance", &id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(
        &output,
        1,
        "sign-allowance needs an interactive terminal on stdin and stdout",
    );
    let out = team.store.scratch().join("out.txt");
    for redirect in ONE_SIDE {
        let shell = redirected(
            &as_approver(&team, "bob", &["sign-allowance", &id]),
            redirect,
            &out,
        );
        let ended = in_terminal(shell, None);
        let all = ended.printed + &std::fs::read_to_string(&out).unwrap_or_default();
        assert_eq!(ended.exit, 1, "{redirect}: {all}");
        assert!(!ended.asked, "{redirect}: no prompt without a terminal");
        assert!(
            all.contains("sign-allowance needs an interactive terminal"),
            "{redirect}: {all}"
        );
    }
    let wrong = in_terminal(
        as_approver(&team, "bob", &["sign-allowance", &id]),
        Some("00000000"),
    );
    assert!(wrong.asked);
    assert_eq!(wrong.exit, 1, "{}", wrong.printed);
    assert!(
        wrong
            .printed
            .contains("the confirmation code did not match: nothing was signed"),
        "{}",
        wrong.printed
    );
    let mallory = in_terminal(
        as_approver(&team, "mallory", &["sign-allowance", &id]),
        None,
    );
    assert!(!mallory.asked, "{}", mallory.printed);
    assert_ne!(mallory.exit, 0);
    assert_eq!(
        Store::changed(&before, &team.store.snapshot()),
        Vec::<String>::new()
    );

    let revoked = team
        .command(2, &["revoke-allowance", &id])
        .output()
        .unwrap();
    assert!(revoked.status.success());
    let late = in_terminal(as_approver(&team, "bob", &["sign-allowance", &id]), None);
    assert!(!late.asked, "{}", late.printed);
    assert_eq!(late.exit, 2, "{}", late.printed);
    assert!(late.printed.contains("was revoked"), "{}", late.printed);
    let listed = json(&team.command(2, &["allowances", "--json"]).output().unwrap());
    assert_eq!(
        listed[0]["principals"],
        serde_json::json!(["alice@example.com"])
    );
}
