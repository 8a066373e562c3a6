//! The operator's settings: which store the binaries open, and the limits it enforces.
//!
//! Limits and the default time to live are the operator's, never the agent's (SPEC §9): both
//! binaries read them here, once, from their own command line, environment and config file,
//! and the MCP server takes none of them from a tool call. A request's own `ttl_seconds`
//! still applies, within the library's fixed range; the operator's default is for requests
//! that do not say.
//!
//! Each setting comes from the first of these that gives it, and remembers which:
//!
//! | setting | flag | environment | config file key | default |
//! |---|---|---|---|---|
//! | store | `--store`, `--dir` | `APPROVAL_GATE_STORE`, then `APPROVAL_GATE_DIR` | `store` | `~/.approval-gate` |
//! | queue cap | | `APPROVAL_GATE_MAX_PENDING` | `max_pending` | 100 |
//! | creation limit | | `APPROVAL_GATE_MAX_REQUESTS` | `max_requests` | 10 000 |
//! | default TTL | | `APPROVAL_GATE_DEFAULT_TTL` | `default_ttl` | 1 h |
//! | approvers | `--approvers` | `APPROVAL_GATE_APPROVERS` | `approvers` | none |
//! | quorum | `--quorum` | `APPROVAL_GATE_QUORUM` | `[quorum]` | none |
//! | signing key | `approve --key` | `APPROVAL_GATE_SIGNING_KEY` | `signing_key` | none |
//! | signer | | `APPROVAL_GATE_SSH_KEYGEN` | `ssh_keygen` | `/usr/bin/ssh-keygen` |
//!
//! The approvers (an OpenSSH `allowed_signers` file) and the quorum (`payments.*=2,deploy.*=3`
//! in the flag and the variable, a `[quorum]` table of `"payments.*" = 2` in the file, each
//! source whole, never merged) make the [`Policy`] both binaries give their gate (SPEC §11):
//! under it an approval counts only with the signatures of enough distinct trusted approvers.
//! A quorum without approvers is refused, since it could never be met. Whoever can write the
//! approvers file chooses who may approve, so it must be owned by this user or root and not
//! writable by others, as the config file.
//!
//! The config file is `--config`, else `APPROVAL_GATE_CONFIG`, else
//! `$XDG_CONFIG_HOME/approval-gate/config.toml`, else `~/.config/approval-gate/config.toml`;
//! only the default one may be missing. Every value given is checked, even one that a
//! source higher up overrides: a mistake is reported, never hidden until the day the override
//! goes away. An empty flag is refused, and so is a variable set but empty wherever it would
//! be used: `APPROVAL_GATE_DIR=` must not quietly mean `~/.approval-gate`, since a script that
//! meant a store of its own but built an empty path would read and decide another's requests.
//!
//! Resolving reads the environment, the config file and the approvers file and nothing else:
//! it opens and creates nothing, so `approval-gate config` can show the settings of a store that does not
//! exist yet, and a bad setting stops a binary before it touches the store.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use approval_gate::limits::{
    DEFAULT_MAX_PENDING, DEFAULT_MAX_REQUESTS, DEFAULT_TTL, MAX_QUORUM, MAX_TTL, MIN_TTL,
};
use approval_gate::{Gate, Limits, Location, Policy};

/// The store, as `--store` reads it: a directory, a `file:` URL or a `postgres://` URL.
pub(crate) const STORE_ENV: &str = "APPROVAL_GATE_STORE";
/// The store directory; `APPROVAL_GATE_STORE` wins when both are set.
pub(crate) const DIR_ENV: &str = "APPROVAL_GATE_DIR";
/// The config file, instead of the default one.
pub(crate) const CONFIG_ENV: &str = "APPROVAL_GATE_CONFIG";
/// The cap of the pending queue.
pub(crate) const MAX_PENDING_ENV: &str = "APPROVAL_GATE_MAX_PENDING";
/// The cap of the requests kept in the live store.
pub(crate) const MAX_REQUESTS_ENV: &str = "APPROVAL_GATE_MAX_REQUESTS";
/// The time to live of a request that does not say, such as `30m`.
pub(crate) const DEFAULT_TTL_ENV: &str = "APPROVAL_GATE_DEFAULT_TTL";
/// The trusted approvers: an OpenSSH `allowed_signers` file.
pub(crate) const APPROVERS_ENV: &str = "APPROVAL_GATE_APPROVERS";
/// The quorum table, such as `payments.*=2,deploy.*=3`.
pub(crate) const QUORUM_ENV: &str = "APPROVAL_GATE_QUORUM";
/// The key `approve` signs with (a private key, or the `.pub` of a key in ssh-agent).
pub(crate) const SIGNING_KEY_ENV: &str = "APPROVAL_GATE_SIGNING_KEY";
/// The `ssh-keygen` that signs, by absolute path: never one found through `PATH`.
pub(crate) const SSH_KEYGEN_ENV: &str = "APPROVAL_GATE_SSH_KEYGEN";

