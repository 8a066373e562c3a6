//! Connection settings and TLS for the `PostgreSQL` store, the way libpq reads them.
//!
//! A store location is a `postgres://` (or `postgresql://`) URL or a libpq `key=value` string.
//! The `postgres` crate parses both, but knows only three of libpq's `sslmode`s and no
//! `sslrootcert`; [`settings`] takes those two out of the text before the crate sees it, fills
//! what the text leaves out from libpq's environment variables, and [`connector`] turns the
//! mode and roots into a rustls connector (the `ring` provider only):
//!
//! | `sslmode`     | encrypted         | chain checked                     | host name checked |
//! |---------------|-------------------|-----------------------------------|-------------------|
//! | `disable`     | no                | -                                 | -                 |
//! | `prefer`      | if the server can | only when `sslrootcert` is a file | no                |
//! | `require`     | yes               | only when `sslrootcert` is a file | no                |
//! | `verify-ca`   | yes               | yes (`sslrootcert`, else system)  | no                |
//! | `verify-full` | yes               | yes (`sslrootcert`, else system)  | yes               |
//!
//! As in libpq, `sslrootcert=system` means the operating system's roots and demands
//! `verify-full`, and no TLS is attempted over a Unix socket.

use std::collections::HashSet;
use std::error::Error as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode as WireMode};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore,
    SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::store::percent;

/// The `application_name` a session reports when neither the text nor `PGAPPNAME` names one.
const APPLICATION_NAME: &str = "approval-gate";

/// How a connection is secured, as libpq's `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    /// Plain text only.
    Disable,
    /// TLS if the server offers it, else plain text; the certificate is not checked (unless
    /// `sslrootcert` names a file: then its chain is).
    Prefer,
    /// TLS always; the certificate is not checked (unless `sslrootcert` names a file: then its
    /// chain is).
    Require,
    /// TLS, and the certificate chains to a trusted root; any host name.
    VerifyCa,
    /// TLS, the certificate chains to a trusted root and names the host connected to.
    VerifyFull,
}

impl SslMode {
    /// libpq's spelling.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// A mode's value as the text or the environment (`source`) spells it.
    fn parse(value: &str, source: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            "allow" => {
                return Err(format!(
                    "{source} `allow` is not supported (it tries an unencrypted connection \
                     first); use prefer, require, verify-ca or verify-full"
                ));
            }
            other => {
                return Err(format!(
                    "{source} {other:?} is not one of disable, prefer, require, verify-ca, \
                     verify-full"
                ));
            }
        })
    }

    /// What the `postgres` crate is told: whether to ask for TLS, and whether to insist.
    fn wire(self) -> WireMode {
        match self {
            Self::Disable => WireMode::Disable,
            Self::Prefer => WireMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => WireMode::Require,
        }
    }
}

/// A store URL or conninfo split into what the `postgres` crate parses and what we handle.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    /// Everything but the TLS options we handle, with the environment's values filled in, and
    /// the crate's `sslmode` set to what it knows (`disable`, `prefer`, `require`).
    pub(super) config: postgres::Config,
    /// The `sslmode` asked for.
    pub(super) mode: SslMode,
    /// `sslrootcert`: a PEM file of CA certificates, or the word `system` for the OS's roots.
    pub(super) root_cert: Option<RootCert>,
}

/// Where trusted CA certificates come from (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RootCert {
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
    /// The operating system's roots (`sslrootcert=system`).
    System,
}

