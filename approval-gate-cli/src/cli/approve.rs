//! `approve`: the only way a request becomes approved, and only by a human at a terminal.
//!
//! The path fails closed at every step: no terminal, a request that is not pending, a
//! confirmation that is not exactly the code shown, end of input, a request that expired or
//! changed while it was on screen, or any error, and nothing is approved.
//!
//! Under a policy the approval is signed after the confirmation: the request's
//! decision statement goes to `ssh-keygen -Y sign`, so a passphrase, ssh-agent (`ssh-add -c`)
//! or a FIDO touch happens at the human's terminal, and the library checks the signature
//! before it records anything. The `ssh-keygen` is the operator's absolute path (or
//! `/usr/bin/ssh-keygen`), never one found through `PATH`, which others on the account can
//! put a program in front of.

use std::fmt::Write as _;
use std::io::{self, BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};

use approval_gate::{Error, Gate, Policy, Request, RequestId, Status, StatusReport};

use super::decide;
use crate::settings::{SIGNING_KEY_ENV, Settings};
use crate::term::display::escape;
use crate::term::output::{self, Style};
use crate::term::{Exit, Refusal, render};

/// What `approve` signs with: `--key` and `--principal` as given.
#[derive(Debug, Default)]
pub(crate) struct Signer {
    pub(crate) key: Option<PathBuf>,
    pub(crate) principal: Option<String>,
}

/// A key to sign with and the principal it signs as.
struct Signing {
    key: PathBuf,
    principal: String,
}

/// Domain separation for the confirmation code: no other BLAKE3 use shares this key.
const CODE_CONTEXT: &str = "approval-gate cli 2025 approve confirmation code v1";
/// Hex characters in a confirmation code.
const CODE_LEN: usize = 8;
/// Longest answer read; a code is far shorter, and nothing longer can match.
const MAX_ANSWER: u64 = 256;

pub(crate) fn approve(
    settings: &Settings,
    id: RequestId,
    reason: &str,
    signer: Signer,
) -> anyhow::Result<Exit> {
    // Only a human at a terminal may approve: never a pipe, a file or another program.
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        return Err(Refusal::new(
            "not_a_terminal",
            "approve needs an interactive terminal on stdin and stdout; nothing was approved \
             (deny and revoke work anywhere)",
        )
        .into());
    }
    // The library's rules, asked before the human spends time on the screen.
    decide::decision(reason).validate()?;
    let gate = settings.open()?;
    let shown = gate.status(id)?;
    gate.check_approvable(&shown)?;
    // Everything about the key is settled before the screen, so a mistake costs no code.
    let signing = signing(settings, &gate, &shown, signer)?;

    let style = Style::detect();
    let screen = screen(&shown, gate.now(), style, gate.capabilities().filer);
    let code = confirmation_code(shown.request(), &screen, &nonce()?);
    output::stdout(&screen)?;
    discard_typeahead();
    output::stdout(&format!(
        "Type {} to approve (anything else cancels): ",
        style.bold(&code)
    ))?;
    match read_answer()? {
        Answer::Line(line) if line == code => {}
        Answer::Line(_) => {
            return refuse(
                "confirmation_mismatch",
                "the confirmation code did not match: nothing was approved",
            );
        }
        Answer::End => {
            return refuse(
                "no_confirmation",
                "no confirmation (end of input): nothing was approved",
            );
        }
    }

    // Signed after the confirmation: ssh-keygen may ask for a passphrase, a touch, or the
    // agent's confirmation, which the human gives for what the screen showed.
    let decision = match &signing {
        Some(signing) => {
            let statement = shown.decision_statement(&signing.principal)?;
            let signature = settings.signer().sign(&signing.key, &statement)?;
            decide::decision(reason).signed(signing.principal.as_str(), signature)
        }
        None => decide::decision(reason),
    };

    // The human read the screen; approve only what it showed, and only in time.
    if let Err(Error::Expired(_)) = gate.check_approvable(&shown) {
        return refuse(
            "expired",
            &format!("request {id} expired while it was on screen: nothing was approved"),
        );
    }
    // Compared with what was shown under the request's lock: nothing can change in between.
    let approved = match gate.approve_as_shown(shown.request(), &decision) {
        Err(Error::Changed(_)) => {
            return refuse(
                "changed",
                &format!(
                    "request {id} changed while it was on screen: nothing was approved; \
                     run approve again to review it"
                ),
            );
        }
        Err(Error::WrongState { status, .. }) => {
            return refuse(
                "changed",
                &format!(
                    "request {id} changed while it was on screen (it is now {status}): \
                     nothing was approved"
                ),
            );
        }
        Err(error @ Error::SignatureRequired { .. }) => {
            return Err(anyhow::Error::new(error).context(how_to_sign(id)));
        }
        other => other?,
    };
    done(&gate, &approved, signing.is_some())
}

