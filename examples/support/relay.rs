//! The transport for `SMTP_URL`: a relay you name, such as your mail provider's.
//!
//! | `SMTP_URL` | connection |
//! |---|---|
//! | `smtps://user:password@host[:465]` | TLS from the first byte (implicit TLS) |
//! | `smtp://user:password@host[:587]?tls=required` | STARTTLS before anything else; refused if the server does not offer it |
//! | `smtp://host[:25]` | plain SMTP without credentials: a local relay or test server |
//!
//! The user name and password are percent-decoded (`p%40ss` is `p@ss`), and a path names this
//! client in EHLO, as in `lettre::SmtpTransport::from_url`, which does the parsing. Over TLS the
//! relay's certificate must name the host in the URL and chain to a Mozilla root (compiled in
//! from `webpki-roots`) or to a certificate in `SMTP_CA_FILE` (PEM, for a private relay or a
//! test CA; added to the Mozilla roots, not instead of them).
//!
//! Refused before the example files its request, because each would send less safely than the
//! URL seems to promise: credentials over plain SMTP, `tls=opportunistic` (a man in the middle
//! removes STARTTLS and reads the password), a user without a password (lettre would quietly
//! skip AUTH), a password without a user, any other query parameter (lettre would ignore it),
//! and `SMTP_CA_FILE` without TLS or without a certificate in it.
//!
//! Prefer `smtps://` where the provider offers it. lettre 0.11.23 keeps plaintext read ahead
//! of the STARTTLS handshake, so a man in the middle can forge the relay's answers after
//! `?tls=required` and make a failed send look delivered; it still cannot read the password
//! or the message, which travel over TLS.

use std::error::Error;
use std::path::Path;

use lettre::SmtpTransport;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use url::Url;

/// The forms `SMTP_URL` takes, for error messages.
const FORMS: &str = "smtps://user:password@host:465 (implicit TLS), \
     smtp://user:password@host:587?tls=required (STARTTLS) or smtp://host:25 (plain, no password)";

/// How the connection is protected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Security {
    Plain,
    StartTls,
    Implicit,
}

/// A transport for `url`, trusting the extra CA certificates in `ca_file` if given, and the
/// URL as it may be shown: without the password.
pub(crate) fn transport(
    url: &str,
    ca_file: Option<&Path>,
) -> Result<(SmtpTransport, String), Box<dyn Error>> {
    let parsed =
        Url::parse(url).map_err(|e| format!("SMTP_URL is not a URL ({e}); expected {FORMS}"))?;
    let security = security(&parsed)?;
    let user = !parsed.username().is_empty();
    match (user, parsed.password().is_some()) {
        (true, false) => {
            return Err(format!(
                "SMTP_URL names user {:?} but no password: write smtps://user:password@host \
                 (percent-encode @ : / in the password as %40 %3A %2F)",
                parsed.username()
            )
            .into());
        }
        (false, true) => {
            return Err("SMTP_URL has a password but no user name".into());
        }
        (true, true) if security == Security::Plain => {
            return Err(
                "SMTP_URL would send the password unencrypted: use smtps://... \
                        (implicit TLS) or add ?tls=required (STARTTLS)"
                    .into(),
            );
        }
        _ => {}
    }
    if security == Security::Plain && ca_file.is_some() {
        return Err(
            "SMTP_CA_FILE is set but SMTP_URL is plain smtp://: use smtps://... or ?tls=required, \
             or unset SMTP_CA_FILE"
                .into(),
        );
    }
    let mut builder = SmtpTransport::from_url(url)?;
    if security != Security::Plain {
        let host = parsed.host_str().ok_or("SMTP_URL has no host")?;
        let parameters = tls_parameters(host, ca_file)?;
        builder = builder.tls(match security {
            Security::Implicit => Tls::Wrapper(parameters),
            _ => Tls::Required(parameters),
        });
    }
    let mut shown = parsed;
    let _ = shown.set_password(None);
    Ok((builder.build(), shown.to_string()))
}

/// Reads the scheme and the one query parameter this example accepts.
fn security(url: &Url) -> Result<Security, Box<dyn Error>> {
    let mut tls = None;
    for (key, value) in url.query_pairs() {
        if key != "tls" || tls.is_some() {
            return Err(format!(
                "SMTP_URL has an unexpected query parameter {key:?}: the only one is a single \
                 tls=required"
            )
            .into());
        }
        tls = Some(value.into_owned());
    }
    match (url.scheme(), tls.as_deref()) {
        ("smtp", None) => Ok(Security::Plain),
        ("smtp", Some("required")) => Ok(Security::StartTls),
        ("smtps", None) => Ok(Security::Implicit),
        ("smtp", Some("opportunistic")) => Err(
            "SMTP_URL asks for tls=opportunistic, which falls back to plain text when STARTTLS \
             is missing or removed in transit: use tls=required or smtps://"
                .into(),
        ),
        ("smtps", Some(_)) => {
            Err("SMTP_URL is smtps://, always TLS: drop the tls= parameter".into())
        }
        (scheme, None) => Err(format!("SMTP_URL has scheme {scheme:?}; expected {FORMS}").into()),
        (scheme, Some(tls)) => {
            Err(format!("SMTP_URL has scheme {scheme:?} with tls={tls:?}; expected {FORMS}").into())
        }
    }
}

/// Verifies the relay as `host` against the Mozilla roots plus those in `ca_file`.
fn tls_parameters(host: &str, ca_file: Option<&Path>) -> Result<TlsParameters, Box<dyn Error>> {
    let mut builder = TlsParameters::builder(host.to_owned());
    if let Some(path) = ca_file {
        for certificate in extra_roots(path)? {
            builder = builder.add_root_certificate(certificate);
        }
    }
    Ok(builder.build()?)
}

/// Every certificate in the PEM file at `path`; an error if it holds none, so a wrong file
/// is not silently the same as no file.
fn extra_roots(path: &Path) -> Result<Vec<Certificate>, Box<dyn Error>> {
    let problem = |what: &dyn std::fmt::Display| {
        format!(
            "SMTP_CA_FILE {}: {what}; it must hold the relay's CA certificate in PEM \
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
        return Err(problem(&"no certificate in it").into());
    }
    Ok(roots)
}
