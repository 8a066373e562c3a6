//! `serve` where browsers reach it from elsewhere: TLS with the operator's certificate, HSTS,
//! and the refusals that keep plain HTTP on loopback only.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use approval_gate_tests::http::free_port;
use approval_gate_tests::webauthn::SoftPasskey;

use crate::server::cli;

/// A certificate for `localhost` and its key, as PEM files in `dir`; the certificate's DER.
fn certificate(dir: &std::path::Path) -> Vec<u8> {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).unwrap();
    made.cert.der().to_vec()
}

/// One HTTPS request to `port`, trusting only `der`, as a browser at `https://localhost`.
fn get(port: u16, der: &[u8], path: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from(der.to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    // A server may end the TLS stream without close_notify after `Connection: close`.
    let _ = tls.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn over_tls_the_page_is_served_with_hsts_and_plain_http_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let der = certificate(dir.path());
    let alice = SoftPasskey::new(1, "alice@example.com", "localhost");
    let approvers = dir.path().join("approvers");
    // A localhost origin is served on its own port, of both loopback addresses.
    let port = free_port();
    let line = alice.allowed_signers_line(&format!("https://localhost:{port}"));
    std::fs::write(&approvers, line + "\n").unwrap();
    let mut child = cli()
        .arg("--store")
        .arg(dir.path().join("store"))
        .arg("--approvers")
        .arg(&approvers)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--public-url", &format!("https://localhost:{port}")])
        .arg("--tls-cert")
        .arg(dir.path().join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.path().join("key.pem"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(
        line.contains(&format!(
            "serving https://localhost:{port} on 127.0.0.1:{port} and [::1]:{port} "
        )),
        "{line}"
    );

    let page = get(port, &der, "/signin");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("strict-transport-security: max-age=31536000"),
        "{page}"
    );
    // Plain HTTP to the TLS port: no page comes back.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(b"GET /signin HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn serve_refuses_to_start_where_passkeys_could_not_work_or_no_approver_could_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let alice = SoftPasskey::new(1, "alice@example.com", "localhost");
    let approvers = dir.path().join("approvers");
    let line = alice.allowed_signers_line("http://localhost:8470");
    std::fs::write(&approvers, line + "\n").unwrap();
    let ssh_only = dir.path().join("ssh-only");
    std::fs::write(
        &ssh_only,
        "bob@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz\n",
    )
    .unwrap();
    let run = |approvers: Option<&std::path::Path>, args: &[&str]| {
        let mut command = cli();
        command.arg("--store").arg(&store);
        if let Some(approvers) = approvers {
            command.arg("--approvers").arg(approvers);
        }
        let output = command.arg("serve").args(args).output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let cases = [
        (run(None, &[]), "needs the approvers file"),
        (run(Some(&ssh_only), &[]), "holds no passkey"),
        (
            run(Some(&approvers), &["--listen", "0.0.0.0:0"]),
            "only a loopback address",
        ),
        (
            run(
                Some(&approvers),
                &["--public-url", "http://approvals.example.com"],
            ),
            "must be https://",
        ),
        (run(Some(&approvers), &["--tls-cert", "x.pem"]), "--tls-key"),
        // A localhost origin must be this process's own port, on both loopback addresses.
        (
            run(Some(&approvers), &["--public-url", "http://localhost:1"]),
            "is on port 1",
        ),
        (
            run(Some(&approvers), &["--listen", "127.0.0.2:0"]),
            "served on 127.0.0.1 and [::1]",
        ),
        // The file's passkey approves on port 8470 only: a page elsewhere could take nothing.
        (
            run(Some(&approvers), &["--listen", "127.0.0.1:0"]),
            "trusts no passkey on http://localhost:",
        ),
    ];
    for ((code, stderr), expected) in cases {
        assert_eq!(code, Some(2), "{expected}: {stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    assert!(!store.exists(), "a refused start opens no store");
}
