//! Holding every address the page's origin resolves to.
//!
//! A browser resolves `localhost` (and any `*.localhost`) to loopback itself, and Chromium
//! tries `[::1]` before `127.0.0.1`. A listener that holds only one of them leaves the other
//! to any local account, which then gets the human's traffic on the page's own origin: its
//! cookies, its passkey prompts, its one-time enrollment link. So a loopback port is always
//! held on both loopback addresses, or the command does not start; and an origin on
//! `localhost` must be served on exactly that port. Where an `https://` host name resolves
//! is the operator's DNS: its listener is `--listen` (both loopback addresses if that is
//! loopback).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::bail;
use tokio::net::TcpListener;

use super::listen::Origin;

/// Tries at finding a port free on both loopback addresses when any port will do.
const PORT_TRIES: u32 = 32;

/// Whether browsers resolve `host` to loopback by themselves (RFC 6761, and what Chromium
/// and Firefox do): `localhost` and the names under it.
pub(crate) fn loopback_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

/// The other loopback address of `ip`, if it is one of the two `localhost` resolves to.
fn twin(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(Ipv4Addr::LOCALHOST) => Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        IpAddr::V6(Ipv6Addr::LOCALHOST) => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        _ => None,
    }
}

/// Checks that a listener on `listen` can be the whole of `origin` (resolved for the
/// bound port when `listen`'s port is 0 and no `--public-url` was given): an origin on
/// `localhost` is served on `127.0.0.1` and `[::1]` at its own port.
pub(crate) fn check(listen: SocketAddr, origin: &Origin, any_port: bool) -> anyhow::Result<()> {
    if !loopback_name(&origin.rp_id) {
        return Ok(());
    }
    if twin(listen.ip()).is_none() {
        bail!(
            "--listen {listen}: {} is served on 127.0.0.1 and [::1], the addresses browsers \
             open for it; listen on 127.0.0.1:PORT",
            origin.url
        );
    }
    if !any_port && origin.port != listen.port() {
        bail!(
            "--listen {listen}: the origin {} is on port {}; a localhost origin is served by \
             this process itself, on its own port (anything else could hold that one)",
            origin.url,
            origin.port
        );
    }
    Ok(())
}

/// Listens on `listen` and, if it is `127.0.0.1` or `[::1]`, on the other one at the same
/// port too (any port free on both, for port 0). Refuses if either is taken: whoever holds
/// it would receive the page's traffic.
pub(crate) async fn hold(listen: SocketAddr) -> anyhow::Result<Vec<TcpListener>> {
    let Some(other) = twin(listen.ip()) else {
        return Ok(vec![bind(listen).await?]);
    };
    for _ in 0..PORT_TRIES {
        let first = bind(listen).await?;
        let port = first.local_addr()?.port();
        let second = SocketAddr::new(other, port);
        match TcpListener::bind(second).await {
            Ok(listener) => return Ok(vec![first, listener]),
            Err(error) if no_such_address(&error) && other.is_ipv6() => {
                // Nobody can listen where the system has no IPv6 loopback.
                crate::term::output::stderr_line(&format!(
                    "approval-gate: note: no IPv6 loopback here ({error}); serving \
                     {} only",
                    first.local_addr()?
                ));
                return Ok(vec![first]);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse && listen.port() == 0 => {}
            Err(error) => return Err(refusal(second, &error)),
        }
    }
    bail!("no port is free on both 127.0.0.1 and [::1] (tried {PORT_TRIES})")
}

/// Whether `error` says the address does not exist here (not that someone holds it).
fn no_such_address(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::AddrNotAvailable
        || rustix::io::Errno::from_io_error(error) == Some(rustix::io::Errno::AFNOSUPPORT)
}

async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|error| refusal(addr, &error))
}

fn refusal(addr: SocketAddr, error: &std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::AddrInUse {
        anyhow::anyhow!(
            "cannot listen on {addr}: it is in use. Another process (perhaps another account) \
             holds it and would receive the page's traffic, so nothing is served; stop it, or \
             choose another port"
        )
    } else {
        anyhow::anyhow!("cannot listen on {addr}: {error}")
    }
}

/// The addresses `listeners` hold, as the start line says them: `127.0.0.1:8470 and
/// [::1]:8470`.
pub(crate) fn addresses(listeners: &[TcpListener]) -> String {
    listeners
        .iter()
        .filter_map(|listener| listener.local_addr().ok())
        .map(|addr| addr.to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_and_the_names_under_it_are_loopback_names() {
        assert!(loopback_name("localhost"));
        assert!(loopback_name("approvals.localhost"));
        assert!(!loopback_name("localhost.example.com"));
        assert!(!loopback_name("notlocalhost"));
    }

    #[test]
    fn a_localhost_origin_is_served_on_its_own_port_of_both_loopbacks() {
        let origin = Origin::resolve(Some("http://localhost:8470"), v4(8470), false).unwrap();
        assert!(check(v4(8470), &origin, false).is_ok());
        assert!(check("[::1]:8470".parse().unwrap(), &origin, false).is_ok());
        let error = check(v4(9000), &origin, false).unwrap_err();
        assert!(error.to_string().contains("on port 8470"), "{error}");
        let error = check("127.0.0.2:8470".parse().unwrap(), &origin, false).unwrap_err();
        assert!(error.to_string().contains("127.0.0.1 and [::1]"), "{error}");
        let https = Origin::resolve(Some("https://localhost"), v4(0), true).unwrap();
        assert!(
            check(v4(0), &https, false).is_err(),
            "https://localhost is port 443"
        );
        let public = Origin::resolve(Some("https://a.example"), v4(0), true).unwrap();
        assert!(check("127.0.0.2:1".parse().unwrap(), &public, false).is_ok());
    }

    fn v4(port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    }
}