/// Why an empty store directory is refused, and what to do instead.
pub(crate) const EMPTY_DIR: &str = "the store directory is empty (from --dir or \
    APPROVAL_GATE_DIR); give a directory, or unset APPROVAL_GATE_DIR and leave out --dir to use \
    ~/.approval-gate";

/// Longer than any honest config file; read no further.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// The keys a config file may hold, in the order of the settings, each with how its value is
/// read: every key given is checked when the file is read, even one a flag or a variable
/// overrides.
const KEYS: [(&str, &dyn CheckFile); 8] = [
    ("store", &LOCATION),
    ("max_pending", &COUNT),
    ("max_requests", &COUNT),
    ("default_ttl", &TTL),
    ("approvers", &FILE),
    ("quorum", &QUORUM),
    ("signing_key", &FILE),
    ("ssh_keygen", &FILE),
];

/// Operation patterns and the distinct approvers each needs, in the order given.
type Quorum = Vec<(String, u32)>;

/// The flags both binaries take. The help text is given as attributes: it is terminal text,
/// not rustdoc.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Flags {
    #[arg(
        long,
        global = true,
        value_name = "STORE",
        conflicts_with = "dir",
        help = "The approval store: a directory, a file: URL or a postgres:// URL \
                [default: $APPROVAL_GATE_STORE, else $APPROVAL_GATE_DIR, else `store` in the \
                config file, else ~/.approval-gate]"
    )]
    pub(crate) store: Option<String>,

    #[arg(
        long,
        global = true,
        value_name = "DIR",
        value_hint = clap::ValueHint::DirPath,
        value_parser = path_allowing_empty(),
        help = "The store directory (--store with a plain path)"
    )]
    pub(crate) dir: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        value_parser = path_allowing_empty(),
        help = "The operator's config file [default: $APPROVAL_GATE_CONFIG, else \
                $XDG_CONFIG_HOME/approval-gate/config.toml, else \
                ~/.config/approval-gate/config.toml]"
    )]
    pub(crate) config: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        value_parser = path_allowing_empty(),
        help = "The trusted approvers: an OpenSSH allowed_signers file; approvals must then be \
                signed [default: $APPROVAL_GATE_APPROVERS, else `approvers` in the config file]"
    )]
    pub(crate) approvers: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "PATTERN=N,...",
        help = "How many distinct approvers operations need, such as \
                'payments.*=2,deploy.*=3,*=1' (a `*` entry is required; needs approvers) \
                [default: $APPROVAL_GATE_QUORUM, else [quorum] in the config file, else 1]"
    )]
    pub(crate) quorum: Option<String>,
}

/// A path, the empty one included: it is refused when the settings are resolved, with the
/// reason, rather than by clap with a generic "a value is required".
fn path_allowing_empty() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A command-line flag, such as `--store`.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// The config file at this path.
    File(PathBuf),
    /// Nothing set it.
    Default,
}

impl Source {
    /// `flag`, `env`, `file` or `default`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Flag(_) => "flag",
            Self::Env(_) => "env",
            Self::File(_) => "file",
            Self::Default => "default",
        }
    }

    /// The flag, variable or file; `None` for a default.
    pub(crate) fn name(&self) -> Option<String> {
        match self {
            Self::Flag(name) | Self::Env(name) => Some((*name).to_owned()),
            Self::File(path) => Some(path.to_string_lossy().into_owned()),
            Self::Default => None,
        }
    }

    /// A problem of the value from here, after the flag's or the variable's name, or the
    /// file's path: the one way every setting's error says where it came from.
    fn error(&self, problem: &dyn fmt::Display) -> SettingsError {
        SettingsError(match self {
            Self::Flag(name) | Self::Env(name) => format!("{name}: {problem}"),
            Self::File(path) => format!("config file {}: {problem}", path.display()),
            Self::Default => problem.to_string(),
        })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} {name}", self.kind()),
            None => f.write_str(self.kind()),
        }
    }
}

