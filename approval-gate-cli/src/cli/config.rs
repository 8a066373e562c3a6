//! `config`: the operator's effective settings and where each came from. It opens nothing.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::settings::{SYSTEM_POLICY_PATH, Setting, Settings, Source};
use crate::term::Exit;
use crate::term::display::escape;
use crate::term::output;
use crate::term::render;

pub(crate) fn config(settings: &Settings, json: bool) -> anyhow::Result<Exit> {
    let text = if json {
        render::json(&as_json(settings))?
    } else {
        as_text(settings)
    };
    output::stdout(&text)?;
    Ok(Exit::Done)
}

fn as_json(settings: &Settings) -> Value {
    let file = &settings.config;
    let mut ttl_entry = entry(&settings.default_ttl, json!(ttl(settings)));
    ttl_entry.insert(
        "seconds".into(),
        settings.default_ttl.value.as_secs().into(),
    );
    json!({
        "config": {
            "path": file.path.as_ref().map(|path| path.to_string_lossy()),
            "found": file.found,
            "source": file.source.kind(),
            "from": file.source.name(),
        },
        "store": entry(&settings.store, json!(settings.store.value.to_string())),
        "maxPending": entry(&settings.max_pending, json!(settings.max_pending.value)),
        "maxRequests": entry(&settings.max_requests, json!(settings.max_requests.value)),
        "defaultTtl": ttl_entry,
        "approvers": entry(&settings.approvers, json!(path(&settings.approvers))),
        "quorum": entry(&settings.quorum, Value::Object(
            settings.quorum.value.iter().map(|(p, n)| (p.clone(), json!(n))).collect(),
        )),
        "signingKey": entry(&settings.signing_key, json!(path(&settings.signing_key))),
        "sshKeygen": entry(
            &settings.ssh_keygen,
            json!(settings.signer().program().to_string_lossy()),
        ),
        "hooks": entry(&settings.hooks, json!({
            "commands": settings.hooks.value.commands,
            "tools": settings.hooks.value.tools,
            "timeoutSeconds": settings.hooks.value.timeout.as_secs(),
        })),
        "publicUrl": entry(&settings.public_url, json!(settings.public_url.value)),
        "systemPolicy": settings.system_policy.as_ref().map(|system| json!({
            "path": system.path.to_string_lossy(),
            "source": system.source.kind(),
            "approvers": system.approvers.to_string_lossy(),
            "quorum": Value::Object(
                system.quorum.iter().map(|(p, n)| (p.clone(), json!(n))).collect(),
            ),
        })),
    })
}

fn path(setting: &Setting<Option<std::path::PathBuf>>) -> Option<String> {
    setting
        .value
        .as_ref()
        .map(|path| path.to_string_lossy().into_owned())
}

/// `payments.*=2, deploy.*=3`, or `none` (one approval for every operation).
fn quorum(settings: &Settings) -> String {
    if settings.quorum.value.is_empty() {
        return "none".to_owned();
    }
    settings
        .quorum
        .value
        .iter()
        .map(|(pattern, n)| format!("{pattern}={n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `{"value", "source", "from"}`, `from` being the flag, variable or file (null for a
/// default).
fn entry<T>(setting: &Setting<T>, value: Value) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("value".into(), value);
    entry.insert("source".into(), setting.source.kind().into());
    entry.insert("from".into(), setting.source.name().into());
    entry
}

/// `commands git push*, rm -rf*; tools mcp__*__send*; timeout 10m`, or `none` for each list.
fn hooks(settings: &Settings) -> String {
    let list = |patterns: &[String]| {
        if patterns.is_empty() {
            "none".to_owned()
        } else {
            patterns.join(", ")
        }
    };
    let rules = &settings.hooks.value;
    format!(
        "commands {}; tools {}; timeout {}",
        list(&rules.commands),
        list(&rules.tools),
        humantime::format_duration(rules.timeout)
    )
}

fn ttl(settings: &Settings) -> String {
    humantime::format_duration(settings.default_ttl.value).to_string()
}

fn as_text(settings: &Settings) -> String {
    let file = &settings.config;
    let config = match &file.path {
        Some(path) => path.display().to_string(),
        None => "none (no home directory)".to_owned(),
    };
    let config_source = match (&file.source, file.found) {
        (Source::Default, false) => "default, not found".to_owned(),
        (source, _) => source.to_string(),
    };
    let (system, system_source) = match &settings.system_policy {
        Some(system) => (system.path.display().to_string(), system.source.to_string()),
        None => (
            SYSTEM_POLICY_PATH.to_owned(),
            "default, not found".to_owned(),
        ),
    };
    let rows = [
        ("config", config, config_source),
        ("system", system, system_source),
        (
            "store",
            settings.store.value.to_string(),
            settings.store.source.to_string(),
        ),
        (
            "max_pending",
            settings.max_pending.value.to_string(),
            settings.max_pending.source.to_string(),
        ),
        (
            "max_requests",
            settings.max_requests.value.to_string(),
            settings.max_requests.source.to_string(),
        ),
        (
            "default_ttl",
            ttl(settings),
            settings.default_ttl.source.to_string(),
        ),
        (
            "approvers",
            path(&settings.approvers).unwrap_or_else(|| "none".to_owned()),
            settings.approvers.source.to_string(),
        ),
        (
            "quorum",
            quorum(settings),
            settings.quorum.source.to_string(),
        ),
        (
            "signing_key",
            path(&settings.signing_key).unwrap_or_else(|| "none".to_owned()),
            settings.signing_key.source.to_string(),
        ),
        (
            "ssh_keygen",
            settings.signer().program().to_string_lossy().into_owned(),
            settings.ssh_keygen.source.to_string(),
        ),
        ("hooks", hooks(settings), settings.hooks.source.to_string()),
        (
            "public_url",
            settings
                .public_url
                .value
                .clone()
                .unwrap_or_else(|| "none".to_owned()),
            settings.public_url.source.to_string(),
        ),
    ];
    let rows = rows.map(|(name, value, source)| (name, escape(&value), escape(&source)));
    let width = rows.iter().map(|(_, value, _)| value.chars().count()).max();
    let mut text = String::new();
    for (name, value, source) in rows {
        let _ = writeln!(
            text,
            "{name:<12}  {value:<width$}  ({source})",
            width = width.unwrap_or(0)
        );
    }
    text
}
