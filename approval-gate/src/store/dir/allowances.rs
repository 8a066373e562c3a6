//! The directory store's allowances: `allowances/<id>.json` (the signed allowance, made by
//! exclusive create; replaced whole, durably, only to add a co-signer's signature, its terms
//! never changed), `allowances/<id>.uses` (one JSON line per use,
//! appended and fsynced), `allowances/<id>.revoked` (a marker, made by exclusive create and
//! fsynced), all under `allowances/<id>.lock`.

use serde_json::{Value, json};

use super::layout::{ids_in, lock_exclusive};
use super::{DirStore, fs};
use crate::allowance::Usage;
use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::error::Error;
use crate::id::RequestId;
use crate::store::allowance::{Cosigned, Kept, Revoked, Under, Use, exhausted};
use crate::store::{Entry, Guard, Spent};
use crate::time::Timestamp;

/// The largest allowance record or use file we read; anything larger was not written by us.
const MAX_ALLOWANCE_FILE: u64 = 4 * 1024 * 1024;

impl DirStore {
    /// The allowance's own lock, held for each of its steps.
    pub(super) fn lock_allowance(&self, id: RequestId) -> Result<Guard, Error> {
        lock_exclusive(&self.layout.allowance_lock(id)).map(Guard::new)
    }

    /// [`Store::grant_allowance`](crate::store::Store::grant_allowance): a "yes", recorded
    /// first, then the record made by exclusive create. `false` if the id is taken.
    pub(super) fn grant(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error> {
        let id = signed.allowance.id();
        let _lock = self.lock_allowance(id)?;
        let path = self.layout.allowance(id);
        if fs::exists(&path)? {
            return Ok(false);
        }
        self.audit.check_appendable()?;
        let bytes = serde_json::to_vec(&signed.to_json()).map_err(|e| Error::Corrupt {
            path: path.clone(),
            problem: format!("cannot encode: {e}"),
        })?;
        self.append(id, entry)?;
        match fs::create_exclusive(&path, &bytes) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Corrupt {
                path,
                problem: "made by someone else while its lock was held".into(),
            }),
            Err(failed) => Err(failed.on(id, "allow")),
        }
        .map(|()| true)
    }

    /// [`Store::cosign_allowance`](crate::store::Store::cosign_allowance): a "yes", recorded
    /// first, then the record replaced whole with the signature added (written to a new file,
    /// fsynced, renamed over it, the directory fsynced). A crash between the two leaves the
    /// line and the record without the signature: an allowance short of a signature, which
    /// approves nothing more than it did.
    pub(super) fn cosign(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<Cosigned, Error> {
        let _lock = self.lock_allowance(id)?;
        let Some(kept) = self.read_allowance(id, false)? else {
            return Ok(Cosigned::Unknown);
        };
        if kept.revoked {
            return Ok(Cosigned::Revoked);
        }
        let mut signed = kept.signed;
        if signed
            .signatures
            .iter()
            .any(|s| s.principal == signature.principal)
        {
            return Ok(Cosigned::Already);
        }
        signed.signatures.push(signature.clone());
        self.audit.check_appendable()?;
        let path = self.layout.allowance(id);
        let bytes = serde_json::to_vec(&signed.to_json()).map_err(|e| Error::Corrupt {
            path: path.clone(),
            problem: format!("cannot encode: {e}"),
        })?;
        let mut details = entry.details.clone();
        details.insert("signatures".into(), signed.signatures.len().into());
        self.append(
            id,
            &Entry {
                details: &details,
                ..*entry
            },
        )?;
        fs::write_atomic(&path, &bytes).map_err(|failed| failed.on(id, "sign allowance"))?;
        Ok(Cosigned::Added(Box::new(signed)))
    }

    /// [`Store::revoke_allowance`](crate::store::Store::revoke_allowance): a "no", in effect
    /// first (the marker, durable), then recorded.
    pub(super) fn revoke(&self, id: RequestId, entry: &Entry<'_>) -> Result<Revoked, Error> {
        let _lock = self.lock_allowance(id)?;
        if !fs::exists(&self.layout.allowance(id))? {
            return Ok(Revoked::Unknown);
        }
        let marker = json!({ "revokedAt": entry.ts }).to_string();
        let made = fs::create_exclusive(&self.layout.allowance_revoked(id), marker.as_bytes())
            .map_err(|failed| failed.on(id, "revoke allowance"));
        if let Ok(false) = made {
            return Ok(Revoked::Before);
        }
        self.record_after(made.map(drop), id, "revoke allowance", entry)?;
        Ok(Revoked::Now)
    }

    /// [`Store::spend_under`](crate::store::Store::spend_under): under the allowance's lock
    /// (the caller holds the request's), the replay and revocation checked, the uses read and
    /// the bounds asked, then the use appended and fsynced, then the claim and its line. A
    /// crash between the use and the claim leaves a use that counts and spent nothing.
    pub(super) fn spend_allowed(
        &self,
        id: RequestId,
        under: &Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        self.audit.check_appendable()?;
        let allowance = under.allowance;
        let _lock = self.lock_allowance(allowance)?;
        if fs::exists(&self.layout.claim(id))? {
            return Ok(Spent::before(id));
        }
        let refused = |refusal| {
            Ok(Spent::Refused {
                refusal,
                recorded: false,
            })
        };
        if fs::exists(&self.layout.allowance_revoked(allowance))? {
            return refused(Error::Revoked(id));
        }
        let usage = Usage::of(self.read_uses(allowance)?);
        if let Err(why) = under.bounds.admit(&usage, under.amount, entry.ts) {
            return refused(exhausted(id, allowance, &why));
        }
        let one = Use {
            request: id,
            amount: under.amount,
            at: entry.ts,
        };
        let path = self.layout.allowance_uses(allowance);
        let mut file = fs::open_append(&path)?;
        fs::write_all(&mut file, &path, &use_to_line(&one))
            .and_then(|()| fs::sync_data(&file, &path))
            .map_err(|error| error.after_effect(id, "consume"))?;
        self.claim_and_record(id, entry)
    }

    /// [`Store::allowance`](crate::store::Store::allowance).
    pub(super) fn read_allowance(
        &self,
        id: RequestId,
        counted: bool,
    ) -> Result<Option<Kept>, Error> {
        let path = self.layout.allowance(id);
        let Some(bytes) = fs::read_bounded(&path, MAX_ALLOWANCE_FILE)? else {
            return Ok(None);
        };
        let corrupt = |problem: String| Error::Corrupt {
            path: path.clone(),
            problem,
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let signed = SignedAllowance::from_json(&value).map_err(corrupt)?;
        if signed.allowance.id() != id {
            return Err(corrupt(format!(
                "it holds allowance {}, not {id}",
                signed.allowance.id()
            )));
        }
        let uses = if counted {
            self.read_uses(id)?
        } else {
            Vec::new()
        };
        Ok(Some(Kept {
            signed,
            usage: crate::allowance::Usage::of(uses),
            revoked: fs::exists(&self.layout.allowance_revoked(id))?,
        }))
    }

    /// Every allowance kept, in no order.
    pub(super) fn read_allowances(&self) -> Result<Vec<Kept>, Error> {
        let mut kept = Vec::new();
        for id in ids_in(&self.layout.allowances_dir(), ".json")? {
            kept.extend(self.read_allowance(id, true)?);
        }
        Ok(kept)
    }

    /// The uses recorded of `id`. A line that cannot be read is damage: the allowance is not
    /// counted on a guess, and nothing is used under it until a human looks.
    fn read_uses(&self, id: RequestId) -> Result<Vec<Use>, Error> {
        let path = self.layout.allowance_uses(id);
        let Some(bytes) = fs::read_bounded(&path, MAX_ALLOWANCE_FILE)? else {
            return Ok(Vec::new());
        };
        let corrupt = |line: usize, problem: String| Error::Corrupt {
            path: path.clone(),
            problem: format!(
                "use {line} cannot be read ({problem}): the allowance cannot be counted; revoke it"
            ),
        };
        let mut uses = Vec::new();
        for (n, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
            let Some(line) = line.strip_suffix(b"\n") else {
                return Err(corrupt(n + 1, "a torn line".into()));
            };
            let value: Value =
                serde_json::from_slice(line).map_err(|e| corrupt(n + 1, e.to_string()))?;
            uses.push(use_from_json(&value).map_err(|e| corrupt(n + 1, e))?);
        }
        Ok(uses)
    }
}

/// A use as its line holds it.
fn use_to_line(one: &Use) -> Vec<u8> {
    let mut line = json!({ "request": one.request, "amount": one.amount, "at": one.at })
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

fn use_from_json(value: &Value) -> Result<Use, String> {
    let request = value
        .get("request")
        .and_then(Value::as_str)
        .and_then(|id| RequestId::parse(id).ok())
        .ok_or("no request id")?;
    let amount = match value.get("amount") {
        Some(Value::Null) => None,
        Some(amount) => Some(amount.as_u64().ok_or("an amount that is no whole number")?),
        None => return Err("no amount".into()),
    };
    let at = value
        .get("at")
        .and_then(Value::as_str)
        .ok_or("no time")
        .map_err(str::to_owned)
        .and_then(Timestamp::parse_rfc3339)?;
    Ok(Use {
        request,
        amount,
        at,
    })
}
