//! `migrate`: bring a store of approval-gate-mcp (Node) over (the work is the library's
//! [`approval_gate::migrate_predecessor`]).

use std::fmt::Write as _;
use std::path::Path;

use approval_gate::settings::Settings;
use approval_gate::{Location, Migration, MigrationOutcome};
use serde_json::json;

use crate::term::Exit;
use crate::term::display::escape;
use crate::term::{output, render};

pub(crate) fn migrate(settings: &Settings, dry_run: bool, json: bool) -> anyhow::Result<Exit> {
    let Location::Dir(dir) = &settings.store.value else {
        return Err(approval_gate::Error::InvalidInput {
            field: "store",
            problem: "migrate brings over a directory of approval-gate-mcp (Node): give it with --dir, not a PostgreSQL store".into(),
        }
        .into());
    };
    let migration = approval_gate::migrate_predecessor(dir, dry_run)?;
    let text = if json {
        let mut value = serde_json::to_value(&migration)?;
        value["dir"] = json!(dir);
        render::json(&value)?
    } else {
        as_text(&migration, dir)
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}

fn as_text(migration: &Migration, dir: &Path) -> String {
    let dir_text = escape(&dir.display().to_string());
    let mut text = String::new();
    let log = format!(
        "its audit log: {} bytes, BLAKE3 {}",
        migration.log_bytes, migration.log_blake3
    );
    match migration.outcome {
        MigrationOutcome::AlreadyMigrated => {
            let _ = writeln!(
                text,
                "{dir_text} was migrated from approval-gate-mcp before ({log}): nothing to do"
            );
            return text;
        }
        MigrationOutcome::Planned => {
            let _ = writeln!(text, "would migrate {dir_text} ({log}):");
        }
        MigrationOutcome::Migrated | _ => {
            let _ = writeln!(text, "migrated {dir_text} ({log}):");
        }
    }
    for request in &migration.requests {
        let _ = writeln!(
            text,
            "  {}  {} -> {}: {}",
            request.id,
            request.old_status,
            request.new_status,
            escape(&request.why)
        );
    }
    if migration.outcome == MigrationOutcome::Planned {
        let _ = writeln!(
            text,
            "nothing was changed: run `approval-gate migrate --dir {dir_text}` to do it (stop approval-gate-mcp first)"
        );
    } else {
        let _ = writeln!(
            text,
            "the old audit log and records are kept byte for byte in {}",
            escape(&dir.join("predecessor").display().to_string())
        );
    }
    text
}