/// Says what the approval did: approved (k of M, when signed), or recorded and pending.
fn done(gate: &Gate, approved: &StatusReport, signed: bool) -> anyhow::Result<Exit> {
    let request = approved.request();
    let id = request.id();
    let count = approved.counted_approvals() as usize;
    let required = approved.required_approvals() as usize;
    if request.status() == Status::Pending {
        let more = required.saturating_sub(count);
        output::stdout(&format!(
            "approval recorded for {id}: {count} of {required}, still pending (it needs {more} \
             more signed approval{} by other approvers)\n",
            if more == 1 { "" } else { "s" },
        ))?;
        return Ok(Exit::Done);
    }
    let quorum = if signed {
        format!(" ({count} of {required})")
    } else {
        String::new()
    };
    let expires = request.expires_at();
    output::stdout(&format!(
        "approved {id}{quorum}: trusted code may run it once, until {expires} ({})\n",
        render::relative(gate.now(), expires)
    ))?;
    Ok(Exit::Done)
}

/// What to do when an approval must be signed and no key was given.
fn how_to_sign(id: RequestId) -> String {
    format!(
        "nothing was approved: approvals must be signed here; run \
         `approval-gate approve {id} --key ~/.ssh/id_ed25519` with your approver key (or set \
         {SIGNING_KEY_ENV}; for a key in ssh-agent give its .pub file)"
    )
}

/// The key and principal to sign with, if any; refuses when signatures are needed and
/// there is no key, or when the key's principal cannot be told.
fn signing(
    settings: &Settings,
    gate: &Gate,
    shown: &StatusReport,
    signer: Signer,
) -> anyhow::Result<Option<Signing>> {
    let id = shown.request().id();
    let Some(key) = signer.key.or_else(|| settings.signing_key.value.clone()) else {
        if signer.principal.is_some() {
            return refuse_with(
                "no_key",
                "--principal needs a key to sign with: give --key FILE (or set \
                 APPROVAL_GATE_SIGNING_KEY); nothing was approved",
            );
        }
        if gate.policy().is_some() || shown.required_approvals() > 1 {
            let error = Error::SignatureRequired {
                id,
                required: shown.required_approvals(),
            };
            return Err(anyhow::Error::new(error).context(how_to_sign(id)));
        }
        return Ok(None);
    };
    if key.as_os_str().is_empty() {
        return refuse_with("no_key", "--key is empty: give a key file");
    }
    let principal = match signer.principal {
        Some(principal) => principal,
        None => principal_of(gate.policy(), &key, "--principal", "nothing was approved")?,
    };
    Ok(Some(Signing { key, principal }))
}

pub(super) fn refuse_with<T>(code: &'static str, why: &str) -> anyhow::Result<T> {
    Err(Refusal::new(code, why).into())
}