/// Reads a `postgres://` or `postgresql://` URL (or a `key=value` conninfo string), filling
/// what it leaves out from libpq's environment variables as libpq does: `PGHOST`, `PGPORT`,
/// `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGAPPNAME`,
/// `PGCONNECT_TIMEOUT`. `env` looks a variable up; an empty value counts as unset.
///
/// Defaults: `sslmode=prefer` (`verify-full` with `sslrootcert=system`); user `PGUSER`, else
/// `USER`; host the local server's Unix socket directory; `application_name` `approval-gate`.
///
/// Errors are one line naming the problem, and never show a password.
pub(super) fn settings(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, String> {
    let env = |name: &str| env(name).filter(|value| !value.is_empty());
    let mut secrets: Vec<String> = env("PGPASSWORD").into_iter().collect();
    settings_inner(text, &env, &mut secrets).map_err(|message| {
        let shows_secret = secrets
            .iter()
            .any(|secret| !secret.is_empty() && message.contains(secret.as_str()));
        if shows_secret {
            "invalid connection string (the details are withheld: they would show the password)"
                .to_owned()
        } else {
            message
        }
    })
}

/// [`settings`], noting in `secrets` every password the text holds as soon as it is found, so
/// the caller can keep them out of the error.
fn settings_inner(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
) -> Result<Settings, String> {
    let mut split = split(text, secrets)?;
    if let Some(hosts) = split.hosts_without_port.clone()
        && !split.keys.contains("port")
        && let Some(ports) = env("PGPORT")
    {
        split.rest = with_ports(&split.rest, hosts, &ports)?;
    }
    let mut config =
        postgres::Config::from_str(&split.rest).map_err(|error| match error.source() {
            Some(cause) => format!("invalid connection string: {cause}"),
            None => format!("invalid connection string: {error}"),
        })?;

    fill_from_env(&mut config, &split.keys, env)?;
    let (mode, root_cert) = tls_options(split.sslmode, split.sslrootcert, env)?;

    // `hostaddr` alone: its addresses double as the names TLS is handed (the crate refuses TLS
    // without one). libpq will not check a certificate's name against an address it was not
    // given as a host name, and neither do we.
    if config.get_hosts().is_empty() {
        if mode == SslMode::VerifyFull {
            return Err(
                "sslmode verify-full needs a host name to check the server's certificate \
                 against; hostaddr alone has none"
                    .to_owned(),
            );
        }
        let addrs = config.get_hostaddrs().to_vec();
        for addr in addrs {
            config.host(&addr.to_string());
        }
    }

    // As libpq, never TLS over a Unix socket (the server does not offer it there).
    let all_unix = config.get_hostaddrs().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|host| matches!(host, Host::Unix(_)));
    config.ssl_mode(if all_unix {
        WireMode::Disable
    } else {
        mode.wire()
    });

    Ok(Settings {
        config,
        mode,
        root_cert,
    })
}

/// Fills what the text leaves out from the environment, else libpq's defaults; `keys` are the
/// parameters the text names.
fn fill_from_env(
    config: &mut postgres::Config,
    keys: &HashSet<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    // The text wins; the environment fills in.
    if config.get_hosts().is_empty()
        && let Some(hosts) = env("PGHOST")
    {
        for host in hosts.split(',') {
            config.host(if host.is_empty() {
                default_host()
            } else {
                host
            });
        }
    }
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        config.host(default_host());
    }
    if config.get_ports().is_empty()
        && let Some(ports) = env("PGPORT")
    {
        for port in parse_pgport(&ports)? {
            config.port(port.unwrap_or(5432));
        }
    }
    if config.get_user().is_none() {
        let user = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
            .ok_or(
                "no user name: name one in the store URL (postgres://USER@HOST/DB) or set PGUSER",
            )?;
        config.user(&user);
    }
    if config.get_password().is_none()
        && let Some(password) = env("PGPASSWORD")
    {
        config.password(password);
    }
    if config.get_dbname().is_none()
        && let Some(dbname) = env("PGDATABASE")
    {
        config.dbname(&dbname);
    }
    if config.get_application_name().is_none() {
        config.application_name(&env("PGAPPNAME").unwrap_or_else(|| APPLICATION_NAME.to_owned()));
    }
    if !keys.contains("connect_timeout")
        && let Some(seconds) = env("PGCONNECT_TIMEOUT")
    {
        let seconds = seconds.trim().parse::<i64>().map_err(|_| {
            format!("PGCONNECT_TIMEOUT {seconds:?} is not a whole number of seconds")
        })?;
        // As libpq: zero or less waits for ever, and a timeout is never under two seconds.
        if let Ok(seconds) = u64::try_from(seconds)
            && seconds > 0
        {
            config.connect_timeout(Duration::from_secs(seconds.max(2)));
        }
    }

    Ok(())
}