/// A setting's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting<T> {
    pub(crate) value: T,
    pub(crate) source: Source,
}

impl<T> Setting<T> {
    fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}

/// Which config file was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigFile {
    /// `None` when there is no home directory to look in.
    pub(crate) path: Option<PathBuf>,
    /// `--config`, `APPROVAL_GATE_CONFIG` or the default.
    pub(crate) source: Source,
    /// Whether the file exists (only the default one may be missing).
    pub(crate) found: bool,
}

/// Every effective setting, each with its source.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) config: ConfigFile,
    pub(crate) store: Setting<Location>,
    pub(crate) max_pending: Setting<usize>,
    pub(crate) max_requests: Setting<usize>,
    pub(crate) default_ttl: Setting<Duration>,
    /// The `allowed_signers` file, if any.
    pub(crate) approvers: Setting<Option<PathBuf>>,
    /// Operation patterns and the distinct approvers each needs, in the order given.
    pub(crate) quorum: Setting<Vec<(String, u32)>>,
    /// The key `approve` signs with, unless `--key` names another.
    pub(crate) signing_key: Setting<Option<PathBuf>>,
    /// The `ssh-keygen` that signs: an absolute path, the system's unless set.
    pub(crate) ssh_keygen: Setting<Option<PathBuf>>,
    /// The policy the approvers and the quorum make, read and checked when resolving.
    pub(crate) policy: Option<Policy>,
}