/// The one principal the approvers file lists for the key's public key: from `KEY.pub`, or
/// `KEY` itself if it is a `.pub` (a key held by ssh-agent). Refusals name `flag` as the way
/// to say the principal and end with `nothing` (`nothing was approved`).
pub(super) fn principal_of(
    policy: Option<&Policy>,
    key: &Path,
    flag: &str,
    nothing: &str,
) -> anyhow::Result<String> {
    let shown = escape(&key.display().to_string());
    let Some(policy) = policy else {
        return refuse_with(
            "no_principal",
            &format!(
                "no approvers file to find the principal of {shown} in: give {flag} NAME, \
                 or --approvers FILE; {nothing}"
            ),
        );
    };
    let public = if key.extension().is_some_and(|ext| ext == "pub") {
        key.to_path_buf()
    } else {
        let mut name = key.as_os_str().to_owned();
        name.push(".pub");
        PathBuf::from(name)
    };
    let text = std::fs::read_to_string(&public).map_err(|e| {
        Refusal::new(
            "no_principal",
            format!(
                "cannot read the public key {} ({e}) to find whom {shown} signs as: give \
                 {flag} NAME; {nothing}",
                escape(&public.display().to_string())
            ),
        )
    })?;
    let patterns = policy.principals_of(&text)?;
    let mut names: Vec<&str> = patterns
        .iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .collect();
    names.sort_unstable();
    names.dedup();
    match names.as_slice() {
        [name] if !name.contains(['*', '?', '!']) => Ok((*name).to_owned()),
        [] => refuse_with(
            "untrusted_signer",
            &format!(
                "the approvers file does not trust the key {}: {nothing}; sign with an \
                 approver's key",
                escape(&public.display().to_string())
            ),
        ),
        several => refuse_with(
            "no_principal",
            &format!(
                "the approvers file lists {} for the key {}: give {flag} NAME to say which \
                 you sign as; {nothing}",
                escape(&several.join(", ")),
                escape(&public.display().to_string())
            ),
        ),
    }
}

fn refuse(code: &'static str, why: &str) -> anyhow::Result<Exit> {
    Err(Refusal::new(code, why).into())
}

/// Everything the human decides on, then what approving means.
fn screen(
    report: &StatusReport,
    now: approval_gate::Timestamp,
    style: Style,
    store: approval_gate::Filer,
) -> String {
    let expires = report.request().expires_at();
    let mut text = style.bold("Approval requested");
    text.push_str(
        " (agent-supplied text is escaped: \\u{...} marks a control, invisible or look-alike \
         character)\n\n",
    );
    text.push_str(&render::details(report, now, style, store, None));
    let _ = write!(
        text,
        "\nApproving lets trusted code do exactly what is shown above, once,\n\
         until {expires} ({}).\n",
        render::relative(now, expires)
    );
    text
}

/// A random value drawn for this prompt, so no one (an agent least of all) can know the
/// code before the screen shows it.
pub(super) fn nonce() -> Result<[u8; 16], Error> {
    let mut nonce = [0; 16];
    getrandom::fill(&mut nonce).map_err(|e| Error::Random(e.to_string()))?;
    Ok(nonce)
}

