//! The passkey verifier, one §7.2 step at a time; the envelope; keys and their lines.
//!
//! Each refusal is made by the virtual authenticator with one part changed and everything
//! else valid and signed, so that it is that step, and no other, that refuses.

use base64ct::{Base64, Base64UrlUnpadded, Encoding};

use super::authenticator::{AT, Authenticator, BE, BS, Ceremony, ED, UP, UV};
use super::*;
use crate::Policy;
use crate::limits::MAX_SIGNATURE_BYTES;

const RP: &str = "approvals.example.com";
/// The origin of the page at the RP ID, as the approvers file names it.
const ORIGIN: &str = "https://approvals.example.com";

fn statement_challenge() -> [u8; 32] {
    challenge(b"{\"statement\":\"approval-gate decision\"}")
}

/// What the verifier says of the ceremony `change` makes of a valid one.
fn verify_changed(change: impl FnOnce(&mut Ceremony)) -> Result<Verified, String> {
    let authenticator = Authenticator::new(1, RP);
    let mut ceremony = authenticator.ceremony(&statement_challenge());
    change(&mut ceremony);
    authenticator
        .passkey()
        .verify(&statement_challenge(), &authenticator.assert(&ceremony))
}

/// Asserts the changed ceremony is refused, saying `expected`.
fn refuses(expected: &str, change: impl FnOnce(&mut Ceremony)) {
    match verify_changed(change) {
        Ok(verified) => panic!("accepted ({verified:?}); expected a refusal saying {expected:?}"),
        Err(problem) => assert!(problem.contains(expected), "{problem:?} lacks {expected:?}"),
    }
}

#[test]
fn a_valid_assertion_is_accepted_with_its_counter_origin_and_backup_flags() {
    let verified = verify_changed(|_| {}).unwrap();
    assert_eq!(verified.sign_count, 7);
    assert_eq!(verified.origin, "https://approvals.example.com");
    assert!(!verified.backup_eligible && !verified.backed_up);
    // Step 22: the counter is the big-endian u32 at bytes 33..37.
    let verified = verify_changed(|c| c.sign_count = 0x0102_0304).unwrap();
    assert_eq!(verified.sign_count, 16_909_060);
    // Step 19 is the caller's: the flags come back.
    let synced = verify_changed(|c| c.flags = UP | UV | BE | BS).unwrap();
    assert!(synced.backup_eligible && synced.backed_up);
    let eligible = verify_changed(|c| c.flags = UP | UV | BE).unwrap();
    assert!(eligible.backup_eligible && !eligible.backed_up);
}

#[test]
fn a_high_s_signature_is_accepted_as_browsers_return_it() {
    let authenticator = Authenticator::new(2, RP);
    let mut ceremony = authenticator.ceremony(&statement_challenge());
    let low = authenticator.assert(&ceremony);
    ceremony.high_s = true;
    let high = authenticator.assert(&ceremony);
    assert_ne!(low.signature, high.signature, "two forms of one signature");
    for assertion in [&low, &high] {
        authenticator
            .passkey()
            .verify(&statement_challenge(), assertion)
            .unwrap();
    }
    // And the high-S form is really high: normalizing changes it.
    let high_sig = p256::ecdsa::Signature::from_der(&high.signature).unwrap();
    assert!(high_sig.normalize_s().is_some());
}

#[test]
fn a_challenge_of_16_bytes_is_the_shortest_taken() {
    let authenticator = Authenticator::new(1, RP);
    for (length, taken) in [(16, true), (15, false), (0, false)] {
        let challenge = vec![3; length];
        let assertion = authenticator.assert(&authenticator.ceremony(&challenge));
        let verified = authenticator.passkey().verify(&challenge, &assertion);
        assert_eq!(verified.is_ok(), taken, "{length} bytes: {verified:?}");
        if !taken {
            assert!(
                verified.unwrap_err().contains("at least 16"),
                "{length} bytes"
            );
        }
    }
}

#[test]
fn step_8_client_data_that_is_not_utf8_is_refused() {
    refuses("the client data JSON is not UTF-8", |c| {
        c.client_data_json = Some(b"{\"type\":\"webauthn.get\xff\"}".to_vec());
    });
    // A leading byte order mark is stripped, as UTF-8 decode does.
    let bom = verify_changed(|c| {
        let mut json = b"\xef\xbb\xbf".to_vec();
        json.extend(
            format!(
                r#"{{"type":"webauthn.get","challenge":"{}","origin":"https://{RP}"}}"#,
                c.challenge
            )
            .bytes(),
        );
        c.client_data_json = Some(json);
    });
    assert!(bom.is_ok(), "{bom:?}");
}

