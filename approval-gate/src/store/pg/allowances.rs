//! The PostgreSQL store's allowances (`schema/allowances.sql`): granted and revoked by the
//! schema's functions, read from its two tables.

use super::PgStore;
use super::errors::map_error;
use super::rows::{compose, details_text};
use crate::allowance::{AllowanceSignature, SignedAllowance, Usage};
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::request::Request;
use crate::store::Entry;
use crate::store::allowance::Under;
use crate::store::allowance::{Cosigned, Kept, Revoked, Use};
use crate::store::{MarkedAllowed, Marks, Spent, Store};
use crate::time::Timestamp;

const SELECT: &str = "SELECT a.id, a.record::text, a.revoked_ms IS NOT NULL,
        coalesce((SELECT array_agg(u.amount ORDER BY u.at_ms) FROM approval_gate.allowance_uses u
                  WHERE u.allowance = a.id), '{}'),
        coalesce((SELECT array_agg(u.at_ms ORDER BY u.at_ms) FROM approval_gate.allowance_uses u
                  WHERE u.allowance = a.id), '{}')
    FROM approval_gate.allowances a WHERE $1::text IS NULL OR a.id = $1";

/// The kept allowance of `record` (its JSON text), revoked or not, with `uses`.
fn kept(
    id: &str,
    record: &str,
    revoked: bool,
    uses: impl IntoIterator<Item = Use>,
) -> Result<Kept, Error> {
    let corrupt = |problem: String| Error::Database {
        operation: "allowances",
        problem: format!("allowance {id} cannot be read: {problem}"),
    };
    let value = serde_json::from_str(record).map_err(|e| corrupt(e.to_string()))?;
    let signed = SignedAllowance::from_json(&value).map_err(corrupt)?;
    Ok(Kept {
        signed,
        usage: Usage::of(uses),
        revoked,
    })
}

impl PgStore {
    /// [`Store::load_marked_allowed`](crate::store::Store::load_marked_allowed): the request's
    /// row and its allowance's, in one read.
    pub(super) fn load_live_allowed(&self, id: RequestId) -> Result<MarkedAllowed, Error> {
        let row = self.read("load", Some(id), |client| {
            client.query_opt(
                "SELECT r.record::text, r.payload, r.claimed_ms IS NOT NULL, r.executing,
                        r.archived, a.id, a.record::text, a.revoked_ms IS NOT NULL
                 FROM approval_gate.requests r
                 LEFT JOIN approval_gate.allowances a ON a.id = r.record->>'allowance'
                 WHERE r.id = $1",
                &[&id.as_str()],
            )
        })?;
        let Some(row) = row else {
            return Ok((None, Marks::default(), None));
        };
        let marks = Marks {
            claimed: row.get(2),
            executing: row.get(3),
            archived: row.get(4),
        };
        if marks.archived {
            return Ok((None, marks, None));
        }
        let record: String = row.get(0);
        let payload: Option<String> = row.get(1);
        let request = Request::decode(id, &compose(&record, payload.as_deref()))
            .map_err(|problem| Error::Unreadable { id, problem })?;
        let allowance = match (row.get::<_, Option<&str>>(5), row.get::<_, Option<&str>>(6)) {
            (Some(aid), Some(record)) => Some(kept(aid, record, row.get(7), [])?),
            _ => None,
        };
        Ok((Some(request), marks, allowance))
    }

