//! Tests of the `allowed_signers` reader: patterns, options, keys and the refusals.

use super::*;

const ED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";

#[test]
fn globs_match_as_openssh_patterns_do() {
    assert!(glob(b"payments.send", b"payments.*"));
    assert!(glob(b"payments.", b"payments.*"));
    assert!(!glob(b"payment", b"payments.*"));
    assert!(glob(b"a.b.c", b"*.c"));
    assert!(glob(b"abc", b"a?c"));
    assert!(!glob(b"ac", b"a?c"));
    assert!(glob(b"", b"*"));
    assert!(!glob(b"x", b""));
    assert!(glob(b"aXbXc", b"a*b*c"));
    assert!(!glob(b"aXbXd", b"a*b*c"));
    assert!(match_pattern_list(
        "alice@example.com",
        "bob@example.com,*@example.com"
    ));
    assert!(!match_pattern_list(
        "eve@example.com",
        "*@example.com,!eve@*"
    ));
    assert!(!match_pattern_list(
        "Alice@example.com",
        "alice@example.com"
    ));
}

#[test]
fn reads_principals_options_keys_and_comments() {
    let text = format!(
        "# approvers\n\nalice@example.com {ED} alice's laptop\n\
         \"bob@example.com,carol@example.com\" namespaces=\"git,approval-gate\",valid-before=\"20300101Z\" {ED}\n\
         \t dave@example.com valid-after=\"202001021530Z\" {ED}\n"
    );
    let signers = parse(&text).unwrap();
    assert_eq!(signers.len(), 3);
    assert_eq!(signers[0].principals, "alice@example.com");
    assert_eq!(signers[1].principals, "bob@example.com,carol@example.com");
    assert_eq!(signers[1].namespaces.as_deref(), Some("git,approval-gate"));
    let t = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
    let secs = |s: &str| t(s).unix_millis() / 1000;
    assert_eq!(signers[1].valid_before, Some(secs("2030-01-01T00:00:00Z")));
    assert_eq!(signers[2].valid_after, Some(secs("2020-01-02T15:30:00Z")));
    let now = t("2026-12-01T00:00:00Z");
    assert!(signers[1].allows("carol@example.com", "approval-gate", now));
    assert!(!signers[1].allows("carol@example.com", "file", now));
    assert!(!signers[1].allows(
        "carol@example.com",
        "approval-gate",
        t("2030-01-02T00:00:00Z")
    ));
    assert!(!signers[2].allows(
        "dave@example.com",
        "approval-gate",
        t("2020-01-02T15:29:59Z")
    ));
    assert!(signers[0].allows("alice@example.com", "anything", now));
    // A blank inside a quoted option value does not end the options (as ssh-keygen).
    let spaced = parse(&format!("erin@x namespaces=\"file, git\" {ED}")).unwrap();
    assert_eq!(spaced[0].namespaces.as_deref(), Some("file, git"));
    assert!(spaced[0].allows("erin@x", "file", now));
    assert!(!spaced[0].allows("erin@x", "approval-gate", now));
    assert!(!signers[0].allows("mallory@example.com", "approval-gate", now));
}

#[test]
fn refuses_what_it_would_otherwise_trust_wrongly_with_the_line_and_reason() {
    let cases = [
        (
            format!("a@x cert-authority {ED}"),
            "cert-authority: certificates",
        ),
        (format!("a@x valid-before=\"20300101\" {ED}"), "local time"),
        (format!("a@x valid-before=\"2030Z\" {ED}"), "not YYYYMMDD"),
        // A field of blanks alone has no digit: not a year 0 (which is before 1970).
        (
            format!("a@x valid-before=\"    0101Z\" {ED}"),
            "not YYYYMMDD",
        ),
        // A letter in a field is no digit (read as one, `x` would make the year 2727).
        (
            format!("a@x valid-before=\"20x70101Z\" {ED}"),
            "not YYYYMMDD",
        ),
        // What ssh-keygen refuses too (issue 22): options twice, the epoch, bad dates,
        // a window that ends before it starts, a trailing comma.
        (
            format!("a@x valid-after=\"20270101Z\",valid-after=\"20280101Z\" {ED}"),
            "valid-after is given twice",
        ),
        (
            format!("a@x namespaces=\"git\",NAMESPACES=\"file\" {ED}"),
            "namespaces is given twice",
        ),
        (format!("a@x valid-after=\"19700101Z\" {ED}"), "the epoch"),
        (format!("a@x valid-after=\"19691231Z\" {ED}"), "before 1970"),
        (
            format!("a@x valid-after=\"20271301Z\" {ED}"),
            "not YYYYMMDD",
        ),
        (
            format!("a@x valid-after=\"202701012400Z\" {ED}"),
            "not YYYYMMDD",
        ),
        (
            format!("a@x valid-after=\"20280101Z\",valid-before=\"20280101Z\" {ED}"),
            "not later than valid-after",
        ),
        (format!("a@x namespaces=\"git\", {ED}"), "end with a comma"),
        // A backslash escapes a quote only: before a blank it is the options' last byte.
        (
            format!("a@x namespaces=\"git\"\\ {ED}"),
            "malformed option at \"\\\\\"",
        ),
        (format!("a@x namespaces=\"git {ED}"), "never closed"),
        (format!("a@x\tcomment\r x {ED}"), "carriage return"),
        (
            format!("a@x frobnicate {ED}"),
            "unknown or malformed option",
        ),
        (format!("a@x namespaces=git {ED}"), "double quotes"),
        ("a@x ssh-ed25519".to_owned(), "without its base64 key"),
        (
            "a@x ssh-ed25519 AAAAnotbase64!".to_owned(),
            "not a valid ssh-ed25519 key",
        ),
        (
            format!("a@x ssh-rsa {}", ED.split(' ').nth(1).unwrap()),
            "not a valid ssh-rsa key",
        ),
        ("a@x ssh-dss AAAAB3NzaC1kc3MAAA".to_owned(), "DSA"),
        ("\"a@x ssh-ed25519 AAAA".to_owned(), "never closed"),
        ("a@x".to_owned(), "no key"),
        (
            format!("a@x ssh-ed25519-cert-v01@openssh.com {}", &ED[12..]),
            "certificates",
        ),
    ];
    for (text, expected) in cases {
        let problem = parse(&format!("# ok\n{text}")).unwrap_err();
        assert!(
            problem.contains(expected) && problem.starts_with("line 2: "),
            "{text:?}: {problem}"
        );
    }
}

