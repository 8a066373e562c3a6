//! Connection settings for the `PostgreSQL` store, the way libpq reads them.
//!
//! A store location is a `postgres://` (or `postgresql://`) URL or a libpq `key=value` string.
//! The `postgres` crate parses both, but knows only three of libpq's `sslmode`s and no
//! `sslrootcert`; [`settings`] takes those two out of the text before the crate sees it
//! ([`text`] splits the text) and fills what the text leaves out from libpq's environment
//! variables. [`tls`](super::tls) turns the mode and roots into a connector.
//!
//! As in libpq, `sslrootcert=system` means the operating system's roots and demands
//! `verify-full`, and no TLS is attempted over a Unix socket.

/// Checks what a store URL says by itself (its syntax, its options): the environment is left
/// out, but for a user name, which it may leave to `PGUSER`.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    settings(url, &|name| (name == "PGUSER").then(|| "user".to_owned())).map(drop)
}

#[cfg(test)]
pub(super) mod tests;
mod text;

use std::collections::HashSet;
use std::error::Error as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::config::{Host, SslMode as WireMode};

use text::split;

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
