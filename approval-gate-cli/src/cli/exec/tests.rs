use approval_gate::{Error as E, Timestamp};

use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;

use super::*;

#[test]
fn each_refusal_has_the_documented_code_and_anything_else_is_125() {
    let id = RequestId::parse("0123456789ab").unwrap();
    let at = Timestamp::from_unix_millis(0);
    let cases: Vec<(E, u8)> = vec![
        (E::NotApproved(id), 110),
        (E::Denied(id), 111),
        (E::Expired(id), 112),
        (E::ApprovalExpired { id, expired_at: at }, 112),
        (E::ExpiredDuringConsume { id, expired_at: at }, 112),
        (E::Revoked(id), 113),
        (E::AlreadyConsumed(id), 114),
        (E::ActionMismatch(id), 115),
        (
            E::OperationMismatch {
                id,
                expected: None,
                got: Some("x".into()),
            },
            115,
        ),
        (
            E::PayloadMismatch {
                id,
                expected: "none".into(),
            },
            115,
        ),
        (
            E::InsufficientApprovals {
                id,
                valid: 0,
                required: 1,
            },
            116,
        ),
        (
            E::BadSignature {
                id,
                principal: "a".into(),
                problem: "b".into(),
            },
            116,
        ),
        (
            E::UntrustedSigner {
                id,
                principal: "a".into(),
                key: "k".into(),
            },
            116,
        ),
        (E::SignatureRequired { id, required: 2 }, 116),
        (E::NotFound(id), 117),
        (E::Archived(id), 117),
        (
            E::NotRecorded {
                id,
                operation: "execute",
                source: Box::new(E::NoStateDir),
            },
            118,
        ),
        (
            E::DurabilityUnknown {
                id,
                operation: "consume",
                source: Box::new(E::NoStateDir),
            },
            118,
        ),
        (E::NoStateDir, 125),
        (
            E::AuditBroken {
                line: 1,
                problem: "p".into(),
            },
            125,
        ),
    ];
    for (error, code) in cases {
        let shown = error.to_string();
        let wrapped = anyhow::Error::new(error).context("exec");
        assert_eq!(exit_code(&wrapped), code, "{shown}");
    }
    let own = |code, text: &str| anyhow::Error::new(Refusal::new(code, text));
    assert_eq!(exit_code(&own("command_not_found", "x")), 127);
    assert_eq!(exit_code(&own("command_not_executable", "x")), 126);
    assert_eq!(exit_code(&own("usage", "x")), 125);
    assert_eq!(exit_code(&anyhow::anyhow!("anything else")), 125);
}

#[test]
fn an_end_is_the_commands_status_or_128_plus_its_signal_or_spent() {
    let exited = |raw| End::Exited(ExitStatus::from_raw(raw));
    assert_eq!(exited(0).exit_code(), 0);
    assert_eq!(exited(3 << 8).exit_code(), 3);
    assert_eq!(exited(255 << 8).exit_code(), 255);
    assert_eq!(exited(15).exit_code(), 128 + 15);
    // Issue 37, finding 13: after the claim, a command that did not start is spent (118),
    // never 126 or 127 ("nothing spent"); so is one stopped by a signal before it started.
    assert_eq!(End::Stopped(2).exit_code(), 118);
    let not_found = io::Error::from(io::ErrorKind::NotFound);
    assert_eq!(End::CouldNotStart(not_found).exit_code(), 118);
    let denied = io::Error::from(io::ErrorKind::PermissionDenied);
    assert_eq!(End::CouldNotStart(denied).exit_code(), 118);
    let lost = End::Lost(io::Error::from(io::ErrorKind::Other));
    assert_eq!(lost.exit_code(), 119);
    assert!(lost.note().unwrap().contains("outcome is unknown"));
    assert!(lost.note().unwrap().ends_with("; the approval is spent"));
    assert_eq!(exited(3 << 8).note(), None);
    assert_eq!(
        exited(15).note().as_deref(),
        Some("the command was killed by signal 15 (SIGTERM)")
    );
    assert_eq!(
        End::Stopped(15).to_string(),
        "not run: exec received signal 15 before the command started"
    );
}

#[test]
fn a_signal_before_the_command_starts_stops_it_from_starting() {
    let forward = Forwarder::install().unwrap();
    let me = rustix::process::getpid();
    rustix::process::kill_process(me, rustix::process::Signal::USR2).unwrap();
    // The forwarding thread takes the signal in its own time: wait for it to say so.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while forward.pending().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the signal never arrived"
        );
        std::thread::yield_now();
    }
    assert_eq!(forward.pending(), Some(SIGUSR2));
    let mut command = Command::new("true");
    assert!(forward.spawn(&mut command).unwrap().is_none());
    forward.close();
}

#[test]
fn a_payload_longer_than_the_bound_is_refused_and_one_at_it_is_read() {
    let at = "x".repeat(MAX_PAYLOAD_INPUT as usize);
    assert_eq!(read_bounded(at.as_bytes()).unwrap().len(), at.len());
    let over = format!("{at}x");
    let error = read_bounded(over.as_bytes()).unwrap_err();
    assert!(error.to_string().contains("longer than"), "{error}");
}
