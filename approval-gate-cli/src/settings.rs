//! The operator's settings, as the CLI takes them: the library resolves them
//! ([`approval_gate::settings`], one resolution for every front end); here are only the
//! command-line flags, as clap reads them.

use std::path::PathBuf;

pub(crate) use approval_gate::settings::{
    SIGNING_KEY_ENV, SYSTEM_POLICY_ENV, SYSTEM_POLICY_PATH, Setting, Settings, SettingsError,
    Source,
};

/// The settings flags, the same in both binaries, with the library's help texts.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Flags {
    #[arg(
        long,
        global = true,
        value_name = "STORE",
        conflicts_with = "dir",
        help = approval_gate::settings::help::STORE
    )]
    pub(crate) store: Option<String>,

    #[arg(
        long,
        global = true,
        value_name = "DIR",
        value_hint = clap::ValueHint::DirPath,
        value_parser = path_allowing_empty(),
        help = approval_gate::settings::help::DIR
    )]
    pub(crate) dir: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        value_parser = path_allowing_empty(),
        help = approval_gate::settings::help::CONFIG
    )]
    pub(crate) config: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        value_parser = path_allowing_empty(),
        help = approval_gate::settings::help::APPROVERS
    )]
    pub(crate) approvers: Option<PathBuf>,

    #[arg(
        long,
        global = true,
        value_name = "PATTERN=N,...",
        help = approval_gate::settings::help::QUORUM
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
