//! What a page on another port of the same host can do to the approver's browser, in
//! Chromium: cookies are per host, not per port (RFC 6265 §8.5), so a page another local
//! account serves on `localhost:OTHER`, standing for an agent's server, receives the
//! approver's cookies and can set cookies of its own for `localhost`. The agent runs as
//! `nobody` (see [`crate::account`]).

use approval_gate::{EffectiveStatus, NewRequest, RequestId};

use crate::account::{AgentClient, Python};
use crate::browser::{approver_page, serve_for_alice, sign_in};
use crate::cdp::Browser;
use crate::server::{Served, attribute};

const SESSION: &str = "__Host-approval-gate-session";

/// Serves the page of its argument for any path on a port of its own, prints the port, then
/// the head of each request it answered (a JSON string).
const OTHER_PORT: &str = r"
import http.server, json, sys, threading
page = sys.argv[1].encode()
printing = threading.Lock()
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', str(len(page)))
        self.end_headers()
        self.wfile.write(page)
        head = self.requestline + '\r\n'
        head += ''.join(f'{name}: {value}\r\n' for name, value in self.headers.items())
        with printing:
            print(json.dumps(head), flush=True)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Page)
print(server.server_address[1], flush=True)
server.serve_forever()
";

/// The start of the other port's pages: no icon to fetch (a request carrying the cookie
/// bomb is more than Python's server takes, and the browser would log its refusal).
const ELSEWHERE: &str = "<!doctype html><title>elsewhere</title><link rel=icon href=data:,>";

/// Another port of localhost, another account's: answers every request with `page` and
/// reports the head of each request it received.
struct OtherPort {
    port: u16,
    server: Python,
}

impl OtherPort {
    fn start(page: &str) -> Self {
        let server = Python::start(OTHER_PORT, &[page]);
        let port = server.line().parse().expect("the other port's number");
        Self { port, server }
    }

    fn origin(&self) -> String {
        format!("http://localhost:{}", self.port)
    }

    /// The head of the next request for `/`.
    fn next_page_request(&self) -> String {
        loop {
            let head: String =
                serde_json::from_str(&self.server.line()).expect("a request head, in JSON");
            if head.starts_with("GET / ") {
                return head;
            }
        }
    }
}

/// The value of cookie `name` in a request head.
fn cookie_in(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(header, _)| header.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, value)| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

fn file(served: &Served, what: &str) -> RequestId {
    served
        .agent()
        .request_approval(NewRequest::new(what, "test"))
        .unwrap()
        .request
        .id()
}

/// The approver opens a page on another port: the browser sends it the session cookie
/// (cookies are per host). With that cookie alone, over plain HTTP, the other port's owner
/// may read what the approver reads, but denies, revokes and signs out nothing: every state
/// change needs the page key, which lives in the origin's own storage. The approver, on the
/// real page, still decides.
#[test]
fn a_session_cookie_another_port_receives_decides_nothing() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (page, _key) = approver_page(&browser);
    let served = serve_for_alice(&page);
    sign_in(&page, &served.origin);
    let pending = file(&served, "pay 5 EUR");

    let other = OtherPort::start(&format!("{ELSEWHERE}<p>another page"));
    page.navigate(&format!("{}/", other.origin()));
    let head = other.next_page_request();
    let stolen = cookie_in(&head, SESSION).expect("the browser sends the cookie to another port");

    // The other account makes every request with the copied cookie.
    let mut thief = AgentClient::new(served.client());
    thief.client.cookies.insert(SESSION.into(), stolen);
    // What a copied cookie still does: read.
    let list = thief.get("/");
    assert_eq!(list.status, 200, "{}", list.body);
    let shown = thief.get(&format!("/requests/{pending}"));
    assert_eq!(shown.status, 200, "{}", shown.body);
    // Whatever token a page shows it, and none, decide nothing.
    let mut tokens: Vec<String> = [&list.body, &shown.body]
        .iter()
        .filter_map(|body| attribute(body, "data-csrf"))
        .chain(
            shown
                .body
                .split("name=\"csrf\" value=\"")
                .skip(1)
                .filter_map(|rest| rest.split('"').next().map(str::to_owned)),
        )
        .collect();
    tokens.push(String::new());
    for token in &tokens {
        let deny = thief.post_form(
            &format!("/requests/{pending}/deny"),
            &format!("csrf={token}&reason=no"),
        );
        assert_ne!(
            deny.status, 303,
            "denied with a copied cookie: {}",
            deny.body
        );
        let deny = thief.send(
            "POST",
            &format!("/requests/{pending}/deny"),
            &[
                ("Origin", &served.origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-CSRF-Token", token),
            ],
            Some(b"reason=no"),
        );
        assert_ne!(
            deny.status, 303,
            "denied with a copied cookie: {}",
            deny.body
        );
        let out = thief.post_form("/signout", &format!("csrf={token}"));
        assert_ne!(
            out.status, 303,
            "signed out with a copied cookie: {}",
            out.body
        );
    }
    assert_eq!(
        served.agent().status(pending).unwrap().effective_status(),
        EffectiveStatus::Pending
    );

    // The approver, on the real page, still denies.
    page.navigate(&format!("{}/requests/{pending}", served.origin));
    page.fill(".deny input[name=reason]", "not this one");
    page.expect_navigation(|| page.click(".deny button"));
    let shown = page.text("h1");
    assert!(shown.contains("denied"), "{shown}");
    assert_eq!(
        served.agent().status(pending).unwrap().effective_status(),
        EffectiveStatus::Denied
    );
    // Signing out on the page ends the session for the copy too, and leaves no key behind.
    page.expect_navigation(|| page.click("form.who button"));
    assert!(page.url().ends_with("/signin"), "{}", page.url());
    assert_eq!(
        page.eval("localStorage.length"),
        0,
        "the page key is gone with the session"
    );
    assert_eq!(
        thief.get("/").status,
        303,
        "the copied cookie reads no more"
    );
    page.assert_no_errors();
    browser.close();
}

/// A page on another port sets 175 cookies of 4 kB for `localhost`, for a year: the browser
/// sends them with every request to `serve`. The approver's pages still open, signed in.
#[test]
fn a_cookie_bomb_from_another_port_does_not_lock_the_approver_out() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (page, _key) = approver_page(&browser);
    let served = serve_for_alice(&page);
    sign_in(&page, &served.origin);

    // The other account's page sets them, with a script of its own.
    let other = OtherPort::start(&format!(
        "{ELSEWHERE}<script>const value = 'x'.repeat(4000); \
         for (let i = 0; i < 175; i++) \
           document.cookie = `bomb${{i}}=${{value}}; max-age=31536000; path=/`;</script>"
    ));
    page.navigate(&format!("{}/", other.origin()));
    other.next_page_request();
    let set = page.eval("document.cookie.length");
    assert!(set.as_u64().unwrap() > 175 * 4000, "{set}");

    page.navigate(&format!("{}/", served.origin));
    let title = page.text("h1");
    assert!(title.contains("Pending"), "{title}");
    page.assert_no_errors();
    browser.close();
}
