//! The audit chain: one JSON object per event, hash-chained, whatever stores it.
//!
//! Each line ends with `"prev"` (the hash of the line before it, 64 zeros for the first) and
//! `"hash"` (BLAKE3 of the line's own bytes up to, not including, `,"hash":`). Sequence
//! numbers count lines from 1. The chain makes an edit, deletion, swap or duplication of any
//! line visible at its position; a backend's anchor (the directory store's `audit.head`)
//! makes truncation of the tail visible. This module is the format and the event set; the
//! directory store's file log is `store/dir/audit_log.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::id::RequestId;
use crate::time::Timestamp;

/// What an audit line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A request was filed.
    Requested,
    /// A human approved a request (the last approval it needed, under a quorum policy).
    Approved,
    /// One approver of several signed; the request stays pending until enough have.
    ApprovalAdded,
    /// A request was denied.
    Denied,
    /// A human revoked an approval.
    Revoked,
    /// A pending request passed its expiry.
    Expired,
    /// An approval was consumed (the claim is durable).
    Consumed,
    /// A consume was refused (not approved, expired, binding mismatch, ...).
    ConsumeRefused,
    /// A consume of an approval that was already consumed: a replay.
    ConsumeReplayed,
    /// A decision (approve, deny, revoke) was refused: the request was not in a state that
    /// allows it, did not exist, a signature did not count, ... Changes nothing.
    DecisionRefused,
    /// Trusted code is about to run the approved action.
    ExecutionStarted,
    /// Trusted code finished running the approved action.
    ExecutionFinished,
    /// A finished request was moved out of the live store.
    Archived,
    /// A human re-anchored a log whose anchor was missing or disagreed with it. Concerns the
    /// whole log, so its id is [`RequestId::STORE`].
    Reanchored,
    /// The store's owner changed the store's own caps (the PostgreSQL store, which holds
    /// them). Concerns the whole store, so its id is [`RequestId::STORE`].
    LimitsSet,
    /// `approval-gate migrate` brought a store of approval-gate-mcp (Node) over: the first line
    /// of the new chain, committing to the old audit log (its length and BLAKE3 digest, kept
    /// byte for byte under `predecessor/`). Concerns the whole store, so its id is
    /// [`RequestId::STORE`].
    Migrated,
    /// A human granted an allowance: signed by as many trusted approvers as its operation
    /// needs, verified before it was kept. Names the allowance's id, not a request's.
    AllowanceGranted,
    /// A human signed an allowance whose operation needs more approvers than signed it: kept,
    /// approving nothing until co-signers bring it to its quorum. Names the allowance's id.
    AllowanceProposed,
    /// Another approver's signature was added to an allowance (its details say how many it
    /// then carries, and the quorum it needs): from the one that meets the quorum on, it
    /// approves what it covers. Names the allowance's id.
    AllowanceSigned,
    /// A human revoked an allowance: no use not yet spent counts under it from then on.
    /// Names the allowance's id, not a request's.
    AllowanceRevoked,
}

/// One parsed line of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Position in the log, from 1.
    pub seq: u64,
    /// When the line was written.
    pub ts: Timestamp,
    /// What happened.
    pub event: AuditEvent,
    /// The request concerned.
    pub id: RequestId,
    /// Event-specific fields (reason, decided by, outcome, ...).
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

/// The result of a successful [`verify`](crate::Gate::verify_audit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditSummary {
    /// Lines in the log.
    pub lines: u64,
    /// Hash of the last line (64 hex characters; zeros for an empty log).
    pub last_hash: String,
}

/// What [`Gate::reanchor_audit`](crate::Gate::reanchor_audit) found and recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Reanchored {
    /// Why the log needed re-anchoring: what verification reported.
    pub problem: String,
    /// Complete lines found in the log.
    pub found_lines: u64,
    /// Hash of the last complete line found (zeros for an empty log).
    pub found_last_hash: String,
    /// The line count the old anchor recorded, if it was there and readable.
    pub previous_anchor: Option<u64>,
    /// Bytes of a torn last line that were cut off.
    pub torn_bytes_cut: u64,
    /// Sequence number of the `reanchored` line, now the anchored end of the log.
    pub seq: u64,
}

pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// `,"hash":"` + 64 hex + `"}`
pub(crate) const HASH_SUFFIX_LEN: usize = 9 + 64 + 2;
/// No line we write comes close; anything longer is not ours.
pub(crate) const MAX_LINE: usize = 256 * 1024;

