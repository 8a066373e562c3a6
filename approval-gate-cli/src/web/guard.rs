//! What every response carries, and the one check every request passes first.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::listen::Origin;

/// What the guard checks against.
#[derive(Debug, Clone)]
pub(crate) struct Site {
    pub(crate) origin: Origin,
    /// Whether the server speaks TLS itself (HSTS then).
    pub(crate) tls: bool,
}

/// No inline script or style, nothing from elsewhere, never in a frame, forms post only
/// here: a page that showed agent text as markup by mistake still could not run it.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// Refuses a request for another host name (DNS rebinding: a page of another site whose
/// name now points at this address), then adds the security headers to the response.
pub(crate) async fn headers(
    State(site): State<Arc<Site>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let mut response = if host.eq_ignore_ascii_case(&site.origin.host) {
        next.run(request).await
    } else {
        (
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this server answers for {} only; open {}\n",
                site.origin.host, site.origin.url
            ),
        )
            .into_response()
    };
    let headers = response.headers_mut();
    let set = |headers: &mut axum::http::HeaderMap, name, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    // Nothing leaves for another site; `no-referrer` would also make the browser send
    // `Origin: null` with our own forms, which the origin check rightly refuses.
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(headers, header::CACHE_CONTROL, "no-store");
    set(
        headers,
        header::HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    set(
        headers,
        header::HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    );
    if site.tls {
        set(
            headers,
            header::STRICT_TRANSPORT_SECURITY,
            "max-age=31536000",
        );
    }
    response
}

/// The page script and style sheet, compiled in.
pub(crate) fn assets() -> axum::Router {
    axum::Router::new()
        .route(
            "/static/app.js",
            axum::routing::get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    include_str!("assets/app.js"),
                )
            }),
        )
        .route(
            "/static/app.css",
            axum::routing::get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
                    include_str!("assets/app.css"),
                )
            }),
        )
        .route(
            "/favicon.ico",
            axum::routing::get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/svg+xml")],
                    include_str!("assets/favicon.svg"),
                )
            }),
        )
}
