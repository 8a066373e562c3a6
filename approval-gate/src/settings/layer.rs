//! The one layer type and the one resolver every setting goes through: a setting is its
//! layers, highest first (a flag, a variable, the config file), and a default.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::Location;

use super::read::Read;
use super::{EMPTY_DIR, Setting, SettingsError, Source};

/// One place a setting may come from (a flag, a variable, the config file), and what it
/// gives there if anything, read and checked as the layer is made.
pub(super) struct Layer<T>(Source, Option<Given<T>>);

/// What a layer gives.
enum Given<T> {
    /// A value, read and checked.
    Value(T),
    /// A wrong value: refused even where a higher layer overrides it, so that a mistake is
    /// never hidden until the day the override goes away.
    Bad(SettingsError),
    /// Nothing to use, such as an empty variable: refused only where it would be used.
    Unusable(SettingsError),
}

/// The setting from the highest layer that gives anything, else from `default` (refused
/// only if used). Every layer was read and checked as it was made: one wrong wherever it
/// stands is refused first, the lowest first, as the config file is before any variable.
pub(super) fn resolve<T, const N: usize>(
    layers: [Layer<T>; N],
    default: Result<T, SettingsError>,
) -> Result<Setting<T>, SettingsError> {
    let mut winner = default.map(|value| Setting::new(value, Source::Default));
    for Layer(source, given) in layers.into_iter().rev() {
        winner = match given {
            None => continue,
            Some(Given::Value(value)) => Ok(Setting::new(value, source)),
            Some(Given::Unusable(error)) => Err(error),
            Some(Given::Bad(error)) => return Err(error),
        };
    }
    winner
}

impl<T> Given<T> {
    /// What was read from `source`: its value, or its problem, which says where it is.
    fn read(source: &Source, read: Result<T, String>) -> Self {
        read.map_or_else(|problem| Self::Bad(source.error(&problem)), Self::Value)
    }
}

impl<T> Layer<T> {
    /// Refused empty even where a higher layer overrides it, as `APPROVAL_GATE_QUORUM` is.
    pub(super) fn refused_empty(self) -> Self {
        match self.1 {
            Some(Given::Unusable(error)) => Self(self.0, Some(Given::Bad(error))),
            given => Self(self.0, given),
        }
    }
}

/// The flag `name`, if given, read by `read`: an empty one too, which `read` refuses.
pub(super) fn flag<T>(
    name: &'static str,
    text: Option<&impl AsRef<OsStr>>,
    read: &Read<T>,
) -> Layer<T> {
    let source = Source::Flag(name);
    let given = text.map(|text| Given::read(&source, (read.text)(text.as_ref())));
    Layer(source, given)
}

/// `--dir` or `APPROVAL_GATE_DIR`: a directory, refused empty where it would be used, with
/// the one message that names both.
pub(super) fn store_dir(source: Source, dir: Option<&impl AsRef<OsStr>>) -> Layer<Location> {
    let given = dir.map(|dir| match dir.as_ref() {
        dir if dir.is_empty() => Given::Unusable(SettingsError(EMPTY_DIR.into())),
        dir => Given::Value(Location::Dir(dir.into())),
    });
    Layer(source, given)
}

/// Where settings come from besides the flags: the environment, and the config file once it
/// is read (its path and its table, checked whole).
pub(super) struct Places<'a> {
    pub(super) env: &'a dyn Fn(&str) -> Option<OsString>,
    pub(super) file: Option<(PathBuf, toml::Table)>,
}

impl Places<'_> {
    /// The variable `name`, if set, read by `read`; refused empty where it would be used.
    pub(super) fn var<T>(&self, name: &'static str, read: &Read<T>) -> Layer<T> {
        let source = Source::Env(name);
        let given = (self.env)(name).map(|text| {
            if text.is_empty() {
                Given::Unusable(source.error(&format!("is empty: {}", read.empty)))
            } else {
                Given::read(&source, (read.text)(&text))
            }
        });
        Layer(source, given)
    }

    /// The config file's `key`, if it has it, read by `read`.
    pub(super) fn file<T>(&self, key: &str, read: &Read<T>) -> Layer<T> {
        let Some((path, table)) = &self.file else {
            return Layer(Source::Default, None);
        };
        let source = Source::File(path.clone());
        let given = table.get(key).map(|value| {
            let read = (read.file)(value).map_err(|problem| format!("{key}: {problem}"));
            Given::read(&source, read)
        });
        Layer(source, given)
    }

    /// A setting with no flag: the variable `name`, else the config file's `key`, else
    /// `default`.
    pub(super) fn get<T>(
        &self,
        name: &'static str,
        key: &str,
        read: &Read<T>,
        default: T,
    ) -> Result<Setting<T>, SettingsError> {
        resolve([self.var(name, read), self.file(key, read)], Ok(default))
    }
}
