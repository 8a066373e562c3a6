//! The config file: where it is, and what it may hold. It is read and checked whole, before
//! any setting is resolved, so a mistake in it is reported even where a flag or a variable
//! overrides the key.

use std::ffi::OsString;
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::layer::{Places, flag, resolve};
use super::read::{CONFIG, COUNT, FILE, LOCATION, NOTIFY, PUBLIC_URL, QUORUM, Read, TTL};
use super::{CONFIG_ENV, ConfigFile, Flags, Setting, SettingsError, Source, home};

/// Longer than any honest config file; read no further.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// The keys a config file may hold, in the order of the settings, each with how its value is
/// read: every key given is checked when the file is read, even one a flag or a variable
/// overrides.
const KEYS: [(&str, &dyn CheckFile); 11] = [
    ("store", &LOCATION),
    ("max_pending", &COUNT),
    ("max_requests", &COUNT),
    ("default_ttl", &TTL),
    ("approvers", &FILE),
    ("quorum", &QUORUM),
    ("signing_key", &FILE),
    ("ssh_keygen", &FILE),
    ("hooks", &super::hooks::HOOKS),
    ("public_url", &PUBLIC_URL),
    ("notify", &NOTIFY),
];

/// A key's check, for [`KEYS`].
pub(super) trait CheckFile {
    /// Reads `value` only to check it.
    fn check(&self, value: &toml::Value) -> Result<(), String>;
}

impl<T> CheckFile for Read<T> {
    fn check(&self, value: &toml::Value) -> Result<(), String> {
        (self.file)(value).map(drop)
    }
}

/// `$XDG_CONFIG_HOME/approval-gate/config.toml` (an absolute `XDG_CONFIG_HOME` only, as the
/// XDG spec says), else `$HOME/.config/approval-gate/config.toml`.
pub(super) fn default_config_path(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| home(env).map(|home| home.join(".config")))?;
    Some(base.join("approval-gate").join("config.toml"))
}

/// The config file's table, each key known and its value checked.
pub(super) fn read_file(path: &Path) -> Result<toml::Table, SettingsError> {
    let fail = |problem: &dyn fmt::Display| Source::File(path.to_owned()).error(problem);
    read_table(path, &KEYS, &|metadata| check_owner(metadata), &fail)
}

/// A TOML file's table, after `check` of its metadata, each key one of `keys` and its value
/// checked; every problem through `fail`, which says which file it is.
pub(super) fn read_table(
    path: &Path,
    keys: &[(&str, &dyn CheckFile)],
    check: &dyn Fn(&std::fs::Metadata) -> Result<(), String>,
    fail: &dyn Fn(&dyn fmt::Display) -> SettingsError,
) -> Result<toml::Table, SettingsError> {
    let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
    let metadata = file.metadata().map_err(|e| fail(&e))?;
    if !metadata.is_file() {
        return Err(fail(&"is not a regular file"));
    }
    check(&metadata).map_err(|problem| fail(&problem))?;
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(&e))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(fail(&format!(
            "is larger than {MAX_CONFIG_BYTES} bytes; a config file holds a few lines"
        )));
    }
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let message = e.message().trim_end();
        match line {
            Some(line) => fail(&format!("line {line}: {message}")),
            None => fail(&message),
        }
    })?;
    for (key, value) in &table {
        let Some((_, read)) = keys.iter().find(|(known, _)| key == known) else {
            let known: Vec<&str> = keys.iter().map(|(key, _)| *key).collect();
            let known = known.join(", ");
            return Err(fail(&format!("unknown key {key:?}: the keys are {known}")));
        };
        read.check(value)
            .map_err(|problem| fail(&format!("{key}: {problem}")))?;
    }
    Ok(table)
}

impl Places<'_> {
    /// The config file: `--config`, else `APPROVAL_GATE_CONFIG`, else the default one, which
    /// alone may be missing.
    pub(super) fn config_file(&self, flags: &Flags) -> Result<ConfigFile, SettingsError> {
        let Setting {
            value: path,
            source,
        } = resolve(
            [
                flag("--config", flags.config.as_ref(), &FILE),
                self.var(CONFIG_ENV, &CONFIG),
            ],
            Ok(default_config_path(self.env)),
        )?;
        let found = match &path {
            None => false,
            Some(path) => match std::fs::symlink_metadata(path) {
                Ok(_) => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && source == Source::Default => {
                    false
                }
                Err(e) => {
                    return Err(SettingsError(format!(
                        "config file {} ({source}): {e}",
                        path.display()
                    )));
                }
            },
        };
        Ok(ConfigFile {
            path,
            source,
            found,
        })
    }
}

/// Whoever can write the config file chooses the store: only its owner (this user or root)
/// may.
#[cfg(unix)]
pub(super) fn check_owner(metadata: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;

    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me && metadata.uid() != 0 {
        return Err(format!(
            "is owned by user {}, not by you ({me}) or root",
            metadata.uid()
        ));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(format!(
            "is writable by others (mode {:o}); run: chmod go-w on it",
            metadata.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn check_owner(_metadata: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}
