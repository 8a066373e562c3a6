//! The operator's settings (feature `settings`): which store a front end opens, and the
//! limits and policy it enforces.
//!
//! One resolution for every front end: the `approval-gate` CLI, its web page and `exec`, the
//! `approval-gate-mcp` server and the Python package all call [`Settings::resolve`], so the
//! same environment and config file give each of them the same store, limits and policy.
//!
//! Limits and the default time to live are the operator's, never the agent's: both
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
//! | harness hooks | | | `[hooks]` | none guarded, 60 s ([`HookRules`]) |
//! | web page origin | each front end's `--public-url` | `APPROVAL_GATE_PUBLIC_URL` | `public_url` | none |
//! | notifications | | | `[notify]` | none (read by `approval-gate notify`) |
//!
//! The approvers (an OpenSSH `allowed_signers` file) and the quorum (`payments.*=2,deploy.*=3`
//! in the flag and the variable, a `[quorum]` table of `"payments.*" = 2` in the file, each
//! source whole, never merged) make the [`Policy`] both binaries give their gate:
//! under it an approval counts only with the signatures of enough distinct trusted approvers.
//! A quorum without approvers is refused, since it could never be met. Whoever can write the
//! approvers file chooses who may approve, so it must be owned by this user or root and not
//! writable by others, as the config file.
//!
//! Above every layer stands the system policy ([`SystemPolicy`],
//! `/etc/approval-gate/policy.toml`), when it exists: its approvers are the only ones, and a
//! user's quorum can only raise its numbers, so an agent running as this account cannot
//! switch the policy off by editing its config file, environment or flags.
//!
//! The config file is `--config`, else `APPROVAL_GATE_CONFIG`, else
//! `$XDG_CONFIG_HOME/approval-gate/config.toml`, else `~/.config/approval-gate/config.toml`;
//! only the default one may be missing. Every value given is checked, even one that a
//! source higher up overrides: a mistake is reported, never hidden until the day the override
//! goes away. An empty flag is refused, and so is a variable set but empty wherever it would
//! be used: `APPROVAL_GATE_DIR=` must not quietly mean `~/.approval-gate`, since a script that
//! meant a store of its own but built an empty path would read and decide another's requests.
//!
//! Every setting is resolved the same way: it is its layers, highest first, and a default,
//! and one resolver walks them (`layer`); each kind of value is read by one reader, from a
//! flag's or a variable's text and from the config file alike (`read`); the config file is
//! found, read and checked whole before any setting is resolved (`file`).
//!
//! Resolving reads the environment, the config file and the approvers file and nothing else:
//! it opens and creates nothing, so `approval-gate config` can show the settings of a store that does not
//! exist yet, and a bad setting stops a binary before it touches the store.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::limits::{DEFAULT_MAX_PENDING, DEFAULT_MAX_REQUESTS, DEFAULT_TTL};
use crate::{Gate, Limits, Location, Policy};

use file::{check_owner, read_file};
use layer::{Places, flag, resolve, store_dir};
use read::{COUNT, FILE, LOCATION, PUBLIC_URL, QUORUM, Quorum, TTL, library};

mod file;
mod hooks;
mod layer;
mod patterns;
mod read;
mod system;

pub use hooks::{BASH_TOOL, DEFAULT_HOOK_TIMEOUT, HookRules};
pub use patterns::{check_operation_pattern, operation_matches};
pub use system::{SYSTEM_POLICY_ENV, SYSTEM_POLICY_PATH, SystemPolicy};

/// The store, as `--store` reads it: a directory, a `file:` URL or a `postgres://` URL.
pub const STORE_ENV: &str = "APPROVAL_GATE_STORE";
/// The store directory; `APPROVAL_GATE_STORE` wins when both are set.
pub const DIR_ENV: &str = "APPROVAL_GATE_DIR";
/// The config file, instead of the default one.
pub const CONFIG_ENV: &str = "APPROVAL_GATE_CONFIG";
/// The cap of the pending queue.
pub const MAX_PENDING_ENV: &str = "APPROVAL_GATE_MAX_PENDING";
/// The cap of the requests kept in the live store.
pub const MAX_REQUESTS_ENV: &str = "APPROVAL_GATE_MAX_REQUESTS";
/// The time to live of a request that does not say, such as `30m`.
pub const DEFAULT_TTL_ENV: &str = "APPROVAL_GATE_DEFAULT_TTL";
/// The trusted approvers: an OpenSSH `allowed_signers` file.
pub const APPROVERS_ENV: &str = "APPROVAL_GATE_APPROVERS";
/// The quorum table, such as `payments.*=2,deploy.*=3`.
pub const QUORUM_ENV: &str = "APPROVAL_GATE_QUORUM";
/// The key `approve` signs with (a private key, or the `.pub` of a key in ssh-agent).
pub const SIGNING_KEY_ENV: &str = "APPROVAL_GATE_SIGNING_KEY";
/// The `ssh-keygen` that signs, by absolute path: never one found through `PATH`.
pub const SSH_KEYGEN_ENV: &str = "APPROVAL_GATE_SSH_KEYGEN";