#[test]
fn step_9_client_data_that_is_not_a_client_data_object_is_refused() {
    refuses("is not client data", |c| {
        c.client_data_json = Some(b"[1,2]".to_vec());
    });
    refuses("is not client data", |c| {
        c.client_data_json = Some(b"{\"type\":".to_vec());
    });
    refuses("missing field `origin`", |c| {
        c.client_data_json = Some(
            format!(r#"{{"type":"webauthn.get","challenge":"{}"}}"#, c.challenge).into_bytes(),
        );
    });
    // A member read twice could mean two things to two parsers.
    refuses("duplicate field `origin`", |c| {
        c.extra = r#","origin":"https://evil.example""#.into();
    });
    refuses("duplicate field `crossOrigin`", |c| {
        c.extra = r#","crossOrigin":false,"crossOrigin":true"#.into();
    });
    // Members it does not read are allowed: browsers add some.
    let chrome = verify_changed(|c| {
        c.extra = r#","crossOrigin":false,"other_keys_can_be_added_here":"do not compare clientDataJSON against a template""#.into();
    });
    assert!(chrome.is_ok(), "{chrome:?}");
}

#[test]
fn step_10_a_type_other_than_webauthn_get_is_refused() {
    refuses("type is webauthn.create, not webauthn.get", |c| {
        c.kind = "webauthn.create".into();
    });
    refuses("type is payment.get, not webauthn.get", |c| {
        c.kind = "payment.get".into();
    });
}

#[test]
fn step_11_another_challenge_is_refused() {
    refuses("is not the expected", |c| {
        c.challenge = Base64UrlUnpadded::encode_string(&challenge(b"another statement"));
    });
    // The right bytes in another encoding are another string: padded, or standard Base64.
    refuses("is not the expected", |c| c.challenge.push('='));
    refuses("is not the expected", |c| {
        c.challenge = Base64::encode_string(&statement_challenge());
    });
    // A caller's challenge must be one WebAuthn would send.
    let authenticator = Authenticator::new(1, RP);
    let assertion = authenticator.assert(&authenticator.ceremony(b"short"));
    let problem = authenticator
        .passkey()
        .verify(b"short", &assertion)
        .unwrap_err();
    assert!(problem.contains("at least 16"), "{problem}");
}

#[test]
fn step_12_an_origin_other_than_the_rp_ids_own_is_refused() {
    let refused = [
        "http://approvals.example.com",
        "https://evil.example",
        "https://sub.approvals.example.com",
        "https://approvals.example.com.evil.example",
        "https://approvals.example.com/",
        "https://approvals.example.com/path",
        "https://user@approvals.example.com",
        "https://approvals.example.com:",
        "https://approvals.example.com:0",
        "https://approvals.example.com:08443",
        "https://approvals.example.com:65536",
        "https://approvals.example.com:443",
        "https://approvals.example.com:+443",
        "https://APPROVALS.example.com",
        "https://approvals.example.com.",
        "approvals.example.com",
        "",
        "null",
    ];
    for origin in refused {
        refuses("is not one of the RP ID approvals.example.com's", |c| {
            c.origin = origin.into();
        });
    }
    for origin in [
        "https://approvals.example.com",
        "https://approvals.example.com:8443",
    ] {
        let verified = verify_changed(|c| c.origin = origin.into()).unwrap();
        assert_eq!(verified.origin, origin);
    }
}

#[test]
fn step_12_plain_http_is_taken_for_localhost_only() {
    let authenticator = Authenticator::new(3, "localhost");
    let passkey = authenticator.passkey();
    let at = |origin: &str| {
        let mut ceremony = authenticator.ceremony(&statement_challenge());
        ceremony.origin = origin.into();
        passkey.verify(&statement_challenge(), &authenticator.assert(&ceremony))
    };
    for origin in [
        "http://localhost",
        "http://localhost:5173",
        "https://localhost",
        "https://localhost:8443",
    ] {
        assert!(at(origin).is_ok(), "{origin}");
    }
    assert_eq!(
        at("http://evil.example").unwrap_err(),
        "origin http://evil.example is not one of the RP ID localhost's (https://localhost or \
         https://localhost:PORT, or http://localhost with or without a port)"
    );
    for origin in [
        "http://localhost:80",
        "http://localhost.evil.example",
        "http://evil.localhost",
        "http://127.0.0.1",
        "ws://localhost",
    ] {
        assert!(at(origin).is_err(), "{origin}");
    }
}

#[test]
fn step_13_an_assertion_made_in_a_cross_origin_frame_is_refused() {
    refuses("crossOrigin is true", |c| {
        c.extra = r#","crossOrigin":true"#.into();
    });
    refuses("crossOrigin is not a boolean", |c| {
        c.extra = r#","crossOrigin":"true""#.into();
    });
    refuses("crossOrigin is not a boolean", |c| {
        c.extra = r#","crossOrigin":null"#.into();
    });
    assert!(verify_changed(|c| c.extra = String::new()).is_ok());
}

#[test]
fn step_14_a_top_origin_is_refused() {
    refuses("topOrigin is present", |c| {
        c.extra = r#","crossOrigin":false,"topOrigin":"https://approvals.example.com""#.into();
    });
    refuses("topOrigin is present", |c| {
        c.extra = r#","topOrigin":null"#.into();
    });
}

#[test]
fn level_2_step_14_a_token_binding_in_use_is_refused() {
    refuses("tokenBinding.status is present", |c| {
        c.extra = r#","tokenBinding":{"status":"present","id":"AAAA"}"#.into();
    });
    refuses("tokenBinding is not", |c| {
        c.extra = r#","tokenBinding":"present""#.into();
    });
    refuses("tokenBinding is not", |c| {
        c.extra = r#","tokenBinding":{"status":"bound"}"#.into();
    });
    assert!(
        verify_changed(|c| c.extra = r#","tokenBinding":{"status":"supported"}"#.into()).is_ok()
    );
}

#[test]
fn authenticator_data_that_is_short_or_carries_more_is_refused() {
    let authenticator = Authenticator::new(1, RP);
    let mut assertion = authenticator.assert(&authenticator.ceremony(&statement_challenge()));
    assertion.authenticator_data.truncate(36);
    let problem = authenticator
        .passkey()
        .verify(&statement_challenge(), &assertion)
        .unwrap_err();
    assert!(
        problem.contains("is 36 bytes; it holds at least 37"),
        "{problem}"
    );
    refuses("the AT flag is set", |c| {
        c.flags |= AT;
        c.trailing = vec![0; 80];
    });
    // Step 23: extensions (here a CBOR map {"credProtect": 1}) are refused, not skipped.
    refuses("the ED flag is set", |c| {
        c.flags |= ED;
        c.trailing = b"\xa1\x6bcredProtect\x01".to_vec();
    });
    refuses("it must be 37", |c| c.trailing = vec![0xa0]);
}

#[test]
fn step_15_an_assertion_for_another_rp_id_is_refused() {
    refuses(
        "rpIdHash is not the SHA-256 of the RP ID approvals.example.com",
        |c| {
            c.rp_id = "evil.example".into();
        },
    );
    refuses("rpIdHash is not", |c| c.rp_id = "example.com".into());
}

#[test]
fn step_16_an_assertion_without_user_presence_is_refused() {
    refuses("the UP flag is not set", |c| c.flags = UV);
}

#[test]
fn step_17_an_assertion_without_user_verification_is_refused() {
    refuses("the UV flag is not set", |c| c.flags = UP);
    refuses("the UV flag is not set", |c| c.flags = UP | BE | BS);
}

#[test]
fn step_18_backed_up_without_backup_eligible_is_refused() {
    refuses("the BS flag is set without BE", |c| c.flags = UP | UV | BS);
}

#[test]
fn step_21_a_signature_that_does_not_verify_is_refused() {
    let authenticator = Authenticator::new(1, RP);
    let passkey = authenticator.passkey();
    let valid = authenticator.assert(&authenticator.ceremony(&statement_challenge()));
    let check = |assertion: &Assertion| passkey.verify(&statement_challenge(), assertion);
    check(&valid).unwrap();
    // Signed data changed after signing: the counter, the client data.
    let mut counter = valid.clone();
    counter.authenticator_data[36] ^= 1;
    assert!(
        check(&counter)
            .unwrap_err()
            .contains("the signature does not verify")
    );
    let mut client = valid.clone();
    let text = String::from_utf8(client.client_data_json.clone()).unwrap();
    client.client_data_json = text
        .replace("\"crossOrigin\":false", "\"crossOrigin\":false ")
        .into_bytes();
    assert!(
        check(&client)
            .unwrap_err()
            .contains("the signature does not verify")
    );
    // Another key's signature of the same data.
    let other = Authenticator::new(9, RP);
    let mut theirs = other.assert(&other.ceremony(&statement_challenge()));
    theirs.credential_id.clone_from(&valid.credential_id);
    assert!(
        check(&theirs)
            .unwrap_err()
            .contains("the signature does not verify")
    );
    // Not DER: the raw r || s form, trailing bytes, nothing.
    let signature = p256::ecdsa::Signature::from_der(&valid.signature).unwrap();
    for bytes in [
        signature.to_bytes().to_vec(),
        [valid.signature.clone(), vec![0]].concat(),
        Vec::new(),
    ] {
        let mut changed = valid.clone();
        changed.signature = bytes;
        assert!(check(&changed).unwrap_err().contains("not a DER-encoded"));
    }
}

#[test]
fn rp_ids_are_domain_names_and_points_are_on_p256() {
    let point = Authenticator::new(1, RP)
        .passkey()
        .point
        .to_encoded_point(false);
    for rp_id in [
        "",
        "Approvals.example.com",
        "approvals.example.com.",
        "approvals..example.com",
        "-approvals.example.com",
        "approvals-.example.com",
        "approvals_x.example.com",
        "ssh:",
        "127.0.0.1",
        "https://approvals.example.com",
        "a".repeat(64).as_str(),
        ["a"; 128].join(".").as_str(),
    ] {
        let error = Passkey::from_sec1(rp_id, point.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains("is not a domain name"),
            "{rp_id}: {error}"
        );
    }
    for rp_id in ["localhost", "xn--bcher-kva.example", "a.b-c.d1", "intranet"] {
        assert_eq!(
            Passkey::from_sec1(rp_id, point.as_bytes()).unwrap().rp_id(),
            rp_id
        );
    }
    let compressed = Authenticator::new(1, RP)
        .passkey()
        .point
        .to_encoded_point(true);
    let mut off_curve = point.as_bytes().to_vec();
    off_curve[64] ^= 1;
    for (bytes, expected) in [
        (compressed.as_bytes(), "uncompressed P-256 point"),
        (&point.as_bytes()[1..], "uncompressed P-256 point"),
        (&[][..], "uncompressed P-256 point"),
        (&off_curve[..], "not a point on P-256"),
    ] {
        let error = Passkey::from_sec1(RP, bytes).unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn openssh_text_round_trips_and_other_keys_are_not_passkeys() {
    let passkey = Authenticator::new(4, RP).passkey();
    let text = passkey.to_openssh();
    assert!(
        text.starts_with("sk-ecdsa-sha2-nistp256@openssh.com AAAA"),
        "{text}"
    );
    assert_eq!(Passkey::from_openssh(&text).unwrap(), passkey);
    assert_eq!(
        Passkey::from_openssh(&format!("{text} alice's key\n")).unwrap(),
        passkey
    );
    // An SSH security key: same type, application `ssh:`, which is no RP ID.
    let ssh_sk = PublicKey::from(KeyData::SkEcdsaSha2NistP256(SkEcdsaSha2NistP256::new(
        passkey.point.to_encoded_point(false),
        "ssh:",
    )));
    let error = Passkey::from_openssh(&ssh_sk.to_openssh().unwrap()).unwrap_err();
    assert!(
        error.to_string().contains("\"ssh:\" is not a domain name"),
        "{error}"
    );
    let ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";
    let error = Passkey::from_openssh(ed).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("ssh-ed25519 key is not a passkey"),
        "{error}"
    );
    assert!(Passkey::from_openssh("sk-ecdsa-sha2-nistp256@openssh.com AAAA").is_err());
}

#[test]
fn the_allowed_signers_line_is_read_back_with_its_rp_id_and_credential_id() {
    let alice = Authenticator::new(5, RP);
    let line = alice
        .passkey()
        .allowed_signers_line("alice@example.com", alice.credential_id(), ORIGIN)
        .unwrap();
    assert_eq!(
        line,
        format!(
            "alice@example.com namespaces=\"approval-gate\" {} passkey:{} origin:{ORIGIN}",
            alice.passkey().to_openssh(),
            Base64UrlUnpadded::encode_string(alice.credential_id())
        )
    );
    let local = Authenticator::new(6, "localhost");
    let ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";
    let ssh_sk = PublicKey::from(KeyData::SkEcdsaSha2NistP256(SkEcdsaSha2NistP256::new(
        local.passkey().point.to_encoded_point(false),
        "ssh:",
    )))
    .to_openssh()
    .unwrap();
    let text = format!(
        "{line}\n\
         alice@example.com {ed}\n\
         alice@example.com {ssh_sk}\n\
         alice@example.com namespaces=\"git\" {} origin:{ORIGIN}\n\
         alice@example.com valid-before=\"20200101Z\" {} origin:{ORIGIN}\n\
         *@example.com webauthn-sk-ecdsa-sha2-nistp256@openssh.com {} no credential here \
         origin:http://localhost:8470\n\
         {line}\n\
         bob@example.com {} origin:https://approvals.example.com:8443\n",
        Authenticator::new(7, RP).passkey().to_openssh(),
        Authenticator::new(8, RP).passkey().to_openssh(),
        local.passkey().to_openssh().split(' ').nth(1).unwrap(),
        Authenticator::new(9, RP).passkey().to_openssh(),
    );
    let policy = Policy::from_allowed_signers(&text).unwrap();
    let now = crate::time::Timestamp::parse_rfc3339("2026-12-01T00:00:00Z").unwrap();
    assert_eq!(
        policy.passkeys_of("alice@example.com", now),
        [
            (alice.passkey(), Some(alice.credential_id().to_vec())),
            (local.passkey(), None),
        ]
    );
    // Patterns match as they do for SSH keys: bob has the `*@example.com` passkey too.
    assert_eq!(
        policy.passkeys_of("bob@example.com", now),
        [
            (local.passkey(), None),
            (Authenticator::new(9, RP).passkey(), None)
        ]
    );
    assert!(policy.passkeys_of("carol@example.org", now).is_empty());
    // A page offers the passkeys whose line names its own origin, and no other.
    assert_eq!(
        policy.passkeys_on("alice@example.com", ORIGIN, now),
        [(alice.passkey(), Some(alice.credential_id().to_vec()))]
    );
    assert_eq!(
        policy.passkeys_on("bob@example.com", "http://localhost:8470", now),
        [(local.passkey(), None)]
    );
    assert!(
        policy
            .passkeys_on("alice@example.com", "http://localhost:8471", now)
            .is_empty()
    );
    assert!(policy.has_passkeys());
    // SSH keys, and a security key for `ssh:`, are no passkeys.
    let ssh_only = Policy::from_allowed_signers(&format!("a@x {ed}\na@x {ssh_sk}\n")).unwrap();
    assert!(!ssh_only.has_passkeys());
}

#[test]
fn a_line_is_written_only_for_one_plain_principal_and_a_real_credential_id() {
    let passkey = Authenticator::new(1, RP).passkey();
    for principal in [
        "",
        "alice bob",
        "alice\tx",
        "*@example.com",
        "alice,bob",
        "!alice",
        "al?ce",
        "\"alice\"",
        "#alice",
        "alice\u{1b}[31m",
        "a".repeat(257).as_str(),
    ] {
        let error = passkey
            .allowed_signers_line(principal, b"id", ORIGIN)
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "principal",
                    ..
                }
            ),
            "{principal:?}: {error}"
        );
    }
    for id in [Vec::new(), vec![1; MAX_CREDENTIAL_ID_BYTES + 1]] {
        let error = passkey
            .allowed_signers_line("alice@x", &id, ORIGIN)
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "credential_id",
                    ..
                }
            ),
            "{error}"
        );
    }
    // The origin is one of the RP ID's, written as a browser writes it.
    for origin in [
        "https://evil.example",
        "http://approvals.example.com",
        "https://approvals.example.com:443",
        "https://approvals.example.com/",
        "",
    ] {
        let error = passkey
            .allowed_signers_line("alice@x", b"id", origin)
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "origin",
                    ..
                }
            ),
            "{origin:?}: {error}"
        );
    }
    // The longest principal is written; one byte more is refused above.
    let principal = "a".repeat(crate::limits::MAX_NAME_BYTES);
    assert!(
        passkey
            .allowed_signers_line(&principal, b"id", ORIGIN)
            .is_ok()
    );
    let longest = passkey
        .allowed_signers_line("alice@x", &[1; MAX_CREDENTIAL_ID_BYTES], ORIGIN)
        .unwrap();
    let policy = Policy::from_allowed_signers(&longest).unwrap();
    let now = crate::time::Timestamp::from_unix_millis(0);
    assert_eq!(
        policy.passkeys_of("alice@x", now)[0]
            .1
            .as_ref()
            .unwrap()
            .len(),
        1023
    );
}

