//! The email channel against the smtp example's loopback SMTP server (plain, implicit TLS and
//! STARTTLS, with a certificate authority made for the test), a relay that answers 4xx or
//! 5xx, and the `smtp` URLs refused before anything is sent.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::super::super::message::Kind;
use super::super::test_messages::{
    HOSTILE, KEY, LINK, first, hides_or_breaks, long_action, message,
};
use super::*;

// Its loopback server: the one `cargo run --example smtp` and the end-to-end tests use.
#[allow(dead_code)]
#[path = "../../../../../examples/support/smtp_sink.rs"]
mod smtp_sink;

use smtp_sink::{Accept, Security, SmtpSink};

mod mime;

use mime::Eml;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap()
}

/// A channel's table sending through `smtp`, with `extra` lines.
fn config(smtp: &str, extra: &str) -> String {
    format!(
        "smtp = {smtp:?}\nfrom = \"approval-gate <gate@example.com>\"\n\
         to = [\"alice@example.com\", \"Bob <bob@example.com>\"]\n{extra}"
    )
}

/// `password = { file = ... }` holding `password`, written under `dir`.
fn password_line(dir: &Path, password: &str) -> String {
    let path = dir.join("smtp-password");
    std::fs::write(&path, format!("{password}\n")).unwrap();
    format!("password = {{ file = {:?} }}", path.to_str().unwrap())
}

/// The messages the sink delivered, oldest first.
fn delivered(outbox: &Path) -> Vec<Eml> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(outbox)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "eml"))
        .map(|path| {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            (stem.rsplit('-').next().unwrap().parse().unwrap(), path)
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(_, path)| Eml::parse(&std::fs::read_to_string(path).unwrap()))
        .collect()
}

#[test]
fn hostile_actions_reach_the_relay_as_text_in_one_subject_line_and_escaped_html() {
    let dir = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(&dir.path().join("outbox")).unwrap();
    let email = Email::from_table(
        "mail",
        &table(&config(&format!("smtp://{}", sink.addr()), "")),
    )
    .unwrap();
    let long = long_action();
    let actions: Vec<&str> = HOSTILE.iter().copied().chain([long.as_str()]).collect();
    for action in &actions {
        email.send(&message(action, true), &first()).unwrap();
    }
    let mails = delivered(sink.outbox());
    assert_eq!(mails.len(), actions.len());
    for (mail, action) in mails.iter().zip(&actions) {
        let expected = message(action, true);
        // The envelope and the headers name only the configured recipients: no Bcc, no Cc.
        assert_eq!(
            mail.all("x-envelope-to"),
            ["<alice@example.com>", "<bob@example.com>"],
            "{action:?}"
        );
        for name in ["bcc", "cc", "reply-to", "x-evil"] {
            assert!(
                mail.all(name).is_empty(),
                "{name} in {action:?}: {:?}",
                mail.headers
            );
        }
        assert_eq!(mail.all("subject").len(), 1);
        let subject = mail.subject();
        assert_eq!(subject, super::subject(&expected), "{action:?}");
        assert!(!hides_or_breaks(&subject), "{subject:?}");
        assert!(subject.chars().count() <= SUBJECT_MAX, "{subject}");
        assert_eq!(
            mail.one("message-id"),
            "<a1b2c3d4e5f6.team.filed@approval-gate.invalid>"
        );
        assert!(
            mail.one("content-type")
                .starts_with("multipart/alternative")
        );

        let plain = mail.part("text/plain");
        assert_eq!(plain.trim_end(), super::plain(&expected).trim_end());
        let action_line = plain.lines().find(|l| l.starts_with("Action: ")).unwrap();
        assert!(!hides_or_breaks(action_line));
        assert!(action_line.chars().count() <= "Action: ".len() + ACTION_SHOWN);
        // The agent's text cannot add a line: the facts are always the same eight lines.
        assert_eq!(
            plain.lines().count(),
            super::plain(&message("x", true)).lines().count()
        );

        let html = mail.part("text/html");
        assert_eq!(html.trim_end(), super::html(&expected).trim_end());
        // Only our own markup: the one link is the page's, no script, no stray tag.
        assert_eq!(html.matches("<a ").count(), 1, "{html}");
        assert!(html.contains(&format!("<a href=\"{LINK}\">{LINK}</a>")));
        assert!(!html.to_ascii_lowercase().contains("<script"), "{html}");
        assert!(!html.contains("<b>") && !html.contains("</b>"), "{html}");
    }
    // What the agent wrote is shown, escaped, not dropped.
    let html = mails[3].part("text/html");
    assert!(
        html.contains("&lt;/b&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(mails[4].subject().contains(r"x\r\nBcc: victim@example.com"));
    assert!(mails[7].part("text/plain").contains(r"pay \u{202e}0001$"));
}

#[test]
fn without_a_link_it_says_how_to_get_one() {
    let message = message("x", false);
    assert!(super::plain(&message).contains(text::NO_LINK));
    let html = super::html(&message);
    assert!(html.contains(text::NO_LINK));
    assert!(!html.contains("<a "), "{html}");
}

#[test]
fn the_subject_keeps_within_its_length_whatever_the_agent_wrote() {
    let mut message = message(&"x".repeat(10_000), true);
    message.operation = Some("o".repeat(10_000));
    for kind in [Kind::Filed, Kind::Reminder, Kind::Escalation] {
        message.kind = kind;
        let subject = super::subject(&message);
        assert!(subject.chars().count() <= SUBJECT_MAX, "{subject}");
    }
}

#[test]
fn a_retry_carries_the_same_message_id() {
    let from: Mailbox = "gate@example.com".parse().unwrap();
    let to = ["alice@example.com".parse().unwrap()];
    let a = build(&message("x", true), KEY, &from, &to).unwrap();
    let b = build(&message("x", true), KEY, &from, &to).unwrap();
    let id = |m: &lettre::Message| {
        Eml::parse(&String::from_utf8(m.formatted()).unwrap())
            .one("message-id")
            .to_owned()
    };
    assert_eq!(id(&a), id(&b));
    let other = build(
        &message("x", true),
        "a1b2c3d4e5f6.team.reminder",
        &from,
        &to,
    )
    .unwrap();
    assert_ne!(id(&a), id(&other));
}

/// A relay that answers `MAIL FROM` with `reply` and everything else as a relay would.
fn refusing(reply: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut write = stream.try_clone().unwrap();
            let mut read = BufReader::new(stream);
            let _ = write.write_all(b"220 fake ESMTP\r\n");
            let mut line = String::new();
            while read.read_line(&mut line).unwrap_or(0) > 0 {
                let verb = line.get(..4).unwrap_or_default().to_ascii_uppercase();
                let answer = match verb.as_str() {
                    "EHLO" | "HELO" => "250 fake",
                    "MAIL" => reply,
                    "QUIT" => "221 bye",
                    _ => "250 OK",
                };
                let _ = write.write_all(format!("{answer}\r\n").as_bytes());
                if verb == "QUIT" {
                    break;
                }
                line.clear();
            }
        }
    });
    addr
}

