//! `allow`: a human makes an allowance, at a terminal only, signed with their approver key as
//! `approve --key` signs an approval.
//!
//! It fails closed as `approve` does: no terminal, no approvers file, no key, terms the
//! library refuses, a confirmation that is not exactly the code shown, end of input, or any
//! error, and nothing is signed or written. The allowance is shown in words (escaped as agent
//! text) before the code is asked for; the statement signed is the one those words were made
//! from. For an operation that needs more approvers than one, the signature proposes the
//! allowance, which approves nothing until the others sign it with `sign-allowance`
//! (`sign_allowance.rs`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, IsTerminal};
use std::path::PathBuf;

use approval_gate::allowance::{
    Allowance, AllowanceSignature, Bounds, Budget, Constraint, Rate, SignedAllowance, Terms, Test,
};
use approval_gate::{AllowanceReport, Error, Policy, Timestamp};
use serde_json::Value;

use super::approve::{Answer, discard_typeahead, nonce, principal_of, read_answer, refuse_with};
use super::args::AllowArgs;
use crate::settings::{SIGNING_KEY_ENV, Settings};
use crate::term::display::escape;
use crate::term::output::{self, Style};
use crate::term::{Exit, render};

/// Domain separation for the confirmation code: no other BLAKE3 use shares this key.
const CODE_CONTEXT: &str = "approval-gate cli 2026 allow confirmation code v1";
/// Hex characters in a confirmation code.
const CODE_LEN: usize = 8;

pub(crate) fn allow(settings: &Settings, args: &AllowArgs) -> anyhow::Result<Exit> {
    // Only a human at a terminal may allow: never a pipe, a file or another program.
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        return refuse_with(
            "not_a_terminal",
            "allow needs an interactive terminal on stdin and stdout; nothing was allowed \
             (allowances and revoke-allowance work anywhere)",
        );
    }
    let gate = settings.open()?;
    let now = gate.now();
    let allowance = Allowance::new(terms(args, now)?, now)?;
    let id = allowance.id();
    let Some(policy) = gate.policy() else {
        return Err(anyhow::Error::new(Error::NoApprovers { id }).context(
            "nothing was allowed: an allowance counts only under the approvers file; give \
             --approvers FILE (or set it in the config file)",
        ));
    };
    let required = policy.allowance_quorum(&allowance.terms().operation);
    // Everything about the key is settled before the screen, so a mistake costs no code.
    let (key, principal) = signing(
        settings,
        args.key.as_ref(),
        args.principal.as_ref(),
        policy,
        "nothing was allowed",
    )?;
    let statement = allowance.statement(&principal, required)?;

    let style = Style::detect();
    let signers = [principal.as_str()];
    let screen = screen(&allowance, &signers, required, now, style);
    confirm(&statement, &screen, style, "allow", "nothing was allowed")?;
    // Signed after the confirmation: ssh-keygen may ask for a passphrase, a touch, or the
    // agent's confirmation, which the human gives for what the screen showed.
    let signature = settings.signer().sign(&key, &statement)?;
    let signed = SignedAllowance {
        allowance,
        required,
        signatures: vec![AllowanceSignature {
            principal,
            signature,
        }],
    };
    // The library's refusals name the allowance's id as a request's; say what it was.
    let kept = if required > 1 {
        gate.propose_allowance(signed)
    } else {
        gate.allow(signed)
    };
    let report = kept.map_err(|error| {
        anyhow::Error::new(error).context(format!(
            "nothing was allowed: the gate did not keep allowance {id} (the reason below \
             calls it a request)"
        ))
    })?;
    if args.json {
        output::stdout(&render::json(&report.to_json())?)?;
        return Ok(Exit::Done);
    }
    output::stdout(&kept_line(&report, gate.now()))?;
    Ok(Exit::Done)
}

