//! The TLS connector per `sslmode`, checked by handshakes in memory and (ignored by default)
//! against a live server, and the words a failed handshake is explained in.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::{ClientConnection, ServerConfig, ServerConnection};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use super::{client_config, connector, explain};
use crate::store::pg::conninfo::Settings;
use crate::store::pg::conninfo::tests::parse;

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
        let cert = params.self_signed(&key).unwrap();
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn write(&self, dir: &Path, name: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, &self.pem).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// A server certificate for `names` and its key, PEM.
    fn leaf(&self, names: &[&str]) -> (String, String, CertificateDer<'static>) {
        let params =
            CertificateParams::new(names.iter().map(|&n| n.to_owned()).collect::<Vec<_>>())
                .unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone())
    }

    /// A rustls server presenting a certificate for `names`, TLS 1.3 or (`tls12`) 1.2.
    fn server(&self, names: &[&str], tls12: bool) -> Arc<ServerConfig> {
        let (_, key_pem, der) = self.leaf(names);
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            rustls_pki_types::pem::PemObject::from_pem_slice(key_pem.as_bytes())
                .map(|k: PrivatePkcs8KeyDer<'_>| k.secret_pkcs8_der().to_vec())
                .unwrap(),
        ));
        let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
            &[&rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS13]
        };
        Arc::new(
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(versions)
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![der], key)
                .unwrap(),
        )
    }
}

/// A TLS handshake in memory between `settings`' client configuration, connecting to
/// `name`, and `server`; the client's error if it refuses.
fn handshake(settings: &Settings, name: &str, server: Arc<ServerConfig>) -> Result<(), String> {
    handshake_raw(settings, name, server).map_err(|e| match e {
        Refused::Client(e) => e.to_string(),
        Refused::Other(e) => e,
    })
}

enum Refused {
    Client(rustls::Error),
    Other(String),
}

fn handshake_raw(
    settings: &Settings,
    name: &str,
    server: Arc<ServerConfig>,
) -> Result<(), Refused> {
    let config = client_config(settings)
        .map_err(Refused::Other)?
        .expect("a TLS mode");
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let mut client = ClientConnection::new(Arc::new(config), name).unwrap();
    let mut server = ServerConnection::new(server).unwrap();
    for _ in 0..16 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let mut rd = wire.as_slice();
        while !rd.is_empty() {
            server.read_tls(&mut rd).unwrap();
        }
        server
            .process_new_packets()
            .map_err(|e| Refused::Other(format!("server: {e}")))?;
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        let mut rd = wire.as_slice();
        while !rd.is_empty() {
            client.read_tls(&mut rd).unwrap();
        }
        client.process_new_packets().map_err(Refused::Client)?;
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    Err(Refused::Other("the handshake did not finish".to_owned()))
}

/// An error that is only its text, as the `postgres` crate's own TLS refusals are.
#[derive(Debug)]
struct Plain(&'static str);
impl std::fmt::Display for Plain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for Plain {}

/// A refused handshake is explained in words that say what failed, from the rustls error
/// as the `postgres` crate passes it on (inside an `io::Error`).
#[test]
fn a_failed_handshake_says_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ag test CA");
    let other = Ca::new("another CA");
    let ca_pem = ca.write(dir.path(), "ca.pem");
    let other_pem = other.write(dir.path(), "other.pem");
    let explained = |root: &str, host: &str| {
        let s = parse(
            &format!("host={host} sslmode=verify-full sslrootcert='{root}'"),
            &[],
        )
        .unwrap();
        let Err(Refused::Client(error)) =
            handshake_raw(&s, host, ca.server(&["db.example"], false))
        else {
            panic!("the handshake must be refused by the client");
        };
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
        explain(&wrapped).expect("a TLS failure is explained")
    };
    let unknown = explained(&other_pem, "db.example");
    assert!(
        unknown.contains("unknown CA") && unknown.contains("sslrootcert"),
        "{unknown}"
    );
    let mismatch = explained(&ca_pem, "other.example");
    assert!(
        mismatch.contains("name mismatch") && mismatch.contains("other.example"),
        "{mismatch}"
    );
    assert!(
        mismatch.contains("db.example"),
        "names what the certificate lists: {mismatch}"
    );

    let no_tls = explain(&Plain("server does not support TLS")).unwrap();
    assert!(
        no_tls.contains("does not support TLS") && no_tls.contains("ssl"),
        "{no_tls}"
    );
    assert_eq!(explain(&Plain("connection refused")), None);
}

