//! JSON schemas of the shapes front ends show (feature `schemars`), written by hand where the
//! serialization is: each says exactly what the `Serialize` impl writes.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::id::RequestId;
use crate::payload::{CanonicalPayload, PayloadDigest};
use crate::scan::UnreadableRecord;
use crate::time::Timestamp;

impl JsonSchema for RequestId {
    fn schema_name() -> Cow<'static, str> {
        "RequestId".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^[0-9a-f]{12}$" })
    }
}

impl JsonSchema for PayloadDigest {
    fn schema_name() -> Cow<'static, str> {
        "PayloadDigest".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^[0-9a-f]{64}$" })
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date-time" })
    }
}

impl JsonSchema for CanonicalPayload {
    fn schema_name() -> Cow<'static, str> {
        "CanonicalPayload".into()
    }

    fn inline_schema() -> bool {
        true
    }

    /// Any JSON value but `null`, in canonical form (RFC 8785).
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "not": { "type": "null" } })
    }
}

impl JsonSchema for UnreadableRecord {
    fn schema_name() -> Cow<'static, str> {
        "UnreadableRecord".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "A request record that cannot be read: it refuses everything about its own id.",
            "properties": {
                "id": { "type": "string", "pattern": "^[0-9a-f]{12}$", "description": "The request id: 12 lowercase hex characters." },
                "unreadable": { "type": "boolean", "const": true, "description": "Always true: this record cannot be read." },
                "problem": { "type": "string", "description": "What is wrong with the record." },
                "authorizesExecution": { "type": "boolean", "const": false, "description": "Always false." },
            },
            "required": ["id", "unreadable", "problem", "authorizesExecution"],
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::{ReportJson, UnreadableRecord};

    fn properties<T: schemars::JsonSchema>() -> Vec<String> {
        let schema = schemars::schema_for!(T);
        let mut names: Vec<String> = schema.as_value()["properties"]
            .as_object()
            .expect("an object schema")
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    fn keys(value: &Value) -> Vec<String> {
        let mut names: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        names.sort();
        names
    }

    #[test]
    fn the_schemas_name_exactly_the_fields_serialized() {
        let tmp = tempfile::tempdir().unwrap();
        let gate = crate::Gate::open(tmp.path().join("g")).unwrap();
        let payload = crate::CanonicalPayload::from_json_text(r#"{"to":"a@b.c"}"#).unwrap();
        let ask = crate::NewRequest::new("send", "why")
            .requested_by("agent")
            .operation("smtp.send")
            .payload(payload);
        let id = gate.request_approval(ask).unwrap().request.id();
        let report = gate
            .approve(id, &crate::Decision::by("alice").reason("ok"))
            .unwrap();
        // The fields left out at their defaults: a report with a quorum and a signed approval
        // carries them, so every field of the schema is seen serialized.
        let mut request = report.request().clone();
        request.approve_by_allowance(id, request.created_at());
        request.add_approval(crate::SignedApproval::new(
            "alice@example.com".into(),
            "alice".into(),
            request.created_at(),
            "-----BEGIN SSH SIGNATURE-----".into(),
        ));
        let report = crate::StatusReport::new(
            request,
            report.effective_status(),
            2,
            None,
            report.request().created_at(),
        );
        let full = serde_json::to_value(&report).unwrap();
        assert_eq!(full["requiredApprovals"], 2);
        assert_eq!(full["approvals"][0]["principal"], "alice@example.com");
        assert!(full["approvals"][0].get("signature").is_none());
        assert_eq!(keys(&full), properties::<ReportJson>());
        assert_eq!(full["authorizesExecution"], false);
        assert_eq!(full["payload"]["to"], "a@b.c");
        let listed = serde_json::to_value(report.to_json(crate::PayloadShown::DigestOnly)).unwrap();
        assert!(listed.get("payload").is_none());
        assert_eq!(listed["payloadDigest"], full["payloadDigest"]);

        let record = UnreadableRecord::new(id, "damaged".into());
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(keys(&json), properties::<UnreadableRecord>());
    }
}