#[test]
fn an_smtp_4xx_is_retried_and_a_5xx_is_not() {
    for (reply, retry) in [
        ("451 4.3.0 try again later", true),
        ("421 4.7.0 too busy", true),
        ("550 5.7.1 relaying denied", false),
        ("554 5.7.1 rejected", false),
    ] {
        let addr = refusing(reply);
        let email =
            Email::from_table("mail", &table(&config(&format!("smtp://{addr}"), ""))).unwrap();
        let failure = email.send(&message("x", true), &first()).unwrap_err();
        assert_eq!(
            matches!(failure, Failure::Retry(_)),
            retry,
            "{reply}: {failure:?}"
        );
    }
    // Nobody listening: may work later.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let email = Email::from_table("mail", &table(&config(&format!("smtp://{addr}"), ""))).unwrap();
    let failure = email.send(&message("x", true), &first()).unwrap_err();
    assert!(matches!(failure, Failure::Retry(_)), "{failure:?}");
}

#[test]
fn a_url_that_would_send_less_safely_than_it_promises_is_refused_when_built() {
    let dir = tempfile::tempdir().unwrap();
    let password = password_line(dir.path(), "pw-secret");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, Ca::new("test CA").pem).unwrap();
    let ca_line = format!("ca_file = {:?}", ca.to_str().unwrap());
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let empty_line = format!("ca_file = {:?}", empty.to_str().unwrap());
    for (smtp, extra, expected) in [
        ("smtp://u@127.0.0.1:1", password.as_str(), "unencrypted"),
        (
            "smtp://u:pw-secret@127.0.0.1:1?tls=required",
            "",
            "must not carry the password",
        ),
        (
            "smtp://u@127.0.0.1:1?tls=opportunistic",
            password.as_str(),
            "opportunistic",
        ),
        ("smtp://127.0.0.1:1?tls=opportunistic", "", "opportunistic"),
        ("smtps://u@127.0.0.1:1", "", ".password: missing"),
        (
            "smtps://127.0.0.1:1",
            password.as_str(),
            ".password: set, but smtp names no user",
        ),
        (
            "smtps://u@127.0.0.1:1?tls=required",
            password.as_str(),
            "drop the tls=",
        ),
        (
            "smtps://u@127.0.0.1:1?auth=plain",
            password.as_str(),
            "unexpected query parameter",
        ),
        (
            "smtp://127.0.0.1:1?tls=required&tls=required",
            "",
            "unexpected query parameter",
        ),
        ("smtp://127.0.0.1:1/relay", "", "has a path"),
        ("http://127.0.0.1:1", "", "scheme \"http\""),
        ("not a url", "", "not a URL"),
        (
            "smtp://127.0.0.1:1",
            ca_line.as_str(),
            ".ca_file: set, but smtp is plain",
        ),
        (
            "smtps://u@127.0.0.1:1",
            &format!("{password}\n{empty_line}"),
            "no certificate in it",
        ),
    ] {
        let text = config(smtp, extra);
        let error = Email::from_table("mail", &table(&text)).unwrap_err();
        assert!(error.contains(expected), "{smtp} {extra}: {error}");
        assert!(!error.contains("pw-secret"), "{error}");
    }
}