#[test]
fn reads_what_ssh_keygen_reads() {
    let at = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
    let secs = |s: &str| at(s).unix_millis() / 1000;
    let one = |text: String| parse(&text).unwrap().remove(0);
    // Empty options before a comma are passed over; option names have no case.
    let signer = one(format!(
        "a@x ,NAMESPACES=\"git\",,Valid-Before=\"20300101UTC\" {ED}"
    ));
    assert_eq!(signer.namespaces.as_deref(), Some("git"));
    assert_eq!(signer.valid_before, Some(secs("2030-01-01T00:00:00Z")));
    // Days past the month's end and leap seconds roll over, as timegm(3) does them;
    // fields may start with blanks, as strptime(3) reads them.
    let signer = one(format!(
        "a@x valid-after=\"20270230000061z\",valid-before=\"2030 1 1Z\" {ED}"
    ));
    assert_eq!(signer.valid_after, Some(secs("2027-03-02T00:01:01Z")));
    assert_eq!(signer.valid_before, Some(secs("2030-01-01T00:00:00Z")));
    assert_eq!(
        one(format!("a@x valid-after=\"19700101000001Z\" {ED}")).valid_after,
        Some(1)
    );
    // A quote may open inside the word; `\"` is a quote inside a value.
    let signer = one(format!("a\"b c\" namespaces=\"x\\\"y\" {ED}"));
    assert_eq!(signer.principals, "ab c");
    assert_eq!(signer.namespaces.as_deref(), Some("x\"y"));
    // RSA keys may be named by their signature algorithms; CRLF line ends are fine.
    let rsa = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQDePfvgJGm71eXaBOCyc1JNDcQQt6wY1rdYv2IPQUYuLxeg4VQZfCHt/zhaXwOLH8EbNGewuTEKUECwXK+71zT/xKetOBy0Zvq6/u30JycZK7Et6b5e1KSYyl3AN81Uo460LoYMauvdXMTC+XxypD8Z5bzpCJYh9YrSSMPSvXDZJQ==";
    let signers = parse(&format!("a@x rsa-sha2-512 {rsa}\r\n")).unwrap();
    assert_eq!(
        signers[0].key.algorithm(),
        ssh_key::Algorithm::Rsa { hash: None }
    );
    assert_eq!(parse(&format!("a@x {ED}\r\n\r\n")).unwrap().len(), 1);
    // Whole seconds, as ssh-keygen compares them.
    let signer = one(format!("a@x valid-before=\"20300101Z\" {ED}"));
    assert!(signer.allows("a@x", "approval-gate", at("2030-01-01T00:00:00.999Z")));
    assert!(!signer.allows("a@x", "approval-gate", at("2030-01-01T00:00:01Z")));
}

#[test]
fn a_pattern_of_1023_bytes_or_more_stops_the_match_as_in_openssh() {
    let long = |n: usize| "*".repeat(n);
    assert!(match_pattern_list("bob", &long(1022)));
    assert!(!match_pattern_list("bob", &long(1023)));
    // Decided where it stands: a match before it is lost, a negation before it holds.
    assert!(!match_pattern_list("bob", &format!("bob,{}", long(1023))));
    assert!(!match_pattern_list("bob", &format!("!bob,{}", long(1023))));
    assert!(match_pattern_list("bob", &format!("bob,{}", long(1022))));
    assert!(match_pattern_list(
        "bob",
        &format!("!{},bob", "x".repeat(1022))
    ));
    assert!(!match_pattern_list("bob", ""));
    assert!(match_pattern_list("", "a,,b"));
}
