//! The audit chain as the database holds it: its lines read in one snapshot with the head
//! row, and the chain's end checked against that row.

use super::PgStore;
use super::pool::Retry;
use crate::audit::{AuditSummary, LineHash, Reanchored, parse_chain_with};
use crate::error::Error;
use crate::time::Timestamp;

impl PgStore {
    /// The chain's lines in order, and the head row, after sealing every row committed so
    /// far (a login that may not seal reads what is sealed).
    pub(super) fn chain(&self) -> Result<(Vec<u8>, i64, String), Error> {
        self.lines(true)
    }

    /// The chain's sealed lines in order, and the head row; with `seal`, after sealing
    /// every row committed so far (which a chain that disagrees with its head refuses).
    pub(super) fn lines(&self, seal: bool) -> Result<(Vec<u8>, i64, String), Error> {
        self.read("audit", None, |client| {
            if seal && let Err(error) = client.execute("SELECT approval_gate.seal(true)", &[]) {
                let code = error.as_db_error().map(|db| db.code().code());
                if !matches!(code, Some("42501" | "AG004")) {
                    return Err(error);
                }
            }
            let mut tx = client.client.build_transaction().read_only(true).start()?;
            // One snapshot for the lines and the head.
            tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
            let head = tx.query_one("SELECT seq, hash FROM approval_gate.audit_head", &[])?;
            let mut bytes = Vec::new();
            for row in tx.query(
                "SELECT line FROM approval_gate.audit WHERE seq IS NOT NULL ORDER BY seq",
                &[],
            )? {
                bytes.extend_from_slice(row.get::<_, &str>(0).as_bytes());
                bytes.push(b'\n');
            }
            tx.commit()?;
            Ok((bytes, head.get(0), head.get(1)))
        })
    }
}

/// Checks a parsed chain's end against the head row: a cut tail, lines past the head, or
/// an altered last line.
pub(super) fn check_head(
    summary: AuditSummary,
    head_seq: i64,
    head_hash: &str,
) -> Result<AuditSummary, Error> {
    let head = u64::try_from(head_seq).unwrap_or(0);
    if summary.lines < head {
        return Err(Error::AuditBroken {
            line: summary.lines + 1,
            problem: format!(
                "missing: the head row names line {head}, the chain ends at line {} (its tail was cut)",
                summary.lines
            ),
        });
    }
    if summary.lines > head {
        return Err(Error::AuditBroken {
            line: head + 1,
            problem: format!(
                "lines past the head row, which names line {head}: they were added by hand"
            ),
        });
    }
    if summary.last_hash != head_hash {
        return Err(Error::AuditBroken {
            line: head,
            problem: "altered: the last line does not match the hash in the head row".into(),
        });
    }
    Ok(summary)
}

/// Fails if the chain's end disagrees with its head row, as the next append would find (a
/// cut tail, lines past the head, or an altered last line): the checks of `seal`, without
/// sealing, in one read.
pub(super) fn check_appendable(store: &PgStore) -> Result<(), Error> {
    let (head, last_ok, past): (i64, bool, bool) = store.read("audit", None, |client| {
        // Scalar subqueries: each an index lookup, where a join let the planner scan the
        // whole chain (it has no statistics of the one-row head table).
        let row = client.query_one(
            "SELECT e.seq,
                    e.seq = 0 OR coalesce(
                        encode(sha256(convert_to(left(e.line, length(e.line) - 75), 'UTF8')), 'hex') = e.hash
                        AND right(e.line, 66) = e.hash || '\"}', false),
                    coalesce(e.last > e.seq, false)
             FROM (SELECT h.seq, h.hash,
                          (SELECT a.line FROM approval_gate.audit a WHERE a.seq = h.seq) AS line,
                          (SELECT max(b.seq) FROM approval_gate.audit b) AS last
                   FROM approval_gate.audit_head h OFFSET 0) e",
            &[],
        )?;
        Ok((row.get(0), row.get(1), row.get(2)))
    })?;
    let head = u64::try_from(head).unwrap_or(0);
    if !last_ok {
        return Err(Error::AuditBroken {
            line: head,
            problem: "the head row names a line the chain does not have, or one that does not match its hash: appends are refused until `approval-gate audit reanchor`".into(),
        });
    }
    if past {
        return Err(Error::AuditBroken {
            line: head + 1,
            problem: format!(
                "lines past the head row, which names line {head}: they were added by hand"
            ),
        });
    }
    Ok(())
}

/// [`Chain::reanchor`](crate::store::Chain::reanchor): seals the chain as it is onto a new
/// head row, only when the lines chain and disagree with the head.
pub(super) fn reanchor(store: &PgStore, now: Timestamp, by: &str) -> Result<Reanchored, Error> {
    // The lines as they are: sealing onto a chain that disagrees with its head is refused.
    let (bytes, head_seq, head_hash) = store.lines(false)?;
    let (_, summary) =
        parse_chain_with(&bytes, LineHash::Sha256).map_err(|error| match error {
            Error::AuditBroken { line, problem } => Error::AuditBroken {
                line,
                problem: format!(
                    "{problem}; re-anchoring accepts only a chain whose lines chain: keep the database as it is for investigation"
                ),
            },
            other => other,
        })?;
    let problem = match check_head(summary.clone(), head_seq, &head_hash) {
        Ok(_) => {
            return Err(Error::InvalidInput {
                field: "audit reanchor",
                problem: "the audit chain and its head row agree: nothing to re-anchor".into(),
            });
        }
        Err(Error::AuditBroken { problem, .. }) => problem,
        Err(other) => return Err(other),
    };
    let found = i64::try_from(summary.lines).unwrap_or(i64::MAX);
    let ms = now.unix_millis();
    let seq: i64 = store
        .pool
        .run("audit reanchor", None, Retry::Connect, |client| {
            let seq = client
                .query_one(
                    "SELECT approval_gate.reanchor($1, $2, $3, $4, $5, $6)",
                    &[&by, &problem, &found, &summary.last_hash, &head_seq, &ms],
                )?
                .get(0);
            client.wake("");
            Ok(seq)
        })?;
    Ok(Reanchored {
        problem,
        found_lines: summary.lines,
        found_last_hash: summary.last_hash,
        previous_anchor: u64::try_from(head_seq).ok(),
        torn_bytes_cut: 0,
        seq: u64::try_from(seq).unwrap_or(0),
    })
}
