//! What each flag of [`Flags`](super::Flags) does, in the words both binaries' `--help`
//! gives it: one text, whichever front end declares the flag for its own argument parser.

/// `--store`.
pub const STORE: &str = "The approval store: a directory, a file: URL or a postgres:// URL \
    [default: $APPROVAL_GATE_STORE, else $APPROVAL_GATE_DIR, else `store` in the config file, \
    else ~/.approval-gate]";

/// `--dir`.
pub const DIR: &str = "The store directory (--store with a plain path)";

/// `--config`.
pub const CONFIG: &str = "The operator's config file [default: $APPROVAL_GATE_CONFIG, else \
    $XDG_CONFIG_HOME/approval-gate/config.toml, else ~/.config/approval-gate/config.toml]";

/// `--approvers`.
pub const APPROVERS: &str = "The trusted approvers: an OpenSSH allowed_signers file; approvals \
    must then be signed [default: $APPROVAL_GATE_APPROVERS, else `approvers` in the config file]";

/// `--quorum`.
pub const QUORUM: &str = "How many distinct approvers operations need, such as \
    'payments.*=2,deploy.*=3,*=1' (a `*` entry is required; needs approvers) \
    [default: $APPROVAL_GATE_QUORUM, else [quorum] in the config file, else 1]";
