//! The one HTTP path of every HTTP channel (webhook, Slack, ntfy): a POST with a bounded time,
//! its outcome sorted into [`Failure::Retry`] and [`Failure::Permanent`].
//!
//! A channel's URL must be `https://`, except on a loopback host (a relay on this machine, a
//! test receiver): the message names a pending request and links to its page, and some URLs
//! (Slack's) are themselves the credential.

use std::sync::LazyLock;
use std::time::Duration;

use url::Url;

use super::Failure;

/// How long one attempt may take, connect to last byte.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// One agent for every channel: it keeps connections alive between messages.
static AGENT: LazyLock<ureq::Agent> = LazyLock::new(|| {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            // A status is an answer to sort, not an error of the transport.
            .http_status_as_error(false)
            // A redirect could carry the message (and a URL that is a credential) elsewhere.
            .max_redirects(0)
            .user_agent(concat!("approval-gate/", env!("CARGO_PKG_VERSION")))
            .build(),
    )
});

/// `text` as a channel's URL: `https://`, or `http://` to a loopback host only.
pub(crate) fn check_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err("has no host".to_owned()),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err("must be https:// (plain http:// only to a loopback host)".to_owned()),
        other => Err(format!("has the scheme {other}: https:// is needed")),
    }
}

/// POSTs `body` to `url` with `headers`. 2xx is delivered; 408, 429 and 5xx, and any failure
/// to connect or to finish in [`TIMEOUT`], may work later; any other status will not.
/// Reasons name the host and status, never the URL's path or query (where tokens live).
pub(crate) fn post(url: &Url, headers: &[(&str, &str)], body: &[u8]) -> Result<(), Failure> {
    let host = url.host_str().unwrap_or("?");
    let mut request = AGENT.post(url.as_str());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    match request.send(body) {
        Ok(response) => classify(host, response.status().as_u16()),
        Err(error) => Err(Failure::Retry(format!("{host}: {}", transport(&error)))),
    }
}

/// What a status means for the delivery.
fn classify(host: &str, status: u16) -> Result<(), Failure> {
    match status {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(Failure::Retry(format!("{host} answered {status}"))),
        _ => Err(Failure::Permanent(format!("{host} answered {status}"))),
    }
}

/// A transport error in words, without the URL it may quote.
fn transport(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Timeout(_) => format!("no answer within {} s", TIMEOUT.as_secs()),
        ureq::Error::Io(e) => e.to_string(),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        ureq::Error::Tls(what) => format!("TLS: {what}"),
        ureq::Error::Rustls(e) => format!("TLS: {e}"),
        _ => "the request failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_is_a_channel_url() {
        assert!(check_url("https://hooks.example.com/x").is_ok());
        assert!(check_url("http://127.0.0.1:8080/x").is_ok());
        assert!(check_url("http://[::1]:8080/x").is_ok());
        assert!(check_url("http://localhost/x").is_ok());
        assert!(check_url("http://hooks.example.com/x").is_err());
        assert!(check_url("ftp://hooks.example.com/x").is_err());
        assert!(check_url("not a url").is_err());
    }

    #[test]
    fn statuses_sort_into_delivered_retry_and_permanent() {
        assert_eq!(classify("h", 204), Ok(()));
        for status in [408, 429, 500, 503] {
            assert!(
                matches!(classify("h", status), Err(Failure::Retry(_))),
                "{status}"
            );
        }
        for status in [301, 400, 401, 404, 410] {
            assert!(
                matches!(classify("h", status), Err(Failure::Permanent(_))),
                "{status}"
            );
        }
    }

    #[test]
    fn a_refused_connection_is_worth_a_retry_and_names_no_path() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let url = check_url(&format!("http://{addr}/secret-token")).unwrap();
        let failure = post(&url, &[], b"{}").unwrap_err();
        assert!(matches!(failure, Failure::Retry(_)), "{failure:?}");
        assert!(!failure.reason().contains("secret-token"), "{failure:?}");
        // It says what happened, to which host: a log line an operator can act on.
        let reason = failure.reason().to_lowercase();
        assert!(reason.starts_with(&format!("{}: ", addr.ip())), "{reason}");
        assert!(
            reason.contains("refused") || reason.contains("connection failed"),
            "{reason}"
        );
    }
}
