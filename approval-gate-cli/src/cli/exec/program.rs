//! Finding the command before anything is spent: the program, and the interpreter its `#!`
//! line names.

use std::ffi::OsStr;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::term::Refusal;
use crate::term::display::escape;

/// The most of a `#!` line the kernel reads (Linux's `BINPRM_BUF_SIZE`).
const SHEBANG_BYTES: u64 = 256;

/// The path `program` names: itself if it holds a slash, else the first executable file of
/// that name in `PATH`, as a shell would find it. Checked before the claim; running it may
/// still fail, after the claim, and that is recorded as the execution's outcome.
pub(super) fn resolve(program: &OsStr) -> anyhow::Result<PathBuf> {
    let shown = || escape(&program.to_string_lossy());
    let candidates: Vec<PathBuf> = if program.as_encoded_bytes().contains(&b'/') {
        vec![PathBuf::from(program)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .collect()
    };
    let mut not_executable = None;
    for candidate in candidates {
        match std::fs::metadata(&candidate) {
            Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
                check_interpreter(&candidate)?;
                return Ok(candidate);
            }
            Ok(_) => not_executable = Some(candidate),
            Err(_) => {}
        }
    }
    Err(match not_executable {
        Some(path) => Refusal::new(
            "command_not_executable",
            format!(
                "{} is not an executable file; nothing was consumed",
                escape(&path.display().to_string())
            ),
        ),
        None => Refusal::new(
            "command_not_found",
            format!("command not found: {}; nothing was consumed", shown()),
        ),
    }
    .into())
}

/// Refuses a script whose `#!` line names an interpreter that is missing or not executable:
/// the kernel would refuse it only when the command starts, after the claim. A file that
/// cannot be read here is left to the kernel (whatever fails then is reported as spent).
fn check_interpreter(program: &Path) -> anyhow::Result<()> {
    let Some(interpreter) = interpreter(program) else {
        return Ok(());
    };
    let shown = || {
        format!(
            "{} (named by the #! line of {})",
            escape(&interpreter.display().to_string()),
            escape(&program.display().to_string())
        )
    };
    match std::fs::metadata(&interpreter) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => Err(Refusal::new(
            "command_not_executable",
            format!(
                "the interpreter {} is not an executable file; nothing was consumed",
                shown()
            ),
        )
        .into()),
        Err(_) => Err(Refusal::new(
            "command_not_found",
            format!(
                "the interpreter {} is not found; nothing was consumed",
                shown()
            ),
        )
        .into()),
    }
}

/// The interpreter a `#!` line names, as the kernel reads it: after `#!` and any blanks, up
/// to the next blank or the line's end.
fn interpreter(program: &Path) -> Option<PathBuf> {
    let mut head = Vec::new();
    std::fs::File::open(program)
        .ok()?
        .take(SHEBANG_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    let line = head.strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let name = line
        .split(|&b| b == b' ' || b == b'\t')
        .find(|word| !word.is_empty())?;
    Some(PathBuf::from(OsStr::from_bytes(name)))
}
