//! `db init`: create or migrate the schema and roles of a PostgreSQL store.

use approval_gate::Location;
use serde_json::json;

use crate::settings::Settings;
use crate::term::output;
use crate::term::render;
use crate::term::{Exit, Refusal};

/// The group roles `db init` creates, for the operator to grant.
const ROLES: [&str; 4] = [
    "approval_gate_agent",
    "approval_gate_approver",
    "approval_gate_executor",
    "approval_gate_notifier",
];

#[cfg(feature = "postgres")]
fn init_schema(url: &str, limits: &approval_gate::Limits) -> anyhow::Result<u32> {
    Ok(approval_gate::postgres::init_with_limits(url, limits)?)
}

#[cfg(not(feature = "postgres"))]
fn init_schema(_url: &str, _limits: &approval_gate::Limits) -> anyhow::Result<u32> {
    Err(Refusal::new(
        "no_postgres",
        "this build of approval-gate has no PostgreSQL store: install it with its default features (`cargo install --locked approval-gate-cli`)",
    )
    .into())
}

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
    // The store holds its own caps, the operator's: every filing is held to them, whatever
    // the filing gate (or an agent calling the database itself) asks for.
    let limits = settings.limits();
    let version = init_schema(url, &limits)?;
    let text = if json {
        render::json(&json!({
            "schemaVersion": version,
            "roles": ROLES,
            "maxPending": limits.max_pending,
            "maxRequests": limits.max_requests,
        }))?
    } else {
        format!(
            "schema approval_gate at version {version} in {}; group roles {}; caps {} pending, {} live requests\n",
            settings.store.value,
            ROLES.join(", "),
            limits.max_pending,
            limits.max_requests
        )
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}