/// What `allow` and `sign-allowance` say of the allowance they signed: active, or how many
/// more signatures it waits for and how they are given.
pub(super) fn kept_line(report: &AllowanceReport, now: Timestamp) -> String {
    let id = report.allowance.allowance.id();
    let required = report.allowance.required;
    let signed = report.allowance.signatures.len();
    let not_after = report.allowance.allowance.terms().bounds.not_after;
    let until = format!("{not_after} ({})", render::relative(now, not_after));
    if report.signatures_missing > 0 {
        let missing = report.signatures_missing;
        let more = if missing == 1 {
            "1 more approver signs".to_owned()
        } else {
            format!("{missing} more approvers sign")
        };
        return format!(
            "proposed {id} ({signed} of {required} signatures): it approves nothing until \
             {more} it with `approval-gate sign-allowance {id}` (by {until}); `approval-gate \
             allowances` lists it, `approval-gate revoke-allowance {id}` withdraws it\n"
        );
    }
    format!(
        "allowed {id} ({signed} of {required}): requests it covers are approved as they are \
         filed, until {until}; `approval-gate allowances` lists it, `approval-gate \
         revoke-allowance {id}` takes it back\n"
    )
}

/// Shows `screen`, asks for the code made from it and `statement`, and refuses (saying
/// `nothing`, as in "nothing was allowed") unless exactly that code comes back.
pub(super) fn confirm(
    statement: &[u8],
    screen: &str,
    style: Style,
    verb: &str,
    nothing: &str,
) -> anyhow::Result<()> {
    let code = confirmation_code(statement, screen, &nonce()?);
    output::stdout(screen)?;
    discard_typeahead();
    output::stdout(&format!(
        "Type {} to {verb} (anything else cancels): ",
        style.bold(&code)
    ))?;
    match read_answer()? {
        Answer::Line(line) if line == code => Ok(()),
        Answer::Line(_) => refuse_with(
            "confirmation_mismatch",
            &format!("the confirmation code did not match: {nothing}"),
        ),
        Answer::End => refuse_with(
            "no_confirmation",
            &format!("no confirmation (end of input): {nothing}"),
        ),
    }
}

/// The key to sign with and the principal it signs as: `--key` (or the settings' signing
/// key), and `--as` or the one principal the approvers file lists for the key.
pub(super) fn signing(
    settings: &Settings,
    key: Option<&PathBuf>,
    principal: Option<&String>,
    policy: &Policy,
    nothing: &str,
) -> anyhow::Result<(PathBuf, String)> {
    let Some(key) = key.cloned().or_else(|| settings.signing_key.value.clone()) else {
        return refuse_with(
            "no_key",
            &format!(
                "nothing was allowed: an allowance must be signed; run allow with --key \
                 ~/.ssh/id_ed25519, your approver key (or set {SIGNING_KEY_ENV}; for a key in \
                 ssh-agent give its .pub file)"
            ),
        );
    };
    if key.as_os_str().is_empty() {
        return refuse_with("no_key", "--key is empty: give a key file");
    }
    let principal = match principal {
        Some(principal) => principal.clone(),
        None => principal_of(Some(policy), &key, "--as", nothing)?,
    };
    Ok((key, principal))
}

