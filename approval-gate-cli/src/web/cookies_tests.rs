//! The cookies and the sign-in return path.

use axum::http::HeaderValue;

use super::*;

#[test]
fn sign_in_returns_only_to_a_local_path() {
    assert_eq!(
        local_next("/requests/0123456789ab"),
        "/requests/0123456789ab"
    );
    assert_eq!(local_next("/"), "/");
    for elsewhere in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "evil",
        "",
        "/a b",
        "/\u{202e}x",
        "javascript:alert(1)",
    ] {
        assert_eq!(local_next(elsewhere), "/", "{elsewhere:?}");
    }
    assert_eq!(
        encode_next("/requests/ab?x=1&y"),
        "/requests/ab%3Fx%3D1%26y"
    );
}

#[test]
fn a_cookie_is_read_by_its_exact_name_from_any_cookie_header() {
    let mut headers = HeaderMap::new();
    headers.append(header::COOKIE, HeaderValue::from_static("a=1; x-b=2"));
    headers.append(header::COOKIE, HeaderValue::from_static("b=3;c=4"));
    assert_eq!(cookie(&headers, "b").as_deref(), Some("3"));
    assert_eq!(cookie(&headers, "c").as_deref(), Some("4"));
    assert_eq!(cookie(&headers, "a").as_deref(), Some("1"));
    assert_eq!(cookie(&headers, "x"), None);
    assert_eq!(cookie(&HeaderMap::new(), "a"), None);
}

#[test]
fn cookies_are_set_host_only_http_only_secure_and_strict() {
    let (name, value) = set_cookie(SESSION_COOKIE, "v", 60);
    assert_eq!(name, header::SET_COOKIE);
    assert_eq!(
        value,
        "__Host-approval-gate-session=v; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict"
    );
}
