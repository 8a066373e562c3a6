//! `cargo run --example smtp` through a relay over TLS, as with a mail provider: implicit TLS
//! (`smtps://`) and STARTTLS (`?tls=required`) with a password, against a loopback server whose
//! certificates the test makes. A relay the example cannot verify gets nothing, not even the
//! password, and a `SMTP_URL` that would send less safely than it seems to promise is refused
//! before any request is filed.

use std::ffi::OsStr;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use approval_gate::{Decision, Gate};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::smtp_run::{Run, built, start_with};
use crate::smtp_sink::{Accept, Login, Security, SmtpSink};

const USER: &str = "billing@example.com";
/// Characters a URL must percent-encode, and one that is not ASCII.
const PASSWORD: &str = "p@ss:wörd/1";
const ENCODED_USER: &str = "billing%40example.com";
const ENCODED_PASSWORD: &str = "p%40ss%3Aw%C3%B6rd%2F1";

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

    /// Writes the CA certificate where `SMTP_CA_FILE` can name it.
    fn write(&self, dir: &Path) -> std::path::PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, &self.pem).unwrap();
        path
    }

    /// A server certificate for `names`, signed by this CA, as a TLS acceptor for the sink.
    fn acceptor(&self, names: &[&str]) -> Accept {
        let params =
            CertificateParams::new(names.iter().map(|&n| n.to_owned()).collect::<Vec<_>>())
                .unwrap();
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
            let connection =
                rustls::ServerConnection::new(Arc::clone(&config)).map_err(io::Error::other)?;
            Ok(Box::new(rustls::StreamOwned::new(connection, tcp)))
        })
    }
}

/// The two ways a provider offers TLS: the sink's mode and the matching `SMTP_URL`.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Implicit,
    StartTls,
}

impl Mode {
    const BOTH: [Mode; 2] = [Mode::Implicit, Mode::StartTls];

    fn security(self, accept: Accept) -> Security {
        match self {
            Mode::Implicit => Security::Implicit(accept),
            Mode::StartTls => Security::StartTls(accept),
        }
    }

    fn url(self, addr: SocketAddr) -> String {
        let credentials = format!("{ENCODED_USER}:{ENCODED_PASSWORD}");
        match self {
            Mode::Implicit => format!("smtps://{credentials}@{addr}"),
            Mode::StartTls => format!("smtp://{credentials}@{addr}?tls=required"),
        }
    }
}

/// Runs the example against `sink` with `SMTP_URL=url` and, if given, `SMTP_CA_FILE`, and
/// approves its request; returns the finished run.
fn approved_run(
    tmp: tempfile::TempDir,
    sink: SmtpSink,
    url: &str,
    ca_file: Option<&Path>,
) -> (Run, i32, Vec<std::path::PathBuf>, String) {
    let mut env: Vec<(&str, &OsStr)> = vec![("SMTP_URL", url.as_ref())];
    if let Some(path) = ca_file {
        env.push(("SMTP_CA_FILE", path.as_os_str()));
    }
    let mut run = start_with(&[], tmp, sink, &env);
    Gate::open(&run.store)
        .unwrap()
        .approve(run.id, &Decision::by("tester"))
        .unwrap();
    let (code, delivered, printed) = run.finish();
    (run, code, delivered, printed)
}