/// The origin the approvers' web page (`approval-gate serve`) is opened at, for the page
/// links other front ends give (`watch`, `notify`, the MCP server's elicitation).
pub const PUBLIC_URL_ENV: &str = "APPROVAL_GATE_PUBLIC_URL";

/// The log filter of both binaries, in `tracing` `EnvFilter` syntax (`debug`,
/// `approval_gate=debug`); logs go to stderr, and only errors by default.
pub const LOG_ENV: &str = "APPROVAL_GATE_LOG";

pub mod help;

/// Why an empty store directory is refused, and what to do instead.
pub const EMPTY_DIR: &str = "the store directory is empty (from --dir or \
    APPROVAL_GATE_DIR); give a directory, or unset APPROVAL_GATE_DIR and leave out --dir to use \
    ~/.approval-gate";

/// The settings a front end's command line gives, highest of the layers: each is `None`
/// when not given. An empty value is refused when the settings are resolved, with the reason.
///
/// A command-line front end fills it from its own flags (`approval-gate-mcp` from clap); a
/// library front end, such as the Python package, from its own arguments or not at all.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--store`: a directory, a `file:` URL or a `postgres://` URL.
    pub store: Option<String>,
    /// `--dir`: the store directory (`--store` with a plain path).
    pub dir: Option<PathBuf>,
    /// `--config`: the operator's config file, instead of the default one.
    pub config: Option<PathBuf>,
    /// `--approvers`: the trusted approvers, an OpenSSH `allowed_signers` file.
    pub approvers: Option<PathBuf>,
    /// `--quorum`: how many distinct approvers operations need, such as `payments.*=2,*=1`.
    pub quorum: Option<String>,
}

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag, such as `--store`.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// The config file at this path.
    File(PathBuf),
    /// The system policy file at this path, which no user setting overrides.
    System(PathBuf),
    /// Nothing set it.
    Default,
}