#[test]
fn a_credential_id_is_read_back_only_if_it_is_1_to_the_most_bytes() {
    let now = crate::time::Timestamp::from_unix_millis(0);
    for (id, read) in [
        (String::new(), None),
        (
            Base64UrlUnpadded::encode_string(&[7; MAX_CREDENTIAL_ID_BYTES + 1]),
            None,
        ),
        (
            Base64UrlUnpadded::encode_string(&[7; MAX_CREDENTIAL_ID_BYTES]),
            Some(vec![7; MAX_CREDENTIAL_ID_BYTES]),
        ),
        (Base64UrlUnpadded::encode_string(&[7]), Some(vec![7])),
    ] {
        let passkey = Authenticator::new(2, RP).passkey();
        let line = format!(
            "alice@x {} passkey:{id} origin:{ORIGIN}",
            passkey.to_openssh()
        );
        let policy = Policy::from_allowed_signers(&line).unwrap();
        assert_eq!(
            policy.passkeys_of("alice@x", now),
            [(passkey, read)],
            "passkey:{id}"
        );
    }
}

#[test]
fn an_envelope_of_the_most_bytes_is_read_and_a_full_last_line_is_taken() {
    // The bound comes first: at the most bytes the text is read (and refused here for what it
    // is), one byte more is refused for its size.
    let error = Assertion::dearmor(&"x".repeat(MAX_SIGNATURE_BYTES)).unwrap_err();
    assert!(!error.to_string().contains("bytes; at most"), "{error}");
    let error = Assertion::dearmor(&"x".repeat(MAX_SIGNATURE_BYTES + 1)).unwrap_err();
    assert!(error.to_string().contains("bytes; at most"), "{error}");
    // An assertion whose Base64 fills its last line to the full width round-trips.
    let authenticator = Authenticator::new(1, RP);
    let mut assertion = authenticator.assert(&authenticator.ceremony(&statement_challenge()));
    let full = (0..70)
        .find_map(|extra| {
            let mut longer = assertion.clone();
            longer.credential_id.extend(std::iter::repeat_n(9, extra));
            let armored = longer.armor(&authenticator.passkey()).unwrap();
            let last = armored.lines().rev().nth(1).unwrap().len();
            (last == 70).then_some((longer, armored))
        })
        .expect("some credential id length fills the last line");
    assertion = full.0;
    assert_eq!(
        Assertion::dearmor(&full.1).unwrap(),
        (authenticator.passkey(), assertion)
    );
}

