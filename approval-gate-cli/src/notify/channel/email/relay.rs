//! The SMTP relay an email channel sends through, from its `smtp` URL, with the same TLS
//! rules as the smtp example's `SMTP_URL` (`examples/support/relay.rs`).
//!
//! | `smtp` | connection |
//! |---|---|
//! | `smtps://user@host[:465]` | TLS from the first byte (implicit TLS) |
//! | `smtp://user@host[:587]?tls=required` | STARTTLS before anything else; refused if the relay does not offer it |
//! | `smtp://host[:25]` | plain SMTP without credentials: a local relay |
//!
//! The password is never in the URL: it is the channel's `password = { file | env }`. Over
//! TLS the relay's certificate must name the host and chain to a Mozilla root (compiled in
//! from `webpki-roots`) or to a certificate in `ca_file` (PEM; added to the Mozilla roots, not
//! instead of them).
//!
//! Refused when the channel is built, because each would send less safely than the URL seems
//! to promise: a password over plain SMTP, `tls=opportunistic` (a man in the middle removes
//! STARTTLS and reads the password), a user without a password (lettre would quietly skip
//! AUTH), a password without a user, a password in the URL, any other query parameter (lettre
//! would ignore it), a path, and `ca_file` without TLS or without a certificate in it.
//!
//! Why a copy of the example's rules and not one shared module: the example is a standalone
//! program that depends on the library and lettre alone, and this crate's modules are not a
//! public API; sharing would make the examples depend on the whole CLI (its web server, its
//! HTTP client) and publish this module as the CLI crate's API. The two also differ where it
//! matters to their users: the example reads its password from the URL and names environment
//! variables in its errors, the channel reads a secret source and names its config keys. The
//! tests of each pin the same refusals.

use std::path::Path;
use std::time::Duration;

use lettre::SmtpTransport;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use url::Url;

use super::super::super::secret::Secret;

/// How long one SMTP command may wait for the relay.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// The forms `smtp` takes, for error messages.
const FORMS: &str = "smtps://user@host:465 (implicit TLS), smtp://user@host:587?tls=required \
     (STARTTLS) or smtp://host:25 (plain, no password)";

/// How the connection is protected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Security {
    Plain,
    StartTls,
    Implicit,
}

/// A transport to the relay `url` names, logging in with its user and `password` if given,
/// trusting the extra CA certificates in `ca_file` if given; and the URL as it may be shown.
pub(crate) fn transport(
    url: &str,
    password: Option<Secret>,
    ca_file: Option<&Path>,
) -> Result<(SmtpTransport, String), String> {
    let parsed =
        Url::parse(url).map_err(|e| format!(".smtp: is not a URL ({e}); expected {FORMS}"))?;
    if parsed.password().is_some() {
        return Err(
            ".smtp: must not carry the password: remove it from the URL and write \
             password = { file = \"PATH\" } or password = { env = \"VAR\" }"
                .to_owned(),
        );
    }
    let security = security(&parsed)?;
    let host = parsed
        .host_str()
        .filter(|host| !host.is_empty())
        .ok_or_else(|| format!(".smtp: has no host; expected {FORMS}"))?;
    if !matches!(parsed.path(), "" | "/") {
        return Err(format!(".smtp: has a path; expected {FORMS}"));
    }
    let user = percent_decoded(parsed.username())?;
    let credentials = match (user, password) {
        (Some(user), None) => {
            return Err(format!(
                ".password: missing: smtp names the user {user:?}; add password = \
                 {{ file = \"PATH\" }} or {{ env = \"VAR\" }}"
            ));
        }
        (None, Some(_)) => {
            return Err(format!(
                ".password: set, but smtp names no user: write the user in the URL, as {FORMS}"
            ));
        }
        (Some(_), Some(_)) if security == Security::Plain => {
            return Err(
                ".smtp: would send the password unencrypted: use smtps://... (implicit TLS) or \
                 add ?tls=required (STARTTLS)"
                    .to_owned(),
            );
        }
        (Some(user), Some(password)) => Some(Credentials::new(user, password.expose().to_owned())),
        (None, None) => None,
    };
    if security == Security::Plain && ca_file.is_some() {
        return Err(
            ".ca_file: set, but smtp is plain smtp://: use smtps://... or ?tls=required, or \
             remove ca_file"
                .to_owned(),
        );
    }
    let port = parsed.port().unwrap_or(match security {
        Security::Implicit => 465,
        Security::StartTls => 587,
        Security::Plain => 25,
    });
    let mut builder = SmtpTransport::builder_dangerous(host)
        .port(port)
        .timeout(Some(TIMEOUT));
    if let Some(credentials) = credentials {
        builder = builder.credentials(credentials);
    }
    if security != Security::Plain {
        let parameters = tls_parameters(host, ca_file)?;
        builder = builder.tls(match security {
            Security::Implicit => Tls::Wrapper(parameters),
            _ => Tls::Required(parameters),
        });
    }
    Ok((builder.build(), parsed.to_string()))
}

