//! Reading a channel's own keys from its `[notify.channels.NAME]` table (the engine has taken
//! out `type`, `operations` and `on_call`): every key known, every value of its type. Errors
//! start with the key they are about (`.url: ...`), as the engine's own do; it puts the
//! channel's path in front.

use super::super::secret::SecretSource;

/// Refuses any key of `table` not in `known`, naming it and the keys a `kind` channel holds.
pub(crate) fn only(table: &toml::Table, kind: &str, known: &[&str]) -> Result<(), String> {
    match table.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!(
            ".{key}: unknown key: a {kind} channel holds {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// The string at `key`, if there is one; an error if it is there but not a non-empty string.
pub(crate) fn string<'a>(table: &'a toml::Table, key: &str) -> Result<Option<&'a str>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(text)) if !text.is_empty() => Ok(Some(text)),
        Some(_) => Err(format!(".{key}: must be a non-empty string")),
    }
}

/// The string at `key`, which must be there; `what` says what it is.
pub(crate) fn required<'a>(
    table: &'a toml::Table,
    key: &str,
    what: &str,
) -> Result<&'a str, String> {
    string(table, key)?.ok_or_else(|| format!(".{key}: missing: {what}"))
}

/// The secret source at `key` (`{ file = "PATH" }` or `{ env = "VAR" }`), if there is one.
pub(crate) fn secret(table: &toml::Table, key: &str) -> Result<Option<SecretSource>, String> {
    table
        .get(key)
        .map(|value| SecretSource::from_toml(value).map_err(|e| format!(".{key}: {e}")))
        .transpose()
}