/// An envelope around `json`, wrapped as armor wraps it.
fn envelope_of(json: &str) -> String {
    wrap(&Base64::encode_string(json.as_bytes()))
}

/// The envelope lines around `body`, in lines of 70.
fn wrap(body: &str) -> String {
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(70)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN APPROVAL-GATE WEBAUTHN-----\n{}\n-----END APPROVAL-GATE WEBAUTHN-----",
        lines.join("\n")
    )
}

/// `armored` with its lines changed by `change`.
fn with_lines(armored: &str, change: impl FnOnce(&mut Vec<String>)) -> String {
    let mut lines: Vec<String> = armored.lines().map(str::to_owned).collect();
    change(&mut lines);
    lines.join("\n")
}

/// An envelope of `json` whose Base64 has a stray bit in its last group: it decodes, to a
/// lax decoder, to the same bytes.
fn non_canonical(json: &str) -> String {
    let mut json = json.to_owned();
    while json.len() % 3 != 1 {
        json.push(' ');
    }
    let mut body = Base64::encode_string(json.as_bytes()).into_bytes();
    // The last group is `XY==`: Y carries 2 bits of data and 4 zero bits; set one.
    let at = body.len() - 3;
    body[at] += 1;
    wrap(&String::from_utf8(body).unwrap())
}

