//! The request's page link, handed to the user by URL-mode elicitation (MCP `2025-11-25`).
//!
//! When the operator names the origin `approval-gate serve` is opened at (`--public-url`,
//! or `APPROVAL_GATE_PUBLIC_URL`), and the client declared the `elicitation` capability with
//! `url` mode, `wait_for_approval` asks the client to show the user the request's page,
//! `<origin>/requests/<id>`, once per request and session. That page is where an approver
//! decides, with a passkey. The client's answer to the elicitation (accept, decline, cancel)
//! is logged and never taken as a decision: only the store's state is.
//!
//! The stateless revision `2026-07-28` forbids a server's requests to the client, so nothing
//! is offered to a client that speaks it.

use std::collections::HashSet;
use std::sync::Mutex;

use approval_gate::RequestId;
use rmcp::service::{RequestContext, RoleServer};

/// The environment variable that names the web page's origin, as `--public-url` does (read
/// with the other settings, below the flag and above the config file's `public_url`).
pub use approval_gate::settings::PUBLIC_URL_ENV;

/// The origin of the web page, and the requests whose link this session has offered.
#[derive(Debug)]
pub(crate) struct PageLinks {
    /// `https://host[:port]/`: an origin, its path the root.
    origin: url::Url,
    offered: Mutex<HashSet<RequestId>>,
}

impl PageLinks {
    /// The links under `text`, an origin as `approval-gate serve --public-url` takes it:
    /// https:// (or http:// on localhost), a host name, no path, no user name or password.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let url = url::Url::parse(text).map_err(|e| format!("--public-url {text}: {e}"))?;
        let host = url.host_str().unwrap_or_default();
        let local = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
        if !(url.scheme() == "https" || url.scheme() == "http" && local) {
            return Err(format!(
                "--public-url {text}: must be https:// (or http://localhost), the origin \
                 `approval-gate serve` is opened at"
            ));
        }
        if host.is_empty() {
            return Err(format!("--public-url {text}: needs a host name"));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(format!("--public-url {text}: an origin only, with no path"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "--public-url {text}: no user name or password in it"
            ));
        }
        Ok(Self {
            origin: url,
            offered: Mutex::new(HashSet::new()),
        })
    }

    /// The page of request `id`.
    fn of(&self, id: RequestId) -> url::Url {
        let mut page = self.origin.clone();
        page.set_path(&format!("requests/{id}"));
        page
    }

    /// Whether the page of request `id` may be offered to this client: it declared URL-mode
    /// elicitation, in a revision that lets a server ask, and this session has not offered
    /// that page yet.
    pub(crate) fn may_offer(&self, id: RequestId, context: &RequestContext<RoleServer>) -> bool {
        // 2026-07-28 and later: no server-to-client requests.
        let may_ask = context
            .protocol_version()
            .is_none_or(|version| version.has_initialize());
        let url_mode = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.url.is_some());
        may_ask
            && url_mode
            && !self
                .offered
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&id)
    }

    /// Offers the page of request `id` to the user, unless this session already has; the
    /// caller has checked [`Self::may_offer`] and that the request is pending. Does not wait
    /// for the answer, which decides nothing.
    pub(crate) fn offer(&self, id: RequestId, context: &RequestContext<RoleServer>) {
        let first = self
            .offered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id);
        if !first {
            return;
        }
        let peer = context.peer.clone();
        let link = self.of(id);
        tokio::spawn(async move {
            let message = format!(
                "Approval request {id} is waiting for a human decision. Open its page to \
                 review it and approve or deny with your passkey. Answering this prompt \
                 decides nothing."
            );
            match peer
                .elicit_url(message, link, format!("approval-gate-{id}"))
                .await
            {
                // Accept only says the user opened (or agreed to open) the page.
                Ok(action) => {
                    tracing::debug!(%id, ?action, "the page link was answered; that decides nothing");
                }
                Err(e) => tracing::debug!(%id, "cannot offer the page link: {e}"),
            }
        });
    }
}