/// A setting that cannot be used: a usage error, and nothing was opened.
#[derive(Debug)]
pub(crate) struct SettingsError(String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The settings from `flags`, this process's environment and the config file.
    pub(crate) fn resolve(flags: &Flags) -> Result<Self, SettingsError> {
        Self::resolve_with(flags, &|name| std::env::var_os(name))
    }

    /// The settings from `flags`, the environment `env` gives, and the config file: each one
    /// from its layers, highest first, else its default.
    fn resolve_with(
        flags: &Flags,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Self, SettingsError> {
        let mut p = Places { env, file: None };
        let config = p.config_file(flags)?;
        if let (Some(path), true) = (&config.path, config.found) {
            p.file = Some((path.clone(), read_file(path)?));
        }
        let home_store = home(env).map(|home| Location::Dir(home.join(".approval-gate")));
        let no_home = || {
            SettingsError(format!(
                "no store: HOME is not set; give --store, {STORE_ENV}, {DIR_ENV} or `store` in \
                 the config file"
            ))
        };
        let mut settings = Self {
            config,
            store: resolve(
                [
                    flag("--store", flags.store.as_ref(), &LOCATION),
                    store_dir(Source::Flag("--dir"), flags.dir.as_ref()),
                    p.var(STORE_ENV, &LOCATION),
                    store_dir(Source::Env(DIR_ENV), env(DIR_ENV).as_ref()),
                    p.file("store", &LOCATION),
                ],
                home_store.ok_or_else(no_home),
            )?,
            max_pending: p.get(MAX_PENDING_ENV, "max_pending", &COUNT, DEFAULT_MAX_PENDING)?,
            max_requests: p.get(
                MAX_REQUESTS_ENV,
                "max_requests",
                &COUNT,
                DEFAULT_MAX_REQUESTS,
            )?,
            default_ttl: p.get(DEFAULT_TTL_ENV, "default_ttl", &TTL, DEFAULT_TTL)?,
            approvers: resolve(
                [
                    flag("--approvers", flags.approvers.as_ref(), &FILE),
                    p.var(APPROVERS_ENV, &FILE),
                    p.file("approvers", &FILE),
                ],
                Ok(None),
            )?,
            quorum: resolve(
                [
                    flag("--quorum", flags.quorum.as_ref(), &QUORUM),
                    p.var(QUORUM_ENV, &QUORUM).refused_empty(),
                    p.file("quorum", &QUORUM),
                ],
                Ok(Vec::new()),
            )?,
            signing_key: p.get(SIGNING_KEY_ENV, "signing_key", &FILE, None)?,
            ssh_keygen: p.get(SSH_KEYGEN_ENV, "ssh_keygen", &FILE, None)?,
            policy: None,
        };
        if let Some(program) = &settings.ssh_keygen.value {
            approval_gate::SshKeygen::at(program).map_err(|e| {
                let source = &settings.ssh_keygen.source;
                SettingsError(format!("{SSH_KEYGEN_ENV} ({source}): {e}"))
            })?;
        }
        settings.policy = policy(&settings.approvers, &settings.quorum)?;
        Ok(settings)
    }

    /// The `ssh-keygen` that signs approvals: the configured absolute path, else the
    /// system's. Never one found through `PATH`.
    pub(crate) fn signer(&self) -> approval_gate::SshKeygen {
        self.ssh_keygen
            .value
            .as_ref()
            .and_then(|program| approval_gate::SshKeygen::at(program).ok())
            .unwrap_or_default()
    }

    /// The limits the gate enforces.
    pub(crate) fn limits(&self) -> Limits {
        Limits::default()
            .max_pending(self.max_pending.value)
            .max_requests(self.max_requests.value)
            .default_ttl(self.default_ttl.value)
    }

    /// Opens (and, for a directory store, creates) the store with these limits.
    pub(crate) fn open(&self) -> Result<Gate, approval_gate::Error> {
        let builder = Gate::builder()
            .store(self.store.value.clone())
            .limits(self.limits());
        match &self.policy {
            Some(policy) => builder.policy(policy.clone()),
            None => builder,
        }
        .open()
    }
}

/// One place a setting may come from (a flag, a variable, the config file), and what it
/// gives there if anything, read and checked as the layer is made.
struct Layer<T>(Source, Option<Given<T>>);

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

/// The value of the highest layer that gives one, else `default` (refused only if used).
/// The lowest wrong value is reported first, then what the winner gives.
fn resolve<T, const N: usize>(
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
    fn refused_empty(self) -> Self {
        match self.1 {
            Some(Given::Unusable(error)) => Self(self.0, Some(Given::Bad(error))),
            given => Self(self.0, given),
        }
    }
}

/// The flag `name`, if given, read by `read`: an empty one too, which `read` refuses.
fn flag<T>(name: &'static str, text: Option<&impl AsRef<OsStr>>, read: &Read<T>) -> Layer<T> {
    let source = Source::Flag(name);
    let given = text.map(|text| Given::read(&source, (read.text)(text.as_ref())));
    Layer(source, given)
}

/// `--dir` or `APPROVAL_GATE_DIR`: a directory, refused empty where it would be used, with
/// the one message that names both.
fn store_dir(source: Source, dir: Option<&impl AsRef<OsStr>>) -> Layer<Location> {
    let given = dir.map(|dir| match dir.as_ref() {
        dir if dir.is_empty() => Given::Unusable(SettingsError(EMPTY_DIR.into())),
        dir => Given::Value(Location::Dir(dir.into())),
    });
    Layer(source, given)
}

/// Where settings come from besides the flags: the environment, and the config file once it
/// is read (its path and its table, checked whole).
struct Places<'a> {
    env: &'a dyn Fn(&str) -> Option<OsString>,
    file: Option<(PathBuf, toml::Table)>,
}