/// The JSON of a valid envelope, as armor writes it.
fn valid_json() -> (Passkey, Assertion, serde_json::Value) {
    let authenticator = Authenticator::new(1, RP);
    let assertion = authenticator.assert(&authenticator.ceremony(&statement_challenge()));
    let armored = assertion.armor(&authenticator.passkey()).unwrap();
    let body: String = armored
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let json = serde_json::from_slice(&Base64::decode_vec(&body).unwrap()).unwrap();
    (authenticator.passkey(), assertion, json)
}

#[test]
fn the_envelope_round_trips() {
    let (passkey, assertion, json) = valid_json();
    let armored = assertion.armor(&passkey).unwrap();
    assert!(looks_armored(&armored) && looks_armored(&format!("\n {armored}\n")));
    assert!(!looks_armored("-----BEGIN SSH SIGNATURE-----\n"));
    assert!(armored.starts_with("-----BEGIN APPROVAL-GATE WEBAUTHN-----\n"));
    assert!(armored.ends_with("\n-----END APPROVAL-GATE WEBAUTHN-----"));
    let lines: Vec<&str> = armored.lines().collect();
    assert!(lines[1..lines.len() - 2].iter().all(|l| l.len() == 70));
    assert_eq!(
        Assertion::dearmor(&armored).unwrap(),
        (passkey.clone(), assertion.clone())
    );
    assert_eq!(
        Assertion::dearmor(&format!("\n{armored}\n")).unwrap(),
        (passkey.clone(), assertion.clone())
    );
    assert_eq!(json["version"], 1);
    assert_eq!(json["publicKey"], passkey.to_openssh());
    assert_eq!(
        json["clientDataJSON"],
        Base64UrlUnpadded::encode_string(&assertion.client_data_json)
    );
    // Member order is not a difference; the members are.
    let reordered = format!(
        r#"{{"signature":{},"clientDataJSON":{},"authenticatorData":{},"credentialId":{},"publicKey":{},"version":1}}"#,
        json["signature"],
        json["clientDataJSON"],
        json["authenticatorData"],
        json["credentialId"],
        json["publicKey"]
    );
    assert_eq!(
        Assertion::dearmor(&envelope_of(&reordered)).unwrap().1,
        assertion
    );
}