#[test]
fn the_approved_email_goes_over_tls_with_the_decoded_password() {
    for mode in Mode::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let ca = Ca::new("test relay CA");
        let ca_file = ca.write(tmp.path());
        let security = mode.security(ca.acceptor(&["127.0.0.1"]));
        let sink = SmtpSink::start_with(&tmp.path().join("outbox"), security).unwrap();
        let url = mode.url(sink.addr());
        let (run, code, delivered, printed) = approved_run(tmp, sink, &url, Some(&ca_file));

        assert_eq!(code, 0, "{mode:?}: {printed}");
        assert_eq!(delivered.len(), 1, "{mode:?}: exactly one message");
        // In STARTTLS mode the sink refuses MAIL before TLS, so a delivery proves the upgrade.
        let message = std::fs::read_to_string(&delivered[0]).unwrap();
        for expected in [
            "X-Envelope-From: <billing@example.com>",
            "X-Envelope-To: <alice@example.com>",
            "From: billing@example.com",
            "To: alice@example.com",
            "Subject: Invoice 1042",
            "please find invoice 1042 (125.00 EUR) attached.",
        ] {
            assert!(
                message.contains(expected),
                "{mode:?}: {expected:?} not in\n{message}"
            );
        }
        assert_eq!(
            run.sink.logins(),
            [Login {
                user: USER.into(),
                password: PASSWORD.into()
            }],
            "{mode:?}: one login, percent-decoded"
        );
        let scheme = match mode {
            Mode::Implicit => "smtps",
            Mode::StartTls => "smtp",
        };
        let via = format!("via {scheme}://{ENCODED_USER}@{}", run.sink.addr());
        assert!(printed.contains(&via), "{mode:?}: {via:?} not in {printed}");
        for secret in [PASSWORD, ENCODED_PASSWORD] {
            assert!(
                !printed.contains(secret),
                "{mode:?}: printed the password: {printed}"
            );
        }
    }
}

/// The example reached the point of sending, and the relay got neither mail nor password.
fn refused(mode: &str, run: &Run, code: i32, delivered: &[std::path::PathBuf], printed: &str) {
    assert_eq!(code, 1, "{mode}: {printed}");
    assert!(printed.contains("smtp: "), "{mode}: it says why: {printed}");
    assert!(delivered.is_empty(), "{mode}: sent anyway: {delivered:?}");
    assert!(
        run.sink.logins().is_empty(),
        "{mode}: gave the password away"
    );
}

#[test]
fn a_certificate_not_signed_by_the_configured_ca_gets_nothing() {
    for mode in Mode::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let ca_file = Ca::new("the CA the example trusts").write(tmp.path());
        let rogue = Ca::new("another CA");
        let security = mode.security(rogue.acceptor(&["127.0.0.1"]));
        let sink = SmtpSink::start_with(&tmp.path().join("outbox"), security).unwrap();
        let url = mode.url(sink.addr());
        let (run, code, delivered, printed) = approved_run(tmp, sink, &url, Some(&ca_file));
        refused(&format!("{mode:?}"), &run, code, &delivered, &printed);
        assert!(printed.contains("UnknownIssuer"), "{mode:?}: {printed}");
    }
}

#[test]
fn without_smtp_ca_file_a_private_ca_is_not_trusted() {
    for mode in Mode::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let security = mode.security(Ca::new("private CA").acceptor(&["127.0.0.1"]));
        let sink = SmtpSink::start_with(&tmp.path().join("outbox"), security).unwrap();
        let url = mode.url(sink.addr());
        let (run, code, delivered, printed) = approved_run(tmp, sink, &url, None);
        refused(&format!("{mode:?}"), &run, code, &delivered, &printed);
        assert!(printed.contains("UnknownIssuer"), "{mode:?}: {printed}");
    }
}

#[test]
fn a_certificate_for_another_host_gets_nothing() {
    for mode in Mode::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let ca = Ca::new("test relay CA");
        let ca_file = ca.write(tmp.path());
        let security = mode.security(ca.acceptor(&["relay.example.org"]));
        let sink = SmtpSink::start_with(&tmp.path().join("outbox"), security).unwrap();
        let url = mode.url(sink.addr());
        let (run, code, delivered, printed) = approved_run(tmp, sink, &url, Some(&ca_file));
        refused(&format!("{mode:?}"), &run, code, &delivered, &printed);
        assert!(
            printed.contains("not valid for name"),
            "{mode:?}: {printed}"
        );
    }
}

