//! Secrets (webhook keys, SMTP passwords, tokens): read from a file or the environment, never
//! from the command line or the config file itself, and never printed.

use std::fmt;
use std::path::PathBuf;

/// Longer than any honest secret; a file bigger than this is refused.
const MAX_SECRET_BYTES: u64 = 16 * 1024;

/// A secret's value. Its `Debug` shows only that it is one.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Where a secret is read from, as the config file names it: `{ file = "PATH" }` or
/// `{ env = "VAR" }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretSource {
    /// A file holding the secret (one trailing newline is dropped).
    File(PathBuf),
    /// An environment variable holding it.
    Env(String),
}

impl SecretSource {
    /// Reads a `{ file = "PATH" }` or `{ env = "VAR" }` value; a plain string (the secret
    /// itself written in the config file) is refused.
    pub(crate) fn from_toml(value: &toml::Value) -> Result<Self, String> {
        let table = value.as_table().ok_or_else(|| {
            "must be { file = \"PATH\" } or { env = \"VAR\" }: a secret is never written in the \
             config file itself"
                .to_owned()
        })?;
        match (table.get("file"), table.get("env"), table.len()) {
            (Some(toml::Value::String(path)), None, 1) if !path.is_empty() => {
                Ok(Self::File(PathBuf::from(path)))
            }
            (None, Some(toml::Value::String(var)), 1) if !var.is_empty() => {
                Ok(Self::Env(var.clone()))
            }
            _ => Err("must be { file = \"PATH\" } or { env = \"VAR\" }, one of the two".to_owned()),
        }
    }

    /// The secret, read now. The error names where it was looked for, never its value.
    pub(crate) fn read(&self) -> Result<Secret, String> {
        let text = match self {
            Self::File(path) => {
                use std::io::Read as _;
                let file = std::fs::File::open(path)
                    .map_err(|e| format!("cannot read the secret file {}: {e}", path.display()))?;
                let mut text = String::new();
                file.take(MAX_SECRET_BYTES + 1)
                    .read_to_string(&mut text)
                    .map_err(|e| format!("cannot read the secret file {}: {e}", path.display()))?;
                if text.len() as u64 > MAX_SECRET_BYTES {
                    return Err(format!(
                        "the secret file {} is over {MAX_SECRET_BYTES} bytes",
                        path.display()
                    ));
                }
                text.strip_suffix('\n')
                    .map_or(&text[..], |t| t.strip_suffix('\r').unwrap_or(t))
                    .to_owned()
            }
            Self::Env(var) => std::env::var(var)
                .map_err(|_| format!("the environment variable {var} is not set (or not UTF-8)"))?,
        };
        if text.is_empty() {
            return Err(format!("the secret from {self} is empty"));
        }
        Ok(Secret(text))
    }
}

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "the file {}", path.display()),
            Self::Env(var) => write!(f, "${var}"),
        }
    }
}

impl Secret {
    /// The value, for the one place that sends it (a header, an HMAC key, an SMTP login).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_written_in_the_config_file_is_refused() {
        let value: toml::Value = toml::Value::String("hunter2".into());
        let error = SecretSource::from_toml(&value).unwrap_err();
        assert!(
            error.contains("never written in the config file"),
            "{error}"
        );
    }

    #[test]
    fn a_file_secret_loses_one_trailing_newline_and_never_shows_in_debug() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "s3cret\n").unwrap();
        let table: toml::Value =
            toml::from_str(&format!("file = {:?}", path.to_str().unwrap())).unwrap();
        let secret = SecretSource::from_toml(&table).unwrap().read().unwrap();
        assert_eq!(secret.expose(), "s3cret");
        assert!(!format!("{secret:?}").contains("s3cret"));
    }

    #[test]
    fn an_empty_or_missing_secret_is_an_error_naming_its_source() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "\n").unwrap();
        let error = SecretSource::File(path.clone()).read().unwrap_err();
        assert!(error.contains("empty"), "{error}");
        let error = SecretSource::Env("APPROVAL_GATE_TEST_UNSET_SECRET".into())
            .read()
            .unwrap_err();
        assert!(error.contains("APPROVAL_GATE_TEST_UNSET_SECRET"), "{error}");
    }
}