#[test]
fn each_mode_checks_what_libpq_checks() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ag test CA");
    let other = Ca::new("another CA");
    let ca_pem = ca.write(dir.path(), "ca.pem");
    let other_pem = other.write(dir.path(), "other.pem");
    let at = |mode: &str, root: Option<&str>, host: &str| {
        let root = root
            .map(|r| format!(" sslrootcert='{r}'"))
            .unwrap_or_default();
        parse(&format!("host={host} sslmode={mode}{root}"), &[]).unwrap()
    };

    for tls12 in [false, true] {
        let server = ca.server(&["localhost"], tls12);
        let ok = |s: &Settings, name: &str| handshake(s, name, Arc::clone(&server));
        // Chain and name.
        let full = at("verify-full", Some(&ca_pem), "localhost");
        ok(&full, "localhost").unwrap();
        let error = ok(&full, "127.0.0.1").unwrap_err();
        assert!(error.contains("not valid for name"), "{error}");
        let error = ok(
            &at("verify-full", Some(&other_pem), "localhost"),
            "localhost",
        )
        .unwrap_err();
        assert!(error.contains("UnknownIssuer"), "{error}");
        // Chain only.
        for mode in ["verify-ca", "require", "prefer"] {
            let s = at(mode, Some(&ca_pem), "127.0.0.1");
            ok(&s, "127.0.0.1").unwrap();
            ok(&s, "elsewhere.example").unwrap();
            let s = at(mode, Some(&other_pem), "127.0.0.1");
            let error = ok(&s, "127.0.0.1").unwrap_err();
            assert!(error.contains("UnknownIssuer"), "{mode}: {error}");
        }
        // Neither: encryption to whoever holds the certificate's key.
        for mode in ["require", "prefer"] {
            let s = at(mode, None, "127.0.0.1");
            ok(&s, "127.0.0.1").unwrap();
            handshake(&s, "x.example", other.server(&["y.example"], tls12)).unwrap();
        }
    }
}

#[test]
fn connector_per_mode() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ag test CA");
    let ca_pem = ca.write(dir.path(), "ca.pem");
    assert!(
        connector(&parse("host=h sslmode=disable", &[]).unwrap())
            .unwrap()
            .is_none()
    );
    for mode in ["prefer", "require"] {
        let s = parse(&format!("host=h sslmode={mode}"), &[]).unwrap();
        assert!(connector(&s).unwrap().is_some());
    }
    for mode in ["prefer", "require", "verify-ca", "verify-full"] {
        let s = parse(&format!("host=h sslmode={mode} sslrootcert={ca_pem}"), &[]).unwrap();
        assert!(connector(&s).unwrap().is_some(), "{mode}");
    }

    // Root files that cannot serve.
    let missing = dir.path().join("missing.pem");
    let s = parse(
        &format!(
            "host=h sslmode=verify-full sslrootcert={}",
            missing.display()
        ),
        &[],
    )
    .unwrap();
    let error = connector(&s).err().unwrap();
    assert!(
        error.starts_with("cannot read sslrootcert") && error.contains("missing.pem"),
        "{error}"
    );
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let s = parse(
        &format!("host=h sslmode=verify-ca sslrootcert={}", empty.display()),
        &[],
    )
    .unwrap();
    let error = connector(&s).err().unwrap();
    assert!(error.contains("holds no certificates"), "{error}");
    let (leaf_pem, _, _) = ca.leaf(&["h"]);
    let broken = dir.path().join("broken.pem");
    std::fs::write(
        &broken,
        format!("{}{}", ca.pem, &leaf_pem[..leaf_pem.len() / 2]),
    )
    .unwrap();
    let s = parse(
        &format!("host=h sslmode=require sslrootcert={}", broken.display()),
        &[],
    )
    .unwrap();
    let error = connector(&s).err().unwrap();
    assert!(
        error.contains("is not a PEM file of certificates"),
        "{error}"
    );
}

/// A throwaway `PostgreSQL` cluster with TLS on, stopped and removed on drop.
struct Cluster {
    dir: std::path::PathBuf,
    bin: std::path::PathBuf,
    port: u16,
}