/// What a man in the middle who deletes STARTTLS from the server's answer looks like.
#[test]
fn tls_required_gets_nothing_through_a_relay_without_starttls() {
    let tmp = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = Mode::StartTls.url(sink.addr());
    let (run, code, delivered, printed) = approved_run(tmp, sink, &url, None);
    refused("plain relay", &run, code, &delivered, &printed);
    assert!(printed.contains("STARTTLS"), "{printed}");
}

#[test]
fn an_smtp_url_that_would_send_less_safely_is_refused_before_asking() {
    let tmp = tempfile::tempdir().unwrap();
    let ca_file = Ca::new("test relay CA").write(tmp.path());
    let no_certificate = tmp.path().join("key.pem");
    std::fs::write(
        &no_certificate,
        KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    let broken = tmp.path().join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let missing = tmp.path().join("missing.pem");
    let tls = format!("smtps://{ENCODED_USER}:{ENCODED_PASSWORD}@127.0.0.1:1");
    let cases: [(&str, Option<&Path>, &str); 12] = [
        (
            "smtp://u:pw-secret@127.0.0.1:1",
            None,
            "would send the password unencrypted",
        ),
        (
            "smtp://u:pw-secret@127.0.0.1:1?tls=opportunistic",
            None,
            "tls=opportunistic",
        ),
        (
            "smtp://127.0.0.1:1?tls=opportunistic",
            None,
            "tls=opportunistic",
        ),
        ("smtps://u@127.0.0.1:1", None, "but no password"),
        ("smtps://:pw-secret@127.0.0.1:1", None, "no user name"),
        ("smtp://127.0.0.1:1?tls=requierd", None, "expected smtps://"),
        ("smtps://127.0.0.1:1?tls=required", None, "drop the tls="),
        (
            "smtp://127.0.0.1:1?tls=required&auth=none",
            None,
            "unexpected query parameter \"auth\"",
        ),
        ("smtp://127.0.0.1:1", Some(&ca_file), "SMTP_CA_FILE is set"),
        (&tls, Some(&no_certificate), "no certificate in it"),
        (&tls, Some(&broken), "SMTP_CA_FILE"),
        (&tls, Some(&missing), "SMTP_CA_FILE"),
    ];
    for (url, ca_file, expected) in cases {
        let mut command = Command::new(built("examples/smtp"));
        command
            .env("APPROVAL_GATE_DIR", tmp.path().join("store"))
            .env("SMTP_URL", url)
            .env_remove("SMTP_CA_FILE")
            // A request filed by mistake expires soon (10 s is the shortest time to live)
            // instead of waiting for a human.
            .args(["--ttl", "10"]);
        if let Some(path) = ca_file {
            command.env("SMTP_CA_FILE", path);
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url}: {stdout}{stderr}");
        assert!(
            stderr.contains(expected),
            "{url}: {expected:?} not in {stderr}"
        );
        assert!(
            !stdout.contains("requested approval"),
            "{url}: asked anyway: {stdout}"
        );
        for secret in ["pw-secret", PASSWORD, ENCODED_PASSWORD] {
            assert!(
                !stdout.contains(secret) && !stderr.contains(secret),
                "{url}: printed the password: {stdout}{stderr}"
            );
        }
    }
}

/// The STARTTLS sink is what makes a delivery above prove the upgrade: before TLS it takes
/// neither mail nor a password, and it hangs up on bytes pipelined after STARTTLS.
#[test]
fn the_starttls_sink_takes_nothing_before_tls() {
    use std::io::{BufRead, BufReader, Write};

    let tmp = tempfile::tempdir().unwrap();
    let accept = Ca::new("test relay CA").acceptor(&["127.0.0.1"]);
    let sink = SmtpSink::start_with(tmp.path(), Security::StartTls(accept)).unwrap();
    let tcp = std::net::TcpStream::connect(sink.addr()).unwrap();
    let mut out = tcp.try_clone().unwrap();
    let mut lines = BufReader::new(tcp).lines().map(Result::unwrap);
    let mut say = |command: &str| {
        out.write_all(format!("{command}\r\n").as_bytes()).unwrap();
    };
    assert!(lines.next().unwrap().starts_with("220 "));
    say("EHLO client");
    assert_eq!(lines.next().unwrap(), "250-approval-gate-sink");
    assert_eq!(
        lines.next().unwrap(),
        "250 STARTTLS",
        "no AUTH offered before TLS"
    );
    for command in [
        "AUTH PLAIN AHVzZXIAcGFzcw==",
        "MAIL FROM:<a@example.com>",
        "RCPT TO:<b@example.com>",
        "DATA",
    ] {
        say(command);
        assert!(lines.next().unwrap().starts_with("530 "), "{command}");
    }
    // A man in the middle's plaintext, sent in one write with STARTTLS.
    say("STARTTLS\r\nMAIL FROM:<mallory@example.com>");
    assert!(lines.next().unwrap().starts_with("501 "));
    assert!(lines.next().is_none(), "the sink hung up");
    assert!(sink.logins().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn an_smtp_url_that_is_not_utf8_is_refused_not_replaced_by_the_loopback_server() {
    use std::os::unix::ffi::OsStrExt as _;

    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(built("examples/smtp"))
        .env("APPROVAL_GATE_DIR", tmp.path().join("store"))
        .env(
            "SMTP_URL",
            OsStr::from_bytes(b"smtps://u:p\xff@127.0.0.1:1"),
        )
        .env("SMTP_OUTBOX", tmp.path().join("outbox"))
        .args(["--ttl", "10"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("SMTP_URL is not valid UTF-8"), "{stderr}");
    assert!(
        !stdout.contains("requested approval"),
        "asked anyway: {stdout}"
    );
}

/// A man in the middle answers STARTTLS and, in the same packet, every answer to come
/// ("NO STARTTLS" response injection); the relay behind TLS refuses everything. A client that
/// reads those plaintext bytes as if they came over TLS reports a delivery that never
/// happened. lettre 0.11.23 does: its buffered reader keeps them across the upgrade.
#[test]
#[ignore = "lettre 0.11.23 keeps plaintext read ahead of the STARTTLS handshake; run with \
            --ignored once lettre discards it"]
fn plaintext_injected_after_starttls_is_not_taken_for_the_relay() {
    use std::io::{BufRead, BufReader, Write};

    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("test relay CA");
    let ca_file = ca.write(tmp.path());
    let accept = ca.acceptor(&["127.0.0.1"]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let relay = std::thread::spawn(move || -> io::Result<Vec<String>> {
        let (tcp, _) = listener.accept()?;
        let mut plain = BufReader::new(tcp.try_clone()?);
        let mut line = String::new();
        plain.get_mut().write_all(b"220 relay ready\r\n")?;
        plain.read_line(&mut line)?;
        plain
            .get_mut()
            .write_all(b"250-relay\r\n250 STARTTLS\r\n")?;
        plain.read_line(&mut line)?;
        plain.get_mut().write_all(
            b"220 go ahead\r\n250 relay\r\n250 ok\r\n250 ok\r\n354 go\r\n250 injected-queued\r\n",
        )?;
        let mut tls = BufReader::new(accept(tcp)?);
        let mut seen = Vec::new();
        // Until the client hangs up, however it does.
        loop {
            line.clear();
            if !matches!(tls.read_line(&mut line), Ok(1..)) {
                return Ok(seen);
            }
            seen.push(line.trim_end().to_owned());
            let refused = tls.get_mut().write_all(b"554 5.7.1 refused\r\n");
            if refused.and_then(|()| tls.get_mut().flush()).is_err() {
                return Ok(seen);
            }
        }
    });
    let unused = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = format!("smtp://{addr}?tls=required");
    let (_run, code, _, printed) = approved_run(tmp, unused, &url, Some(&ca_file));
    let seen = relay.join().unwrap().unwrap();
    assert!(
        !printed.contains("sent to"),
        "reported a delivery the relay refused ({seen:?}): {printed}"
    );
    assert_eq!(code, 1, "{printed}");
}
