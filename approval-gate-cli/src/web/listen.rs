//! Where the pages are served: the address, the origin browsers see, and TLS.
//!
//! Browsers allow WebAuthn only in a secure context: `https://`, or `http://localhost`. So
//! without TLS the server listens on loopback only, and its origin is
//! `http://localhost:PORT`; on any other address it speaks TLS itself (rustls), and
//! `--public-url` names the origin approvers open, whose host is the passkeys' RP ID.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The origin approvers open, and what follows from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// The origin itself: `https://approvals.example.com` or `http://localhost:8470`.
    pub(crate) url: String,
    /// The `Host` header browsers send: `approvals.example.com` or `localhost:8470`.
    pub(crate) host: String,
    /// The WebAuthn RP ID: the host name.
    pub(crate) rp_id: String,
    /// The port browsers connect to: the URL's, or its scheme's default.
    pub(crate) port: u16,
}

impl Origin {
    /// The origin of `--public-url` (or of a loopback listener without one).
    pub(crate) fn resolve(
        public_url: Option<&str>,
        listen: SocketAddr,
        tls: bool,
    ) -> anyhow::Result<Self> {
        let Some(text) = public_url else {
            if tls || !listen.ip().is_loopback() {
                bail!(
                    "--public-url is needed: the https:// address approvers open (its host name \
                     is the passkeys' relying party)"
                );
            }
            return Self::resolve(
                Some(&format!("http://localhost:{}", listen.port())),
                listen,
                tls,
            );
        };
        let url = url::Url::parse(text).with_context(|| format!("--public-url {text}"))?;
        let Some(url::Host::Domain(host)) = url.host() else {
            bail!(
                "--public-url {text}: needs a host name (WebAuthn takes no IP address as a \
                 relying party)"
            );
        };
        let host = host.to_ascii_lowercase();
        match url.scheme() {
            "https" => {}
            "http" if host == "localhost" => {}
            _ => bail!(
                "--public-url {text}: must be https:// (or http://localhost): browsers allow \
                 passkeys only there"
            ),
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            bail!("--public-url {text}: an origin only, with no path");
        }
        if !url.username().is_empty() || url.password().is_some() {
            bail!("--public-url {text}: no user name or password in it");
        }
        let origin = url.origin().ascii_serialization();
        let port = url.port_or_known_default().unwrap_or(443);
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        Ok(Self {
            url: origin,
            host: authority,
            rp_id: host,
            port,
        })
    }
}

/// Refuses plain HTTP anywhere but loopback.
pub(crate) fn check_address(listen: SocketAddr, tls: bool) -> anyhow::Result<()> {
    if !tls && !listen.ip().is_loopback() {
        bail!(
            "--listen {listen}: without TLS only a loopback address is served (browsers allow \
             passkeys only over https:// or on localhost); give --tls-cert and --tls-key"
        );
    }
    Ok(())
}

/// The TLS configuration of a PEM certificate chain and key.
pub(crate) fn tls_acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("--tls-cert {}", cert.display()))?;
    if certs.is_empty() {
        bail!("--tls-cert {}: no certificate in it", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not make a configuration")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `router` on the listeners `tcp` (through TLS if `tls` is given) until `until`
/// resolves: its output, or `None` if the server stopped first. Connections are held to the
/// limits of [`super::conn`].
pub(crate) async fn serve_until<F: Future>(
    tcp: Vec<TcpListener>,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    until: F,
) -> anyhow::Result<Option<F::Output>> {
    let cap = super::conn::max_connections();
    let served = super::conn::serve(tcp, tls, router, cap);
    tokio::select! {
        served = served => served.map(|()| None).map_err(Into::into),
        done = until => Ok(Some(done)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn loopback_without_tls_is_localhost() {
        let origin = Origin::resolve(None, loopback(8470), false).unwrap();
        assert_eq!(origin.url, "http://localhost:8470");
        assert_eq!(origin.host, "localhost:8470");
        assert_eq!(origin.rp_id, "localhost");
    }

    #[test]
    fn a_public_url_is_an_https_origin_with_a_host_name() {
        let any: SocketAddr = "0.0.0.0:443".parse().unwrap();
        let origin = Origin::resolve(Some("https://Approvals.Example.com/"), any, true).unwrap();
        assert_eq!(origin.url, "https://approvals.example.com");
        assert_eq!(origin.host, "approvals.example.com");
        assert_eq!(origin.rp_id, "approvals.example.com");
        let port = Origin::resolve(Some("https://a.example:8443"), any, true).unwrap();
        assert_eq!(port.host, "a.example:8443");
        for bad in [
            "http://approvals.example.com",
            "https://192.0.2.1",
            "https://a.example/path",
            "https://user:pw@a.example",
            "https://a.example/?q",
            "ftp://a.example",
            "not a url",
        ] {
            assert!(Origin::resolve(Some(bad), any, true).is_err(), "{bad}");
        }
        assert!(Origin::resolve(None, any, true).is_err());
    }

    #[test]
    fn plain_http_is_served_on_loopback_only() {
        assert!(check_address(loopback(1), false).is_ok());
        assert!(check_address("[::1]:1".parse().unwrap(), false).is_ok());
        let error = check_address("0.0.0.0:8470".parse().unwrap(), false).unwrap_err();
        assert!(error.to_string().contains("--tls-cert"), "{error}");
        assert!(check_address("0.0.0.0:8470".parse().unwrap(), true).is_ok());
    }
}