/// The URL's user name, percent-decoded, if it has one.
fn percent_decoded(user: &str) -> Result<Option<String>, String> {
    if user.is_empty() {
        return Ok(None);
    }
    percent_encoding_decode(user)
        .map(Some)
        .ok_or_else(|| ".smtp: the user name is not valid UTF-8 once percent-decoded".to_owned())
}

/// `%XX` sequences as the bytes they stand for, if the result is UTF-8.
fn percent_encoding_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push(u8::try_from(hex(h)? * 16 + hex(l)?).ok()?);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Reads the scheme and the one query parameter accepted.
fn security(url: &Url) -> Result<Security, String> {
    let mut tls = None;
    for (key, value) in url.query_pairs() {
        if key != "tls" || tls.is_some() {
            return Err(format!(
                ".smtp: has an unexpected query parameter {key:?}: the only one is a single \
                 tls=required"
            ));
        }
        tls = Some(value.into_owned());
    }
    match (url.scheme(), tls.as_deref()) {
        ("smtp", None) => Ok(Security::Plain),
        ("smtp", Some("required")) => Ok(Security::StartTls),
        ("smtps", None) => Ok(Security::Implicit),
        ("smtp", Some("opportunistic")) => Err(
            ".smtp: asks for tls=opportunistic, which falls back to plain text when STARTTLS is \
             missing or removed in transit: use tls=required or smtps://"
                .to_owned(),
        ),
        ("smtps", Some(_)) => {
            Err(".smtp: is smtps://, always TLS: drop the tls= parameter".to_owned())
        }
        (scheme, None) => Err(format!(
            ".smtp: has the scheme {scheme:?}; expected {FORMS}"
        )),
        (scheme, Some(tls)) => Err(format!(
            ".smtp: has the scheme {scheme:?} with tls={tls:?}; expected {FORMS}"
        )),
    }
}

/// Verifies the relay as `host` against the Mozilla roots plus those in `ca_file`.
fn tls_parameters(host: &str, ca_file: Option<&Path>) -> Result<TlsParameters, String> {
    let mut builder = TlsParameters::builder(host.to_owned());
    if let Some(path) = ca_file {
        for certificate in extra_roots(path)? {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder
        .build()
        .map_err(|e| format!(".smtp: cannot set up TLS for {host}: {e}"))
}

/// Every certificate in the PEM file at `path`; an error if it holds none, so a wrong file is
/// not silently the same as no file.
fn extra_roots(path: &Path) -> Result<Vec<Certificate>, String> {
    let problem = |what: &dyn std::fmt::Display| {
        format!(
            ".ca_file: {}: {what}; it must hold the relay's CA certificate in PEM \
             (-----BEGIN CERTIFICATE-----)",
            path.display()
        )
    };
    let pem = std::fs::read(path).map_err(|e| problem(&e))?;
    let roots = CertificateDer::pem_slice_iter(&pem)
        .map(|der| {
            let der = der.map_err(|e| problem(&e))?;
            Certificate::from_der(der.to_vec()).map_err(|e| problem(&e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if roots.is_empty() {
        return Err(problem(&"no certificate in it"));
    }
    Ok(roots)
}