#[test]
fn the_largest_envelope_fits_a_signature() {
    let passkey = Passkey::from_sec1(
        &[
            &"a".repeat(63)[..],
            &"b".repeat(63),
            &"c".repeat(63),
            &"d".repeat(61),
        ]
        .join("."),
        Authenticator::new(1, RP)
            .passkey()
            .point
            .to_encoded_point(false)
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(passkey.rp_id().len(), 253);
    let largest = Assertion {
        credential_id: vec![0xff; MAX_CREDENTIAL_ID_BYTES],
        authenticator_data: vec![0xff; MAX_AUTHENTICATOR_DATA_BYTES],
        client_data_json: vec![0xff; MAX_CLIENT_DATA_JSON_BYTES],
        signature: vec![0xff; 72],
    };
    let armored = largest.armor(&passkey).unwrap();
    assert!(
        armored.len() <= MAX_SIGNATURE_BYTES,
        "{} bytes",
        armored.len()
    );
    assert_eq!(
        Assertion::dearmor(&armored).unwrap(),
        (passkey.clone(), largest.clone())
    );
    let changes: [fn(&mut Assertion); 6] = [
        |a: &mut Assertion| a.credential_id.push(0),
        |a: &mut Assertion| a.authenticator_data.push(0),
        |a: &mut Assertion| a.client_data_json.push(0),
        |a: &mut Assertion| a.signature.push(0),
        |a: &mut Assertion| a.signature.clear(),
        |a: &mut Assertion| a.credential_id.clear(),
    ];
    for change in changes {
        let mut over = largest.clone();
        change(&mut over);
        let error = over.armor(&passkey).unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidInput {
                    field: "assertion",
                    ..
                }
            ),
            "{error}"
        );
    }
}

