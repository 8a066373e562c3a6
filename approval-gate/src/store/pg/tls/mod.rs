//! TLS for the `PostgreSQL` store, the way libpq sets it up from its settings.
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
//!
//! [`settings`]: super::conninfo::settings

use std::sync::Arc;

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

use super::conninfo::{RootCert, Settings, SslMode};

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
mod tests;