/// The `sslmode` and `sslrootcert` asked for: the text's, else the environment's.
fn tls_options(
    sslmode: Option<String>,
    sslrootcert: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(SslMode, Option<RootCert>), String> {
    let root_cert = match sslrootcert.or_else(|| env("PGSSLROOTCERT")) {
        None => None,
        Some(value) if value.is_empty() => None,
        Some(value) if value == "system" => Some(RootCert::System),
        Some(path) => Some(RootCert::File(PathBuf::from(path))),
    };
    let mode = match (sslmode, env("PGSSLMODE")) {
        (Some(value), _) => SslMode::parse(&value, "sslmode")?,
        (None, Some(value)) => SslMode::parse(&value, "PGSSLMODE")?,
        (None, None) if root_cert == Some(RootCert::System) => SslMode::VerifyFull,
        (None, None) => SslMode::Prefer,
    };
    if root_cert == Some(RootCert::System) && mode != SslMode::VerifyFull {
        return Err(format!(
            "sslmode {} may not be used with sslrootcert=system (use verify-full)",
            mode.name()
        ));
    }

    Ok((mode, root_cert))
}

/// `PGPORT`'s comma-separated ports; an empty one is the default port.
fn parse_pgport(ports: &str) -> Result<Vec<Option<u16>>, String> {
    ports
        .split(',')
        .map(|port| match port.trim() {
            "" => Ok(None),
            port => port
                .parse::<u16>()
                .map(Some)
                .map_err(|_| format!("PGPORT {port:?} is not a port number")),
        })
        .collect()
}

/// `url` with `PGPORT`'s `ports` written into its host list at `hosts` (one port for every
/// host, or one each), as libpq would use them.
fn with_ports(url: &str, hosts: Range<usize>, ports: &str) -> Result<String, String> {
    let ports = parse_pgport(ports)?;
    let list: Vec<&str> = url[hosts.clone()].split(',').collect();
    if ports.len() != 1 && ports.len() != list.len() {
        return Err(format!(
            "PGPORT lists {} ports for the URL's {} hosts",
            ports.len(),
            list.len()
        ));
    }
    let mut out = url[..hosts.start].to_owned();
    for (index, host) in list.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(host);
        if let Some(port) = ports[if ports.len() == 1 { 0 } else { index }] {
            out.push(':');
            out.push_str(&port.to_string());
        }
    }
    out.push_str(&url[hosts.end..]);
    Ok(out)
}

/// Where libpq looks for the local server when no host is named: its Unix socket directory
/// (Debian's, else the upstream default).
fn default_host() -> &'static str {
    const DEBIAN: &str = "/var/run/postgresql";
    if Path::new(DEBIAN).is_dir() {
        DEBIAN
    } else {
        "/tmp"
    }
}

/// The text with `sslmode` and `sslrootcert` taken out, and what they said.
struct Split {
    /// What `postgres::Config::from_str` is given.
    rest: String,
    /// `sslmode`'s value, decoded (named once: see [`once`]).
    sslmode: Option<String>,
    /// `sslrootcert`'s value, decoded.
    sslrootcert: Option<String>,
    /// The parameter names the text sets (URL query parameters or conninfo keywords).
    keys: HashSet<String>,
    /// Where a URL's host list is in `rest`, when no host in it has a port. (The crate gives
    /// such a host port 5432, where libpq would take `PGPORT`.)
    hosts_without_port: Option<Range<usize>>,
}

/// Sets a TLS option named once. libpq takes the last of two; a store's text that says two
/// things about how its connection is secured is a mistake or an attack (a `sslmode=disable`
/// appended after the operator's `verify-full`), so it is refused. The values are not shown:
/// either may be a password pasted in the wrong place.
fn once(slot: &mut Option<String>, name: &str, value: String) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!(
            "the store names {name} twice: say once how its connection is secured (libpq would take the last)"
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// Splits `text` as the `postgres` crate would read it: a URL if it starts with one of its
/// two schemes, else a conninfo string.
fn split(text: &str, secrets: &mut Vec<String>) -> Result<Split, String> {
    for scheme in ["postgres://", "postgresql://"] {
        if text.starts_with(scheme) {
            return split_url(text, scheme.len(), secrets);
        }
    }
    if let Some(scheme) = url_scheme(text) {
        return Err(format!(
            "unsupported URL scheme `{scheme}`: a PostgreSQL store URL starts postgres:// or \
             postgresql://"
        ));
    }
    split_conninfo(text, secrets)
}

/// The scheme of something that looks like a URL (`scheme://`), if `text` does.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.trim_start().split_once("://")?;
    let mut chars = scheme.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_well = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (starts_well && rest_well).then_some(scheme)
}

