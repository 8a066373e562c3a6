//! The operator's settings, as both binaries take them: the library resolves them
//! ([`approval_gate::settings`], one resolution for every front end); here are only the
//! command-line flags, as clap reads them.

use std::path::PathBuf;

pub(crate) use approval_gate::settings::{
    SIGNING_KEY_ENV, SYSTEM_POLICY_ENV, SYSTEM_POLICY_PATH, Setting, Settings, SettingsError,
    Source,
};

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

impl Flags {
    /// The settings these flags, this process's environment and the config file give.
    pub(crate) fn resolve(&self) -> Result<Settings, SettingsError> {
        Settings::resolve(&approval_gate::settings::Flags {
            store: self.store.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            approvers: self.approvers.clone(),
            quorum: self.quorum.clone(),
        })
    }
}

/// A path, the empty one included: it is refused when the settings are resolved, with the
/// reason, rather than by clap with a generic "a value is required".
fn path_allowing_empty() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}