impl Cluster {
    fn start(ca: &Ca, names: &[&str]) -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)")
            .map(|entry| entry.unwrap().path().join("bin"))
            .filter(|bin| bin.join("initdb").exists())
            .max_by_key(|bin| {
                bin.parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<u32>().ok())
            })
            .expect("an initdb under /usr/lib/postgresql/*/bin");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("ag-tls-{}-{port}", std::process::id()));
        let cluster = Self { dir, bin, port };
        let data = cluster.dir.join("data");
        std::fs::create_dir_all(&cluster.dir).unwrap();
        Self::own(&cluster.dir);
        cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let (cert, key, _) = ca.leaf(names);
        for (name, pem) in [("server.crt", cert), ("server.key", key)] {
            let path = data.join(name);
            std::fs::write(&path, pem).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            Self::own(&path);
        }
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} \
             -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c fsync=off",
            data.display()
        );
        let log = cluster.dir.join("log");
        cluster.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-w",
                "-l",
                log.to_str().unwrap(),
                "-o",
                &options,
                "start",
            ],
        );
        cluster
    }

    fn is_root() -> bool {
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
    }

    /// Hands `path` to the `postgres` OS user when we are root (the server refuses root).
    fn own(path: &Path) {
        if Self::is_root() {
            let status = std::process::Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(path)
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let tool = self.bin.join(tool);
        let mut command = if Self::is_root() {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&tool);
            c
        } else {
            std::process::Command::new(&tool)
        };
        let out = command.args(args).current_dir("/").output().unwrap();
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{} failed: {}{}\n{log}",
            tool.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Connects with `text` (no environment but `USER`), and says whether the session is
    /// encrypted.
    fn connect(&self, text: &str) -> Result<bool, String> {
        let text = text.replace("PORT", &self.port.to_string());
        let s = parse(&text, &[("PGUSER", "postgres"), ("PGDATABASE", "postgres")])?;
        let mut client = match connector(&s)? {
            Some(tls) => s.config.connect(tls),
            None => s.config.connect(postgres::NoTls),
        }
        .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))?;
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .map_err(|e| e.to_string())?;
        Ok(row.get(0))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let tool = self.bin.join("pg_ctl");
        let args = [
            "-D",
            data.to_str().unwrap(),
            "-m",
            "immediate",
            "-w",
            "stop",
        ];
        let _ = if Self::is_root() {
            std::process::Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&tool)
                .args(args)
                .current_dir("/")
                .output()
        } else {
            std::process::Command::new(&tool).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `cargo test -p approval-gate --features postgres --lib store::pg::tls -- --ignored`
#[test]
#[ignore = "starts a PostgreSQL server (/usr/lib/postgresql/*/bin; as root, runs it as `postgres`)"]
fn live_server() -> io::Result<()> {
    let dir = tempfile::tempdir()?;
    let ca = Ca::new("ag test CA");
    let other = Ca::new("another CA");
    let ca_pem = ca.write(dir.path(), "ca.pem");
    let other_pem = other.write(dir.path(), "other.pem");
    let cluster = Cluster::start(&ca, &["localhost"]);

    let url = |host: &str, query: &str| format!("postgres://{host}:PORT/postgres?{query}");
    let verify_full = format!("sslmode=verify-full&sslrootcert={ca_pem}");
    assert_eq!(cluster.connect(&url("localhost", &verify_full)), Ok(true));
    let error = cluster
        .connect(&url("127.0.0.1", &verify_full))
        .unwrap_err();
    assert!(error.contains("NotValidForName"), "{error}");
    let verify_ca = format!("sslmode=verify-ca&sslrootcert={ca_pem}");
    assert_eq!(cluster.connect(&url("127.0.0.1", &verify_ca)), Ok(true));
    assert_eq!(
        cluster.connect(&url("127.0.0.1", "sslmode=require")),
        Ok(true)
    );
    assert_eq!(
        cluster.connect(&url("127.0.0.1", "sslmode=prefer")),
        Ok(true)
    );
    assert_eq!(
        cluster.connect(&url("127.0.0.1", "sslmode=disable")),
        Ok(false)
    );
    let wrong_ca = format!("sslmode=verify-full&sslrootcert={other_pem}");
    let error = cluster.connect(&url("localhost", &wrong_ca)).unwrap_err();
    assert!(error.contains("UnknownIssuer"), "{error}");
    let wrong_ca = format!("sslmode=require&sslrootcert={other_pem}");
    assert!(cluster.connect(&url("127.0.0.1", &wrong_ca)).is_err());
    // The conninfo form, the same way.
    let text = format!("host=localhost port=PORT sslmode=verify-full sslrootcert='{ca_pem}'");
    assert_eq!(cluster.connect(&text), Ok(true));
    Ok(())
}