/// Asserts that each text is refused as an envelope, saying what it is paired with.
fn refused_envelopes(cases: Vec<(String, &str)>) {
    for (text, expected) in cases {
        let error = Assertion::dearmor(&text).unwrap_err();
        assert!(
            matches!(&error, Error::InvalidInput { field: "assertion", problem } if problem.contains(expected)),
            "expected {expected:?}, got {error}"
        );
    }
}

#[test]
fn envelopes_not_laid_out_as_armor_lays_them_out_are_refused() {
    let (passkey, assertion, json) = valid_json();
    let armored = assertion.armor(&passkey).unwrap();
    let body: String = armored
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    refused_envelopes(vec![
        (
            armored.replace("-----BEGIN APPROVAL-GATE WEBAUTHN-----\n", ""),
            "not a passkey assertion envelope",
        ),
        (
            armored.replace("\n-----END APPROVAL-GATE WEBAUTHN-----", ""),
            "not a passkey assertion envelope",
        ),
        (
            format!("{armored}\nmore"),
            "not a passkey assertion envelope",
        ),
        (
            armored.replace('\n', "\r\n"),
            "not a passkey assertion envelope",
        ),
        (
            with_lines(&armored, |lines| lines[1].push('\r')),
            "lines of 70",
        ),
        (
            format!(
                "-----BEGIN APPROVAL-GATE WEBAUTHN-----\n{}\n-----END APPROVAL-GATE WEBAUTHN-----",
                body.as_bytes()
                    .chunks(64)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            "lines of 70",
        ),
        (
            format!(
                "-----BEGIN APPROVAL-GATE WEBAUTHN-----\n{body}\n-----END APPROVAL-GATE WEBAUTHN-----"
            ),
            "lines of 70",
        ),
        (
            "-----BEGIN APPROVAL-GATE WEBAUTHN-----\n\n-----END APPROVAL-GATE WEBAUTHN-----".into(),
            "lines of 70",
        ),
        (
            with_lines(&armored, |lines| lines.insert(2, String::new())),
            "lines of 70",
        ),
        (non_canonical(&json.to_string()), "not canonical Base64"),
        (
            armored.replace("\n-----END", &format!("\n{}\n-----END", "A".repeat(9000))),
            "at most 8192",
        ),
    ]);
}

#[test]
fn envelopes_whose_json_is_not_exactly_an_envelope_are_refused() {
    let (passkey, assertion, json) = valid_json();
    let with = |member: &str, value: serde_json::Value| {
        let mut json = json.clone();
        json[member] = value;
        envelope_of(&json.to_string())
    };
    let without = |member: &str| {
        let mut json = json.clone();
        json.as_object_mut().unwrap().remove(member);
        envelope_of(&json.to_string())
    };
    let ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";
    let text = |s: &str| serde_json::Value::String(s.to_owned());
    let json_text = json.to_string();
    assert!(Assertion::dearmor(&envelope_of(&json_text)).is_ok_and(|(_, a)| a == assertion));
    refused_envelopes(vec![
        (envelope_of("[]"), "is not what an envelope holds"),
        (
            envelope_of(&json_text.replacen('{', r#"{"extra":1,"#, 1)),
            "unknown field `extra`",
        ),
        (
            envelope_of(&json_text.replacen('{', r#"{"version":1,"#, 1)),
            "duplicate field `version`",
        ),
        (without("signature"), "missing field `signature`"),
        (with("version", 2.into()), "envelope version 2 is not known"),
        (with("version", text("1")), "is not what an envelope holds"),
        (
            with("publicKey", text(ed)),
            "ssh-ed25519 key is not a passkey",
        ),
        (
            with(
                "publicKey",
                text(&format!("{} alice", passkey.to_openssh())),
            ),
            "without a comment",
        ),
        (with("publicKey", text(&"A".repeat(601))), "at most 600"),
        // At the bound the text is read, and refused for what it is.
        (
            with("publicKey", text(&"A".repeat(600))),
            "not an OpenSSH public key",
        ),
        (
            with(
                "signature",
                text(&format!("{}=", json["signature"].as_str().unwrap())),
            ),
            "signature is not base64url",
        ),
        (
            with("credentialId", text("a+b/")),
            "credential id is not base64url",
        ),
        (
            with("authenticatorData", text("")),
            "the authenticator data is 0 bytes",
        ),
        (
            with("clientDataJSON", text(&"A".repeat(2732))),
            "the client data JSON is 2049 bytes",
        ),
    ]);
}
