//! The harness end to end against a loopback site of its own (no approval-gate server):
//! passkeys through the virtual authenticator, CSP violations reported, screenshots,
//! separate cookies per context, real clicks and typing, errors that say what happened, and
//! no process left behind.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use crate::cdp::{Browser, CdpError, Page};
use crate::loopback::{Loopback, Response};

const CSP: &str = "default-src 'self'; script-src 'self'; frame-ancestors 'none'";
const WAIT: Duration = Duration::from_secs(20);
const FAVICON: &str = "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 1 1'/>";

fn html(title: &str, head: &str, body: &str) -> Response {
    Response::ok(
        "text/html; charset=utf-8",
        format!(
            "<!doctype html><html lang=en><head><meta charset=utf-8>\
             <meta name=viewport content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title>{head}</head><body>{body}</body></html>"
        ),
    )
}

/// The test site; every response carries the strict CSP.
fn site() -> Loopback {
    let sessions = AtomicU32::new(0);
    Loopback::start(move |target| {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let response = match path {
            "/webauthn" => html(
                "passkeys",
                "<script src=/app.js defer></script>",
                "<button id=register>Register</button> <button id=login>Sign in</button>\
                 <pre id=result></pre>",
            ),
            "/app.js" => Response::ok("text/javascript", include_str!("site/app.js")),
            "/inline" => html(
                "inline",
                "",
                "<p>inline</p><script>document.title = 'inline script ran'</script>",
            ),
            "/style.css" => Response::ok("text/css", ".tall { height: 3000px }"),
            "/tall" => html(
                "tall",
                "<link rel=stylesheet href=/style.css>",
                "<div class=tall>top</div><p>bottom</p>",
            ),
            "/form" => html(
                "form",
                "",
                "<form action=/echo><label>Who <input id=who name=who></label>\
                 <button id=send>Send</button></form>",
            ),
            "/echo" => {
                let who = query.strip_prefix("who=").unwrap_or_default();
                let escaped: String = who
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                html("echo", "", &format!("<p id=echo>{escaped}</p>"))
            }
            "/login" => {
                let n = sessions.fetch_add(1, Ordering::SeqCst);
                html("signed in", "", "<p>signed in</p>").header(
                    "Set-Cookie",
                    format!("session=s{n}; Path=/; HttpOnly; Secure; SameSite=Strict"),
                )
            }
            "/plain" => html("plain", "", "<p>plain</p>"),
            // Chromium asks for it after each load, and logs a 404 as an error.
            "/favicon.ico" => Response::ok("image/svg+xml", FAVICON),
            _ => {
                let mut missing = html("missing", "", "<p>no such page</p>");
                missing.status = 404;
                missing
            }
        };
        response.header("Content-Security-Policy", CSP)
    })
}

/// Clicks `button` on the passkey page and waits for the outcome it shows.
fn press(page: &Page, button: &str) -> (String, Value) {
    page.eval("delete document.getElementById('result').dataset.state");
    page.click(button);
    let state = page.wait_for(
        "['registered', 'asserted', 'error'].includes(document.getElementById('result').dataset.state) \
         && document.getElementById('result').dataset.state",
        WAIT,
    );
    let shown = serde_json::from_str(&page.text("#result")).expect("#result holds JSON");
    (state.as_str().unwrap_or_default().to_owned(), shown)
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn a_passkey_registers_and_signs_a_challenge_for_this_origin() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let page = browser.new_context().new_page();
    let authenticator = page.add_virtual_authenticator();
    let challenge = base64url(b"approval-gate harness challenge");
    page.navigate(&format!("{}/webauthn?challenge={challenge}", site.origin()));

    let (state, registered) = press(&page, "#register");
    assert_eq!(state, "registered", "{registered}");
    assert_eq!(registered["algorithm"], -7, "ES256");
    let credentials = authenticator.credentials();
    assert_eq!(credentials.len(), 1, "{credentials:?}");
    let credential = &credentials[0];
    assert_eq!(credential.rp_id, "localhost");
    assert!(credential.resident);
    assert_eq!(credential.user_handle, b"approver-1");
    assert_eq!(registered["id"], base64url(&credential.id));

    let (state, asserted) = press(&page, "#login");
    assert_eq!(state, "asserted", "{asserted}");
    assert_eq!(asserted["id"], base64url(&credential.id));
    assert_eq!(asserted["userHandle"], base64url(b"approver-1"));
    let client_data: Value =
        serde_json::from_str(asserted["clientDataJSON"].as_str().expect("clientDataJSON"))
            .expect("clientDataJSON is JSON");
    assert_eq!(client_data["type"], "webauthn.get");
    assert_eq!(client_data["challenge"], challenge);
    assert_eq!(client_data["origin"], site.origin());
    let flags = asserted["flags"].as_u64().expect("flags");
    assert_eq!(
        flags & 0b101,
        0b101,
        "user present and verified: {flags:#b}"
    );
    assert_eq!(asserted["signatureValid"], true);
    assert!(authenticator.credentials()[0].sign_count > credential.sign_count);

    // What a server must catch: a signature that does not verify.
    authenticator.set_response_override_bits(true, false, false);
    let (state, bogus) = press(&page, "#login");
    assert_eq!(state, "asserted", "{bogus}");
    assert_eq!(bogus["signatureValid"], false);
    authenticator.set_response_override_bits(false, false, false);

    // An approver whose fingerprint is not recognised: the browser refuses.
    authenticator.set_user_verified(false);
    let (state, refused) = press(&page, "#login");
    assert_eq!(state, "error", "{refused}");
    assert_eq!(refused["name"], "NotAllowedError", "{refused}");

    page.assert_no_errors();
    authenticator.remove();
}