impl Source {
    /// `flag`, `env`, `file`, `system` or `default`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Flag(_) => "flag",
            Self::Env(_) => "env",
            Self::File(_) => "file",
            Self::System(_) => "system",
            Self::Default => "default",
        }
    }

    /// The flag, variable or file; `None` for a default.
    #[must_use]
    pub fn name(&self) -> Option<String> {
        match self {
            Self::Flag(name) | Self::Env(name) => Some((*name).to_owned()),
            Self::File(path) | Self::System(path) => Some(path.to_string_lossy().into_owned()),
            Self::Default => None,
        }
    }

    /// A problem of the value from here, after the flag's or the variable's name, or the
    /// file's path: the one way every setting's error says where it came from.
    fn error(&self, problem: &dyn fmt::Display) -> SettingsError {
        SettingsError(match self {
            Self::Flag(name) | Self::Env(name) => format!("{name}: {problem}"),
            Self::File(path) => format!("config file {}: {problem}", path.display()),
            Self::System(path) => format!("system policy {}: {problem}", path.display()),
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
pub struct Setting<T> {
    /// The value in force.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Setting<T> {
    fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}

/// Which config file was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// `None` when there is no home directory to look in.
    pub path: Option<PathBuf>,
    /// `--config`, `APPROVAL_GATE_CONFIG` or the default.
    pub source: Source,
    /// Whether the file exists (only the default one may be missing).
    pub found: bool,
}

/// Every effective setting, each with its source.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The config file that was read, or looked for.
    pub config: ConfigFile,
    /// The store to open.
    pub store: Setting<Location>,
    /// The cap of the pending queue.
    pub max_pending: Setting<usize>,
    /// The cap of the requests kept in the live store.
    pub max_requests: Setting<usize>,
    /// The time to live of a request that does not say.
    pub default_ttl: Setting<Duration>,
    /// The `allowed_signers` file, if any.
    pub approvers: Setting<Option<PathBuf>>,
    /// Operation patterns and the distinct approvers each needs, in the order given.
    pub quorum: Setting<Vec<(String, u32)>>,
    /// The key `approve` signs with, unless `--key` names another.
    pub signing_key: Setting<Option<PathBuf>>,
    /// The `ssh-keygen` that signs: an absolute path, the system's unless set.
    pub ssh_keygen: Setting<Option<PathBuf>>,
    /// Which tool calls of an agent harness wait for a human (`approval-gate hook`): the
    /// config file's `[hooks]` table, else none.
    pub hooks: Setting<HookRules>,
    /// The origin the approvers' web page is opened at (`https://approvals.example.com`), for
    /// the page links `watch`, `notify` and the MCP server give: `APPROVAL_GATE_PUBLIC_URL`,
    /// else the config file's `public_url`. A front end's own `--public-url` flag wins over
    /// both; each checks the origin as it needs it.
    pub public_url: Setting<Option<String>>,
    /// The system policy in force, if any: its approvers are [`approvers`](Self::approvers),
    /// and its quorum table is added to [`quorum`](Self::quorum)'s in [`policy`](Self::policy).
    pub system_policy: Option<SystemPolicy>,
    /// The policy the approvers and the quorum make (the system policy's, raised by the
    /// user's quorum), read and checked when resolving.
    pub policy: Option<Policy>,
}

/// A setting that cannot be used: a usage error, and nothing was opened.
#[derive(Debug)]
pub struct SettingsError(String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The settings from `flags`, this process's environment and the config file.
    pub fn resolve(flags: &Flags) -> Result<Self, SettingsError> {
        Self::resolve_with(flags, &|name| std::env::var_os(name))
    }

    /// The settings from `flags`, the environment `env` gives, and the config file: each one
    /// from its layers, highest first, else its default.
    pub fn resolve_with(
        flags: &Flags,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Self, SettingsError> {
        // First: a system policy that is in force but unusable stops everything.
        let system_policy = system::find(env)?;
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
            hooks: resolve([p.file("hooks", &hooks::HOOKS)], Ok(HookRules::default()))?,
            public_url: p.get(PUBLIC_URL_ENV, "public_url", &PUBLIC_URL, None)?,
            system_policy,
            policy: None,
        };
        if let Some(program) = &settings.ssh_keygen.value {
            crate::SshKeygen::at(program).map_err(|e| {
                let source = &settings.ssh_keygen.source;
                SettingsError(format!("{SSH_KEYGEN_ENV} ({source}): {e}"))
            })?;
        }
        if let Some(system) = &settings.system_policy {
            settings.approvers = system::approvers(system, &settings.approvers)?;
        }
        settings.policy = policy(
            &settings.approvers,
            &settings.quorum,
            settings.system_policy.as_ref(),
        )?;
        Ok(settings)
    }

    /// The `ssh-keygen` that signs approvals: the configured absolute path, else the
    /// system's. Never one found through `PATH`.
    #[must_use]
    pub fn signer(&self) -> crate::SshKeygen {
        self.ssh_keygen
            .value
            .as_ref()
            .and_then(|program| crate::SshKeygen::at(program).ok())
            .unwrap_or_default()
    }

    /// The limits the gate enforces.
    #[must_use]
    pub fn limits(&self) -> Limits {
        Limits::default()
            .max_pending(self.max_pending.value)
            .max_requests(self.max_requests.value)
            .default_ttl(self.default_ttl.value)
    }

    /// Opens (and, for a directory store, creates) the store with these limits.
    pub fn open(&self) -> Result<Gate, crate::Error> {
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

/// The policy of the approvers file and the quorum; none without approvers. Under a system
/// policy, its approvers (which must be unchangeable by this account) and its quorum table,
/// to which the user's adds: where several patterns match, the largest number applies.
fn policy(
    approvers: &Setting<Option<PathBuf>>,
    quorum: &Setting<Quorum>,
    system: Option<&SystemPolicy>,
) -> Result<Option<Policy>, SettingsError> {
    let Some(path) = &approvers.value else {
        // The library's rule: a quorum without approvers is refused; said here with where
        // the approvers can be given.
        let table = quorum
            .value
            .iter()
            .map(|(pattern, n)| (pattern.as_str(), *n));
        return Policy::with_quorum(None, table).map_err(|e| {
            SettingsError(format!(
                "quorum ({}) {}; give --approvers, {APPROVERS_ENV} or `approvers` in the config \
                 file",
                quorum.source,
                library(e)
            ))
        });
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
    match system {
        Some(_) => system::unchangeable(path),
        None => check_owner(&metadata),
    }
    .map_err(|problem| fail(&problem))?;
    let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
    let trusted = Policy::from_allowed_signers(&text).map_err(|e| fail(&library(e)))?;
    let mut policy = trusted.clone();
    if let Some(system) = system {
        let system_error = |e| system.error(&format_args!("quorum: {}", library(e)));
        for (pattern, n) in &system.quorum {
            policy = policy.require(pattern, *n).map_err(system_error)?;
        }
        // The system's table says what the operations it does not name need by itself.
        policy.check_quorum_table().map_err(system_error)?;
    }
    let quorum_error = |e| SettingsError(format!("quorum ({}): {}", quorum.source, library(e)));
    let mut own = trusted;
    for (pattern, n) in &quorum.value {
        policy = policy.require(pattern, *n).map_err(quorum_error)?;
        own = own.require(pattern, *n).map_err(quorum_error)?;
    }
    // A table says what the operations it does not name need, or nothing starts.
    own.check_quorum_table().map_err(quorum_error)?;
    Ok(Some(policy))
}

/// `$HOME`, unless unset or empty.
fn home(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod system_tests;
#[cfg(test)]
mod tests;
