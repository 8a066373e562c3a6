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

use std::ffi::OsString;
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
/// The keys a config file may hold.
const KEYS: [&str; 8] = [
    "store",
    "max_pending",
    "max_requests",
    "default_ttl",
    "approvers",
    "quorum",
    "signing_key",
    "ssh_keygen",
];

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

/// What the config file said, checked.
#[derive(Debug, Default)]
struct FileValues {
    store: Option<Location>,
    max_pending: Option<usize>,
    max_requests: Option<usize>,
    default_ttl: Option<Duration>,
    approvers: Option<PathBuf>,
    quorum: Option<Vec<(String, u32)>>,
    signing_key: Option<PathBuf>,
    ssh_keygen: Option<PathBuf>,
}

impl Settings {
    /// The settings from `flags`, this process's environment and the config file.
    pub(crate) fn resolve(flags: &Flags) -> Result<Self, SettingsError> {
        Self::resolve_with(flags, &|name| std::env::var_os(name))
    }

    /// The settings from `flags`, the environment `env` gives, and the config file.
    fn resolve_with(
        flags: &Flags,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Self, SettingsError> {
        let config = config_file(flags, env)?;
        let file = match (&config.path, config.found) {
            (Some(path), true) => read_file(path)?,
            _ => FileValues::default(),
        };
        let file_source = || Source::File(config.path.clone().unwrap_or_default());

        let store = resolve_store(flags, env, file.store.map(|s| (s, file_source())))?;
        let max_pending = resolve_limit(
            MAX_PENDING_ENV,
            env,
            file.max_pending.map(|n| (n, file_source())),
            DEFAULT_MAX_PENDING,
        )?;
        let max_requests = resolve_limit(
            MAX_REQUESTS_ENV,
            env,
            file.max_requests.map(|n| (n, file_source())),
            DEFAULT_MAX_REQUESTS,
        )?;
        let default_ttl = match env(DEFAULT_TTL_ENV) {
            Some(text) => Setting::new(
                parse_ttl(&given(DEFAULT_TTL_ENV, text, "a duration such as 30m")?)
                    .map_err(|problem| env_error(DEFAULT_TTL_ENV, &problem))?,
                Source::Env(DEFAULT_TTL_ENV),
            ),
            None => match file.default_ttl {
                Some(ttl) => Setting::new(ttl, file_source()),
                None => Setting::new(DEFAULT_TTL, Source::Default),
            },
        };
        let approvers = resolve_path(
            flags.approvers.as_ref().map(|p| (p, "--approvers")),
            APPROVERS_ENV,
            env,
            file.approvers.map(|p| (p, file_source())),
        )?;
        let quorum = resolve_quorum(flags, env, file.quorum.map(|q| (q, file_source())))?;
        let signing_key = resolve_path(
            None,
            SIGNING_KEY_ENV,
            env,
            file.signing_key.map(|p| (p, file_source())),
        )?;
        let ssh_keygen = resolve_path(
            None,
            SSH_KEYGEN_ENV,
            env,
            file.ssh_keygen.map(|p| (p, file_source())),
        )?;
        if let Some(program) = &ssh_keygen.value {
            approval_gate::SshKeygen::at(program).map_err(|e| {
                SettingsError(format!("{} ({}): {e}", SSH_KEYGEN_ENV, ssh_keygen.source))
            })?;
        }
        let policy = policy(&approvers, &quorum)?;
        Ok(Self {
            config,
            store,
            max_pending,
            max_requests,
            default_ttl,
            approvers,
            quorum,
            signing_key,
            ssh_keygen,
            policy,
        })
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

fn config_file(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<ConfigFile, SettingsError> {
    let (path, source) = if let Some(path) = &flags.config {
        if path.as_os_str().is_empty() {
            return Err(SettingsError("--config: is empty: give a file".into()));
        }
        (Some(path.clone()), Source::Flag("--config"))
    } else if let Some(path) = env(CONFIG_ENV) {
        if path.is_empty() {
            return Err(env_error(
                CONFIG_ENV,
                "is empty: name a file, or unset it to use the default one",
            ));
        }
        (Some(PathBuf::from(path)), Source::Env(CONFIG_ENV))
    } else {
        (default_config_path(env), Source::Default)
    };
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

/// `$XDG_CONFIG_HOME/approval-gate/config.toml` (an absolute `XDG_CONFIG_HOME` only, as the
/// XDG spec says), else `$HOME/.config/approval-gate/config.toml`.
fn default_config_path(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| home(env).map(|home| home.join(".config")))?;
    Some(base.join("approval-gate").join("config.toml"))
}

fn read_file(path: &Path) -> Result<FileValues, SettingsError> {
    let fail = |problem: &dyn fmt::Display| {
        SettingsError(format!("config file {}: {problem}", path.display()))
    };
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
    parse_table(&table).map_err(|problem| fail(&problem))
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

fn parse_table(table: &toml::Table) -> Result<FileValues, String> {
    let mut values = FileValues::default();
    for (key, value) in table {
        let bad = |problem: &str| format!("{key}: {problem}");
        match key.as_str() {
            "store" => {
                let text = value
                    .as_str()
                    .ok_or_else(|| bad(&expected("a path or file: URL in a string", value)))?;
                let location = parse_location(text).map_err(|problem| bad(&problem))?;
                if let Location::Dir(dir) = &location
                    && dir.is_relative()
                {
                    return Err(bad(&format!(
                        "{text:?} is relative: give an absolute path or a file:/// URL \
                         (a relative one would depend on where each binary starts)"
                    )));
                }
                values.store = Some(location);
            }
            "max_pending" | "max_requests" => {
                let number = value
                    .as_integer()
                    .ok_or_else(|| bad(&expected("a whole number", value)))?;
                let number = usize::try_from(number)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad(&format!("{number} is not a whole number from 1 up")))?;
                if key == "max_pending" {
                    values.max_pending = Some(number);
                } else {
                    values.max_requests = Some(number);
                }
            }
            "default_ttl" => {
                let text = value.as_str().ok_or_else(|| {
                    bad(&expected("a duration in a string, such as \"30m\"", value))
                })?;
                values.default_ttl = Some(parse_ttl(text).map_err(|problem| bad(&problem))?);
            }
            "approvers" | "signing_key" | "ssh_keygen" => {
                let text = value
                    .as_str()
                    .ok_or_else(|| bad(&expected("a path in a string", value)))?;
                let path = PathBuf::from(text);
                if !path.is_absolute() {
                    return Err(bad(&format!(
                        "{text:?} is relative: give an absolute path (a relative one would \
                         depend on where each binary starts)"
                    )));
                }
                match key.as_str() {
                    "approvers" => values.approvers = Some(path),
                    "signing_key" => values.signing_key = Some(path),
                    _ => values.ssh_keygen = Some(path),
                }
            }
            "quorum" => {
                let table = value.as_table().ok_or_else(|| {
                    bad(&expected(
                        "a table of operation patterns, such as [quorum] \"payments.*\" = 2",
                        value,
                    ))
                })?;
                let mut quorum = Vec::new();
                for (pattern, n) in table {
                    let number = n.as_integer().ok_or_else(|| {
                        bad(&format!("{pattern:?}: {}", expected("a whole number", n)))
                    })?;
                    let number = quorum_number(pattern, &number.to_string())
                        .map_err(|problem| bad(&problem))?;
                    quorum.push((pattern.clone(), number));
                }
                values.quorum = Some(quorum);
            }
            other => {
                return Err(format!(
                    "unknown key {other:?}: the keys are {}",
                    KEYS.join(", ")
                ));
            }
        }
    }
    Ok(values)
}

fn expected(what: &str, value: &toml::Value) -> String {
    format!("expected {what}, got {} {value}", value.type_str())
}

fn resolve_store(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<OsString>,
    file: Option<(Location, Source)>,
) -> Result<Setting<Location>, SettingsError> {
    // Every one given is checked, not only the one that wins; an empty one only if used.
    let from_env = match env(STORE_ENV) {
        Some(text) if text.is_empty() => Some(None),
        Some(text) => Some(Some(
            parse_location(&utf8(STORE_ENV, text)?)
                .map_err(|problem| env_error(STORE_ENV, &problem))?,
        )),
        None => None,
    };
    if let Some(text) = &flags.store {
        let location =
            parse_location(text).map_err(|problem| SettingsError(format!("--store: {problem}")))?;
        return Ok(Setting::new(location, Source::Flag("--store")));
    }
    if let Some(dir) = &flags.dir {
        if dir.as_os_str().is_empty() {
            return Err(SettingsError(EMPTY_DIR.into()));
        }
        return Ok(Setting::new(
            Location::Dir(dir.clone()),
            Source::Flag("--dir"),
        ));
    }
    match from_env {
        Some(Some(location)) => return Ok(Setting::new(location, Source::Env(STORE_ENV))),
        Some(None) => {
            return Err(env_error(
                STORE_ENV,
                "is empty: give a directory or a file: URL, or unset it",
            ));
        }
        None => {}
    }
    if let Some(dir) = env(DIR_ENV) {
        if dir.is_empty() {
            return Err(SettingsError(EMPTY_DIR.into()));
        }
        return Ok(Setting::new(
            Location::Dir(dir.into()),
            Source::Env(DIR_ENV),
        ));
    }
    if let Some((location, source)) = file {
        return Ok(Setting::new(location, source));
    }
    match home(env) {
        Some(home) => Ok(Setting::new(
            Location::Dir(home.join(".approval-gate")),
            Source::Default,
        )),
        None => Err(SettingsError(format!(
            "no store: HOME is not set; give --store, {STORE_ENV}, {DIR_ENV} or `store` in \
             the config file"
        ))),
    }
}

fn resolve_limit(
    name: &'static str,
    env: &dyn Fn(&str) -> Option<OsString>,
    file: Option<(usize, Source)>,
    default: usize,
) -> Result<Setting<usize>, SettingsError> {
    if let Some(text) = env(name) {
        let text = given(name, text, "a whole number")?;
        let number = text
            .parse::<usize>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| env_error(name, &format!("{text:?} is not a whole number from 1 up")))?;
        return Ok(Setting::new(number, Source::Env(name)));
    }
    Ok(match file {
        Some((number, source)) => Setting::new(number, source),
        None => Setting::new(default, Source::Default),
    })
}

/// A path setting: `flag`, else the variable `name`, else the config file's, else none.
fn resolve_path(
    flag: Option<(&PathBuf, &'static str)>,
    name: &'static str,
    env: &dyn Fn(&str) -> Option<OsString>,
    file: Option<(PathBuf, Source)>,
) -> Result<Setting<Option<PathBuf>>, SettingsError> {
    // Checked even when a flag overrides it, as every other variable.
    let from_env = match env(name) {
        Some(text) if text.is_empty() => Some(None),
        Some(text) => Some(Some(PathBuf::from(text))),
        None => None,
    };
    if let Some((path, flag)) = flag {
        if path.as_os_str().is_empty() {
            return Err(SettingsError(format!("{flag}: is empty: give a file")));
        }
        return Ok(Setting::new(Some(path.clone()), Source::Flag(flag)));
    }
    match from_env {
        Some(Some(path)) => return Ok(Setting::new(Some(path), Source::Env(name))),
        Some(None) => return Err(env_error(name, "is empty: name a file, or unset it")),
        None => {}
    }
    Ok(match file {
        Some((path, source)) => Setting::new(Some(path), source),
        None => Setting::new(None, Source::Default),
    })
}

/// The quorum table: `--quorum`, else `APPROVAL_GATE_QUORUM`, else the file's `[quorum]`,
/// each whole.
fn resolve_quorum(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<OsString>,
    file: Option<(Vec<(String, u32)>, Source)>,
) -> Result<Setting<Vec<(String, u32)>>, SettingsError> {
    let from_env = match env(QUORUM_ENV) {
        Some(text) => Some(
            parse_quorum(&given(
                QUORUM_ENV,
                text,
                "a list such as payments.*=2,deploy.*=3",
            )?)
            .map_err(|problem| env_error(QUORUM_ENV, &problem))?,
        ),
        None => None,
    };
    if let Some(text) = &flags.quorum {
        let quorum =
            parse_quorum(text).map_err(|problem| SettingsError(format!("--quorum: {problem}")))?;
        return Ok(Setting::new(quorum, Source::Flag("--quorum")));
    }
    if let Some(quorum) = from_env {
        return Ok(Setting::new(quorum, Source::Env(QUORUM_ENV)));
    }
    Ok(match file {
        Some((quorum, source)) => Setting::new(quorum, source),
        None => Setting::new(Vec::new(), Source::Default),
    })
}

/// `payments.*=2,deploy.*=3`: patterns and numbers, in the order given.
fn parse_quorum(text: &str) -> Result<Vec<(String, u32)>, String> {
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
    quorum: &Setting<Vec<(String, u32)>>,
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
    Location::parse(text).map_err(|error| match error {
        approval_gate::Error::InvalidInput { problem, .. } => problem,
        other => other.to_string(),
    })
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

/// The text of a variable that is set: refused if empty or not UTF-8.
fn given(name: &str, value: OsString, what: &str) -> Result<String, SettingsError> {
    if value.is_empty() {
        return Err(env_error(
            name,
            &format!("is empty: give {what}, or unset it"),
        ));
    }
    utf8(name, value)
}

fn utf8(name: &str, value: OsString) -> Result<String, SettingsError> {
    value
        .into_string()
        .map_err(|_| env_error(name, "is not UTF-8"))
}

fn env_error(name: &str, problem: &str) -> SettingsError {
    SettingsError(format!("{name}: {problem}"))
}

#[cfg(test)]
mod tests;