/// A URL: the query parameters other than ours are kept verbatim.
///
/// The crate reads everything up to the first `@` as the credentials, then the host list up to
/// `/` or `?`, the database up to `?`, and `&`-separated `key=value` parameters; so does this.
fn split_url(text: &str, body_at: usize, secrets: &mut Vec<String>) -> Result<Split, String> {
    let body = &text[body_at..];
    let after_credentials = match body.find('@') {
        Some(at) => {
            if let Some((_, password)) = body[..at].split_once(':') {
                secrets.push(password.to_owned());
                secrets.push(String::from_utf8_lossy(&percent::decode(password)).into_owned());
            }
            at + 1
        }
        None => 0,
    };
    let hosts_at = body_at + after_credentials;
    let hosts_end = text[hosts_at..]
        .find(['/', '?'])
        .map_or(text.len(), |end| hosts_at + end);
    let has_port = |host: &str| match host.strip_prefix('[') {
        Some(bracketed) => bracketed
            .split_once(']')
            .is_some_and(|(_, after)| after.starts_with(':')),
        None => host.contains(':'),
    };
    let hosts = &text[hosts_at..hosts_end];
    let mut split = Split {
        rest: text.to_owned(),
        sslmode: None,
        sslrootcert: None,
        keys: HashSet::new(),
        hosts_without_port: (!hosts.is_empty() && !hosts.split(',').any(has_port))
            .then_some(hosts_at..hosts_end),
    };
    let Some(question) = body[after_credentials..].find('?') else {
        return Ok(split);
    };
    let query_at = body_at + after_credentials + question + 1;

    let mut kept: Vec<&str> = Vec::new();
    let mut rest = &text[query_at..];
    while !rest.is_empty() {
        let Some(equals) = rest.find('=') else {
            return Err("invalid connection string: a URL parameter has no `=`".to_owned());
        };
        let (value, next) = match rest[equals + 1..].find('&') {
            Some(amp) => (
                &rest[equals + 1..equals + 1 + amp],
                &rest[equals + 2 + amp..],
            ),
            None => (&rest[equals + 1..], ""),
        };
        let pair = &rest[..equals + 1 + value.len()];
        let key = decode_utf8(&rest[..equals], "a URL parameter's name")?;
        match key.as_str() {
            "sslmode" => once(
                &mut split.sslmode,
                "sslmode",
                decode_utf8(value, "sslmode")?,
            )?,
            "sslrootcert" => once(
                &mut split.sslrootcert,
                "sslrootcert",
                decode_utf8(value, "sslrootcert")?,
            )?,
            _ => {
                if key == "password" {
                    secrets.push(value.to_owned());
                    secrets.push(String::from_utf8_lossy(&percent::decode(value)).into_owned());
                }
                kept.push(pair);
                split.keys.insert(key);
            }
        }
        rest = next;
    }

    // Without the `?` if nothing is left, which the crate reads the same.
    let mut rebuilt = text[..query_at - 1].to_owned();
    if !kept.is_empty() {
        rebuilt.push('?');
        rebuilt.push_str(&kept.join("&"));
    }
    split.rest = rebuilt;
    Ok(split)
}

/// [`percent::decode`], as UTF-8; `what` names the part in the error.
fn decode_utf8(text: &str, what: &str) -> Result<String, String> {
    String::from_utf8(percent::decode(text))
        .map_err(|_| format!("invalid connection string: {what} is not UTF-8 once percent-decoded"))
}

