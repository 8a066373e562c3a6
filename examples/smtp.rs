//! A trusted executor that sends one email, exactly as a human approved it, at most once.
//!
//! ```sh
//! cargo run --example smtp                 # files the request and waits for your decision
//! # in another terminal, run the command it prints:
//! cargo run -q -p approval-gate-cli --bin approval-gate -- approve <id>
//! ```
//!
//! The send function carries `#[requires_approval(operation = "smtp.send")]`: its body runs
//! only inside `execute_approved`, with the approved email frozen, and never otherwise.
//!
//! Mail goes to `SMTP_URL` when set: your provider over TLS
//! (`smtps://user:password@smtp.example.com:465`, or `smtp://...:587?tls=required` for
//! STARTTLS), or a plain `smtp://host:port` relay such as a local `MailHog`; see
//! `support/relay.rs` for every form, `SMTP_CA_FILE` for a private CA, and what is refused.
//! Otherwise it goes to an SMTP server this example runs on loopback, which writes each
//! message to an outbox directory (`SMTP_OUTBOX`, default `$TMPDIR/approval-gate-outbox`). The
//! store is `APPROVAL_GATE_STORE` (a directory or a `postgres://` URL), else `APPROVAL_GATE_DIR`,
//! else `~/.approval-gate`, so the human CLI finds the request.
//!
//! Options: `--tamper` changes the recipient after approval (nothing is sent, and it says
//! why); `--ttl SECONDS` sets the request's time to live (default 600).
//!
//! Approvals an agent cannot forge: `--approvers FILE` (an OpenSSH `allowed_signers` file)
//! makes the executor hold a policy, and `--quorum M` asks for M distinct approvers. Then
//! the email goes out only once M trusted approvers have signed with
//! `approval-gate --approvers FILE approve <id> --key KEY`; an approval written straight
//! into the store, without their signatures, is refused at consume with the reason.
//!
//! ```sh
//! ssh-keygen -t ed25519 -f ~/.ssh/approver     # once; or use a key you have
//! echo "me@example.com $(cat ~/.ssh/approver.pub)" > approvers
//! cargo run --example smtp -- --approvers approvers --quorum 1
//! ```
//!
//! An allowance instead of a prompt per mail: `--allowance KEY` (with `--approvers FILE`)
//! signs, with the approver's key KEY, "up to 3 invoices to any @example.com address for the
//! next 24 hours" (see `support/allowance.rs`; in real use the human makes it in their own
//! terminal with `approval-gate allow smtp.send --matches '/to=*@example.com' --uses 3
//! --key KEY`), then files four invoices: the first three are approved by the allowance as
//! they are filed and go out without asking, and the fourth waits for a human.
//!
//! ```sh
//! cargo run --example smtp -- --approvers approvers --allowance ~/.ssh/approver
//! ```
#![allow(clippy::print_stdout)]

#[path = "support/allowance.rs"]
mod allowance;
#[path = "support/relay.rs"]
mod relay;
// Its TLS modes serve the tests; the example's own loopback server is plain.
#[allow(dead_code)]
#[path = "support/smtp_sink.rs"]
mod smtp_sink;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use approval_gate::{
    CanonicalPayload, Claim, EffectiveStatus, Gate, NewRequest, Policy, requires_approval,
};
use lettre::message::header::ContentType;
use lettre::{Message, SmtpTransport, Transport};
use serde::{Deserialize, Serialize};

/// The email, as the human sees it in `approval-gate show` and as the executor sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Email {
    from: String,
    to: String,
    subject: String,
    body: String,
}

impl Email {
    fn action(&self) -> String {
        format!("send email to {}, subject: {}", self.to, self.subject)
    }