#[test]
fn an_inline_script_is_blocked_by_the_csp_and_reported() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let page = browser.new_context().new_page();
    page.navigate(&format!("{}/webauthn?challenge=AA", site.origin()));
    page.assert_no_errors();

    page.navigate(&format!("{}/inline", site.origin()));
    assert_eq!(
        page.eval("document.title"),
        "inline",
        "the inline script ran"
    );
    let errors = page.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.text.contains("Content Security Policy") && e.text.contains("script-src")),
        "{errors:#?}"
    );
    let failed = catch_unwind(AssertUnwindSafe(|| page.assert_no_errors()))
        .expect_err("assert_no_errors fails on a CSP violation");
    let message = failed
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(message.contains("Content Security Policy"), "{message}");
}

#[test]
fn a_phone_sized_full_page_screenshot_is_a_png_of_that_width() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let page = browser.new_context().new_page();
    page.set_viewport_scaled(360, 640, 2.0, true);
    page.navigate(&format!("{}/tall", site.origin()));
    assert_eq!(page.eval("innerWidth"), 360);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tall.png");
    let png = page.screenshot_png(&path);
    assert_eq!(std::fs::read(&path).expect("the file"), png);
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let dimension = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!(dimension(16), 720, "360 CSS pixels at 2 device pixels each");
    assert!(
        dimension(20) > 6000,
        "the whole 3000 px page: {}",
        dimension(20)
    );

    page.set_viewport(1280, 800, false);
    page.navigate(&format!("{}/plain", site.origin()));
    assert_eq!(
        page.eval("[innerWidth, devicePixelRatio]"),
        serde_json::json!([1280, 1])
    );
    page.assert_no_errors();
}

#[test]
fn two_contexts_keep_separate_cookies() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let (alice, bob) = (browser.new_context(), browser.new_context());
    let (alice, bob) = (alice.new_page(), bob.new_page());
    alice.navigate(&format!("{}/login", site.origin()));
    bob.navigate(&format!("{}/plain", site.origin()));
    let cookies = alice.cookies();
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let session = &cookies[0];
    assert_eq!(
        (session.name.as_str(), session.value.as_str()),
        ("session", "s0")
    );
    assert_eq!(
        (session.domain.as_str(), session.path.as_str()),
        ("localhost", "/")
    );
    assert!(
        session.http_only && session.secure && session.session,
        "{session:?}"
    );
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    assert_eq!(
        alice.eval("document.cookie"),
        "",
        "HttpOnly: not visible to scripts"
    );
    assert!(bob.cookies().is_empty(), "{:?}", bob.cookies());

    bob.navigate(&format!("{}/login", site.origin()));
    assert_eq!(bob.cookies()[0].value, "s1");
    assert_eq!(alice.cookies()[0].value, "s0");
}

#[test]
fn a_form_is_filled_and_submitted_like_a_user_would() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let page = browser.new_context().new_page();
    page.navigate(&format!("{}/form", site.origin()));
    page.fill("#who", "first");
    page.fill("#who", "carol");
    page.expect_navigation(|| page.click("#send"));
    assert_eq!(page.url(), format!("{}/echo?who=carol", site.origin()));
    assert_eq!(page.text("#echo"), "carol");
    page.assert_no_errors();
}

#[test]
fn failures_say_what_failed() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let site = site();
    let page = browser.new_context().new_page();
    page.navigate(&format!("{}/plain", site.origin()));
    let message = |f: &dyn Fn()| -> String {
        let failed = catch_unwind(AssertUnwindSafe(f)).expect_err("a failure");
        failed
            .downcast_ref::<String>()
            .cloned()
            .expect("a formatted panic message")
    };

    match page.try_eval("Promise.reject(new Error('boom'))") {
        Err(CdpError::Exception(text)) => assert!(text.contains("Error: boom"), "{text}"),
        other => panic!("{other:?}"),
    }
    match browser.try_call("Nothing.here", serde_json::json!({})) {
        Err(CdpError::Protocol { message, .. }) => {
            assert!(message.contains("wasn't found"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let started = Instant::now();
    let timed_out = message(&|| {
        page.wait_for(
            "document.querySelector('#never')",
            Duration::from_millis(300),
        );
    });
    assert!(started.elapsed() < WAIT, "{:?}", started.elapsed());
    assert!(timed_out.contains("not true within 300 ms"), "{timed_out}");
    assert!(timed_out.contains("/plain"), "{timed_out}");
    assert!(message(&|| page.click("#never")).contains("matches nothing"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let refused = message(&|| page.navigate(&format!("http://localhost:{closed}/")));
    assert!(refused.contains("ERR_CONNECTION_REFUSED"), "{refused}");
    // A wait the page satisfies later, through the DOM.
    page.eval("setTimeout(() => document.body.append(Object.assign(document.createElement('p'), { id: 'late' })), 50)");
    assert_eq!(
        page.wait_for("!!document.querySelector('#late')", WAIT),
        true
    );
    page.assert_no_errors();
}