#[test]
fn unknown_keys_plain_secrets_and_bad_addresses_are_refused_when_built() {
    for (extra, expected) in [
        ("port = 25", ".port: unknown key"),
        (
            "password = \"pw-secret\"",
            "never written in the config file",
        ),
    ] {
        let error =
            Email::from_table("mail", &table(&config("smtp://127.0.0.1:1", extra))).unwrap_err();
        assert!(error.contains(expected), "{extra}: {error}");
    }
    for (text, expected) in [
        (
            "smtp = \"smtp://127.0.0.1:1\"\nfrom = \"not an address\"\nto = [\"a@example.com\"]",
            "from",
        ),
        (
            "smtp = \"smtp://127.0.0.1:1\"\nfrom = \"g@example.com\"\nto = []",
            "non-empty list",
        ),
        (
            "smtp = \"smtp://127.0.0.1:1\"\nfrom = \"g@example.com\"\nto = \"a@example.com\"",
            "list",
        ),
        (
            "smtp = \"smtp://127.0.0.1:1\"\nfrom = \"g@example.com\"\nto = [\"x\\r\\nBcc: v@example.com\"]",
            "to",
        ),
        (
            "smtp = \"smtp://127.0.0.1:1\"\nfrom = \"g@example.com\"",
            ".to: missing",
        ),
        (
            "from = \"g@example.com\"\nto = [\"a@example.com\"]",
            ".smtp: missing",
        ),
    ] {
        let error = Email::from_table("mail", &table(text)).unwrap_err();
        assert!(error.contains(expected), "{text}: {error}");
    }
}

/// A certificate authority made for one test.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Self {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for 127.0.0.1, signed by this CA, as a TLS acceptor for the sink.
    fn acceptor(&self) -> Accept {
        let params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        );
        Arc::new(move |tcp| {
            let connection = rustls::ServerConnection::new(Arc::clone(&config))
                .map_err(std::io::Error::other)?;
            Ok(Box::new(rustls::StreamOwned::new(connection, tcp)))
        })
    }
}

/// The sink in `mode` (`"smtps"` or `"starttls"`) with a certificate by `ca`, and the `smtp`
/// URL for it with the user `gate@example.com`.
fn tls_sink(dir: &Path, mode: &str, ca: &Ca) -> (SmtpSink, String) {
    let (security, url) = match mode {
        "smtps" => (
            Security::Implicit(ca.acceptor()),
            "smtps://gate%40example.com@{}",
        ),
        _ => (
            Security::StartTls(ca.acceptor()),
            "smtp://gate%40example.com@{}?tls=required",
        ),
    };
    let sink = SmtpSink::start_with(&dir.join(format!("outbox-{mode}")), security).unwrap();
    let url = url.replace("{}", &sink.addr().to_string());
    (sink, url)
}

#[test]
fn over_tls_it_logs_in_with_the_password_and_delivers() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("relay CA");
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, &ca.pem).unwrap();
    let extra = format!(
        "{}\nca_file = {:?}",
        password_line(dir.path(), "p@ss wörd"),
        ca_path.to_str().unwrap()
    );
    for mode in ["smtps", "starttls"] {
        let (sink, url) = tls_sink(dir.path(), mode, &ca);
        let email = Email::from_table("mail", &table(&config(&url, &extra))).unwrap();
        assert!(!format!("{email:?}").contains("p@ss"), "{email:?}");
        email
            .send(&message("</b><script>", true), &first())
            .unwrap();
        let logins = sink.logins();
        assert_eq!(logins.len(), 1, "{mode}");
        assert_eq!(logins[0].user, "gate@example.com");
        assert_eq!(logins[0].password, "p@ss wörd");
        let mails = delivered(sink.outbox());
        assert_eq!(mails.len(), 1, "{mode}");
        assert!(
            mails[0]
                .part("text/html")
                .contains("&lt;/b&gt;&lt;script&gt;")
        );
    }
}

#[test]
fn a_relay_it_cannot_verify_gets_nothing_not_even_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let extra = password_line(dir.path(), "pw-secret");
    // The relay's CA is not among the Mozilla roots and no ca_file names it.
    for mode in ["smtps", "starttls"] {
        let (sink, url) = tls_sink(dir.path(), mode, &Ca::new("unknown CA"));
        let email = Email::from_table("mail", &table(&config(&url, &extra))).unwrap();
        let failure = email.send(&message("x", true), &first()).unwrap_err();
        assert!(matches!(failure, Failure::Retry(_)), "{mode}: {failure:?}");
        assert!(!failure.reason().contains("pw-secret"), "{failure:?}");
        assert!(sink.logins().is_empty(), "{mode}");
        assert!(delivered(sink.outbox()).is_empty(), "{mode}");
    }
}