    /// [`Store::decide`](crate::store::Store::decide) of `allow`: the pending request approved
    /// by the allowance its record names, by `allow_request`.
    pub(super) fn allow(&self, request: &Request, entry: &Entry<'_>) -> Result<Request, Error> {
        let id = request.id();
        let allowance = request
            .allowance()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let stored: String = self.step("allow", id, entry.ts, |client| {
            let stored = client
                .query_one(
                    "SELECT approval_gate.allow_request($1, $2, $3::text::jsonb, $4)",
                    &[&id.as_str(), &allowance, &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(stored)
        })?;
        let payload = request.payload().map(crate::CanonicalPayload::as_str);
        Ok(Request::decode(id, &compose(&stored, payload)).unwrap_or_else(|_| request.clone()))
    }

    /// [`Store::spend_under`](crate::store::Store::spend_under), by `claim_under`: the use
    /// counted under the allowance's row lock, in the claim's transaction.
    pub(super) fn spend_allowed(
        &self,
        id: RequestId,
        under: &Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let allowance = under.allowance;
        let amount = under.amount.map(|a| i64::try_from(a).unwrap_or(i64::MAX));
        let outcome: String = self.step("consume", id, entry.ts, |client| {
            let outcome = client
                .query_one(
                    "SELECT approval_gate.claim_under($1, $2, $3, $4::text::jsonb, $5)",
                    &[&id.as_str(), &allowance.as_str(), &amount, &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(outcome)
        })?;
        let refused = |refusal| Spent::Refused {
            refusal,
            recorded: true,
        };
        let said = |what: &str| format!("{what} (refused by the database)");
        Ok(match outcome.as_str() {
            "claimed" => {
                let after = || -> Result<(), Error> {
                    failpoint!("consume::after_claim");
                    failpoint!("consume::after_consumed_line");
                    Ok(())
                };
                after().map_err(|error| error.after_effect(id, "consume"))?;
                Spent::Now
            }
            "already_consumed" => Spent::before(id),
            "allowance_exhausted" => refused(Error::AllowanceExhausted {
                id,
                allowance,
                reason: said("no use, budget or rate is left"),
            }),
            "allowance_not_covering" => refused(Error::AllowanceNotCovering {
                id,
                allowance,
                reason: said("it is gone, not yet open, or not the one the request names"),
            }),
            "approval_expired" => refused(Error::ApprovalExpired {
                id,
                expired_at: under.bounds.not_after.min(
                    self.load(id, crate::store::Shelf::Live)
                        .ok()
                        .flatten()
                        .map_or(under.bounds.not_after, |r| r.expires_at()),
                ),
            }),
            reason => refused(self.refusal(id, reason)),
        })
    }

    pub(super) fn grant(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error> {
        let id = signed.allowance.id();
        let record = signed.to_json().to_string();
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        self.write("allow", id, |client| {
            let granted: bool = client
                .query_one(
                    "SELECT approval_gate.grant_allowance($1::text::jsonb, $2::text::jsonb, $3)",
                    &[&record, &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(granted)
        })
        .map_err(|e| e.unwrap_or_else(|e| map_error("allow", Some(id), &e)))
    }

    pub(super) fn cosign(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<Cosigned, Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let signature_json = serde_json::json!({
            "principal": signature.principal,
            "signature": signature.signature,
        })
        .to_string();
        let outcome: String = self
            .write("sign allowance", id, |client| {
                let outcome = client
                    .query_one(
                        "SELECT approval_gate.cosign_allowance($1, $2::text::jsonb, \
                         $3::text::jsonb, $4)",
                        &[&id.as_str(), &signature_json, &details, &ts],
                    )?
                    .get(0);
                client.wake(id.as_str());
                Ok(outcome)
            })
            .map_err(|e| e.unwrap_or_else(|e| map_error("sign allowance", Some(id), &e)))?;
        Ok(match outcome.as_str() {
            "added" => match self.read_allowances(Some(id))?.into_iter().next() {
                Some(kept) => Cosigned::Added(Box::new(kept.signed)),
                None => Cosigned::Unknown,
            },
            "already" => Cosigned::Already,
            "revoked" => Cosigned::Revoked,
            _ => Cosigned::Unknown,
        })
    }

    pub(super) fn revoke(&self, id: RequestId, entry: &Entry<'_>) -> Result<Revoked, Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let outcome: String = self
            .write("revoke allowance", id, |client| {
                let outcome = client
                    .query_one(
                        "SELECT approval_gate.revoke_allowance($1, $2::text::jsonb, $3)",
                        &[&id.as_str(), &details, &ts],
                    )?
                    .get(0);
                client.wake(id.as_str());
                Ok(outcome)
            })
            .map_err(|e| e.unwrap_or_else(|e| map_error("revoke allowance", Some(id), &e)))?;
        Ok(match outcome.as_str() {
            "revoked" => Revoked::Now,
            "before" => Revoked::Before,
            _ => Revoked::Unknown,
        })
    }

    pub(super) fn read_allowances(&self, id: Option<RequestId>) -> Result<Vec<Kept>, Error> {
        let wanted = id.map(|id| id.as_str().to_owned());
        let rows = self.read("allowances", id, move |client| {
            client.query(SELECT, &[&wanted])
        })?;
        rows.iter()
            .map(|row| {
                let id: &str = row.get(0);
                let record: &str = row.get(1);
                let amounts: Vec<Option<i64>> = row.get(3);
                let ats: Vec<i64> = row.get(4);
                let uses = amounts.into_iter().zip(ats).map(|(amount, at)| Use {
                    request: RequestId::STORE,
                    amount: amount.and_then(|a| u64::try_from(a).ok()),
                    at: Timestamp::from_unix_millis(at),
                });
                kept(id, record, row.get(2), uses)
            })
            .collect()
    }
}
