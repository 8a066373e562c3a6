//! Reading a store's text and environment: what reaches the `postgres` crate, what is taken
//! out, what the environment fills in, and what is refused (never showing a password).

use std::collections::HashMap;
use std::time::Duration;

use postgres::config::{Host, SslMode as WireMode};

use super::{RootCert, Settings, SslMode, settings};

const PASSWORD: &str = "hunter2-s3cret";

/// An environment of these variables only.
fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|&(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

/// `text` read with only `USER` set, plus `pairs`.
pub(in crate::store::pg) fn parse(text: &str, pairs: &[(&str, &str)]) -> Result<Settings, String> {
    let mut all = vec![("USER", "osuser")];
    all.extend_from_slice(pairs);
    settings(text, &env_of(&all))
}

fn tcp(hosts: &[&str]) -> Vec<Host> {
    hosts.iter().map(|h| Host::Tcp((*h).to_owned())).collect()
}

fn file(path: &str) -> RootCert {
    RootCert::File(path.into())
}

/// Every variable `settings` reads, set.
const FULL_ENV: &[(&str, &str)] = &[
    ("PGHOST", "env-host"),
    ("PGPORT", "5439"),
    ("PGUSER", "envuser"),
    ("PGPASSWORD", "envpw"),
    ("PGDATABASE", "envdb"),
    ("PGSSLMODE", "require"),
    ("PGSSLROOTCERT", "/env/ca.pem"),
    ("PGAPPNAME", "envapp"),
    ("PGCONNECT_TIMEOUT", "7"),
];

#[test]
fn url_fields_reach_the_crate() {
    let s = parse(
        "postgres://alice:p%40ss@db.example:6543/approvals?application_name=gate%20a",
        &[],
    )
    .unwrap();
    let c = &s.config;
    assert_eq!(c.get_hosts(), tcp(&["db.example"]));
    assert_eq!(c.get_ports(), [6543]);
    assert_eq!(c.get_user(), Some("alice"));
    assert_eq!(c.get_password(), Some(&b"p@ss"[..]));
    assert_eq!(c.get_dbname(), Some("approvals"));
    assert_eq!(c.get_application_name(), Some("gate a"));
    assert_eq!(s.mode, SslMode::Prefer);
    assert_eq!(c.get_ssl_mode(), WireMode::Prefer);
    assert_eq!(s.root_cert, None);
}

#[test]
fn url_tls_options_are_taken_out_and_decoded() {
    for url in [
        "postgresql://u@h/d?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20file.pem&connect_timeout=10",
        "postgresql://u@h/d?connect_timeout=10&sslmode=verify-full&sslrootcert=/etc/ca%20file.pem",
        "postgresql://u@h/d?sslrootcert=%2Fetc%2Fca%20file.pem&connect_timeout=10&sslmode=verify-full",
    ] {
        let s = parse(url, &[]).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(s.mode, SslMode::VerifyFull, "{url}");
        assert_eq!(s.root_cert, Some(file("/etc/ca file.pem")), "{url}");
        assert_eq!(s.config.get_ssl_mode(), WireMode::Require, "{url}");
        assert_eq!(
            s.config.get_connect_timeout(),
            Some(&Duration::from_secs(10)),
            "{url}"
        );
        assert_eq!(s.config.get_hosts(), tcp(&["h"]), "{url}");
    }
    // Only ours in the query: nothing is left of it.
    let s = parse("postgres://u@h/d?sslmode=verify-ca", &[]).unwrap();
    assert_eq!(s.mode, SslMode::VerifyCa);
    assert_eq!(s.config.get_dbname(), Some("d"));
    // Several hosts, and a `?` inside the password (the crate reads up to the first `@`).
    let s = parse(
        "postgres://u:p?x@h1:1,h2:2/d?sslmode=require&target_session_attrs=read-write",
        &[],
    )
    .unwrap();
    assert_eq!(s.mode, SslMode::Require);
    assert_eq!(s.config.get_hosts(), tcp(&["h1", "h2"]));
    assert_eq!(s.config.get_ports(), [1, 2]);
    assert_eq!(s.config.get_password(), Some(&b"p?x"[..]));
}

#[test]
fn conninfo_tls_options_are_taken_out() {
    let s = parse(
        r"host=h port=5433 user=u dbname='my db' sslmode=verify-full sslrootcert='/x y/ca\'s.pem' password='p w' application_name=a",
        &[],
    )
    .unwrap();
    let c = &s.config;
    assert_eq!(c.get_hosts(), tcp(&["h"]));
    assert_eq!(c.get_ports(), [5433]);
    assert_eq!(c.get_user(), Some("u"));
    assert_eq!(c.get_dbname(), Some("my db"));
    assert_eq!(c.get_password(), Some(&b"p w"[..]));
    assert_eq!(c.get_application_name(), Some("a"));
    assert_eq!(s.mode, SslMode::VerifyFull);
    assert_eq!(c.get_ssl_mode(), WireMode::Require);
    assert_eq!(s.root_cert, Some(file("/x y/ca's.pem")));

    // No space needed around `=`, a backslash escape in a plain value, ours first and last.
    let s = parse(r"sslmode = verify-ca host=h sslrootcert=/a\ b.pem", &[]).unwrap();
    assert_eq!(s.mode, SslMode::VerifyCa);
    assert_eq!(s.root_cert, Some(file("/a b.pem")));
    assert_eq!(s.config.get_hosts(), tcp(&["h"]));
    assert_eq!(s.config.get_user(), Some("osuser"));
}

#[test]
fn the_environment_fills_what_the_text_leaves_out() {
    for text in ["", "postgres://", "postgresql:///"] {
        let s = settings(text, &env_of(FULL_ENV)).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let c = &s.config;
        assert_eq!(c.get_hosts(), tcp(&["env-host"]), "{text:?}");
        assert_eq!(c.get_ports(), [5439]);
        assert_eq!(c.get_user(), Some("envuser"));
        assert_eq!(c.get_password(), Some(&b"envpw"[..]));
        assert_eq!(c.get_dbname(), Some("envdb"));
        assert_eq!(c.get_application_name(), Some("envapp"));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(s.mode, SslMode::Require);
        assert_eq!(c.get_ssl_mode(), WireMode::Require);
        assert_eq!(s.root_cert, Some(file("/env/ca.pem")));
    }
    // Lists, as libpq takes them.
    let s = settings(
        "",
        &env_of(&[("PGHOST", "a,b"), ("PGPORT", "1,"), ("PGUSER", "u")]),
    )
    .unwrap();
    assert_eq!(s.config.get_hosts(), tcp(&["a", "b"]));
    assert_eq!(s.config.get_ports(), [1, 5432]);
    // A URL's hosts without ports take PGPORT's, as libpq; with ports, their own.
    for (url, pgport, ports) in [
        ("postgres://h/d", "5439", &[5439][..]),
        ("postgres://u@h1,h2/d?sslmode=require", "1", &[1, 1][..]),
        (
            "postgres://u:p@h1,[::1]?sslmode=require",
            "1,2",
            &[1, 2][..],
        ),
        ("postgres://h1,h2/d", "1,", &[1, 5432][..]),
        ("postgres://h:1/d", "5439", &[1][..]),
        ("postgres://[::1]:1/d", "5439", &[1][..]),
        ("postgres://h1,h2:2/d", "5439", &[5432, 2][..]),
        ("postgres:///d", "5439", &[5439][..]),
    ] {
        let s = parse(url, &[("PGPORT", pgport)]).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(s.config.get_ports(), ports, "{url} with PGPORT={pgport}");
    }
    let error = parse("postgres://h1,h2,h3/d", &[("PGPORT", "1,2")]).unwrap_err();
    assert_eq!(error, "PGPORT lists 2 ports for the URL's 3 hosts");
    // An empty variable counts as unset.
    let s = settings(
        "host=h",
        &env_of(&[("PGUSER", ""), ("USER", "me"), ("PGSSLMODE", "")]),
    )
    .unwrap();
    assert_eq!(s.config.get_user(), Some("me"));
    assert_eq!(s.mode, SslMode::Prefer);
}

#[test]
fn the_text_wins_over_the_environment() {
    let s = settings(
        "postgres://urluser:urlpw@urlhost:1111/urldb?sslmode=verify-ca&application_name=urlapp&connect_timeout=0",
        &env_of(FULL_ENV),
    )
    .unwrap();
    let c = &s.config;
    assert_eq!(c.get_hosts(), tcp(&["urlhost"]));
    assert_eq!(c.get_ports(), [1111]);
    assert_eq!(c.get_user(), Some("urluser"));
    assert_eq!(c.get_password(), Some(&b"urlpw"[..]));
    assert_eq!(c.get_dbname(), Some("urldb"));
    assert_eq!(c.get_application_name(), Some("urlapp"));
    // `connect_timeout=0` in the text: no timeout, whatever PGCONNECT_TIMEOUT says.
    assert_eq!(c.get_connect_timeout(), None);
    assert_eq!(s.mode, SslMode::VerifyCa);
    // Not in the text: the environment's.
    assert_eq!(s.root_cert, Some(file("/env/ca.pem")));

    let s = settings(
        "host=h user=u sslmode=disable sslrootcert=/text/ca.pem",
        &env_of(FULL_ENV),
    )
    .unwrap();
    assert_eq!(s.mode, SslMode::Disable);
    assert_eq!(s.config.get_ssl_mode(), WireMode::Disable);
    assert_eq!(s.root_cert, Some(file("/text/ca.pem")));
    assert_eq!(s.config.get_ports(), [5439]);
}

#[test]
fn defaults() {
    let s = parse("postgres://h", &[]).unwrap();
    assert_eq!(s.config.get_user(), Some("osuser"));
    assert_eq!(s.config.get_application_name(), Some("approval-gate"));
    assert_eq!(s.config.get_dbname(), None);
    assert_eq!(s.config.get_ports(), [5432]);
    assert_eq!(s.mode, SslMode::Prefer);
    assert_eq!(s.config.get_ssl_mode(), WireMode::Prefer);

    // PGUSER before USER.
    let s = parse("postgres://h", &[("PGUSER", "pguser")]).unwrap();
    assert_eq!(s.config.get_user(), Some("pguser"));

    // No host: the local Unix socket, where libpq never asks for TLS.
    let s = parse("dbname=d sslmode=require", &[]).unwrap();
    assert!(
        matches!(s.config.get_hosts(), [Host::Unix(_)]),
        "{:?}",
        s.config.get_hosts()
    );
    assert_eq!(s.mode, SslMode::Require);
    assert_eq!(s.config.get_ssl_mode(), WireMode::Disable);

    // hostaddr alone: the address is also the name TLS is handed.
    let s = parse("hostaddr=127.0.0.1 sslmode=require", &[]).unwrap();
    assert_eq!(s.config.get_hosts(), tcp(&["127.0.0.1"]));
    assert_eq!(s.config.get_ssl_mode(), WireMode::Require);
}

#[test]
fn sslrootcert_system_demands_verify_full() {
    let s = parse("host=h sslrootcert=system", &[]).unwrap();
    assert_eq!(s.root_cert, Some(RootCert::System));
    assert_eq!(s.mode, SslMode::VerifyFull);
    for mode in ["disable", "prefer", "require", "verify-ca"] {
        let error = parse(&format!("host=h sslrootcert=system sslmode={mode}"), &[]).unwrap_err();
        assert!(error.contains("verify-full"), "{error}");
        assert!(error.contains(mode), "{error}");
    }
    // The environment's sslrootcert counts the same.
    let error = parse(
        "host=h",
        &[("PGSSLROOTCERT", "system"), ("PGSSLMODE", "require")],
    )
    .unwrap_err();
    assert!(error.contains("sslrootcert=system"), "{error}");
}

#[test]
fn a_bad_sslmode_is_refused_clearly() {
    let error = parse(
        &format!("postgres://u:{PASSWORD}@h/d?sslmode=verify_full"),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        error,
        "sslmode \"verify_full\" is not one of disable, prefer, require, verify-ca, verify-full"
    );
    let error = parse("host=h", &[("PGSSLMODE", "VERIFY-FULL")]).unwrap_err();
    assert!(error.starts_with("PGSSLMODE \"VERIFY-FULL\""), "{error}");
    let error = parse("host=h sslmode=allow", &[]).unwrap_err();
    assert!(error.contains("`allow` is not supported"), "{error}");
}

#[test]
fn errors_never_show_the_password() {
    let env = [("PGPASSWORD", PASSWORD)];
    for text in [
        format!("postgres://u:{PASSWORD}@h/d?bogus=1"),
        format!("postgres://u:{PASSWORD}@h/d?sslmode=nope"),
        format!("postgres://u:{PASSWORD}@h/d?sslmode"),
        format!("postgres://u:{PASSWORD}@h:port/d"),
        format!("postgres://u@h/d?password={PASSWORD}&sslmode={PASSWORD}"),
        format!("postgres://u:{PASSWORD}@h/d?sslrootcert=system&sslmode=require"),
        format!("postgress://u:{PASSWORD}@h/d"),
        format!("mysql://u:{PASSWORD}@h/d"),
        PASSWORD.to_owned(),
        format!("host=h password={PASSWORD} bogus"),
        format!("host=h password='{PASSWORD}"),
        format!("host=h password={PASSWORD} port=notaport"),
        format!("host=h password={PASSWORD} sslmode={PASSWORD}"),
        format!("host=h password={PASSWORD} {PASSWORD}=1"),
        format!("password={PASSWORD} hostaddr=127.0.0.1 sslmode=verify-full"),
        format!("host=h password={PASSWORD} user="),
        format!("host=h password={PASSWORD} ={PASSWORD}"),
        // Only the environment knows it.
        format!("host=h sslmode={PASSWORD}"),
        format!("host=h port={PASSWORD}"),
    ] {
        let error = parse(&text, &env).expect_err(&text);
        assert!(!error.contains(PASSWORD), "{text}: {error}");
        assert!(!error.contains("hunter"), "{text}: {error}");
        assert!(!error.contains('\n'), "{text}: {error}");
        assert!(!error.is_empty());
    }
    // No user anywhere.
    let error = settings("host=h", &env_of(&[])).unwrap_err();
    assert!(error.contains("PGUSER"), "{error}");
    // A bad environment value is named.
    let error = parse("host=h", &[("PGPORT", "x")]).unwrap_err();
    assert!(error.contains("PGPORT"), "{error}");
    let error = parse("host=h", &[("PGCONNECT_TIMEOUT", "soon")]).unwrap_err();
    assert!(error.contains("PGCONNECT_TIMEOUT"), "{error}");
    let error = parse("host=h bogus=1", &[]).unwrap_err();
    assert_eq!(error, "invalid connection string: unknown option `bogus`");
}

#[test]
fn a_tls_option_named_twice_is_refused() {
    for text in [
        "postgres://u@h/d?sslmode=verify-full&sslmode=disable",
        "postgres://u@h/d?sslmode=verify-full&application_name=a&sslmode=verify-full",
        "postgres://u@h/d?sslrootcert=/a.pem&sslmode=verify-ca&sslrootcert=/b.pem",
        "host=h sslmode=verify-full sslmode=disable",
        "host=h sslrootcert=/a.pem sslrootcert=/b.pem sslmode=verify-ca",
    ] {
        let error = parse(text, &[]).unwrap_err();
        assert!(error.contains("twice"), "{text}: {error}");
        assert!(
            !error.contains("disable") && !error.contains(".pem"),
            "no value is shown: {error}"
        );
    }
    // Once each is as before.
    assert!(
        parse(
            "postgres://u@h/d?sslmode=verify-full&sslrootcert=/a.pem",
            &[]
        )
        .is_ok()
    );
}