/// The code the human re-types: the first 8 hex characters of a domain-separated BLAKE3
/// hash over the prompt's random nonce, every field shown and the screen itself.
///
/// Binding it to the fields means the code belongs to this request; binding it to the
/// screen's exact text (escapes and look-alike warnings included) means it belongs to what
/// the human was shown of it; the nonce means it cannot be known, or announced by an agent,
/// before it appears on the screen.
fn confirmation_code(request: &Request, screen: &str, nonce: &[u8; 16]) -> String {
    fn field(hasher: &mut blake3::Hasher, bytes: &[u8]) {
        // Length prefixes keep field boundaries unambiguous.
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    fn optional(hasher: &mut blake3::Hasher, bytes: Option<&[u8]>) {
        match bytes {
            None => {
                hasher.update(&[0]);
            }
            Some(bytes) => {
                hasher.update(&[1]);
                field(hasher, bytes);
            }
        }
    }
    let mut hasher = blake3::Hasher::new_derive_key(CODE_CONTEXT);
    hasher.update(nonce);
    field(&mut hasher, request.id().as_str().as_bytes());
    field(&mut hasher, request.action().as_bytes());
    field(&mut hasher, request.reason().as_bytes());
    optional(&mut hasher, request.requested_by().map(str::as_bytes));
    optional(&mut hasher, request.operation().map(str::as_bytes));
    let digest = request.payload_digest();
    optional(&mut hasher, digest.as_ref().map(|d| &d.as_bytes()[..]));
    hasher.update(&request.created_at().unix_millis().to_le_bytes());
    hasher.update(&request.expires_at().unix_millis().to_le_bytes());
    field(&mut hasher, screen.as_bytes());
    let mut code = hasher.finalize().to_hex().to_string();
    code.truncate(CODE_LEN);
    code
}

/// Drops anything typed before the prompt appeared, so a stray earlier Enter cannot answer
/// it. (It could not approve anyway: nothing typed before the screen can hold the code.)
pub(super) fn discard_typeahead() {
    let _ = rustix::termios::tcflush(io::stdin(), rustix::termios::QueueSelector::IFlush);
}

pub(super) enum Answer {
    /// A whole line, without its newline.
    Line(String),
    /// End of input before a whole line.
    End,
}

pub(super) fn read_answer() -> io::Result<Answer> {
    let mut line = Vec::new();
    io::stdin()
        .lock()
        .take(MAX_ANSWER)
        .read_until(b'\n', &mut line)?;
    // A line cut short by end of input or by the length limit was not confirmed.
    if line.pop() != Some(b'\n') {
        return Ok(Answer::End);
    }
    // Invalid UTF-8 cannot be the code; an empty string never matches.
    Ok(Answer::Line(String::from_utf8(line).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use approval_gate::{CanonicalPayload, Gate, ManualClock, NewRequest, Timestamp};

    use super::*;

    fn request(gate: &Gate, action: &str) -> Request {
        let ask = NewRequest::new(action, "because")
            .operation("smtp.send")
            .payload(CanonicalPayload::from_json_text(r#"{"to":"a@example.com"}"#).unwrap());
        gate.request_approval(ask).unwrap().request
    }

    #[test]
    fn code_is_short_hex_bound_to_content_and_nonce() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000));
        let gate = Gate::builder()
            .dir(dir.path().join("s"))
            .clock(clock)
            .open()
            .unwrap();
        let a = request(&gate, "send it");
        let b = request(&gate, "send it!");
        let nonce = [7; 16];
        let code = confirmation_code(&a, "screen", &nonce);
        assert_eq!(code.len(), CODE_LEN);
        assert!(
            code.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(code, confirmation_code(&a, "screen", &nonce));
        assert_ne!(code, confirmation_code(&b, "screen", &nonce));
        assert_ne!(code, confirmation_code(&a, "screen", &[8; 16]));
        assert_ne!(code, confirmation_code(&a, "another screen", &nonce));
    }

    #[test]
    fn the_screen_escapes_and_warns_about_lookalikes_and_the_code_covers_it() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::open(dir.path().join("s")).unwrap();
        let honest = request(&gate, "send the invoice to alice@example.com");
        let spoofed = request(&gate, "send the invoice to alice@ex\u{430}mple.com");
        let shown = |r: &Request| {
            let report = gate.status(r.id()).unwrap();
            screen(
                &report,
                gate.now(),
                Style::plain(),
                gate.capabilities().filer,
            )
        };
        let (plain, tricked) = (shown(&honest), shown(&spoofed));
        assert!(!plain.contains("look-alike letters in"), "{plain}");
        assert!(!tricked.contains('\u{430}'), "{tricked}");
        assert!(tricked.contains(r"alice@ex\u{430}mple.com"), "{tricked}");
        assert!(
            tricked
                .contains(r#"warning: look-alike letters in action: \u{430} (Cyrillic, like "a")"#),
            "{tricked}"
        );
        let nonce = [7; 16];
        assert_ne!(
            confirmation_code(&honest, &plain, &nonce),
            confirmation_code(&spoofed, &tricked, &nonce)
        );
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce().unwrap(), nonce().unwrap());
    }
}