/// A conninfo string: the spans of our two keywords are blanked out, the rest kept verbatim.
///
/// The grammar is the crate's: whitespace-separated `keyword = value`, a value either quoted
/// with `'` or running to the next whitespace, `\` escaping the character after it in both.
fn split_conninfo(text: &str, secrets: &mut Vec<String>) -> Result<Split, String> {
    let mut split = Split {
        rest: String::new(),
        sslmode: None,
        sslrootcert: None,
        keys: HashSet::new(),
        hosts_without_port: None,
    };
    let mut removed: Vec<Range<usize>> = Vec::new();
    let mut chars = text.char_indices().peekable();
    let position = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        chars.peek().map_or(text.len(), |&(at, _)| at)
    };
    loop {
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        let start = position(&mut chars);
        while chars
            .next_if(|&(_, c)| !c.is_whitespace() && c != '=')
            .is_some()
        {}
        let keyword = &text[start..position(&mut chars)];
        if keyword.is_empty() {
            if chars.peek().is_none() {
                break;
            }
            return Err(format!(
                "invalid connection string: `=` without a keyword at byte {start}"
            ));
        }
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|&(_, c)| c == '=').is_none() {
            return Err(format!(
                "invalid connection string: the keyword at byte {start} is not followed by `=` \
                 (nor is this a postgres:// URL)"
            ));
        }
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|&(_, c)| c == '\'').is_some() {
            loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| c)),
                    Some((_, c)) => value.push(c),
                    None => {
                        return Err(format!(
                            "invalid connection string: the quoted value of the keyword at \
                             byte {start} has no closing `'`"
                        ));
                    }
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|&(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next().map(|(_, c)| c));
                } else {
                    value.push(c);
                }
            }
            if value.is_empty() {
                return Err(format!(
                    "invalid connection string: the keyword at byte {start} has no value \
                     (write '' for an empty one)"
                ));
            }
        }
        let end = position(&mut chars);
        match keyword {
            "sslmode" => {
                once(&mut split.sslmode, "sslmode", value)?;
                removed.push(start..end);
            }
            "sslrootcert" => {
                once(&mut split.sslrootcert, "sslrootcert", value)?;
                removed.push(start..end);
            }
            _ => {
                if keyword == "password" {
                    secrets.push(value);
                }
                split.keys.insert(keyword.to_owned());
            }
        }
    }

    let mut kept = 0;
    for span in removed {
        split.rest.push_str(&text[kept..span.start]);
        split.rest.push(' ');
        kept = span.end;
    }
    split.rest.push_str(&text[kept..]);
    Ok(split)
}

/// What a failed connection's TLS trouble was, in words an operator can act on, if it was
/// one: the rustls error somewhere in `error`'s chain (tokio-rustls wraps it in an
/// `io::Error`), or the `postgres` crate's refusal of a server that answered no to TLS.
pub(super) fn explain(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::CertificateError as Cert;
    let mut next = Some(error);
    while let Some(current) = next {
        let rustls_error = current.downcast_ref::<rustls::Error>().or_else(|| {
            current
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = rustls_error {
            let what = match tls {
                rustls::Error::InvalidCertificate(Cert::UnknownIssuer) => {
                    "unknown CA: the server's certificate is not signed by a CA the client trusts (sslrootcert, or the system's roots); give sslrootcert the CA that signed it".to_owned()
                }
                rustls::Error::InvalidCertificate(
                    Cert::NotValidForName | Cert::NotValidForNameContext { .. },
                ) => {
                    let detail = match tls {
                        rustls::Error::InvalidCertificate(Cert::NotValidForNameContext {
                            expected,
                            presented,
                        }) => format!(
                            " (connected to {expected:?}; it names {})",
                            if presented.is_empty() {
                                "nothing".to_owned()
                            } else {
                                presented.join(", ")
                            }
                        ),
                        _ => String::new(),
                    };
                    format!("name mismatch: the server's certificate does not name the host connected to{detail}; connect by a name it lists (sslmode verify-full checks it)")
                }
                rustls::Error::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. }) => {
                    "expired: the server's certificate is past its validity; the server's administrator renews it".to_owned()
                }
                rustls::Error::InvalidCertificate(
                    Cert::NotValidYet | Cert::NotValidYetContext { .. },
                ) => "not yet valid: the server's certificate starts later (or this machine's clock is behind)".to_owned(),
                rustls::Error::InvalidCertificate(Cert::Revoked) => {
                    "revoked: the server's certificate was revoked by its CA".to_owned()
                }
                rustls::Error::InvalidCertificate(
                    Cert::InvalidPurpose | Cert::InvalidPurposeContext { .. },
                ) => "wrong purpose: the server's certificate is not one for a TLS server".to_owned(),
                rustls::Error::InvalidCertificate(other) => {
                    format!("the server's certificate was refused: {other}")
                }
                rustls::Error::AlertReceived(alert) => {
                    format!("the server ended the TLS handshake with the alert {alert:?}")
                }
                rustls::Error::PeerIncompatible(why) => format!(
                    "the server and the client share no TLS version or cipher suite ({why:?}); the client speaks TLS 1.2 and 1.3"
                ),
                other => format!("the TLS handshake failed: {other}"),
            };
            return Some(format!("TLS handshake failed: {what}"));
        }
        if current.to_string().contains("server does not support TLS") {
            return Some(
                "TLS handshake failed: the server does not support TLS (it answered the request for TLS with no); turn on ssl in its postgresql.conf, or choose sslmode=prefer or disable where an unencrypted connection is acceptable".to_owned(),
            );
        }
        next = current.source();
    }
    None
}

