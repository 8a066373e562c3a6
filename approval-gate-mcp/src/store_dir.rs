//! `--dir` and `APPROVAL_GATE_DIR`, read by clap in both binaries.
//!
//! An empty value is a usage error (exit 2) wherever it comes from. Without this,
//! `APPROVAL_GATE_DIR=` would quietly mean `~/.approval-gate`: a script that meant a store of
//! its own but built an empty path would read and decide the requests of another one.

use std::path::PathBuf;

use clap::builder::{OsStringValueParser, TypedValueParser};

/// The environment variable that names the store when `--dir` is not given.
pub(crate) const ENV: &str = "APPROVAL_GATE_DIR";

/// Why an empty store directory is refused, and what to do instead.
pub(crate) const EMPTY: &str = "the store directory is empty (from --dir or APPROVAL_GATE_DIR); \
    give a directory, or unset APPROVAL_GATE_DIR and leave out --dir to use ~/.approval-gate";

/// Parses the store directory: any path but the empty one.
pub(crate) fn parser() -> impl TypedValueParser<Value = PathBuf> {
    OsStringValueParser::new().try_map(|dir| {
        if dir.is_empty() {
            Err(EMPTY)
        } else {
            Ok(PathBuf::from(dir))
        }
    })
}

/// Parses the store directory, the empty one included, for a caller that refuses it after
/// parsing. A global argument needs this: clap reads the variable again for each subcommand,
/// so refusing it while parsing would refuse `APPROVAL_GATE_DIR= approval-gate --dir D list`,
/// where the explicit `--dir` wins.
pub(crate) fn parser_allowing_empty() -> impl TypedValueParser<Value = PathBuf> {
    OsStringValueParser::new().map(PathBuf::from)
}
