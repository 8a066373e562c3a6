//! Connections against another local process: idle sockets and oversized cookie headers do
//! not lock the approver out.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use approval_gate_tests::webauthn::SoftPasskey;

use crate::server::{Served, sign_in};

fn alice() -> SoftPasskey {
    SoftPasskey::new(1, "alice@example.com", "localhost")
}

/// More idle connections than the server may have files open (here 256, as `ulimit -n`
/// gives some machines): the approver's request is still answered. The idle ones send
/// nothing, or half a request head; some are closed to make room, which the test sees.
#[test]
fn idle_connections_do_not_lock_the_approver_out() {
    let alice = alice();
    let served = Served::start_with_open_files(&[&alice], 1, 256);
    let addr = served.client().addr;
    let mut idle: Vec<TcpStream> = (0..300)
        .map(|i| {
            let mut stream = TcpStream::connect(&addr).expect("connect");
            if i % 2 == 1 {
                stream.write_all(b"GET / HTTP/1.1\r\nHost: ").unwrap();
            }
            stream
        })
        .collect();
    // The approver signs in and reads the list.
    let mut browser = served.client();
    let signed = sign_in(&mut browser, &alice);
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(browser.get("/").status, 200);
    // The oldest idle connections were closed to make room: reading one ends, not blocks.
    let first = &mut idle[0];
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut rest = Vec::new();
    let read = first.read_to_end(&mut rest);
    assert!(
        read.is_ok()
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "{read:?}"
    );
    drop(idle);
}

/// A page on another port of the host may set cookies for it: 175 of 4 kB each, as a
/// browser keeps and sends them. The approver's requests still go through, the foreign
/// cookies ignored.
#[test]
fn a_cookie_bomb_does_not_lock_the_approver_out() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut browser = served.client();
    assert_eq!(sign_in(&mut browser, &alice).status, 200);
    for i in 0..175 {
        browser
            .cookies
            .insert(format!("bomb{i:03}"), "x".repeat(4000));
    }
    let page = browser.get("/");
    assert_eq!(page.status, 200, "{}", page.body);
    let page = browser.get("/signin");
    assert_eq!(page.status, 200, "{}", page.body);
}

/// A connection that sends half a request head and then nothing is closed by the server
/// (after its time limit for a head): it never holds a connection for good.
#[test]
fn half_a_request_head_is_not_waited_for_forever() {
    let alice = alice();
    let served = Served::start(&[&alice], 1);
    let mut slow = TcpStream::connect(served.client().addr).expect("connect");
    slow.write_all(b"GET /signin HTTP/1.1\r\nHost: ").unwrap();
    // Far longer than the server's limit, so that only a server that never closes fails.
    slow.set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    let mut rest = Vec::new();
    let read = slow.read_to_end(&mut rest);
    assert!(
        read.is_ok()
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the server still holds the connection: {read:?}"
    );
}