impl Places<'_> {
    /// The variable `name`, if set, read by `read`; refused empty where it would be used.
    fn var<T>(&self, name: &'static str, read: &Read<T>) -> Layer<T> {
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
    fn file<T>(&self, key: &str, read: &Read<T>) -> Layer<T> {
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
    fn get<T>(
        &self,
        name: &'static str,
        key: &str,
        read: &Read<T>,
        default: T,
    ) -> Result<Setting<T>, SettingsError> {
        resolve([self.var(name, read), self.file(key, read)], Ok(default))
    }

    /// The config file: `--config`, else `APPROVAL_GATE_CONFIG`, else the default one, which
    /// alone may be missing.
    fn config_file(&self, flags: &Flags) -> Result<ConfigFile, SettingsError> {
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

/// How a setting's value is read, from a flag's or a variable's text or from the config file.
struct Read<T> {
    /// What an empty variable is told to do instead.
    empty: &'static str,
    /// Reads a flag's or a variable's text (a flag's even when empty).
    text: fn(&OsStr) -> Result<T, String>,
    /// Reads the config file's value.
    file: fn(&toml::Value) -> Result<T, String>,
}

/// The store: a path, a `file:` URL or a `postgres://` URL; in the file, not a relative path.
const LOCATION: Read<Location> = Read {
    empty: "give a directory or a file: URL, or unset it",
    text: |text| parse_location(utf8(text)?),
    file: |value| {
        let text = string(value, "a path or file: URL in a string")?;
        match parse_location(text)? {
            Location::Dir(dir) if dir.is_relative() => Err(format!(
                "{text:?} is relative: give an absolute path or a file:/// URL (a relative one \
                 would depend on where each binary starts)"
            )),
            location => Ok(location),
        }
    },
};
/// A limit: a whole number from 1 up.
const COUNT: Read<usize> = Read {
    empty: "give a whole number, or unset it",
    text: |text| {
        let text = utf8(text)?;
        let number = text.parse().ok().filter(|&n| n >= 1);
        number.ok_or_else(|| format!("{text:?} is not a whole number from 1 up"))
    },
    file: |value| {
        let number = value
            .as_integer()
            .ok_or_else(|| expected("a whole number", value))?;
        let count = usize::try_from(number).ok().filter(|&n| n >= 1);
        count.ok_or_else(|| format!("{number} is not a whole number from 1 up"))
    },
};
/// The default time to live, such as `30m`.
const TTL: Read<Duration> = Read {
    empty: "give a duration such as 30m, or unset it",
    text: |text| parse_ttl(utf8(text)?),
    file: |value| parse_ttl(string(value, "a duration in a string, such as \"30m\"")?),
};
/// The quorum table: `payments.*=2,deploy.*=3`, or a `[quorum]` table in the file.
const QUORUM: Read<Quorum> = Read {
    empty: "give a list such as payments.*=2,deploy.*=3, or unset it",
    text: |text| parse_quorum(utf8(text)?),
    file: |value| {
        let table = value.as_table().ok_or_else(|| {
            let what = "a table of operation patterns, such as [quorum] \"payments.*\" = 2";
            expected(what, value)
        })?;
        let entry = |(pattern, n): (&String, &toml::Value)| {
            let number = n
                .as_integer()
                .ok_or_else(|| format!("{pattern:?}: {}", expected("a whole number", n)))?;
            Ok((
                pattern.clone(),
                quorum_number(pattern, &number.to_string())?,
            ))
        };
        table.iter().map(entry).collect()
    },
};
/// A file; in the config file, by absolute path.
const FILE: Read<Option<PathBuf>> = Read {
    empty: "name a file, or unset it",
    text: |text| match text {
        _ if text.is_empty() => Err("is empty: give a file".into()),
        _ => Ok(Some(text.into())),
    },
    file: |value| match string(value, "a path in a string")? {
        text if Path::new(text).is_absolute() => Ok(Some(text.into())),
        text => Err(format!(
            "{text:?} is relative: give an absolute path (a relative one would depend on \
             where each binary starts)"
        )),
    },
};
/// The config file, which is not a key of itself.
const CONFIG: Read<Option<PathBuf>> = Read {
    empty: "name a file, or unset it to use the default one",
    ..FILE
};

/// A key's check, for [`KEYS`].
trait CheckFile {
    /// Reads `value` only to check it.
    fn check(&self, value: &toml::Value) -> Result<(), String>;
}

impl<T> CheckFile for Read<T> {
    fn check(&self, value: &toml::Value) -> Result<(), String> {
        (self.file)(value).map(drop)
    }
}

/// The string `value` holds, else what it should have been.
fn string<'a>(value: &'a toml::Value, what: &str) -> Result<&'a str, String> {
    value.as_str().ok_or_else(|| expected(what, value))
}

fn expected(what: &str, value: &toml::Value) -> String {
    format!("expected {what}, got {} {value}", value.type_str())
}

/// `$XDG_CONFIG_HOME/approval-gate/config.toml` (an absolute `XDG_CONFIG_HOME` only, as the
/// XDG spec says), else `$HOME/.config/approval-gate/config.toml`.
fn default_config_path(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| home(env).map(|home| home.join(".config")))?;
    Some(base.join("approval-gate").join("config.toml"))
}

/// The config file's table, each key known and its value checked.
fn read_file(path: &Path) -> Result<toml::Table, SettingsError> {
    let fail = |problem: &dyn fmt::Display| Source::File(path.to_owned()).error(problem);
    let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
    let metadata = file.metadata().map_err(|e| fail(&e))?;
    if !metadata.is_file() {
        return Err(fail(&"is not a regular file"));
    }
    check_owner(&metadata).map_err(|problem| fail(&problem))?;
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
        let Some((_, read)) = KEYS.iter().find(|(known, _)| key == known) else {
            let keys = KEYS.map(|(key, _)| key).join(", ");
            return Err(fail(&format!("unknown key {key:?}: the keys are {keys}")));
        };
        read.check(value)
            .map_err(|problem| fail(&format!("{key}: {problem}")))?;
    }
    Ok(table)
}

