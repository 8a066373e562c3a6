//! A request's row as the database keeps it (its record without its payload, and its
//! payload), an audit entry's fields as it is handed them, and the reads that turn rows back
//! into requests and ids.

use serde_json::{Map, Value};

use super::PgStore;
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::store::{Loaded, Marks};

/// A stored row's record with its payload spliced back in: the request's JSON record.
pub(super) fn compose(record: &str, payload: Option<&str>) -> Vec<u8> {
    let body = record.trim_start().strip_prefix('{').unwrap_or(record);
    format!("{{\"payload\":{},{body}", payload.unwrap_or("null")).into_bytes()
}

/// The record of `request` without its payload, as the database keeps it, and its payload.
pub(super) fn split(request: &Request) -> Result<(String, Option<String>), Error> {
    let mut record = serde_json::to_value(request).map_err(|e| Error::Database {
        operation: "save",
        problem: format!("cannot serialise the record: {e}"),
    })?;
    if let Value::Object(fields) = &mut record {
        fields.remove("payload");
    }
    Ok((
        record.to_string(),
        request.payload().map(|p| p.as_str().to_owned()),
    ))
}

/// An event's name as the audit log spells it (`consume_refused`).
pub(super) fn event_name(event: AuditEvent) -> String {
    match serde_json::to_value(event) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

pub(super) fn details_text(details: &Map<String, Value>) -> String {
    Value::Object(details.clone()).to_string()
}

impl PgStore {
    pub(super) fn load_where(
        &self,
        id: RequestId,
        archived: bool,
    ) -> Result<Option<Request>, Error> {
        let row = self.read("load", Some(id), |client| {
            client.query_opt(
                "SELECT record::text, payload FROM approval_gate.requests WHERE id = $1 AND archived = $2",
                &[&id.as_str(), &archived],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let record: String = row.get(0);
        let payload: Option<String> = row.get(1);
        Request::decode(id, &compose(&record, payload.as_deref()))
            .map(Some)
            .map_err(|problem| Error::Unreadable { id, problem })
    }

    /// The live record of `id` and its marks, in one read (an archived one's marks only).
    pub(super) fn load_live_marked(
        &self,
        id: RequestId,
    ) -> Result<(Option<Request>, Marks), Error> {
        let row = self.read("load", Some(id), |client| {
            client.query_opt(
                "SELECT record::text, payload, claimed_ms IS NOT NULL, executing, archived
                 FROM approval_gate.requests WHERE id = $1",
                &[&id.as_str()],
            )
        })?;
        let Some(row) = row else {
            return Ok((None, Marks::default()));
        };
        let marks = Marks {
            claimed: row.get(2),
            executing: row.get(3),
            archived: row.get(4),
        };
        if marks.archived {
            return Ok((None, marks));
        }
        let record: String = row.get(0);
        let payload: Option<String> = row.get(1);
        Request::decode(id, &compose(&record, payload.as_deref()))
            .map(|request| (Some(request), marks))
            .map_err(|problem| Error::Unreadable { id, problem })
    }

    /// The rows `sql` selects (id, record, payload), each with its record decoded.
    pub(super) fn loaded(&self, sql: &'static str) -> Result<Vec<Loaded>, Error> {
        let rows = self.read("list", None, |client| client.query(sql, &[]))?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let id = RequestId::parse(row.get::<_, &str>(0)).ok()?;
                let record: &str = row.get(1);
                let payload: Option<&str> = row.get(2);
                let loaded = Request::decode(id, &compose(record, payload))
                    .map(Some)
                    .map_err(|problem| Error::Unreadable { id, problem });
                Some((id, loaded))
            })
            .collect())
    }
}
