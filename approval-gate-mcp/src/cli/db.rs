//! `db init`: create or migrate the schema and roles of a PostgreSQL store.

use approval_gate::Location;
use serde_json::json;

use super::output;
use super::render;
use super::{Exit, Refusal};
use crate::settings::Settings;

/// The group roles `db init` creates, for the operator to grant.
const ROLES: [&str; 3] = [
    "approval_gate_agent",
    "approval_gate_approver",
    "approval_gate_executor",
];

pub(crate) fn init(settings: &Settings, json: bool) -> anyhow::Result<Exit> {
    let Location::Postgres(url) = &settings.store.value else {
        return Err(Refusal::new(
            "not_postgres",
            format!(
                "db init sets up a PostgreSQL store, and the store is {} (give --store postgres://… or set APPROVAL_GATE_STORE)",
                settings.store.value
            ),
        )
        .into());
    };
    let version = approval_gate::postgres::init(url)?;
    let text = if json {
        render::json(&json!({ "schemaVersion": version, "roles": ROLES }))?
    } else {
        format!(
            "schema approval_gate at version {version} in {}; group roles {}\n",
            settings.store.value,
            ROLES.join(", ")
        )
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}