/// Whoever can write the config file chooses the store: only its owner (this user or root)
/// may.
#[cfg(unix)]
fn check_owner(metadata: &std::fs::Metadata) -> Result<(), String> {
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
fn check_owner(_metadata: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

/// `payments.*=2,deploy.*=3`: patterns and numbers, in the order given.
fn parse_quorum(text: &str) -> Result<Quorum, String> {
    let mut quorum = Vec::new();
    for entry in text.split(',') {
        let entry = entry.trim();
        let Some((pattern, number)) = entry.rsplit_once('=') else {
            return Err(format!(
                "{entry:?} is not PATTERN=N; write it as payments.*=2,deploy.*=3"
            ));
        };
        let pattern = pattern.trim();
        quorum.push((pattern.to_owned(), quorum_number(pattern, number.trim())?));
    }
    Ok(quorum)
}

/// The number of approvers `pattern` needs, from 1 to the library's limit.
fn quorum_number(pattern: &str, text: &str) -> Result<u32, String> {
    if pattern.is_empty() {
        return Err(format!(
            "an empty operation pattern (before ={text}): name the operations, such as payments.*"
        ));
    }
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_QUORUM).contains(n))
        .ok_or_else(|| {
            format!("{pattern}: {text:?} is not a number of approvers from 1 to {MAX_QUORUM}")
        })
}

/// The policy of the approvers file and the quorum; none without approvers.
fn policy(
    approvers: &Setting<Option<PathBuf>>,
    quorum: &Setting<Quorum>,
) -> Result<Option<Policy>, SettingsError> {
    let Some(path) = &approvers.value else {
        if quorum.value.is_empty() {
            return Ok(None);
        }
        return Err(SettingsError(format!(
            "quorum ({}) needs trusted approvers to count: give --approvers, {APPROVERS_ENV} \
             or `approvers` in the config file (an OpenSSH allowed_signers file)",
            quorum.source
        )));
    };
    let fail = |problem: &dyn fmt::Display| {
        SettingsError(format!(
            "approvers file {} ({}): {problem}",
            path.display(),
            approvers.source
        ))
    };
    // Whoever can write it chooses who may approve.
    let metadata = std::fs::metadata(path).map_err(|e| fail(&e))?;
    if !metadata.is_file() {
        return Err(fail(&"is not a regular file"));
    }
    check_owner(&metadata).map_err(|problem| fail(&problem))?;
    let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
    let mut policy = Policy::from_allowed_signers(&text).map_err(|e| fail(&library(e)))?;
    let quorum_error = |e| SettingsError(format!("quorum ({}): {}", quorum.source, library(e)));
    for (pattern, n) in &quorum.value {
        policy = policy.require(pattern, *n).map_err(quorum_error)?;
    }
    // A table says what the operations it does not name need, or nothing starts.
    policy.check_quorum_table().map_err(quorum_error)?;
    Ok(Some(policy))
}

/// The library's problem, without the field name it was given.
fn library(error: approval_gate::Error) -> String {
    match error {
        approval_gate::Error::InvalidInput { problem, .. } => problem,
        other => other.to_string(),
    }
}

/// A store location, with the library's problem as the message.
fn parse_location(text: &str) -> Result<Location, String> {
    Location::parse(text).map_err(library)
}

/// A default TTL such as `30m` or `2h 30m`: whole seconds, within the library's range.
fn parse_ttl(text: &str) -> Result<Duration, String> {
    let ttl = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration such as \"30m\" or \"2h\": {e}"))?;
    if ttl.subsec_nanos() != 0 {
        return Err(format!("{text:?} is not a whole number of seconds"));
    }
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(format!(
            "{text:?} is outside {} to {}",
            humantime::format_duration(MIN_TTL),
            humantime::format_duration(MAX_TTL)
        ));
    }
    Ok(ttl)
}

/// `$HOME`, unless unset or empty.
fn home(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// The text of a flag or a variable, which must be UTF-8 to be read as more than a path.
fn utf8(text: &OsStr) -> Result<&str, String> {
    text.to_str().ok_or_else(|| "is not UTF-8".to_owned())
}

#[cfg(test)]
mod tests;
