//! The cookies of `approval-gate serve`, and where sign-in may send a browser back to.

use axum::http::{HeaderMap, header};

/// The session cookie. `__Host-`: Secure, no Domain, Path=/, so no other host sets it.
pub(crate) const SESSION_COOKIE: &str = "__Host-approval-gate-session";
/// The sign-in ticket cookie, binding an assertion to the browser that asked for it.
pub(crate) const TICKET_COOKIE: &str = "__Host-approval-gate-signin";

/// A cookie's value from the `Cookie` headers.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

pub(crate) fn set_cookie(name: &str, value: &str, max_age: u64) -> (header::HeaderName, String) {
    (
        header::SET_COOKIE,
        format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; Secure; SameSite=Strict"),
    )
}

/// Only a local path may be where sign-in returns to: never another site.
pub(crate) fn local_next(next: &str) -> &str {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic());
    if local { next } else { "/" }
}

pub(crate) fn encode_next(path: &str) -> String {
    path.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/-_.".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "cookies_tests.rs"]
mod tests;