/// The TLS connector for these settings: `None` for [`SslMode::Disable`].
///
/// `prefer` and `require` encrypt without checking the certificate (libpq's meaning), unless
/// `sslrootcert` names a file: then the chain is checked against it, but not the host name
/// (`verify-ca`). `verify-ca` and `verify-full` check against `sslrootcert`, or the system's
/// roots when it is not set (an error if none load).
pub(super) fn connector(settings: &Settings) -> Result<Option<MakeRustlsConnect>, String> {
    Ok(client_config(settings)?.map(MakeRustlsConnect::new))
}

/// [`connector`]'s rustls configuration.
fn client_config(settings: &Settings) -> Result<Option<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (settings.mode, &settings.root_cert) {
        (SslMode::Disable, _) => return Ok(None),
        (SslMode::Prefer | SslMode::Require, None) => Arc::new(EncryptOnly {
            algorithms: provider.signature_verification_algorithms,
        }),
        (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, root) => {
            Arc::new(ChainOnly(webpki(root.as_ref(), &provider)?))
        }
        (SslMode::VerifyFull, root) => webpki(root.as_ref(), &provider)?,
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("cannot set up TLS: {error}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(config))
}

/// The standard verifier (chain and host name) over `root`'s certificates.
fn webpki(
    root: Option<&RootCert>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, String> {
    let roots = Arc::new(roots(root)?);
    WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(provider))
        .build()
        .map_err(|error| format!("cannot set up TLS verification: {error}"))
}

/// The trust anchors `root` names: a PEM file's certificates, or (`system`, or none named) the
/// operating system's.
fn roots(root: Option<&RootCert>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match root {
        Some(RootCert::File(path)) => {
            let unreadable = |error: rustls_pki_types::pem::Error| match error {
                rustls_pki_types::pem::Error::Io(error) => {
                    format!("cannot read sslrootcert `{}`: {error}", path.display())
                }
                error => format!(
                    "sslrootcert `{}` is not a PEM file of certificates: {error}",
                    path.display()
                ),
            };
            for (index, certificate) in CertificateDer::pem_file_iter(path)
                .map_err(unreadable)?
                .enumerate()
            {
                store
                    .add(certificate.map_err(unreadable)?)
                    .map_err(|error| {
                        format!(
                            "sslrootcert `{}`: certificate {} is not a usable CA certificate: \
                         {error}",
                            path.display(),
                            index + 1
                        )
                    })?;
            }
            if store.is_empty() {
                return Err(format!(
                    "sslrootcert `{}` holds no certificates",
                    path.display()
                ));
            }
        }
        Some(RootCert::System) | None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let why = found
                    .errors
                    .first()
                    .map(|error| format!(" ({error})"))
                    .unwrap_or_default();
                return Err(format!(
                    "no system CA certificates could be loaded{why}; name a CA file with \
                     sslrootcert"
                ));
            }
        }
    }
    Ok(store)
}

/// libpq's `require` without a root certificate: any certificate is accepted, but the
/// handshake's signatures are still checked against it, so the session is encrypted to
/// whoever holds its key.
#[derive(Debug)]
struct EncryptOnly {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// libpq's `verify-ca`: the standard verifier, with a certificate that does not name the host
/// accepted. Sound because the name is the standard verifier's last check: a name error means
/// the chain, validity period and signatures have all passed.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use postgres::config::{Host, SslMode as WireMode};
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    use rustls::{ClientConnection, ServerConfig, ServerConnection};
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

    use super::{RootCert, Settings, SslMode, client_config, connector, explain, settings};

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
    fn parse(text: &str, pairs: &[(&str, &str)]) -> Result<Settings, String> {
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
            let error =
                parse(&format!("host=h sslrootcert=system sslmode={mode}"), &[]).unwrap_err();
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
                ServerConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
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
                std::fs::set_permissions(
                    &path,
                    std::os::unix::fs::PermissionsExt::from_mode(0o600),
                )
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
}