#[derive(Serialize)]
pub(crate) struct LineOut<'a> {
    pub(crate) seq: u64,
    pub(crate) ts: Timestamp,
    pub(crate) event: AuditEvent,
    pub(crate) id: RequestId,
    #[serde(flatten)]
    pub(crate) details: &'a Map<String, Value>,
    pub(crate) prev: &'a str,
}

#[derive(Deserialize)]
struct LineIn {
    seq: u64,
    prev: String,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// The hash a chain's lines carry: BLAKE3 in the directory store; SHA-256 where the database
/// computes it (PostgreSQL has it built in), over the same bytes, linked the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineHash {
    Blake3,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Sha256,
}

impl LineHash {
    fn hex(self, bytes: &[u8]) -> String {
        match self {
            Self::Blake3 => blake3::hash(bytes).to_hex().to_string(),
            #[cfg(feature = "postgres")]
            Self::Sha256 => {
                use sha2::Digest;
                let digest = sha2::Sha256::digest(bytes);
                let mut hex = String::with_capacity(64);
                for byte in digest {
                    use std::fmt::Write;
                    let _ = write!(hex, "{byte:02x}");
                }
                hex
            }
            #[cfg(not(feature = "postgres"))]
            Self::Sha256 => unreachable!("SHA-256 chains exist only with the postgres feature"),
        }
    }
}

/// Parses the whole log, checking each line's hash, sequence number and link.
pub(crate) fn parse_chain(bytes: &[u8]) -> Result<(Vec<AuditRecord>, AuditSummary), Error> {
    parse_chain_with(bytes, LineHash::Blake3)
}

/// [`parse_chain`] for a chain hashed with `hash`.
pub(crate) fn parse_chain_with(
    bytes: &[u8],
    hash: LineHash,
) -> Result<(Vec<AuditRecord>, AuditSummary), Error> {
    let mut records = Vec::new();
    let mut prev = GENESIS.to_owned();
    let mut seq = 0u64;
    let mut rest = bytes;
    while !rest.is_empty() {
        seq += 1;
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(broken(
                seq,
                "incomplete: the last line has no newline (torn write)",
            ));
        };
        let line =
            std::str::from_utf8(&rest[..end]).map_err(|_| broken(seq, "altered: not UTF-8"))?;
        rest = &rest[end + 1..];
        let (line_seq, line_hash) =
            check_line_hash_with(line, hash).map_err(|p| broken(seq, &p))?;
        let parsed: LineIn = serde_json::from_str(line)
            .map_err(|e| broken(seq, &format!("altered: not an audit record ({e})")))?;
        if parsed.seq != line_seq {
            return Err(broken(seq, "altered: two sequence numbers"));
        }
        if line_seq != seq {
            let what = if line_seq < seq {
                "duplicated or moved"
            } else {
                "missing: an earlier line was removed or moved"
            };
            return Err(broken(
                seq,
                &format!("{what} (found sequence number {line_seq})"),
            ));
        }
        if parsed.prev != prev {
            return Err(broken(
                seq,
                "broken link: the previous line was removed, replaced or moved",
            ));
        }
        let mut details = parsed.rest;
        details.remove("hash");
        let record: AuditRecord = serde_json::from_value(Value::Object({
            let mut m = details;
            m.insert("seq".into(), Value::from(line_seq));
            m
        }))
        .map_err(|e| broken(seq, &format!("altered: not an audit record ({e})")))?;
        records.push(record);
        prev = line_hash;
    }
    let lines = seq;
    Ok((
        records,
        AuditSummary {
            lines,
            last_hash: prev,
        },
    ))
}

pub(crate) fn broken(line: u64, problem: &str) -> Error {
    Error::AuditBroken {
        line,
        problem: problem.to_owned(),
    }
}

/// Checks a line's own hash; returns its sequence number and hash.
pub(crate) fn check_line_hash(line: &str) -> Result<(u64, String), String> {
    check_line_hash_with(line, LineHash::Blake3)
}

/// [`check_line_hash`] for a line hashed with `hash`.
pub(crate) fn check_line_hash_with(line: &str, hash_of: LineHash) -> Result<(u64, String), String> {
    if line.len() <= HASH_SUFFIX_LEN || !line.is_char_boundary(line.len() - HASH_SUFFIX_LEN) {
        return Err("altered: too short to be an audit record".into());
    }
    let (prefix, suffix) = line.split_at(line.len() - HASH_SUFFIX_LEN);
    let hash = suffix
        .strip_prefix(",\"hash\":\"")
        .and_then(|s| s.strip_suffix("\"}"))
        .ok_or("altered: no hash at the end of the line")?;
    if hash != hash_of.hex(prefix.as_bytes()) {
        return Err("altered: the line does not match its own hash".into());
    }
    let seq = prefix
        .strip_prefix("{\"seq\":")
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or("altered: no sequence number at the start of the line")?;
    Ok((seq, hash.to_owned()))
}

