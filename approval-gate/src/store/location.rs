//! Where a store is: a directory or a PostgreSQL URL, parsed from what the builder,
//! `--store` and `APPROVAL_GATE_STORE` name, and shown without a password.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Which store a gate uses: what the builder, `--store` and `APPROVAL_GATE_STORE` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Location {
    /// The directory store at this path (a path, or a `file:` URL).
    Dir(PathBuf),
    /// The PostgreSQL store at this `postgres://` or `postgresql://` URL, as given:
    /// libpq's environment variables (`PGHOST`, `PGUSER`, `PGSSLMODE`, …) fill in what it leaves
    /// out when it is opened. Needs the `postgres` feature to open.
    Postgres(String),
}

impl Location {
    /// Reads a store location: `file:///abs/path`, `file:relative/path`, a plain path, or a
    /// `postgres://` / `postgresql://` URL.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `store`) for an empty text, a URL scheme this build
    /// has no store for, a `file:` URL with a host or with `?`/`#`, or percent-escapes that
    /// are not UTF-8.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let invalid = |problem: String| Error::InvalidInput {
            field: "store",
            problem,
        };
        if text.is_empty() {
            return Err(invalid("is empty: give a directory or a file: URL".into()));
        }
        let Some((scheme, rest)) = split_scheme(text) else {
            return Ok(Self::Dir(PathBuf::from(text)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => {
                // The URL's own syntax is checked here, so a bad one is a bad setting before
                // anything opens; what the environment adds is checked when it is opened.
                #[cfg(feature = "postgres")]
                super::pg::conninfo::check_url(text).map_err(invalid)?;
                Ok(Self::Postgres(text.to_owned()))
            }
            "file" => {
                let path = match rest.strip_prefix("//") {
                    Some(authority_and_path) => {
                        let (host, path) = authority_and_path
                            .find('/')
                            .map_or((authority_and_path, ""), |at| {
                                authority_and_path.split_at(at)
                            });
                        if !(host.is_empty() || host == "localhost") {
                            return Err(invalid(format!(
                                "names the host {host:?}: a file: store is on this machine"
                            )));
                        }
                        path
                    }
                    None => rest,
                };
                if path.is_empty() {
                    return Err(invalid("a file: URL without a path".into()));
                }
                if path.contains(['?', '#']) {
                    return Err(invalid(
                        "a file: URL cannot have a query or fragment".into(),
                    ));
                }
                Ok(Self::Dir(PathBuf::from(
                    super::percent::decode_strict(path).map_err(invalid)?,
                )))
            }
            other => Err(invalid(format!(
                "the scheme {other:?} names no store this build has (use a path or a file: URL)"
            ))),
        }
    }
}

/// `scheme:rest` if `text` starts with a URL scheme (RFC 3986: a letter, then letters,
/// digits, `+`, `-`, `.`) of at least two characters, so `C:` style paths do not count.
fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = scheme.len() >= 2
        && first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some((scheme, rest))
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

/// `url` with the password of its user information (`user:password@`) replaced by `***`, so
/// a location can be shown and logged.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Self::Dir(path)
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Self::Dir(path.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_a_postgres_location_shown_without_its_password() {
        let location = Location::parse("postgres://alice:s3cret@db.internal:5433/approvals")
            .expect("a PostgreSQL store");
        assert!(matches!(location, Location::Postgres(_)));
        assert_eq!(
            location.to_string(),
            "postgres://alice:***@db.internal:5433/approvals"
        );
        assert!(matches!(
            Location::parse("postgresql://db.internal/approvals"),
            Ok(Location::Postgres(_))
        ));
        // Without a password there is nothing to hide.
        assert_eq!(
            Location::parse("postgres://bob@db/a?sslmode=verify-full")
                .unwrap()
                .to_string(),
            "postgres://bob@db/a?sslmode=verify-full"
        );
    }

    #[test]
    fn file_urls_and_plain_paths_name_directories() {
        let dir = |text: &str| match Location::parse(text) {
            Ok(Location::Dir(path)) => path,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            dir("file:///srv/approvals"),
            PathBuf::from("/srv/approvals")
        );
        assert_eq!(dir("file://localhost/srv/a"), PathBuf::from("/srv/a"));
        assert_eq!(dir("file:relative/dir"), PathBuf::from("relative/dir"));
        assert_eq!(dir("file:///a%20b/%C3%A9"), PathBuf::from("/a b/\u{e9}"));
        assert_eq!(dir("FILE:///x"), PathBuf::from("/x"));
        // Not a scheme: one letter (a drive), a digit first, a character a scheme cannot have.
        for plain in ["C:/x", "1x:/y", "a_b:/c", "/abs/path", "rel"] {
            assert_eq!(dir(plain), PathBuf::from(plain));
        }
        for bad in [
            "",
            "file://elsewhere/x",
            "file://",
            "file:///x?y",
            "file:///x#y",
            "file:///a%zz",
            "file:///a%2",
            "file:///%ff",
            "file:///a%+1",
            "ftp://host/x",
        ] {
            assert!(
                matches!(
                    Location::parse(bad),
                    Err(Error::InvalidInput { field: "store", .. })
                ),
                "{bad:?} must be refused"
            );
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_url_with_a_bad_option_is_refused_before_anything_opens() {
        for bad in [
            "postgres://alice:s3cret@db/approvals?sslmode=sometimes",
            "postgres://alice:s3cret@db/approvals?nonsense=1",
        ] {
            let error = Location::parse(bad).expect_err(bad);
            assert!(
                matches!(&error, Error::InvalidInput { field: "store", .. }),
                "{error:?}"
            );
            assert!(!error.to_string().contains("s3cret"), "{error}");
        }
    }
}