/// The terms as the command line gives them: every `--is` of one pointer one list, in the
/// order given; the window from `--from` (default now) to `--until`.
fn terms(args: &AllowArgs, now: Timestamp) -> anyhow::Result<Terms> {
    let invalid = |problem: String| Error::InvalidInput {
        field: "allowance",
        problem,
    };
    let mut lists: Vec<(String, Vec<Value>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (pointer, value) in &args.is {
        let index = *at.entry(pointer).or_insert_with(|| {
            lists.push((pointer.clone(), Vec::new()));
            lists.len() - 1
        });
        lists[index].1.push(value.clone());
    }
    let tests = lists
        .into_iter()
        .map(|(pointer, values)| (pointer, Test::OneOf(values)))
        .chain(args.matches.iter().cloned())
        .chain(args.at_most.iter().cloned())
        .chain(args.at_least.iter().cloned());
    let mut constraints = Vec::new();
    for (pointer, test) in tests {
        constraints.push(Constraint::new(pointer, test).map_err(invalid)?);
    }
    Ok(Terms {
        operation: args.operation.clone(),
        constraints,
        bounds: Bounds {
            uses: args.uses,
            budget: args
                .budget
                .clone()
                .map(|(pointer, total)| Budget { pointer, total }),
            rate: args.rate.map(|(count, period)| Rate { count, period }),
            not_before: args.from.map_or(now, |from| from.at(now)),
            not_after: args.until.at(now),
        },
        agent: args.agent.clone(),
        reason: args.reason.join(" "),
    })
}

/// The allowance in words, who signs it (the last of `signers`, after those who signed it
/// before), and what allowing means.
pub(super) fn screen(
    allowance: &Allowance,
    signers: &[&str],
    required: u32,
    now: Timestamp,
    style: Style,
) -> String {
    let mut text = style.bold("Allowance to sign");
    text.push_str(
        " (agent-supplied text is escaped: \\u{...} marks a control, invisible or look-alike \
         character)\n\n",
    );
    let _ = writeln!(text, "  id        {}", allowance.id());
    for line in allowance.describe() {
        let _ = writeln!(text, "  {}", escape(&line));
    }
    let reason = &allowance.terms().reason;
    if !reason.is_empty() {
        let _ = writeln!(text, "  reason    {}", escape(reason));
    }
    let (me, before) = signers.split_last().unwrap_or((&"", &[]));
    for principal in before {
        let _ = writeln!(text, "  signed by {} (before you)", escape(principal));
    }
    let mine = before.len() + 1;
    let _ = writeln!(
        text,
        "  signed by {} ({mine} of the {required} the operation needs)",
        escape(me)
    );
    let not_after = allowance.terms().bounds.not_after;
    let when = render::relative(now, not_after);
    if u32::try_from(mine).unwrap_or(u32::MAX) < required {
        let _ = write!(
            text,
            "\nThe operation needs {required} approvers: your signature proposes this allowance.\n\
             It approves nothing until {} more sign it (`approval-gate sign-allowance {}`).\n\
             Then it approves, without asking anyone, every request these lines cover, within\n\
             its bounds, until {not_after} ({when}).\n",
            required as usize - mine,
            allowance.id()
        );
    } else {
        let _ = write!(
            text,
            "\nAllowing approves, without asking anyone, every request these lines cover, within\n\
             its bounds, until {not_after} ({when}).\n"
        );
    }
    text
}

/// The code the human re-types: the first 8 hex characters of a domain-separated BLAKE3
/// hash over the prompt's random nonce, the statement to be signed and the screen showing
/// it, so that it belongs to this allowance as shown and cannot be known before it appears.
fn confirmation_code(statement: &[u8], screen: &str, nonce: &[u8; 16]) -> String {
    let mut hasher = blake3::Hasher::new_derive_key(CODE_CONTEXT);
    hasher.update(nonce);
    for field in [statement, screen.as_bytes()] {
        // Length prefixes keep field boundaries unambiguous.
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field);
    }
    let mut code = hasher.finalize().to_hex().to_string();
    code.truncate(CODE_LEN);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_short_hex_bound_to_statement_screen_and_nonce() {
        let code = confirmation_code(b"statement", "screen", &[7; 16]);
        assert_eq!(code.len(), CODE_LEN);
        assert!(code.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        assert_eq!(code, confirmation_code(b"statement", "screen", &[7; 16]));
        assert_ne!(code, confirmation_code(b"statement!", "screen", &[7; 16]));
        assert_ne!(code, confirmation_code(b"statement", "screen!", &[7; 16]));
        assert_ne!(code, confirmation_code(b"statement", "screen", &[8; 16]));
    }
}