pub(crate) fn line_hash_at(bytes: &[u8], seq: u64) -> Option<String> {
    let index = usize::try_from(seq.checked_sub(1)?).ok()?;
    let line = bytes.split(|&b| b == b'\n').nth(index)?;
    check_line_hash(std::str::from_utf8(line).ok()?)
        .ok()
        .map(|(_, h)| h)
}

/// Longest refusal text kept in a refusal line (`consume_refused`, `decision_refused`): a record that cannot be read is
/// described by its parser, whose words may quote what the record holds.
const MAX_DETAIL: usize = 1024;

/// The longest `detail` a refusal line holds: [`MAX_DETAIL`] bytes and the mark of a cut.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const MAX_REFUSAL_DETAIL_BYTES: usize = MAX_DETAIL + "...".len();

/// A refusal's text as a refusal line keeps it: cut at [`MAX_DETAIL`] bytes, with a mark.
pub(crate) fn refusal_detail(refusal: &Error) -> String {
    cut_text(refusal.to_string(), MAX_DETAIL)
}

/// `text` cut to at most `max` bytes at a character boundary, marked `...` where it was cut:
/// what a line keeps of a text of unbounded length.
pub(crate) fn cut_text(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

/// The fields of a line, from a JSON object (anything else has none).
pub(crate) fn details(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// How an execution ended, as its `execution_finished` line says (`outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The action ran and returned success.
    Ok,
    /// The action ran and returned an error.
    Error,
    /// The action was never called: the payload could not be read back, or the approval
    /// expired while it was being consumed.
    NotRun,
    /// Nobody knows: the executor panicked, was abandoned or died mid-run.
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of the chain, hashed with `hash`: the database's shape (a space after a colon).
    fn line(hash: LineHash, seq: u64, prev: &str) -> (String, String) {
        let prefix = format!(
            r#"{{"seq":{seq},"ts":"2026-11-30T00:53:20.000Z","event":"requested","id":"a1b2c3d4e5f6","action": "x","prev":"{prev}""#
        );
        let digest = hash.hex(prefix.as_bytes());
        (format!("{prefix},\"hash\":\"{digest}\"}}"), digest)
    }

    #[cfg(feature = "postgres")]
    fn sha256_line(seq: u64, prev: &str) -> (String, String) {
        line(LineHash::Sha256, seq, prev)
    }

    #[test]
    fn a_line_out_of_place_is_named_duplicated_or_missing() {
        let (first, hash) = line(LineHash::Blake3, 1, GENESIS);
        let (again, _) = line(LineHash::Blake3, 1, &hash);
        let (third, _) = line(LineHash::Blake3, 3, &hash);
        let problem = |chain: String| match parse_chain(chain.as_bytes()) {
            Err(Error::AuditBroken { line: 2, problem }) => problem,
            other => panic!("{other:?}"),
        };
        assert!(
            problem(format!("{first}\n{again}\n")).starts_with("duplicated or moved"),
            "a second line 1"
        );
        assert!(
            problem(format!("{first}\n{third}\n")).starts_with("missing"),
            "line 3 where line 2 belongs"
        );
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn sha256_lines_chain_like_blake3_lines_and_the_two_are_not_mixed() {
        // FIPS 180-2's example.
        assert_eq!(
            LineHash::Sha256.hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (first, hash) = sha256_line(1, GENESIS);
        let (second, last) = sha256_line(2, &hash);
        let chain = format!("{first}\n{second}\n");
        let (records, summary) = parse_chain_with(chain.as_bytes(), LineHash::Sha256).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(summary.lines, 2);
        assert_eq!(summary.last_hash, last);
        assert_eq!(
            check_line_hash_with(&second, LineHash::Sha256).unwrap(),
            (2, last)
        );
        // A SHA-256 chain read as a BLAKE3 one fails at its first line, and an edit is caught.
        assert!(matches!(
            parse_chain_with(chain.as_bytes(), LineHash::Blake3),
            Err(Error::AuditBroken { line: 1, .. })
        ));
        let edited = chain.replacen("\"x\"", "\"y\"", 1);
        assert!(matches!(
            parse_chain_with(edited.as_bytes(), LineHash::Sha256),
            Err(Error::AuditBroken { line: 1, .. })
        ));
    }
}