    fn to_message(&self) -> Result<Message, SendError> {
        Ok(Message::builder()
            .from(self.from.parse().map_err(SendError::Address)?)
            .to(self.to.parse().map_err(SendError::Address)?)
            .subject(&self.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(self.body.clone())?)
    }
}

#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error("not sent ({code}): {0}", code = .0.code().as_str())]
    Gate(#[from] approval_gate::Error),
    #[error("invalid address: {0}")]
    Address(lettre::address::AddressError),
    #[error("cannot build the message: {0}")]
    Build(#[from] lettre::error::Error),
    #[error("smtp: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
}

struct Mailer {
    transport: SmtpTransport,
}

impl Mailer {
    /// Sends exactly the approved email. `email` is the frozen approved copy; `approval` is
    /// the grant proving this run consumed the approval.
    #[requires_approval(operation = "smtp.send")]
    fn send(&self, #[payload] email: Email, approval: Claim<'_>) -> Result<String, SendError> {
        let message = email.to_message()?;
        // Re-check the expiry immediately before the side effect.
        approval.assert_active()?;
        let response = self.transport.send(&message)?;
        Ok(response.message().collect::<Vec<_>>().join(" "))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tamper = args.iter().any(|a| a == "--tamper");
    let ttl = args
        .iter()
        .position(|a| a == "--ttl")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(600), |s| s.parse::<u64>())?;

    let policy = policy(&args)?;
    let mut builder = Gate::builder();
    if let Some((policy, _)) = &policy {
        builder = builder.policy(policy.clone());
    }
    let gate = builder.open()?;
    let (transport, destination, _sink) = transport()?;

    let mailer = Mailer { transport };
    let invoices = match value(&args, "--allowance")? {
        Some(key) => {
            let Some((policy, _)) = &policy else {
                return Err(
                    "--allowance needs --approvers FILE: whose signature would count?".into(),
                );
            };
            let report = allowance::grant(&gate, policy, Path::new(&key))?;
            println!(
                "allowance {} signed by {}: {}",
                report.allowance.allowance.id(),
                report.allowance.signatures[0].principal,
                report.allowance.allowance.describe().join("; ")
            );
            // One more than it allows: the last one waits for a human.
            INVOICED[..=allowance::USES as usize].to_vec()
        }
        None => INVOICED[..1].to_vec(),
    };
    let mut all_sent = true;
    for (n, (name, greeting)) in (1042..).zip(invoices) {
        let email = Email {
            from: "billing@example.com".into(),
            to: format!("{name}@example.com"),
            subject: format!("Invoice {n}"),
            body: format!(
                "Hello {greeting},\n\nplease find invoice {n} (125.00 EUR) attached.\n\nBilling"
            ),
        };
        let asked = Asked {
            gate: &gate,
            policy: policy.as_ref().map(|(_, file)| file.as_path()),
            ttl,
        };
        all_sent &= ask_and_send(&asked, &mailer, &email, tamper, &destination)?;
    }
    Ok(all_sent)
}

/// Whom the invoices go to (the address's local part, and how the mail greets them): the
/// first only, or one more than an allowance allows.
const INVOICED: [(&str, &str); 4] = [
    ("alice", "Alice"),
    ("bob", "Bob"),
    ("carol", "Carol"),
    ("dave", "Dave"),
];

/// What every request of a run shares.
struct Asked<'a> {
    gate: &'a Gate,
    /// The approvers file, under a policy.
    policy: Option<&'a Path>,
    ttl: u64,
}

/// Files the request for `email`; unless an allowance approved it as it was filed, names the
/// human's command and waits for their decision; then sends it (with `tamper`, to another
/// address). Whether it was sent.
fn ask_and_send(
    asked: &Asked<'_>,
    mailer: &Mailer,
    email: &Email,
    tamper: bool,
    destination: &str,
) -> Result<bool, Box<dyn std::error::Error>> {
    let gate = asked.gate;
    let action = email.action();
    let submitted = gate.request_approval(
        NewRequest::new(&action, format!("{} is due", email.subject.to_lowercase()))
            .requested_by("smtp example")
            .operation("smtp.send")
            .payload(CanonicalPayload::from_serialize(email)?)
            .ttl(Duration::from_secs(asked.ttl)),
    )?;
    let id = submitted.request.id();
    println!("requested approval {id}: {action}");
    println!("store: {}", gate.location());
    if let Some(allowance) = submitted.request.allowance() {
        println!("approved as it was filed by allowance {allowance}: sending without asking");
    } else {
        // A store chosen through the environment must be named to the human's terminal too.
        // A PostgreSQL store is named without its password: the human connects as themselves.
        let dir = if std::env::var_os("APPROVAL_GATE_STORE").is_some() {
            format!(" --store {}", shell_quote(&gate.location().to_string()))
        } else if std::env::var_os("APPROVAL_GATE_DIR").is_some() {
            format!(" --dir {}", shell_quote(&gate.location().to_string()))
        } else {
            String::new()
        };
        // Under a policy the human's CLI reads the same approvers, and each approver signs.
        let (approvers, key) = match asked.policy {
            Some(file) => {
                println!(
                    "it needs {} signed approval(s) by the approvers in {}",
                    submitted.request.required_approvals(),
                    file.display()
                );
                (
                    format!(" --approvers {}", shell_quote(&file.display().to_string())),
                    " --key YOUR_KEY",
                )
            }
            None => (String::new(), ""),
        };
        println!("approve or deny it in another terminal:");
        println!("    approval-gate{dir}{approvers} approve {id}{key}");
        println!(
            "    (from this checkout: cargo run -q -p approval-gate-cli --bin approval-gate --{dir}{approvers} approve {id}{key})"
        );
        println!(
            "waiting for the decision (expires {})...",
            submitted.request.expires_at()
        );

        // No deadline of our own: the request's expiry ends the wait, as "expired". The
        // library wakes on the decision itself, from whichever process makes it.
        let decided = gate.wait_for_decision(id, Duration::MAX)?.into_report();
        if decided.effective_status() != EffectiveStatus::ApprovedUnconsumed {
            println!("not sent: the request is {}", decided.effective_status());
            return Ok(false);
        }
    }

    let mut to_send = email.clone();
    if tamper {
        to_send.to = "mallory@example.com".into();
        println!("--tamper: the executor now tries to send to {}", to_send.to);
    }
    match mailer.send(to_send, Claim::new(gate, id, action.as_str())) {
        Ok(reply) => {
            println!("sent to {} via {destination} ({reply})", email.to);
            Ok(true)
        }
        Err(error) => {
            println!("{error}");
            Ok(false)
        }
    }
}

/// The value after `flag`, if `flag` is given; refused if it is last.
fn value(args: &[String], flag: &str) -> Result<Option<String>, String> {
    args.iter()
        .position(|a| a == flag)
        .map(|i| {
            args.get(i + 1)
                .cloned()
                .ok_or(format!("{flag} needs a value"))
        })
        .transpose()
}

/// `--approvers FILE` and `--quorum M`: the policy the executor holds, and its file.
fn policy(args: &[String]) -> Result<Option<(Policy, PathBuf)>, Box<dyn std::error::Error>> {
    let value = |flag: &str| value(args, flag);
    let quorum = value("--quorum")?
        .map(|n| n.parse::<u32>().map_err(|e| format!("--quorum {n}: {e}")))
        .transpose()?;
    // This executor only sends mail; `*` says what any other operation would need.
    let table = quorum
        .into_iter()
        .flat_map(|n| [("smtp.send", n), ("*", 1)]);
    let Some(file) = value("--approvers")? else {
        // The library refuses a quorum without approvers: whose signatures would count?
        return match Policy::with_quorum(None, table) {
            Ok(_) => Ok(None),
            Err(e) => Err(format!("--quorum: {e}; give --approvers FILE").into()),
        };
    };
    // Absolute, so the command printed for the human works from any directory.
    let file = std::fs::canonicalize(&file).map_err(|e| format!("--approvers {file}: {e}"))?;
    let approvers = Policy::load_allowed_signers(&file)?;
    let policy = Policy::with_quorum(Some(approvers), table)?.map(|policy| (policy, file));
    Ok(policy)
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `SMTP_URL` if set, else a loopback sink writing to the outbox.
fn transport()
-> Result<(SmtpTransport, String, Option<smtp_sink::SmtpSink>), Box<dyn std::error::Error>> {
    match std::env::var("SMTP_URL") {
        Ok(url) => {
            let ca_file = std::env::var_os("SMTP_CA_FILE").filter(|path| !path.is_empty());
            let (transport, shown) = relay::transport(&url, ca_file.as_deref().map(Path::new))?;
            return Ok((transport, shown, None));
        }
        // A relay was named, just not readably: never fall back to the loopback server.
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err("SMTP_URL is not valid UTF-8: write it as a URL such as \
                        smtps://user:password@host:465, percent-encoding other bytes"
                .into());
        }
        Err(std::env::VarError::NotPresent) => {}
    }
    let outbox = std::env::var_os("SMTP_OUTBOX").map_or_else(
        || std::env::temp_dir().join("approval-gate-outbox"),
        PathBuf::from,
    );
    let sink = smtp_sink::SmtpSink::start(&outbox)?;
    let transport = SmtpTransport::builder_dangerous(sink.addr().ip().to_string())
        .port(sink.addr().port())
        .build();
    let destination = format!(
        "the loopback SMTP server on {} (messages are written to {})",
        sink.addr(),
        sink.outbox().display()
    );
    Ok((transport, destination, Some(sink)))
}
